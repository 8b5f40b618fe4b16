"""Vectors kept apart by writing system, so a question meets notes in another language on fair terms.

A multilingual model scores a question higher against any note written in the
question's language than against a note in another one: a Chinese question's
mean cosine to Chinese notes stands above its mean to English notes by about as
much as an answer stands above an average note, so ranking raw cosines buries
every cross-lingual answer under the question's own language.
:class:`ScriptVectors` keeps each script group's rows (CJK, other; see
:func:`~langchain_md_memory.text.script_group`) as one run of a :class:`VectorMatrix`,
scores them all with one matrix-vector product, and measures the query's
background in each group in the same pass; the offsets and the ranking by them
are :mod:`..scoring`'s (:func:`~..scoring.combine_backgrounds`,
:func:`~..scoring.offset_top_k`), as for PostgreSQL. A memory written in one
script has one group, offset 0: the scores are the plain cosines.

Example:
    .. code-block:: python

        vectors = ScriptVectors()
        vectors.add([1, 2], [np.array([1.0, 0.0]), np.array([0.0, 1.0])], [SCRIPT_OTHER, SCRIPT_CJK])
        assert vectors.top_k(np.array([1.0, 0.2]), 1)[0][0] == 1
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from ...text import SCRIPT_CJK, SCRIPT_OTHER
from ..rows import from_blob
from ..scoring import Background, combine_backgrounds, offset_top_k, unmeasured_rows
from .connection import IndexConnection
from .schema import VECTOR_JOIN
from .vectors import RESCORE_FACTOR, VectorDtype, VectorMatrix, rescore

K = TypeVar("K", int, str)

__all__ = [
    "SCRIPT_CJK",
    "SCRIPT_OTHER",
    "ScriptVectors",
    "load_script_vectors",
    "scripts_of",
    "stored_vectors",
]


StoredVectors = Callable[[Sequence[int]], Mapping[int, np.ndarray]]
"""The stored float32 vectors of some rows, by rowid (for re-scoring a compact matrix's candidates)."""


class ScriptVectors:
    """A :class:`VectorMatrix` whose groups are script groups, searched as one with per-group offsets."""

    def __init__(self, dtype: VectorDtype = "float32", matrix: VectorMatrix | None = None) -> None:
        self._matrix = matrix if matrix is not None else VectorMatrix(dtype)
        self.dtype = self._matrix.dtype
        self.generation = -1

    @property
    def exact(self) -> bool:
        """True when the matrix holds float32 (scores need no re-scoring)."""
        return self._matrix.exact

    def __len__(self) -> int:
        return len(self._matrix)

    def add(self, rowids: Sequence[int], vectors: Sequence[np.ndarray], groups: Sequence[int]) -> None:
        """Add (or replace) rows; ``groups[i]`` is the script group of ``rowids[i]``."""
        self.remove(rowids)  # a row whose text changed script moves to its new group
        by_group: dict[int, tuple[list[int], list[np.ndarray]]] = {}
        for rowid, vector, group in zip(rowids, vectors, groups, strict=True):
            ids, vecs = by_group.setdefault(group, ([], []))
            ids.append(rowid)
            vecs.append(vector)
        for group, (ids, vecs) in by_group.items():
            self._matrix.add(ids, vecs, group)

    def remove(self, rowids: Sequence[int]) -> None:
        self._matrix.remove(rowids)

    def background(self, query: np.ndarray) -> Background | None:
        """Mean and spread of the query's cosine to all of this memory's notes, measured on its own
        (:meth:`search` measures it in its pass over the vectors)."""
        measured = self._matrix.backgrounds(query).items()
        return combine_backgrounds([(group, rows, stats) for group, (rows, stats) in measured
                                    if stats is not None])[1]

    def top_k(self, query: np.ndarray, k: int, *, offsets: bool = True,
              stored: StoredVectors | None = None) -> list[tuple[int, float]]:
        """:meth:`search`'s ``k`` rows of highest offset cosine, best first: ``(rowid, score in [0, 1])``."""
        return self.search(query, k, offsets=offsets, stored=stored)[0]

    def search(self, query: np.ndarray, k: int, *, offsets: bool = True, stored: StoredVectors | None = None
               ) -> tuple[list[tuple[int, float]], Background | None, set[int]]:
        """The ``k`` rows of highest offset cosine, best first, the query's memory-wide background, and
        the rows among them whose script group is too small for a background of its own (the
        background does not measure them: :class:`~..scoring.HitsBackground`), from one pass over
        the vectors.

        A compact matrix proposes ``RESCORE_FACTOR × k`` candidates per group, which ``stored``
        (their float32 vectors) scores exactly; without it the compact scores stand.
        ``offsets=False`` ranks the plain cosines (what an exact search elsewhere returns).
        """
        tops: dict[int, list[tuple[int, float]]] = {}
        measured: list[tuple[int, int, Background]] = []
        rescoring = None if self.exact else stored
        searched = self._matrix.search_groups(query, k if rescoring is None else k * RESCORE_FACTOR)
        for group, (rows, top, stats) in searched.items():
            if rescoring is not None and top:
                candidates = [rowid for rowid, _ in top]
                top = rescore(query, candidates, rescoring(candidates), k)
            tops[group] = top
            if stats is not None:
                measured.append((group, rows, stats))
        shifts, background = combine_backgrounds(measured)
        found = [(rowid, group, score) for group, top in tops.items() for rowid, score in top]
        ranked = offset_top_k(found, shifts if offsets else {}, k, groups=len(searched))
        kept = {rowid for rowid, _ in ranked}
        return ranked, background, unmeasured_rows((f for f in found if f[0] in kept), shifts)


def load_script_vectors(db: IndexConnection, dtype: VectorDtype = "float32") -> ScriptVectors:
    """Every stored vector of the index, by the script group its chunk was written in.

    Streamed into one preallocated matrix, a group at a time: never every blob at once, never text.
    The caller holds ``db.lock``.
    """
    joined = f"FROM chunks c JOIN {VECTOR_JOIN}"
    expected = int(db.query(f"SELECT count(*) {joined}").fetchone()[0])
    matrix = VectorMatrix(dtype)
    for (script,) in db.query(f"SELECT DISTINCT c.script {joined} ORDER BY c.script").fetchall():
        rows = db.stream(f"SELECT c.rowid, e.vector {joined} WHERE c.script = ?", (int(script),))
        matrix.extend(rows, int(script), expected=expected)
    return ScriptVectors(dtype, matrix)


def scripts_of(db: IndexConnection, rowids: Sequence[int]) -> dict[int, int]:
    """The script group of each chunk by rowid (absent rowids are left out)."""
    rows = _rows_in(db, "SELECT rowid, script FROM chunks WHERE rowid", rowids)
    return {int(r[0]): int(r[1]) for r in rows}


def stored_vectors(db: IndexConnection, key: str, keys: Sequence[K]) -> dict[K, np.ndarray]:
    """Stored float32 vectors by ``key`` (``"rowid"`` or ``"id"``); chunks without one are left out."""
    sql = f"SELECT c.{key}, e.vector FROM chunks c JOIN {VECTOR_JOIN} WHERE c.{key}"
    return {r[0]: from_blob(r[1]) for r in _rows_in(db, sql, keys)}


def _rows_in(db: IndexConnection, select: str, keys: Sequence[Any]) -> Iterator[Any]:
    """The rows of ``select IN (keys)``, 500 keys a statement (well under SQLite's bound-variable limit)."""
    for start in range(0, len(keys), 500):
        part = list(keys[start : start + 500])
        yield from db.query(f"{select} IN ({','.join('?' * len(part))})", part)
