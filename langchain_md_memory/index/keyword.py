"""Keyword scoring: BM25 with a positive idf, and the bound on FTS5 recall.

FTS5 finds the chunks that match; these pure functions pick which terms it
recalls with and score what it found.

Example:
    .. code-block:: python

        idf = {"bond": lucene_idf(10, 2)}
        assert bm25_score(["bond"], ["bond", "ladder"], idf, avg_len=2.0) > 0
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence

__all__ = ["POSTINGS_BUDGET", "bm25_score", "bounded_terms", "lucene_idf"]

BM25_K1 = 1.2
BM25_B = 0.75
# Keyword recall reads about this many postings at most (measured in bench/: at 100k chunks it makes
# keyword recall 8x faster; at 10k the top 24 keep 95% of the exact set).
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
    counts = Counter(doc_terms)
    norm = BM25_K1 * (1 - BM25_B + BM25_B * len(doc_terms) / avg_len)
    return sum(idf[t] * counts[t] * (BM25_K1 + 1) / (counts[t] + norm) for t in terms if counts[t])


def bounded_terms(terms: Sequence[str], df: Mapping[str, int], budget: int = POSTINGS_BUDGET) -> list[str]:
    """The query terms FTS5 recalls candidates with, capped at ``budget`` postings.

    FTS5 scores every chunk matching any term, so one stopword in a 100k-chunk
    memory costs ~100k BM25 evaluations. Within the budget (always, in a small
    memory) every term is kept; over it, the rarest terms are kept and the most
    frequent dropped from recall only: every term still counts in the scoring.
    Terms the vocabulary does not know are always kept.
    """
    if sum(df.get(t, 0) for t in terms) <= budget:
        return list(terms)
    kept: set[str] = {t for t in terms if t not in df}
    total = 0
    for term in sorted((t for t in terms if t in df), key=lambda t: df[t]):
        if total and total + df[term] > budget:
            break
        kept.add(term)
        total += df[term]
    return [t for t in terms if t in kept]
