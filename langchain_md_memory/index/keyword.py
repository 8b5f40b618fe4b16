"""Keyword scoring: BM25 with a positive idf.

FTS5 finds the chunks that match; these pure functions score what it found
(:mod:`.keyword_topk` finds the exact top k without scoring every match).

Example:
    .. code-block:: python

        idf = {"bond": lucene_idf(10, 2)}
        assert bm25_score(["bond"], ["bond", "ladder"], idf, avg_len=2.0) > 0
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence

__all__ = [
    "BM25_B", "BM25_K1", "MAX_QUERY_TERMS", "POSTINGS_BUDGET", "LastTermIdf", "bm25_score", "lucene_idf",
]

BM25_K1 = 1.2
BM25_B = 0.75
MAX_QUERY_TERMS = 32
"""A longer query is cut to its first this many terms (keyword recall and the coverage weights)."""
# The first round of keyword recall ranks the rarest query terms up to about this many postings; the
# frequent terms join only when bounds say they could change the top k (see keyword_topk).
POSTINGS_BUDGET = 5_000


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
