"""The two candidate pools from PostgreSQL: BM25 over the GIN-matched chunks, cosine over pgvector.

Keyword recall asks the GIN index which of a tenant's chunks hold any query
term, with every term's document frequency in the same statement, and scores
the matches with the package's own BM25 (:func:`~langchain_md_memory.index.scoring.bm25_score`,
Lucene idf) from their stored terms: the same scores the SQLite index gives.
Only when more than :data:`KEYWORD_POOL` chunks match does PostgreSQL's
``ts_rank`` choose which of them are scored.

Vector recall measures the query's background per script group (as the SQLite
index does, :mod:`langchain_md_memory.index.sqlite.script_groups`), combines them
and ranks by offset cosine with :mod:`langchain_md_memory.index.scoring`, and takes
each group's nearest chunks, exactly or through the tenant's HNSW graph of the group.

Example:
    .. code-block:: python

        top, idf = keyword_top_k(conn, "alice", ["bond", "ladder"], 24)  # [(bm25, rowid)], best first
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..index.scoring import (
    BACKGROUND_SAMPLE,
    MIN_BACKGROUND,
    Calibration,
    bm25_score,
    combine_backgrounds,
    lucene_idf,
    offset_top_k,
    unmeasured_rows,
)
from .connection import Conn, PostgresDatabase
from .graphs import HNSW_EF_SEARCH, hnsw_query

__all__ = [
    "KEYWORD_POOL",
    "MAX_LEXEME_BYTES",
    "calibrate",
    "corpus_stats",
    "document_frequencies",
    "keyword_top_k",
    "lexemes",
    "parse_vector",
    "tsquery",
    "vector_literal",
    "vector_top_k",
]

KEYWORD_POOL = 5_000
"""Matching chunks scored exactly per query; beyond it ``ts_rank`` picks which."""

MAX_LEXEME_BYTES = 2_000
"""PostgreSQL refuses longer lexemes (2046 bytes); a term that long is never worth matching anyway."""

_rows = PostgresDatabase.rows


def lexemes(terms: Sequence[str]) -> list[str]:
    """``terms`` PostgreSQL can hold as lexemes (non-empty, short enough)."""
    return [t for t in terms if t and len(t.encode("utf-8")) <= MAX_LEXEME_BYTES]


def tsquery(terms: Sequence[str]) -> str:
    """An OR of the quoted terms, as tsquery text (the terms are lexemes as stored, not parsed)."""
    return " | ".join("'" + t.replace("\\", "\\\\").replace("'", "''") + "'" for t in terms)


def document_frequencies(conn: Conn, tenant: str, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
    """How many of the tenant's chunks hold any of ``terms`` (lexemes), and each of them."""
    counts = ", ".join("count(*) FILTER (WHERE tsv @@ %s::tsquery)" for _ in terms)
    row = _rows(conn, f"SELECT count(*), {counts} FROM md_memory_chunks WHERE tenant = %s "
                "AND tsv @@ %s::tsquery", [*(tsquery([t]) for t in terms), tenant, tsquery(terms)])[0]
    return int(row[0]), {t: int(n) for t, n in zip(terms, row[1:], strict=True)}


def corpus_stats(conn: Conn, tenant: str) -> tuple[int, float]:
    """The tenant's chunk count and mean indexed terms per chunk (BM25's N and average length)."""
    n_docs, avg_len = _rows(conn, "SELECT count(*), avg(n_terms) FROM md_memory_chunks WHERE tenant = %s",
                            (tenant,))[0]
    return int(n_docs), float(avg_len or 1.0) or 1.0


def keyword_top_k(conn: Conn, tenant: str, terms: Sequence[str], limit: int
                  ) -> tuple[list[tuple[float, int]], dict[str, float]]:
    """The ``limit`` best ``(bm25, rowid)`` of the tenant's chunks holding any of ``terms``, best first,
    and the idf of every one of ``terms``."""
    asked, terms = terms, lexemes(terms)
    if not asked:
        return [], {}
    matched, df = document_frequencies(conn, tenant, terms) if terms else (0, {})
    n_docs, avg_len = corpus_stats(conn, tenant)
    idf = {t: lucene_idf(n_docs, df.get(t, 0)) for t in asked}
    if matched == 0 or limit <= 0:
        return [], idf
    query = tsquery(terms)
    order = "ORDER BY ts_rank(tsv, %s::tsquery) DESC, rowid " if matched > KEYWORD_POOL else ""
    params: list[Any] = [tenant, query] + ([query] if order else []) + [KEYWORD_POOL]
    rows = _rows(conn, "SELECT rowid, terms FROM md_memory_chunks WHERE tenant = %s AND tsv @@ %s::tsquery "
                 f"{order}LIMIT %s", params)
    scored = [(bm25_score(terms, str(indexed).split(), idf, avg_len), int(rowid)) for rowid, indexed in rows]
    scored.sort(key=lambda item: (-item[0], item[1]))
    return scored[:limit], idf


def vector_literal(vector: np.ndarray) -> str:
    """A vector as pgvector text; float32 values round-trip exactly."""
    return "[" + ",".join(map(repr, np.asarray(vector, dtype=np.float32).ravel().tolist())) + "]"


def parse_vector(text: str) -> np.ndarray:
    """pgvector text as a float32 numpy vector."""
    inner = text.strip()[1:-1]
    return np.array(inner.split(",") if inner else [], dtype=np.float32)


