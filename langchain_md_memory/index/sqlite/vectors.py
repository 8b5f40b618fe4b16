"""The in-memory vector matrix behind vector search.

The matrix holds unit vectors as float32 (exact), or compactly as float16 or int8 (one scale per row):
2x or 4x less memory, scores off by about 1e-4 (float16) or 1e-3 (int8). A compact matrix returns more
candidates than asked for; :func:`rescore` ranks them again with the exact float32 vectors.

Example:
    .. code-block:: python

        matrix = VectorMatrix()
        matrix.add([1, 2], [np.array([1.0, 0.0]), np.array([0.0, 1.0])])
        assert matrix.top_k(np.array([1.0, 0.2]), 1)[0][0] == 1
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

import numpy as np

from ...errors import MemoryIndexError
from ..rows import from_blob
from ..scoring import BACKGROUND_SAMPLE, MIN_BACKGROUND, Background
from ..topk import at_or_above_kth

__all__ = ["RESCORE_FACTOR", "VectorDtype", "VectorMatrix", "rescore"]

VectorDtype = Literal["float32", "float16", "int8"]
"""How the matrix holds vectors: float32 (exact), float16 or int8 (compact, re-scored)."""

RESCORE_FACTOR = 4
"""A compact matrix's search returns this many times the candidates asked for, for exact re-scoring."""
# A compact matrix is scored in blocks of this many rows, each widened to float32: never a full-size copy.
# Small enough that the widened block stays in cache and BLAS scores it on the calling thread: waking
# BLAS's threads for each of larger blocks made a compact scan several times slower.
_SCAN_BLOCK = 1024
# Stored vectors are loaded this many at a time (normalised and encoded together).
_BLOCK = 8192


