"""The three vector-search baselines the index is measured against, over the same vectors.

- (a) :func:`spec_linear_scan` — the primary spec's ``searchVector`` ported
  line for line: read every embedded chunk from SQLite on each query and
  compute ``cosineSimilarity`` per row in a plain Python loop over floats.
  :func:`spec_linear_scan_numpy` is a kinder variant (numpy per row), reported
  beside it so the ratio does not hang on the port.
- (b) :class:`NumpyFloor` — one normalised float32 matrix in RAM, one
  matrix-vector product and ``argpartition``: the floor for exact search.
- (c) :class:`SqliteVecKNN` — a ``sqlite-vec`` ``vec0`` table queried with KNN
  ``MATCH``, when a SQLite binding with extension loading is installed.

Example:
    .. code-block:: python

        floor = NumpyFloor.from_index("memory/index.sqlite")
        top = floor.top_k(query_vector, 24)   # [(rowid, cosine)]
"""

from __future__ import annotations

import math
import sqlite3
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from langchain_md_memory.index.sqlite.schema import VECTOR_JOIN

__all__ = [
    "NumpyFloor",
    "SqliteVecKNN",
    "read_vectors",
    "spec_linear_scan",
    "spec_linear_scan_numpy",
    "sqlite_vec_status",
]


def read_vectors(index_path: str) -> tuple[np.ndarray, np.ndarray]:
    """Every stored chunk vector of an index file: (rowids int64, float32 matrix)."""
    conn = sqlite3.connect(f"file:{index_path}?mode=ro", uri=True)
    try:
        rows = conn.execute(f"SELECT c.rowid, e.vector FROM chunks c JOIN {VECTOR_JOIN}").fetchall()
    finally:
        conn.close()
    if not rows:
        return np.empty(0, dtype=np.int64), np.empty((0, 0), dtype=np.float32)
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1).copy()
    return ids, matrix


def spec_linear_scan(index_path: str, query: np.ndarray, k: int) -> list[tuple[int, float]]:
    """Baseline (a): load all vectors from SQLite, the spec's cosine loop per row, sort, top ``k``."""
    conn = sqlite3.connect(f"file:{index_path}?mode=ro", uri=True)
    try:
        q = [float(x) for x in query]
        q_norm = math.sqrt(sum(x * x for x in q))
        scored: list[tuple[float, int]] = []
        for rowid, blob in conn.execute(f"SELECT c.rowid, e.vector FROM chunks c JOIN {VECTOR_JOIN}"):
            vector = array("f", blob)  # the spec's fromBlob: a Float32Array over the BLOB
            dot = norm = 0.0
            for a, b in zip(vector, q, strict=True):
                dot += a * b
                norm += a * a
            denom = math.sqrt(norm) * q_norm
            scored.append((dot / denom if denom else 0.0, int(rowid)))
    finally:
        conn.close()
    scored.sort(key=lambda item: (-item[0], item[1]))
    return [(rowid, score) for score, rowid in scored[:k]]


def spec_linear_scan_numpy(index_path: str, query: np.ndarray, k: int) -> list[tuple[int, float]]:
    """Baseline (a), kinder: the same scan with numpy doing each row's cosine."""
    conn = sqlite3.connect(f"file:{index_path}?mode=ro", uri=True)
    try:
        q = np.asarray(query, dtype=np.float32)
        q_norm = float(np.linalg.norm(q))
        scored: list[tuple[float, int]] = []
        for rowid, blob in conn.execute(f"SELECT c.rowid, e.vector FROM chunks c JOIN {VECTOR_JOIN}"):
            vector = np.frombuffer(blob, dtype=np.float32)
            denom = float(np.linalg.norm(vector)) * q_norm
            scored.append((float(vector @ q) / denom if denom else 0.0, int(rowid)))
    finally:
        conn.close()
    scored.sort(key=lambda item: (-item[0], item[1]))
    return [(rowid, score) for score, rowid in scored[:k]]