def calibrate(conn: Conn, tenant: str, query: np.ndarray) -> tuple[Calibration, dict[int, int]]:
    """The query's calibration (each script group's offset, the memory-wide background) and each group's
    vector count.

    The background reads up to ``BACKGROUND_SAMPLE`` vectors per group (lowest row ids first), as
    the in-memory matrix reads its first rows; a group with fewer than ``MIN_BACKGROUND`` is left out.
    """
    q = np.asarray(query, dtype=np.float32).ravel()
    norm = float(np.linalg.norm(q))
    if norm == 0.0 or not math.isfinite(norm):
        return ({}, None), {}
    # Each group's count, and its first rows' cosines, through md_memory_chunks_vectors: the sample
    # reads BACKGROUND_SAMPLE rows of the group in rowid order, never every vector of the tenant.
    literal = vector_literal(q)
    rows = _rows(
        conn,
        "SELECT g.script, g.n, s.mean, s.std FROM (SELECT script, count(*) AS n FROM md_memory_chunks "
        "WHERE tenant = %(t)s AND dim = %(d)s AND embedding IS NOT NULL GROUP BY script) AS g "
        "CROSS JOIN LATERAL (SELECT avg(1 - (embedding <=> %(q)s::vector)) AS mean, "
        "stddev_pop(1 - (embedding <=> %(q)s::vector)) AS std FROM (SELECT embedding FROM md_memory_chunks "
        "WHERE tenant = %(t)s AND script = g.script AND dim = %(d)s AND embedding IS NOT NULL "
        "ORDER BY rowid LIMIT %(k)s) AS x) AS s",
        {"t": tenant, "d": q.shape[0], "q": literal, "k": BACKGROUND_SAMPLE},
    )
    sizes = {int(g): int(n) for g, n, _, _ in rows}
    measured = [(int(g), int(n), (float(mean), float(std or 0.0))) for g, n, mean, std in rows
                if mean is not None and min(int(n), BACKGROUND_SAMPLE) >= MIN_BACKGROUND]
    return combine_backgrounds(measured), sizes


def vector_top_k(conn: Conn, tenant: str, query: np.ndarray, limit: int, *, hnsw_min_rows: int | None,
                 offsets: dict[int, float], sizes: dict[int, int]
                 ) -> tuple[list[tuple[int, float]], set[int]]:
    """The ``limit`` rows of highest offset cosine, best first: ``(rowid, score in [0, 1])``, and the rows
    among them whose script group is too small for a background of its own (no offset: the background
    does not measure them, see :class:`~langchain_md_memory.index.scoring.HitsBackground`).

    A script group of at least ``hnsw_min_rows`` vectors is asked through the tenant's HNSW graph of
    that group (:mod:`.graphs`); one whose graph answer comes up short is searched exactly. The
    other groups (all of them when ``hnsw_min_rows`` is ``None``) are ranked by one exact scan of
    the tenant's vectors. ``offsets`` and ``sizes``: the query's :func:`calibrate`.
    """
    q = np.asarray(query, dtype=np.float32).ravel()
    if not sizes or limit <= 0:
        return [], set()
    literal, dim = vector_literal(q), q.shape[0]
    graphed = {g for g, n in sizes.items() if hnsw_min_rows is not None and n >= hnsw_min_rows}
    rows: list[tuple[int, int, float]] = []
    for group in sorted(graphed):
        rows += _hnsw_group(conn, tenant, literal, dim, group, limit, sizes[group])
    if graphed != sizes.keys():
        rows += _exact_by_group(conn, tenant, literal, dim, limit, sorted(sizes.keys() - graphed))
    cosines = [(int(r), int(g), min(1.0, max(0.0, float(c)))) for r, g, c in rows]  # clipped as SQLite's are
    ranked = offset_top_k(cosines, offsets, limit, groups=len(sizes))
    kept = {rowid for rowid, _ in ranked}
    return ranked, unmeasured_rows((c for c in cosines if c[0] in kept), offsets)


def _hnsw_group(conn: Conn, tenant: str, literal: str, dim: int, group: int, limit: int,
                size: int) -> list[tuple[int, int, float]]:
    """``(rowid, group, cosine)``: a group's nearest rows by its graph, exactly when it comes up short."""
    # Sorting disabled: the graph's ordered scan is then the plan whenever the graph exists, whatever
    # the table's statistics say (a fresh table's would pick a sort of the tenant's rows).
    _rows(conn, f"SET LOCAL hnsw.ef_search = {max(min(HNSW_EF_SEARCH, 1000), min(limit, 1000))}")
    # No try/finally: after an error the transaction is aborted and a reset would only mask it.
    _rows(conn, "SET LOCAL enable_sort = off")
    top = _rows(conn, hnsw_query(tenant, dim, group), (literal, literal, limit))
    _rows(conn, "SET LOCAL enable_sort = on")
    if len(top) < min(limit, size):
        return _exact_by_group(conn, tenant, literal, dim, limit, [group])
    return [(int(r), group, float(c)) for r, c in top]


def _exact_by_group(conn: Conn, tenant: str, literal: str, dim: int, limit: int,
                    groups: Sequence[int]) -> list[tuple[int, int, float]]:
    """``(rowid, group, cosine)``: each of these script groups' ``limit`` nearest rows from one scan."""
    rows = _rows(
        conn,
        "SELECT rowid, script, 1 - d FROM (SELECT rowid, script, d, row_number() OVER "
        "(PARTITION BY script ORDER BY d, rowid) AS rn FROM (SELECT rowid, script, embedding <=> %s::vector "
        "AS d FROM md_memory_chunks WHERE tenant = %s AND dim = %s AND script = ANY(%s) "
        "AND embedding IS NOT NULL) AS x) AS y WHERE rn <= %s",
        (literal, tenant, dim, list(groups), limit),
    )
    return [(int(r), int(g), float(c)) for r, g, c in rows]
