"""The in-memory vector matrix behind vector search, and the BLOB form of a vector.

Example:
    .. code-block:: python

        matrix = VectorMatrix()
        matrix.add([1, 2], [np.array([1.0, 0.0]), np.array([0.0, 1.0])])
        assert matrix.top_k(np.array([1.0, 0.2]), 1)[0][0] == 1
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence

import numpy as np

from ..errors import MemoryIndexError

__all__ = ["VectorMatrix", "from_blob", "to_blob"]


def to_blob(vector: np.ndarray) -> bytes:
    """A vector as the float32 BLOB stored in SQLite."""
    return np.asarray(vector, dtype=np.float32).tobytes()


def from_blob(blob: bytes) -> np.ndarray:
    """A float32 BLOB from SQLite as a (read-only) numpy vector."""
    return np.frombuffer(blob, dtype=np.float32)


# Background statistics read this many stored vectors at most (~0.1 ms at 384 dimensions).
BACKGROUND_SAMPLE = 2048
_MIN_BACKGROUND = 8


class VectorMatrix:
    """Unit vectors of all embedded chunks as one contiguous float32 matrix.

    Live rows are ``_data[:_n]``. Capacity grows geometrically, so adding a
    file's chunks costs O(rows added), not a copy of the whole matrix; a
    removed row is filled by the last one, so live rows stay contiguous and a
    search is one matrix-vector product plus ``argpartition``. Sync mutates the
    matrix while searches run on other threads, hence its own lock.
    """

    def __init__(self) -> None:
        self._data: np.ndarray | None = None
        self._ids = np.empty(0, dtype=np.int64)
        self._slot: dict[int, int] = {}
        self._n = 0
        self._lock = threading.Lock()
        self.generation = -1

    def __len__(self) -> int:
        return self._n

    @classmethod
    def load(cls, rows: Iterable[tuple[int, bytes]], expected: int) -> VectorMatrix:
        """Fill a matrix from ``(rowid, blob)`` rows without holding all blobs at once."""
        matrix = cls()
        with matrix._lock:
            for rowid, blob in rows:
                vector = from_blob(blob)
                if matrix._data is None:
                    matrix._data = np.empty((max(expected, 1), vector.shape[0]), dtype=np.float32)
                    matrix._ids = np.empty(max(expected, 1), dtype=np.int64)
                elif vector.shape[0] != matrix._data.shape[1]:
                    raise MemoryIndexError("stored vectors have mixed dimensions; run a forced sync")
                matrix._reserve(matrix._n + 1)
                matrix._data[matrix._n] = vector
                matrix._ids[matrix._n] = rowid
                matrix._slot[int(rowid)] = matrix._n
                matrix._n += 1
            if matrix._data is not None:
                live = matrix._data[: matrix._n]
                norms = np.linalg.norm(live, axis=1, keepdims=True)
                np.divide(live, np.where(norms == 0, 1.0, norms), out=live)
        return matrix

    def add(self, rowids: Sequence[int], vectors: Sequence[np.ndarray]) -> None:
        if not rowids:
            return
        if len(set(rowids)) != len(rowids):  # one row per rowid: the last vector given wins
            latest = dict(zip(rowids, vectors, strict=True))
            rowids, vectors = list(latest), list(latest.values())
        block = np.vstack([np.asarray(v, dtype=np.float32) for v in vectors])
        norms = np.linalg.norm(block, axis=1, keepdims=True)
        np.divide(block, np.where(norms == 0, 1.0, norms), out=block)
        with self._lock:
            if self._data is not None and self._data.shape[1] != block.shape[1]:
                raise MemoryIndexError("stored vectors have mixed dimensions; run a forced sync")
            self._remove_locked(rowids)
            if self._data is None:
                self._data = np.empty((0, block.shape[1]), dtype=np.float32)
            self._reserve(self._n + len(rowids))
            start = self._n
            self._data[start : start + len(rowids)] = block
            self._ids[start : start + len(rowids)] = np.asarray(rowids, dtype=np.int64)
            for offset, rowid in enumerate(rowids):
                self._slot[int(rowid)] = start + offset
            self._n += len(rowids)

    def remove(self, rowids: Sequence[int]) -> None:
        if not rowids:
            return
        with self._lock:
            self._remove_locked(rowids)
            if self._data is not None and self._n < self._data.shape[0] // 4 and self._data.shape[0] > 1024:
                # Give memory back after a mass deletion (a file of many chunks removed).
                self._data = self._data[: max(self._n * 2, 1024)].copy()
                self._ids = self._ids[: self._data.shape[0]].copy()

    def _remove_locked(self, rowids: Sequence[int]) -> None:
        if self._data is None:
            return
        for rowid in rowids:
            slot = self._slot.pop(int(rowid), None)
            if slot is None:
                continue
            last = self._n - 1
            if slot != last:
                self._data[slot] = self._data[last]
                moved = int(self._ids[last])
                self._ids[slot] = moved
                self._slot[moved] = slot
            self._n = last

    def _reserve(self, rows: int) -> None:
        assert self._data is not None
        capacity = self._data.shape[0]
        if rows <= capacity:
            return
        capacity = max(rows, capacity + capacity // 2, 64)
        data = np.empty((capacity, self._data.shape[1]), dtype=np.float32)
        data[: self._n] = self._data[: self._n]
        ids = np.empty(capacity, dtype=np.int64)
        ids[: self._n] = self._ids[: self._n]
        self._data, self._ids = data, ids

    def background(self, query: np.ndarray, sample: int = BACKGROUND_SAMPLE) -> tuple[float, float] | None:
        """Mean and standard deviation of the query's cosine to (up to ``sample``) stored vectors.

        How similar this query is to an arbitrary note of this memory: the
        yardstick that tells a hit standing out from the crowd (an answer) from
        the best of a crowd of equally near notes (no answer). ``None`` below
        a handful of vectors or for a zero or mismatched query.
        """
        with self._lock:
            n = min(self._n, sample)
            if self._data is None or n < _MIN_BACKGROUND:
                return None
            q = np.asarray(query, dtype=np.float32).ravel()
            norm = float(np.linalg.norm(q))
            if q.shape[0] != self._data.shape[1] or norm == 0.0 or not np.isfinite(norm):
                return None
            # Live rows are in no particular order, so the first ``sample`` are an unbiased sample.
            scores = self._data[:n] @ (q / norm)
        return float(scores.mean()), float(scores.std())

    def top_k(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        with self._lock:
            n = self._n
            if self._data is None or n == 0 or k <= 0:
                return []
            q = np.asarray(query, dtype=np.float32).ravel()
            if q.shape[0] != self._data.shape[1]:
                raise MemoryIndexError(
                    f"query vector has {q.shape[0]} dimensions but the index holds {self._data.shape[1]}"
                )
            norm = float(np.linalg.norm(q))
            if norm == 0.0 or not np.isfinite(norm):
                return []
            scores = self._data[:n] @ (q / norm)
            ids = self._ids[:n]
            k = min(k, n)
            part = np.argpartition(scores, n - k)[n - k :] if k < n else np.arange(n)
            order = part[np.lexsort((ids[part], -scores[part]))]
            return [(int(ids[i]), float(np.clip(scores[i], 0.0, 1.0))) for i in order]