@dataclass
class NumpyFloor:
    """Baseline (b): a contiguous normalised float32 matrix, ``M @ q`` and ``argpartition``."""

    ids: np.ndarray
    matrix: np.ndarray

    @classmethod
    def from_arrays(cls, ids: np.ndarray, matrix: np.ndarray) -> NumpyFloor:
        """Normalise ``matrix`` rows (a copy) and keep ``ids`` beside them."""
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return cls(ids, np.ascontiguousarray(matrix / np.where(norms == 0, 1.0, norms), dtype=np.float32))

    @classmethod
    def from_index(cls, index_path: str) -> NumpyFloor:
        """Load every vector of an index file."""
        return cls.from_arrays(*read_vectors(index_path))

    def agreement(self, query: np.ndarray, found: Sequence[int], k: int) -> float:
        """Share of the exact top ``k`` that ``found`` (rowids) holds; a row tied with the exact k-th
        (within 1e-6) counts as one of them, so exact ties broken another way do not count as misses."""
        q = np.asarray(query, dtype=np.float32)
        scores = self.matrix @ (q / np.linalg.norm(q))
        k = min(k, scores.shape[0])
        if not k:
            return float(not found)
        kth = float(np.partition(scores, scores.shape[0] - k)[scores.shape[0] - k])
        held = scores[np.isin(self.ids, np.asarray(found, dtype=np.int64))]
        return int(np.count_nonzero(held >= kth - 1e-6)) / k

    def top_k(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        """The ``k`` rows of highest cosine with ``query``, best first."""
        q = np.asarray(query, dtype=np.float32)
        scores = self.matrix @ (q / np.linalg.norm(q))
        n = scores.shape[0]
        k = min(k, n)
        part = np.argpartition(scores, n - k)[n - k :] if k < n else np.arange(n)
        order = part[np.argsort(-scores[part], kind="stable")]
        return [(int(self.ids[i]), float(scores[i])) for i in order]


def _sqlite_vec_connect(path: str) -> Any:
    """A connection with sqlite-vec loaded, from the first binding that allows extensions."""
    import sqlite_vec  # type: ignore[import-untyped,unused-ignore]

    errors: list[str] = []
    for module_name in ("sqlean", "pysqlite3", "sqlite3"):
        try:
            module = __import__(module_name)
            conn = module.connect(path)
            conn.enable_load_extension(True)
            sqlite_vec.load(conn)
            conn.enable_load_extension(False)
            return conn
        except (ImportError, AttributeError, Exception) as exc:  # each binding fails differently
            errors.append(f"{module_name}: {type(exc).__name__}: {exc}")
    raise RuntimeError("; ".join(errors))


def sqlite_vec_status() -> str | None:
    """``None`` when baseline (c) can run, else why not (one line)."""
    try:
        conn = _sqlite_vec_connect(":memory:")
    except ImportError as exc:
        return f"sqlite-vec not installed ({exc}); pip install sqlite-vec sqlean.py"
    except RuntimeError as exc:
        return f"no SQLite binding with extension loading: {exc}"
    conn.close()
    return None


class SqliteVecKNN:
    """Baseline (c): the same vectors in a ``vec0`` table (cosine distance), KNN by ``MATCH``."""

    def __init__(self, path: str, ids: np.ndarray, matrix: np.ndarray) -> None:
        """Build the ``vec0`` table at ``path`` (a file or ``:memory:``) from the vectors."""
        self.conn = _sqlite_vec_connect(path)
        dim = int(matrix.shape[1])
        self.conn.execute(
            f"CREATE VIRTUAL TABLE vec USING vec0(embedding float[{dim}] distance_metric=cosine)"
        )
        with self.conn:
            self.conn.executemany("INSERT INTO vec(rowid, embedding) VALUES (?, ?)", _rows(ids, matrix))
        self.version = str(self.conn.execute("SELECT vec_version()").fetchone()[0])

    def top_k(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        """The ``k`` nearest rows, best first, scored ``1 - cosine distance``."""
        blob = np.asarray(query, dtype=np.float32).tobytes()
        rows = self.conn.execute(
            "SELECT rowid, distance FROM vec WHERE embedding MATCH ? AND k = ? ORDER BY distance", (blob, k)
        ).fetchall()
        return [(int(r[0]), 1.0 - float(r[1])) for r in rows]

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()


def _rows(ids: np.ndarray, matrix: np.ndarray) -> Iterator[tuple[int, bytes]]:
    for rowid, vector in zip(ids, matrix, strict=True):
        yield int(rowid), np.asarray(vector, dtype=np.float32).tobytes()
