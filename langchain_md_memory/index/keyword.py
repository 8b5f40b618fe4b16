"""Keyword scoring: BM25 with a positive idf.

:func:`bm25_score` scores one document, the definition; :func:`bm25_top_k` scores every posting of
the query's terms at once with numpy (the same arithmetic in the same order, so the same floats) and
keeps the best (:mod:`.postings` holds the postings).

Example:
    .. code-block:: python

        idf = {"bond": lucene_idf(10, 2)}
        assert bm25_score(["bond"], ["bond", "ladder"], idf, avg_len=2.0) > 0
        bond = Postings(np.array([3, 7]), np.array([1, 2]), np.array([2, 5]))
        assert [rowid for _, rowid in bm25_top_k([bond], [idf["bond"]], avg_len=2.0, limit=1)] == [3]
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence
from typing import NamedTuple, TypeVar

import numpy as np

from .topk import at_or_above_kth

__all__ = [
    "BM25_B", "BM25_K1", "MAX_QUERY_TERMS", "LastTermIdf", "Postings", "bm25_parts", "bm25_score",
    "bm25_top_k", "lucene_idf", "scaled_to_best",
]

T = TypeVar("T")

BM25_K1 = 1.2
BM25_B = 0.75
MAX_QUERY_TERMS = 32
"""A longer query is cut to its first this many terms (keyword recall and the coverage weights)."""


def lucene_idf(n_docs: int, doc_freq: int) -> float:
    """``ln(1 + (N - n + 0.5) / (n + 0.5))``: unlike FTS5's idf it never drops to ~0.

    FTS5's ``bm25()`` clamps the idf of a term found in more than half of the
    chunks to 1e-6, so in a small memory a chunk matching only such a term
    would score nothing.
    """
    return math.log(1.0 + (n_docs - doc_freq + 0.5) / (doc_freq + 0.5))


def bm25_score(
    terms: Sequence[str], doc_terms: Sequence[str], idf: Mapping[str, float], avg_len: float
) -> float:
    """Okapi BM25 of one document (its indexed terms) for the query terms."""
    norm = BM25_K1 * (1 - BM25_B + BM25_B * len(doc_terms) / avg_len)
    score = 0.0
    for term in terms:
        # A few C-level counts beat a Counter of the whole document: queries have a few terms.
        tf = doc_terms.count(term)
        if tf:
            score += idf[term] * tf * (BM25_K1 + 1) / (tf + norm)
    return score


class Postings(NamedTuple):
    """The chunks holding one term: rowids ascending, the term's count in each, each chunk's term count."""

    rowids: np.ndarray  # int64
    tf: np.ndarray  # int32
    lengths: np.ndarray  # int32


def bm25_parts(postings: Postings, idf: float, avg_len: float) -> np.ndarray:
    """Each posting's part of its chunk's BM25: :func:`bm25_score`'s expression for one term, over arrays.

    The same operations in the same order on the same float64 values: the same floats.
    """
    freq, length = postings.tf.astype(np.float64), postings.lengths.astype(np.float64)
    norm = BM25_K1 * (1 - BM25_B + BM25_B * length / avg_len)
    parts: np.ndarray = idf * freq * (BM25_K1 + 1) / (freq + norm)
    return parts


def bm25_top_k(postings: Sequence[Postings], idf: Sequence[float], avg_len: float, limit: int,
               parts: Sequence[np.ndarray] | None = None) -> list[tuple[float, int]]:
    """The ``limit`` best ``(bm25, rowid)`` of the chunks in ``postings``, best first, ties to lower rowids.

    ``postings[i]`` is the i-th query term's, weighed by ``idf[i]`` (``parts[i]``, when given, is
    its :func:`bm25_parts`, worked out before). Every posting is scored: the exhaustive top k,
    whatever the terms' frequencies. A chunk's parts are added in query-term order (``bincount``
    adds in array order), so each score is the float :func:`bm25_score` gives.
    """
    if parts is None:
        parts = [bm25_parts(p, weight, avg_len) for p, weight in zip(postings, idf, strict=True)]
    held = [(p.rowids, part) for p, part in zip(postings, parts, strict=True) if len(p.rowids)]
    if not held or limit <= 0:
        return []
    if len(held) == 1:
        ids, scores = held[0]
    else:
        every, weights = np.concatenate([r for r, _ in held]), np.concatenate([w for _, w in held])
        top = int(every.max())
        if top <= 32 * len(every):  # a pass over the rowids' range beats a sort (every score is > 0)
            sums = np.bincount(every, weights=weights, minlength=top + 1)
            ids = np.flatnonzero(sums > 0)  # a boolean mask: numpy finds its nonzeros far faster
            scores = sums[ids]
        else:
            ids, inverse = np.unique(every, return_inverse=True)
            scores = np.bincount(inverse, weights=weights, minlength=len(ids))
    if len(ids) > limit:  # the candidates at or above the k-th score, ties included, then exact order
        keep = at_or_above_kth(scores, limit)
        ids, scores = ids[keep], scores[keep]
    order = np.lexsort((ids, -scores))[:limit]
    return [(float(scores[i]), int(ids[i])) for i in order]


def scaled_to_best(top: Sequence[tuple[float, int]], records: Mapping[int, T]) -> list[tuple[T, float]]:
    """``(record, score / best score)`` of a top k, in (0, 1]; a rowid without a record is left out."""
    if not top:
        return []
    best = top[0][0]
    if best <= 0.0:
        return [(records[rowid], 1.0) for _, rowid in top if rowid in records]
    return [(records[rowid], max(score / best, 1e-6)) for score, rowid in top if rowid in records]


class LastTermIdf:
    """The idf a thread's last keyword search read, handed once to the ``term_idf`` call that follows.

    A search asks for keyword candidates and then for its terms' weights: the document
    frequencies are read once (for PostgreSQL, a count over every matching row).
    """

    def __init__(self) -> None:
        self._local = threading.local()

    def keep(self, terms: Sequence[str], idf: Mapping[str, float]) -> None:
        """Remember ``idf`` (of ``terms``) for this thread's next :meth:`take`."""
        self._local.last = (tuple(terms), idf)

    def take(self, terms: Sequence[str]) -> dict[str, float] | None:
        """The kept idf if it is of these ``terms`` (then forgotten), else ``None``."""
        kept = self.peek(terms)
        self._local.last = None
        return kept

    def peek(self, terms: Sequence[str]) -> dict[str, float] | None:
        """The kept idf if it is of these ``terms`` (kept for the next :meth:`take`), else ``None``."""
        last: tuple[tuple[str, ...], Mapping[str, float]] | None = getattr(self._local, "last", None)
        return dict(last[1]) if last is not None and last[0] == tuple(terms) else None