class VectorMatrix:
    """Unit vectors of all embedded chunks as one contiguous matrix (float32, float16 or int8).

    Live rows are ``_data[:_n]``; each *group*'s rows (a small integer, 0 unless given: the script
    groups of :mod:`.script_groups`) are one run, runs in ascending group order. Capacity grows
    geometrically, so adding a file's chunks costs O(rows added): a later run makes room by moving
    as many of its first rows past its end. A removed row is filled by the last of its group, and
    each later run moves its last row into the gap before it: live rows stay contiguous, and a
    search is one matrix-vector product, then the top k of each group's slice (:mod:`.topk`). Sync
    mutates the matrix while searches run on other threads, hence its own lock.
    """

    def __init__(self, dtype: VectorDtype = "float32") -> None:
        if dtype not in ("float32", "float16", "int8"):
            raise MemoryIndexError(f"vector_dtype must be float32, float16 or int8, not {dtype!r}")
        self.dtype: VectorDtype = dtype
        self._data: np.ndarray | None = None
        self._scale = np.empty(0, dtype=np.float32)  # int8 only: row = stored * scale
        self._ids = np.empty(0, dtype=np.int64)
        self._slot: dict[int, int] = {}
        self._n = 0
        self._runs: list[list[int]] = []  # [group, start, stop] in ascending group; stop is the next start
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self._n

    @property
    def exact(self) -> bool:
        """True when scores are exact (float32): no re-scoring needed."""
        return self.dtype == "float32"

    def nbytes(self) -> int:
        """Bytes held by live rows (vectors, scales, rowids)."""
        if self._data is None:
            return 0
        per_row = int(self._data.shape[1] * self._data.itemsize) + 8 + (4 if self.dtype == "int8" else 0)
        return self._n * per_row

    def _allocate(self, capacity: int, dim: int) -> np.ndarray:
        """Room for ``capacity`` rows. float32 rows are the columns of a dimensions × capacity array:
        BLAS scores a query against those faster than against rows; a compact matrix, widened a
        block at a time, is read faster row by row."""
        if self.dtype == "float32":
            return np.empty((dim, capacity), dtype=np.float32).T
        return np.empty((capacity, dim), dtype=self.dtype)

    def _encode(self, block: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Unit float32 rows as stored rows and their scales (1.0 unless int8)."""
        if self.dtype == "float32":
            return block, np.ones(block.shape[0], dtype=np.float32)
        if self.dtype == "float16":
            return block.astype(np.float16), np.ones(block.shape[0], dtype=np.float32)
        peak = np.abs(block).max(axis=1)
        scale = np.where(peak == 0, 1.0, peak / 127.0).astype(np.float32)
        return np.rint(block / scale[:, None]).astype(np.int8), scale

    def _decode(self, start: int, stop: int) -> np.ndarray:
        """Rows ``start:stop`` as float32 (a view for float32, a copy otherwise)."""
        assert self._data is not None
        rows = self._data[start:stop]
        if self.dtype == "float32":
            return rows
        wide = rows.astype(np.float32)
        if self.dtype == "int8":
            wide *= self._scale[start:stop, None]
        return wide

    def _scores(self, q: np.ndarray, n: int) -> np.ndarray:
        assert self._data is not None
        if self.dtype == "float32":
            return np.asarray(self._data[:n] @ q)
        out = np.empty(n, dtype=np.float32)
        for start in range(0, n, _SCAN_BLOCK):
            stop = min(start + _SCAN_BLOCK, n)
            np.dot(self._data[start:stop].astype(np.float32), q, out=out[start:stop])
        if self.dtype == "int8":
            out *= self._scale[:n]
        return out

    @classmethod
    def load(cls, rows: Iterable[tuple[int, bytes]], expected: int, dtype: VectorDtype = "float32"
             ) -> VectorMatrix:
        """Fill a matrix from ``(rowid, blob)`` rows without holding all blobs (or a float32 copy) at once."""
        (matrix := cls(dtype)).extend(rows, expected=expected)
        return matrix

    def extend(self, rows: Iterable[tuple[int, bytes]], group: int = 0, *, expected: int = 0) -> None:
        """Add stored ``(rowid, blob)`` rows (rowids not yet held) to ``group``, a block at a time.

        ``expected`` rows are reserved at once (a load gives the total of every group it reads).
        """
        pending: list[np.ndarray] = []
        pending_ids: list[int] = []
        with self._lock:
            for rowid, blob in rows:
                vector = from_blob(blob)
                if self._data is None:
                    self._data = self._allocate(0, vector.shape[0])
                    self._reserve(expected)
                elif vector.shape[0] != self._data.shape[1]:
                    raise MemoryIndexError("stored vectors have mixed dimensions; run a forced sync")
                pending.append(vector)
                pending_ids.append(int(rowid))
                if len(pending) == _BLOCK:
                    self._append_locked(pending_ids, _unit_rows(pending), group)
                    pending, pending_ids = [], []
            if pending:
                self._append_locked(pending_ids, _unit_rows(pending), group)

    def _append_locked(self, rowids: Sequence[int], block: np.ndarray, group: int = 0) -> None:
        """Append unit rows whose rowids are not in the matrix at the end of ``group``'s run."""
        assert self._data is not None
        self._reserve(self._n + len(rowids))
        start = self._open(self._run(group), len(rowids))
        stop = start + len(rowids)
        encoded, self._scale[start:stop] = self._encode(block)
        np.copyto(self._data[start:stop], encoded)  # in the matrix's memory order (3x a slice assignment)
        self._ids[start:stop] = np.asarray(rowids, dtype=np.int64)
        for offset, rowid in enumerate(rowids):
            self._slot[int(rowid)] = start + offset

    def _run(self, group: int) -> int:
        """The index of ``group``'s run in ``_runs``; an empty one is made where it belongs when absent."""
        for i, (held, start, _) in enumerate(self._runs):
            if held == group:
                return i
            if held > group:
                self._runs.insert(i, [group, start, start])
                return i
        self._runs.append([group, self._n, self._n])
        return len(self._runs) - 1

    def _open(self, i: int, m: int) -> int:
        """Make ``m`` free slots at the end of run ``i`` and return the first (capacity is reserved).

        Each later run moves ``m`` slots up, last run first: its first ``m`` rows (all of
        them when it is shorter) go past its end, never onto rows still to be read.
        """
        for run in reversed(self._runs[i + 1 :]):
            _, start, stop = run
            count = min(m, stop - start)
            self._move(start, stop + m - count, count)
            run[1], run[2] = start + m, stop + m
        first = self._runs[i][2]
        self._runs[i][2] += m
        self._n += m
        return first

    def _move(self, source: int, target: int, count: int) -> None:
        """Rows ``source:source + count`` to ``target:target + count`` (not overlapping)."""
        if count <= 0 or source == target:
            return
        assert self._data is not None
        np.copyto(self._data[target : target + count], self._data[source : source + count])
        self._scale[target : target + count] = self._scale[source : source + count]
        self._ids[target : target + count] = self._ids[source : source + count]
        for offset, rowid in enumerate(self._ids[target : target + count].tolist()):
            self._slot[rowid] = target + offset

    def add(self, rowids: Sequence[int], vectors: Sequence[np.ndarray], group: int = 0) -> None:
        """Add (or replace) rows in ``group``; a rowid held in another group moves to this one."""
        if not rowids:
            return
        if len(set(rowids)) != len(rowids):  # one row per rowid: the last vector given wins
            latest = dict(zip(rowids, vectors, strict=True))
            rowids, vectors = list(latest), list(latest.values())
        block = _unit_rows(vectors)
        with self._lock:
            if self._data is not None and self._data.shape[1] != block.shape[1]:
                raise MemoryIndexError("stored vectors have mixed dimensions; run a forced sync")
            self._remove_locked(rowids)
            if self._data is None:
                self._data = self._allocate(0, block.shape[1])
            self._append_locked(rowids, block, group)

    def remove(self, rowids: Sequence[int]) -> None:
        if not rowids:
            return
        with self._lock:
            self._remove_locked(rowids)
            if self._data is not None and self._n < self._data.shape[0] // 4 and self._data.shape[0] > 1024:
                # Give memory back after a mass deletion (a file of many chunks removed).
                self._data = self._data[: max(self._n * 2, 1024)].copy(order="K")  # the same layout
                self._ids = self._ids[: self._data.shape[0]].copy()
                self._scale = self._scale[: self._data.shape[0]].copy()

    def _remove_locked(self, rowids: Sequence[int]) -> None:
        if self._data is None:
            return
        for rowid in rowids:
            slot = self._slot.pop(int(rowid), None)
            if slot is None:
                continue
            hole = -1  # the free slot, once the row's run is found
            for run in self._runs:
                if hole < 0:
                    if not run[1] <= slot < run[2]:
                        continue
                    hole = run[2] - 1  # the run's last row fills the removed one
                    self._move(hole, slot, 1)
                    run[2] = hole
                    continue
                # each later run moves down one slot: its last row into the gap before it
                self._move(run[2] - 1, hole, 1 if run[2] > run[1] else 0)
                run[1], run[2] = run[1] - 1, run[2] - 1
                hole = run[2]
            self._n -= 1
        self._runs = [run for run in self._runs if run[2] > run[1]]

    def _reserve(self, rows: int) -> None:
        assert self._data is not None
        capacity = self._data.shape[0]
        if rows <= capacity:
            return
        capacity = max(rows, capacity + capacity // 2, 64)
        data = self._allocate(capacity, self._data.shape[1])
        np.copyto(data[: self._n], self._data[: self._n])
        ids = np.empty(capacity, dtype=np.int64)
        ids[: self._n] = self._ids[: self._n]
        scale = np.empty(capacity, dtype=np.float32)
        scale[: self._n] = self._scale[: self._n]
        self._data, self._ids, self._scale = data, ids, scale

    def background(self, query: np.ndarray, sample: int = BACKGROUND_SAMPLE) -> Background | None:
        """Mean and standard deviation of the query's cosine to (up to ``sample``) stored vectors.

        How similar this query is to an arbitrary note of this memory: the
        yardstick that tells a hit standing out from the crowd (an answer) from
        the best of a crowd of equally near notes (no answer). ``None`` below
        a handful of vectors or for a zero or mismatched query.
        """
        with self._lock:
            return self._sample(query, [(0, self._n)], sample)[0]

    def backgrounds(self, query: np.ndarray, sample: int = BACKGROUND_SAMPLE
                    ) -> dict[int, tuple[int, Background | None]]:
        """:meth:`background` of each group's rows: ``{group: (rows, (mean, std) or None)}``."""
        with self._lock:
            measured = self._sample(query, [(start, stop) for _, start, stop in self._runs], sample)
            return {group: (stop - start, stats)
                    for (group, start, stop), stats in zip(self._runs, measured, strict=True)}

    def _sample(self, query: np.ndarray, ranges: Sequence[tuple[int, int]], sample: int
                ) -> list[Background | None]:
        """Each range's background from its first ``sample`` rows (live rows are in no particular
        order: an unbiased sample). The caller holds the lock."""
        q = np.asarray(query, dtype=np.float32).ravel()
        norm = float(np.linalg.norm(q))
        if (self._data is None or q.shape[0] != self._data.shape[1] or norm == 0.0
                or not np.isfinite(norm)):
            return [None] * len(ranges)
        return [_spread(self._decode(start, start + min(stop - start, sample)) @ (q / norm))
                for start, stop in ranges]

    def top_k(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        """The ``k`` nearest rows as ``(rowid, cosine clipped to [0, 1])``, best first, ties by rowid.

        Exact for float32. A compact matrix's scores are approximate: ask it for
        ``RESCORE_FACTOR`` times more and pass them to :func:`rescore`.
        """
        return self.search(query, k)[0]

    def search(self, query: np.ndarray, k: int, sample: int = BACKGROUND_SAMPLE
               ) -> tuple[list[tuple[int, float]], Background | None]:
        """:meth:`top_k` and :meth:`background` of one query from one pass over the rows."""
        with self._lock:
            scores = self._query_scores(query, k)
            return ([], None) if scores is None else _top(scores, self._ids[: self._n], k, sample)

    def search_groups(self, query: np.ndarray, k: int, sample: int = BACKGROUND_SAMPLE
                      ) -> dict[int, tuple[int, list[tuple[int, float]], Background | None]]:
        """:meth:`search` within each group, from one matrix-vector product over every row:
        ``{group: (rows, top k, background)}``."""
        with self._lock:
            scores = self._query_scores(query, k)
            return {} if scores is None else {
                group: (stop - start, *_top(scores[start:stop], self._ids[start:stop], k, sample))
                for group, start, stop in self._runs}

    def _query_scores(self, query: np.ndarray, k: int) -> np.ndarray | None:
        """Cosines of every live row with ``query``; ``None``: nothing to rank. Under the lock."""
        if self._data is None or self._n == 0 or k <= 0:
            return None
        q = np.asarray(query, dtype=np.float32).ravel()
        if q.shape[0] != self._data.shape[1]:
            raise MemoryIndexError(
                f"query vector has {q.shape[0]} dimensions but the index holds {self._data.shape[1]}"
            )
        norm = float(np.linalg.norm(q))
        if norm == 0.0 or not np.isfinite(norm):
            return None
        return self._scores(q / norm, self._n)


def _top(scores: np.ndarray, ids: np.ndarray, k: int, sample: int
         ) -> tuple[list[tuple[int, float]], Background | None]:
    """The ``k`` best of ``scores`` as ``(rowid, score)`` (ties by rowid), and the first ``sample``'s
    :func:`_spread`."""
    part = at_or_above_kth(scores, k)
    order = part[np.lexsort((ids[part], -scores[part]))][:k]
    return _pairs(ids[order], scores[order]), _spread(scores[:sample])


def _spread(scores: np.ndarray) -> Background | None:
    """Mean and standard deviation of a background sample (``None`` below :data:`MIN_BACKGROUND` scores):
    the floats of ``scores.mean()`` and ``.std()`` from the ufuncs they call, without their Python layers."""
    n = scores.shape[0]
    if n < MIN_BACKGROUND:
        return None
    mean = np.add.reduce(scores) / n
    squares = scores - mean
    np.multiply(squares, squares, out=squares)
    return float(mean), float(np.sqrt(np.add.reduce(squares) / n))


def _unit_rows(vectors: Sequence[np.ndarray]) -> np.ndarray:
    block = np.vstack([np.asarray(v, dtype=np.float32) for v in vectors])
    norms = np.linalg.norm(block, axis=1, keepdims=True)
    np.divide(block, np.where(norms == 0, 1.0, norms), out=block)
    return block


def rescore(query: np.ndarray, candidates: Sequence[int], vectors: Mapping[int, np.ndarray], k: int
            ) -> list[tuple[int, float]]:
    """The ``k`` best of ``candidates`` by exact float32 cosine with their stored ``vectors``.

    Same order and clipping as a float32 :meth:`VectorMatrix.top_k`; candidates without a vector
    (deleted meanwhile) are dropped.
    """
    present = [rowid for rowid in candidates if rowid in vectors]
    if not present or k <= 0:
        return []
    q = np.asarray(query, dtype=np.float32).ravel()
    q = q / np.linalg.norm(q)
    scores = _unit_rows([vectors[rowid] for rowid in present]) @ q
    ids = np.asarray(present, dtype=np.int64)
    order = np.lexsort((ids, -scores))[:k]
    return _pairs(ids[order], scores[order])


def _pairs(ids: np.ndarray, scores: np.ndarray) -> list[tuple[int, float]]:
    """``(rowid, score clipped to [0, 1])`` as Python numbers, in order."""
    return list(zip(ids.tolist(), np.clip(scores, 0.0, 1.0).tolist(), strict=True))
