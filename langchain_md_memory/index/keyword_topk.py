"""Exact BM25 top-k over FTS5 without reading every posting of the query's frequent terms.

The ranking is :func:`~langchain_md_memory.index.keyword.bm25_score` (Lucene idf) over every query
term. Scoring every chunk that matches any term is exact but costs one evaluation per posting, and a
frequent term in a large memory has tens of thousands. A max-score search gets the same top k from a
small pool:

1. The rarest terms (within a postings budget) are *essential*: FTS5 ranks the chunks matching them
   by its own ``bm25()`` and returns the best ``width``; a second FTS5 query ranks the chunks that
   match an essential term *and* a frequent one (an ``AND``, which skips through the frequent
   term's postings instead of reading them all).
2. That pool is rescored exactly. Every chunk left out is bounded from above: one matching only
   frequent terms scores at most the sum of their bounds (``idf · (k1 + 1)``); one FTS5 ranked
   lower scores at most FTS5's cut-off times the largest ratio of our idf to FTS5's.
3. When the pool's k-th score clears every bound, the pool's top k is the exhaustive top k. When
   chunks matching only frequent terms might belong, every term becomes essential (one FTS5
   ranking of all of them); when FTS5's cut-off is too close, the pool widens; and it repeats.

Only a query made of terms found in most chunks (stop words only) can exhaust the widening; its
answer is then the best of one wide FTS5 ranking of all its terms, rescored: close, not proven exact.

Example:
    .. code-block:: python

        hits = top_k(db.query, ["bond", "ladder"], {"bond": 40, "ladder": 3}, n_docs=1000,
                     avg_len=40.0, limit=24)   # [(score, rowid)], best first
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..text import match_expression
from .keyword import BM25_K1, POSTINGS_BUDGET, bm25_score, lucene_idf

__all__ = ["chunk_scores", "document_frequencies", "fts5_idf", "term_bound", "top_k"]

Query = Callable[[str, Sequence[Any]], Sequence[Any]]
"""Runs one SQL statement and returns its rows (``IndexConnection.query``)."""

# FTS5's bm25() gives a term found in about half of the chunks or more this idf.
_FTS5_CLAMPED = 1e-6
# An idf this close to 0 may be clamped by FTS5 (its row count can differ from ours by a few orphans):
# treating it as clamped only loosens the bounds, never makes them wrong.
_FTS5_NEAR_CLAMP = 0.01
# The pool widens (x4 a round) up to this many times its first width, and only while the terms
# involved have at most this many postings: beyond that a round costs more than it can win.
_MAX_WIDEN = 16
_WIDEN_POSTINGS = 4 * POSTINGS_BUDGET


def document_frequencies(query: Query, terms: Sequence[str]) -> dict[str, int]:
    """How many chunks hold each term, from the FTS5 vocabulary (a term no chunk holds is absent)."""
    df: dict[str, int] = {}
    for start in range(0, len(terms), 500):  # well under SQLite's limit of bound variables
        part = list(terms[start : start + 500])
        marks = ",".join("?" * len(part))
        df.update(query(f"SELECT term, doc FROM chunks_vocab WHERE term IN ({marks})", part))
    return df


def chunk_scores(query: Query, ids: Sequence[str], terms: Sequence[str], idf: Mapping[str, float],
                 avg_len: float) -> dict[str, float]:
    """The BM25 of each chunk of ``ids`` (by chunk id) holding some of ``terms``, from its indexed terms.

    The score :func:`top_k` ranks by, for chunks another path found: what they would have scored here.
    """
    scores: dict[str, float] = {}
    for start in range(0, len(ids), 500):
        part = list(ids[start : start + 500])
        marks = ",".join("?" * len(part))
        sql = ("SELECT c.id, f.terms FROM chunks c JOIN chunks_fts f ON f.rowid = c.rowid "
               f"WHERE c.id IN ({marks})")
        for chunk_id, indexed in query(sql, part):
            if score := bm25_score(terms, str(indexed).split(), idf, avg_len):
                scores[str(chunk_id)] = score
    return scores


def fts5_idf(n_docs: int, doc_freq: int) -> float:
    """The idf FTS5's ``bm25()`` uses, ``ln((N - n + 0.5) / (n + 0.5))`` (a lower bound near its clamp)."""
    raw = math.log((n_docs - doc_freq + 0.5) / (doc_freq + 0.5)) if doc_freq < n_docs else 0.0
    return raw if raw > _FTS5_NEAR_CLAMP else _FTS5_CLAMPED


def term_bound(idf: float) -> float:
    """The most one term can add to a chunk's BM25 score: ``tf / (tf + norm)`` stays below 1."""
    return idf * (BM25_K1 + 1)


