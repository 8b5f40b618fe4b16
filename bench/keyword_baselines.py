"""What keyword recall is measured against: the exhaustive BM25 top k, and the bounded recall it replaced.

- :func:`exhaustive_keyword` scores *every* chunk matching any query term with the package's own
  :func:`~langchain_md_memory.index.scoring.bm25_score` (Lucene idf, the same query terms: stop words
  dropped, at most 32), one chunk at a time from its FTS5 terms, and keeps the best ``limit``, ties to
  the lower rowid. It is the reference: no postings kept in memory, no numpy, no cap.
- :func:`bounded_keyword_before` is keyword recall as it was before the exact search, kept line for
  line so both run in one process: the rarest terms up to 5,000 postings, FTS5's top 48 by its
  ``bm25()``, rescored.

Both read the index through its documented interface: ``snapshot()``, ``read()`` (read-only SQL),
``corpus_stats()`` and ``records()``. :func:`index_keyword` is the index's own keyword recall of a query,
its terms cut as search cuts them.

Example:
    .. code-block:: python

        ids = [rowid for _, rowid in exhaustive_keyword(mem.index, "bond ladder", 24)]
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_md_memory.index.scoring import BM25_B, BM25_K1, MAX_QUERY_TERMS, bm25_score, lucene_idf
from langchain_md_memory.index.sqlite import MemoryIndex
from langchain_md_memory.text import match_expression, query_terms

__all__ = ["agreement", "bounded_keyword_before", "exhaustive_keyword", "index_keyword", "top_rowids"]

_MAX_TERMS = 32
_BUDGET_BEFORE = 5_000


def _terms_and_df(index: MemoryIndex, query: str) -> tuple[list[str], dict[str, int]]:
    terms = query_terms(query)[:_MAX_TERMS]
    if not terms:
        return [], {}
    marks = ",".join("?" * len(terms))
    rows = index.read(f"SELECT term, doc FROM chunks_vocab WHERE term IN ({marks})", terms)
    return terms, {str(t): int(n) for t, n in rows}


def exhaustive_keyword(index: MemoryIndex, query: str, limit: int) -> list[tuple[float, int]]:
    """``(bm25, rowid)`` of the ``limit`` best chunks, every matching chunk scored."""
    with index.snapshot():
        terms, df = _terms_and_df(index, query)
        if not terms:
            return []
        n_docs, avg_len = index.corpus_stats()
        idf = {t: lucene_idf(n_docs, df.get(t, 0)) for t in terms}
        rows = index.read(
            "SELECT rowid, terms FROM chunks_fts WHERE chunks_fts MATCH ?", (match_expression(terms),)
        )
        scored = [(bm25_score(terms, text.split(), idf, avg_len), int(rowid)) for rowid, text in rows]
    scored.sort(key=lambda item: (-item[0], item[1]))
    return scored[:limit]


def _bounded_terms(terms: Sequence[str], df: Mapping[str, int], budget: int) -> list[str]:
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


def _bm25_before(
    terms: Sequence[str], doc_terms: Sequence[str], idf: Mapping[str, float], avg_len: float
) -> float:
    counts = Counter(doc_terms)
    norm = BM25_K1 * (1 - BM25_B + BM25_B * len(doc_terms) / avg_len)
    return sum(idf[t] * counts[t] * (BM25_K1 + 1) / (counts[t] + norm) for t in terms if counts[t])


def bounded_keyword_before(index: MemoryIndex, query: str, limit: int) -> list[tuple[Any, float]]:
    """Keyword recall before the exact search: ``[(ChunkRecord, score in (0, 1])]``, best first."""
    with index.snapshot():
        terms, df = _terms_and_df(index, query)
        if not terms or limit <= 0:
            return []
        candidates = [r[0] for r in index.read(
            "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY bm25(chunks_fts), rowid LIMIT ?",
            (match_expression(_bounded_terms(terms, df, _BUDGET_BEFORE)), max(2 * limit, 32)),
        )]
        if not candidates:
            return []
        n_docs, avg_len = index.corpus_stats()
        idf = {t: lucene_idf(n_docs, df.get(t, 0)) for t in terms}
        marks = ",".join("?" * len(candidates))
        scored = [
            (_bm25_before(terms, text.split(), idf, avg_len), rowid)
            for rowid, text in index.read(
                f"SELECT rowid, terms FROM chunks_fts WHERE rowid IN ({marks})", candidates
            )
        ]
        scored.sort(key=lambda item: (-item[0], item[1]))
        top = scored[:limit]
        if not top:
            return []
        records = index.records([rowid for _, rowid in top])
    best = top[0][0]
    return [(records[r], max(s / best, 1e-6) if best > 0 else 1.0) for s, r in top if r in records]


def index_keyword(index: MemoryIndex, query: str, limit: int) -> list[tuple[Any, float]]:
    """The index's keyword recall of ``query`` alone: ``(record, score / best)``, best first."""
    return index.keyword_search([query_terms(query)[:MAX_QUERY_TERMS]], limit).hits[0]


def top_rowids(index: MemoryIndex, hits: Sequence[tuple[Any, float]]) -> set[int]:
    """The rowids of ``keyword_search`` hits (records carry chunk ids)."""
    ids = [record.id for record, _ in hits]
    if not ids:
        return set()
    marks = ",".join("?" * len(ids))
    return {int(r[0]) for r in index.read(f"SELECT rowid FROM chunks WHERE id IN ({marks})", ids)}


def agreement(found: set[int], exact: set[int]) -> float:
    """Share of the exhaustive top k in ``found``; a query nothing matches agrees when both are empty."""
    return len(found & exact) / len(exact) if exact else float(not found)