def top_k(
    query: Query,
    terms: Sequence[str],
    df: Mapping[str, int],
    *,
    n_docs: int,
    avg_len: float,
    limit: int,
    budget: int = POSTINGS_BUDGET,
) -> list[tuple[float, int]]:
    """The ``limit`` best ``(bm25, rowid)`` of the chunks matching any of ``terms``, best first.

    Ties go to the lower rowid. ``df`` holds each term's document frequency (absent: 0);
    ``budget`` is how many postings the first round may rank (later rounds grow it as needed).
    """
    idf = {t: lucene_idf(n_docs, df.get(t, 0)) for t in terms}
    known = sorted((t for t in terms if df.get(t, 0) > 0), key=lambda t: df[t])
    if not known or limit <= 0:
        return []
    ratio = {t: idf[t] / fts5_idf(n_docs, df[t]) for t in known}
    essential = 1
    while essential < len(known) and sum(df[t] for t in known[: essential + 1]) <= budget:
        essential += 1
    if _outside(idf, known[essential:]) > 4 * sum(idf[t] for t in known[:essential]):
        # Chunks matching only the frequent terms would likely outscore most matching the rare ones
        # (many terms of similar frequency, e.g. the bigrams of a Chinese sentence): a first round
        # could not settle it, so rank every term from the start.
        essential = len(known)
    first_width = width = max(2 * limit, 32)
    scores: dict[int, float] = {}

    def rescore(rowids: Sequence[int]) -> float:
        """Score the new rowids exactly; returns the k-th best score so far (0 with fewer than k)."""
        new = [r for r in rowids if r not in scores]
        for start in range(0, len(new), 500):
            part = new[start : start + 500]
            marks = ",".join("?" * len(part))
            sql = f"SELECT rowid, terms FROM chunks_fts WHERE rowid IN ({marks})"
            for rowid, indexed in query(sql, part):
                scores[rowid] = bm25_score(terms, indexed.split(), idf, avg_len)
        return heapq.nlargest(limit, scores.values())[-1] if len(scores) >= limit else 0.0

    def best() -> list[tuple[float, int]]:
        return sorted(((s, r) for r, s in scores.items()), key=lambda item: (-item[0], item[1]))[:limit]

    def widest() -> None:
        """Rescore one ranking of all the terms, as wide as widening may go (the last resort)."""
        rescore([r for r, _ in _ranked(query, match_expression(known), _MAX_WIDEN * first_width)])

    if len(known) > 1 and df[known[0]] > _WIDEN_POSTINGS:
        # Every term is in a large share of the chunks (a query of stop words): no round could clear
        # its bounds in budget, so go straight to the last resort below.
        widest()
        return best()

    while True:
        rare, frequent = known[:essential], known[essential:]
        # Frequent terms FTS5 clamps are left out of the AND: their ratio would void its bound.
        joined = [t for t in frequent if ratio[t] * _FTS5_CLAMPED < idf[t]]
        loose = _outside(idf, [t for t in frequent if t not in joined])
        postings = sum(df[t] for t in rare)
        # A few chunks match the rare terms: take them all (one more than there can be) and skip the AND.
        rare_width = postings + 1 if postings < 4 * width else width
        ranked = _ranked(query, match_expression(rare), rare_width)
        kth = rescore([r for r, _ in ranked])
        bounds = []  # the most a chunk left out of the pool can score, by the reason it was left out
        if len(ranked) == rare_width:
            cut = max(ratio[t] for t in rare) * ranked[-1][1]  # ranked lower by FTS5 on the rare terms
            if joined and not _clears(kth, cut + _outside(idf, frequent)):
                both = f"({match_expression(rare)}) AND ({match_expression(joined)})"
                ranked = _ranked(query, both, width)
                kth = rescore([r for r, _ in ranked])
                bounds.append(cut + loose)  # no joined term: not in the AND
                if len(ranked) == width:
                    bounds.append(max(ratio[t] for t in rare + joined) * ranked[-1][1] + loose)
            else:
                bounds.append(cut + _outside(idf, frequent))
        if not _clears(kth, _outside(idf, frequent)):
            essential = len(known)  # chunks matching only frequent terms may belong: rank them all
            continue
        if all(_clears(kth, bound) for bound in bounds):
            return best()
        if width >= _MAX_WIDEN * first_width or postings + sum(df[t] for t in joined) > _WIDEN_POSTINGS:
            # Only terms found in most chunks get here (a query of stop words): no bound can clear in
            # budget, and widening round by round would rank every posting again each time. One ranking
            # of all the terms, as wide as widening may go, is the pool: FTS5 gives such terms one idf,
            # so its order is close to ours and a wide pool holds the true top k (not proven).
            if width < _MAX_WIDEN * first_width:
                widest()
            return best()
        width *= 4


def _outside(idf: Mapping[str, float], terms: Sequence[str]) -> float:
    """The most a chunk matching only ``terms`` can score."""
    return sum(term_bound(idf[t]) for t in terms)


def _clears(kth: float, bound: float) -> bool:
    # A chunk left out can at most tie the k-th score (rounding aside): the top k stands.
    return kth >= bound * (1 - 1e-9)


def _ranked(query: Query, expression: str, width: int) -> list[tuple[int, float]]:
    """The ``width`` best ``(rowid, FTS5 bm25)`` for ``expression``, bm25 made positive."""
    rows = query(
        "SELECT rowid, -bm25(chunks_fts) AS s FROM chunks_fts WHERE chunks_fts MATCH ? "
        "ORDER BY s DESC, rowid LIMIT ?",
        (expression, width),
    )
    return [(int(r[0]), float(r[1])) for r in rows]
