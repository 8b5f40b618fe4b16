"""One tenant's derived index in PostgreSQL: chunks, keyword terms, vectors, file states, meta.

Implements :class:`~langchain_md_memory.index.base.SearchIndex`, so the
indexer and the search steps run on it unchanged. Like the SQLite index,
everything here is derived from the documents and can be rebuilt from them.
Every write runs in a transaction holding the tenant's index lock, so two hosts
syncing at once never interleave one file's chunks, and the index never goes
back in time (each reads the document inside that transaction).

Example:
    .. code-block:: python

        index = PostgresIndex(PostgresDatabase.connect(url), tenant="alice")
        hits = index.keyword_search([["仓位"]], 10).hits[0]   # [(ChunkRecord, score)]
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Literal

import numpy as np

from ..files.sections import PastFact
from ..index.base import KeywordRecall, VectorRecall
from ..index.rows import (
    ChunkRow,
    FileState,
    PastRow,
    chunk_record,
    from_blob,
    past_fact,
    past_values,
    to_blob,
)
from ..index.scoring import bm25_score, hits_background, lucene_idf, scaled_to_best
from ..types import ChunkRecord, FileKind
from .connection import LOCK_INDEX, Conn, PostgresDatabase
from .graphs import HNSW_MIN_ROWS, drop_graphs, ensure_graphs
from .recall import (
    calibrate,
    corpus_stats,
    document_frequencies,
    keyword_top_k,
    lexemes,
    parse_vector,
    vector_literal,
    vector_top_k,
)

__all__ = ["PostgresEmbeddingCache", "PostgresIndex", "VectorSearch"]

logger = logging.getLogger(__name__)

VectorSearch = Literal["auto", "exact", "hnsw"]
"""How vector recall reads pgvector. ``auto``: a script group of the tenant's vectors is searched
through the tenant's own HNSW graph of it once it holds :data:`~.graphs.HNSW_MIN_ROWS` vectors (the
graph is built in bulk after the sync that gets it there), exactly below; ``hnsw``: every group
through its graph, built after any sync; ``exact``: every group by an exact scan, no graph built."""

_IDENTITY = ("coalesce((SELECT value FROM md_memory_index_meta WHERE tenant = %s "
             "AND key = 'embedding_identity'), '')")
"""The tenant's embedding identity, in SQL (its one parameter is the tenant)."""
_RECORD = "rowid, id, path, start_line, end_line, heading, text, hash, file_kind, updated_at"
_rows = PostgresDatabase.rows


class PostgresEmbeddingCache:
    """One tenant's vectors by (embedding identity, content hash): hashes only, no text.

    Each tenant has its own: a text another tenant embedded is embedded again, so no
    write's speed tells a tenant what others store, and no tenant reads another's vectors.
    """

    def __init__(self, db: PostgresDatabase, tenant: str) -> None:
        self._db = db
        self.tenant = tenant

    def lookup(self, hashes: Sequence[str], fingerprint: str) -> dict[str, np.ndarray]:
        """Cached vectors for these content hashes under one embedding identity."""
        if not hashes:
            return {}
        rows = self._db.query("SELECT hash, vector FROM md_memory_embedding_cache "
                              "WHERE tenant = %s AND fingerprint = %s AND hash = ANY(%s)",
                              (self.tenant, fingerprint, list(hashes)))
        return {str(h): from_blob(bytes(v)).copy() for h, v in rows}

    def holds_any(self, fingerprint: str) -> bool:
        """True when some vector is cached under this embedding identity."""
        sql = "SELECT EXISTS (SELECT 1 FROM md_memory_embedding_cache WHERE tenant = %s AND fingerprint = %s)"
        return bool(self._db.query(sql, (self.tenant, fingerprint))[0][0])

    def store(self, items: Sequence[tuple[str, np.ndarray]], fingerprint: str) -> None:
        """Remember vectors (first writer wins: equal hashes under one identity embed equally)."""
        if not items:
            return
        with self._db.connection() as conn, conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO md_memory_embedding_cache(tenant, fingerprint, hash, dim, vector) "
                "VALUES (%s, %s, %s, %s, %s) "
                "ON CONFLICT (tenant, fingerprint, hash) DO NOTHING",
                [(self.tenant, fingerprint, h, int(v.shape[0]), to_blob(v)) for h, v in items],
            )


class PostgresHealth:
    """The health questions ``verify`` asks of one tenant's index (``PostgresIndex.health``)."""

    def __init__(self, db: PostgresDatabase, tenant: str) -> None:
        self._db = db
        self.tenant = tenant

    def integrity_problems(self) -> list[str]:
        """Structural problems: none to find here (PostgreSQL checks its own pages)."""
        return []

    def chunk_spans(self) -> dict[str, list[tuple[int, int, str]]]:
        """``(start_line, end_line, hash)`` of every stored chunk, by file."""
        out: dict[str, list[tuple[int, int, str]]] = {}
        rows = self._db.query("SELECT path, start_line, end_line, hash FROM md_memory_chunks "
                              "WHERE tenant = %s", (self.tenant,))
        for path, start, end, digest in rows:
            out.setdefault(str(path), []).append((int(start), int(end), str(digest)))
        return out

    def paths_without_keywords(self) -> list[str]:
        """Files with a chunk whose keyword terms are missing from its tsvector."""
        rows = self._db.query("SELECT DISTINCT path FROM md_memory_chunks WHERE tenant = %s "
                              "AND terms <> '' AND length(tsv) = 0", (self.tenant,))
        return sorted(str(r[0]) for r in rows)

    def keyword_orphans(self) -> int:
        """Keyword entries whose chunk is gone: none (the terms live in the chunk's own row)."""
        return 0


class PostgresIndex:
    """The :class:`~langchain_md_memory.index.base.SearchIndex` of one tenant in PostgreSQL.

    Args:
        db: the database.
        tenant: whose index; every query is filtered by it.
        vector_search: see :data:`VectorSearch`.
    """

    repaired: str | None = None

    def __init__(self, db: PostgresDatabase, tenant: str, *, vector_search: VectorSearch = "auto") -> None:
        self._db = db
        self.tenant = tenant
        self.path = f"postgresql://{db.name}#{tenant}"
        self.cache = PostgresEmbeddingCache(db, tenant)
        self.health = PostgresHealth(db, tenant)
        version = db.query("SELECT extversion FROM pg_extension WHERE extname = 'vector'")[0][0]
        self.pgvector_version = str(version)
        self.vector_mode: VectorSearch = vector_search
        self.hnsw_min_rows: int | None = {"auto": HNSW_MIN_ROWS, "hnsw": 1, "exact": None}[vector_search]
        """Vectors a script group holds from which recall goes through its graph (``None``: never)."""
        self._graphs_due = True  # checked once per process, then after syncs that changed chunks or vectors

    # -- meta ------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        """A value of this tenant's index metadata, or ``None``."""
        rows = self._db.query("SELECT value FROM md_memory_index_meta WHERE tenant = %s AND key = %s",
                              (self.tenant, key))
        return None if not rows else str(rows[0][0])

    def set_meta(self, key: str, value: str) -> None:
        """Store a value of this tenant's index metadata."""
        with self.writing() as conn:
            _rows(conn, "INSERT INTO md_memory_index_meta(tenant, key, value) VALUES (%s, %s, %s) "
                  "ON CONFLICT (tenant, key) DO UPDATE SET value = excluded.value", (self.tenant, key, value))

    # -- files and chunks ----------------------------------------------------------------

    def file_states(self) -> dict[str, FileState]:
        """Every file the index knows (``mtime_ns`` holds the document's revision)."""
        rows = self._db.query("SELECT path, revision, size, hash FROM md_memory_files WHERE tenant = %s",
                              (self.tenant,))
        return {str(p): FileState(str(p), int(r), int(s), str(h)) for p, r, s, h in rows}

    def file_state(self, path: str) -> FileState | None:
        """What the index knows of one file."""
        rows = self._db.query("SELECT path, revision, size, hash FROM md_memory_files "
                              "WHERE tenant = %s AND path = %s", (self.tenant, path))
        if not rows:
            return None
        path_, revision, size, digest = rows[0]
        return FileState(str(path_), int(revision), int(size), str(digest))

    def touch_file(self, state: FileState) -> None:
        """Record a new revision for a file whose content did not change."""
        with self.writing() as conn:
            _rows(conn, "UPDATE md_memory_files SET revision = %s, size = %s WHERE tenant = %s AND path = %s",
                  (state.mtime_ns, state.size, self.tenant, state.path))

    def replace_file(self, state: FileState, kind: FileKind, rows: Sequence[ChunkRow],
                     past: Sequence[PastRow] = ()) -> tuple[int, int]:
        """Replace every chunk and struck History line of one file in one transaction; returns (chunks
        removed, chunks added)."""
        with self.writing() as conn:
            removed = self._delete_file_rows(conn, state.path)
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO md_memory_past_facts(tenant, path, line, text, statement, since, until, "
                    "embed_hash) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                    [(self.tenant, *past_values(row)) for row in past],
                )
                cur.executemany(
                    "INSERT INTO md_memory_chunks(tenant, id, path, start_line, end_line, heading, text, "
                    "hash, embed_hash, context, script, file_kind, updated_at, n_terms, terms, tsv, dim, "
                    "embedding) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
                    "array_to_tsvector(%s::text[]), %s, %s::vector)",
                    [self._chunk_params(row) for row in rows],
                )
            _rows(conn, "INSERT INTO md_memory_files(tenant, path, revision, size, hash, kind, indexed_at) "
                  "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (tenant, path) DO UPDATE SET "
                  "revision = excluded.revision, size = excluded.size, hash = excluded.hash, "
                  "kind = excluded.kind, indexed_at = excluded.indexed_at",
                  (self.tenant, state.path, state.mtime_ns, state.size, state.hash, kind, time.time()))
        self._graphs_due = True
        return removed, len(rows)

    def _chunk_params(self, row: ChunkRow) -> tuple[object, ...]:
        rec = row.record
        terms = row.terms.split()
        return (self.tenant, rec.id, rec.path, rec.start_line, rec.end_line, rec.heading, rec.text, rec.hash,
                row.embed_hash, row.context, row.script, rec.file_kind, rec.updated_at,
                len(terms), row.terms, lexemes(terms),
                None if row.vector is None else int(row.vector.shape[0]),
                None if row.vector is None else vector_literal(row.vector))

    def remove_file(self, path: str) -> int:
        """Forget a file, its chunks and its struck lines; returns the chunks removed."""
        with self.writing() as conn:
            removed = self._delete_file_rows(conn, path)
            _rows(conn, "DELETE FROM md_memory_files WHERE tenant = %s AND path = %s", (self.tenant, path))
        self._graphs_due = True
        return removed

    def _delete_file_rows(self, conn: Conn, path: str) -> int:
        """Delete one file's chunks and struck lines (in the caller's transaction); returns the chunks."""
        _rows(conn, "DELETE FROM md_memory_past_facts WHERE tenant = %s AND path = %s", (self.tenant, path))
        return len(_rows(conn, "DELETE FROM md_memory_chunks WHERE tenant = %s AND path = %s RETURNING rowid",
                         (self.tenant, path)))

    def count_chunks(self) -> tuple[int, int]:
        """(chunks, chunks with a vector)."""
        row = self._db.query("SELECT count(*), count(embedding) FROM md_memory_chunks WHERE tenant = %s",
                             (self.tenant,))[0]
        return int(row[0]), int(row[1])

    # -- embeddings ----------------------------------------------------------------------

    def chunks_missing_vectors(self, limit: int, *,
                               after_rowid: int = 0) -> list[tuple[int, str, str, str, str]]:
        """Up to ``limit`` chunks without a vector, row id above ``after_rowid``, in row id order."""
        rows = self._db.query(
            "SELECT rowid, embed_hash, heading, text, context FROM md_memory_chunks WHERE tenant = %s "
            "AND embedding IS NULL AND rowid > %s ORDER BY rowid LIMIT %s", (self.tenant, after_rowid, limit))
        return [(int(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4])) for r in rows]

    def set_vectors(self, vectors: Sequence[tuple[int, np.ndarray]]) -> None:
        """Attach vectors to chunks by row id (one statement for the batch)."""
        if not vectors:
            return
        with self.writing() as conn:
            _rows(conn, "UPDATE md_memory_chunks AS c SET embedding = v.embedding::vector, dim = v.dim "
                  "FROM unnest(%s::bigint[], %s::text[], %s::integer[]) AS v(rowid, embedding, dim) "
                  "WHERE c.tenant = %s AND c.rowid = v.rowid",
                  ([rowid for rowid, _ in vectors], [vector_literal(v) for _, v in vectors],
                   [int(v.shape[0]) for _, v in vectors], self.tenant))
        self._graphs_due = True

    def past_facts_missing_vectors(self) -> list[tuple[str, str]]:
        """``(embed hash, statement)`` of each struck line whose vector the cache lacks, one per hash."""
        rows = self._db.query(
            "SELECT p.embed_hash, min(p.statement) FROM md_memory_past_facts p WHERE p.tenant = %s "
            "AND NOT EXISTS (SELECT 1 FROM md_memory_embedding_cache e WHERE e.tenant = p.tenant "
            "AND e.hash = p.embed_hash "
            f"AND e.fingerprint = {_IDENTITY}) GROUP BY p.embed_hash", (self.tenant, self.tenant))
        return [(str(r[0]), str(r[1])) for r in rows]

    def past_facts_on(self, day: dt.date) -> list[tuple[PastFact, np.ndarray | None]]:
        """The struck lines that held on ``day``, each with its cached vector (``None``: none yet)."""
        rows = self._db.query(
            "SELECT p.path, p.line, p.text, p.statement, p.since, p.until, e.vector "
            "FROM md_memory_past_facts p LEFT JOIN md_memory_embedding_cache e "
            f"ON e.tenant = p.tenant AND e.hash = p.embed_hash AND e.fingerprint = {_IDENTITY} "
            "WHERE p.tenant = %s AND (p.since IS NULL OR p.since <= %s) AND p.until > %s "
            "ORDER BY p.path, p.line", (self.tenant, self.tenant, day, day))
        return [(past_fact(r), None if r[6] is None else from_blob(bytes(r[6]))) for r in rows]

    def clear_vectors(self) -> None:
        """Drop every vector of this tenant (the embedding identity changed), and its HNSW graphs first:
        the new vectors are indexed in bulk after the sync instead of one by one into a stale graph."""
        drop_graphs(self._db, self.tenant)
        with self.writing() as conn:
            _rows(conn, "UPDATE md_memory_chunks SET embedding = NULL, dim = NULL WHERE tenant = %s "
                  "AND embedding IS NOT NULL", (self.tenant,))
        self._graphs_due = True

    def after_sync(self) -> None:
        """Build the HNSW graphs the tenant's vectors now call for, drop empty ones (see :mod:`.graphs`)."""
        if not self._graphs_due or self.hnsw_min_rows is None:
            return
        self._graphs_due = bool(ensure_graphs(self._db, self.tenant, min_rows=self.hnsw_min_rows))

    # -- search --------------------------------------------------------------------------

    def keyword_search(self, queries: Sequence[Sequence[str]], limit: int) -> KeywordRecall:
        """BM25 keyword recall of each term list (Lucene idf, as the SQLite index), scores in (0, 1], best
        first, with the first list's idf: counted with its candidates."""
        hits: list[list[tuple[ChunkRecord, float]]] = []
        first: dict[str, float] = {}
        for n, terms in enumerate(queries):
            if not terms:
                hits.append([])
                continue
            with self._db.snapshot() as conn:
                top, idf = keyword_top_k(conn, self.tenant, terms, limit)
                records = self._records(conn, [rowid for _, rowid in top]) if top else {}
            hits.append(scaled_to_best(top, records))
            first = idf if n == 0 else first
        return KeywordRecall(hits, first)

    def snapshot(self) -> contextlib.AbstractContextManager[None]:
        """Nothing shared: each of a search's statements reads its own snapshot."""
        return contextlib.nullcontext()

    def holds_script(self, script: int) -> bool:
        """Always True: the terms are not counted by script here, so translations are always looked for."""
        return True

    def keyword_scores(self, terms: Sequence[str], ids: Sequence[str],
                       idf: Mapping[str, float] | None = None) -> dict[str, float]:
        """The BM25 (not divided by the best) of each chunk of ``ids`` holding one of ``terms``, weighed by
        ``idf`` (what this search's keyword recall counted; ``None``: counted here)."""
        if not terms or not ids:
            return {}
        weights = idf if idf is not None else self.term_idf(terms)
        with self._db.snapshot() as conn:
            avg_len = corpus_stats(conn, self.tenant)[1]
            rows = _rows(conn, "SELECT id, terms FROM md_memory_chunks WHERE tenant = %s AND id = ANY(%s)",
                         (self.tenant, list(ids)))
        scored = ((str(i), bm25_score(terms, str(indexed).split(), weights, avg_len)) for i, indexed in rows)
        return {i: score for i, score in scored if score > 0}

    def term_idf(self, terms: Sequence[str]) -> dict[str, float]:
        """Each term's Lucene idf over the tenant's chunks, as keyword search weighs it."""
        held = lexemes(terms)
        with self._db.snapshot() as conn:
            df = document_frequencies(conn, self.tenant, held)[1] if held else {}
            n_docs = corpus_stats(conn, self.tenant)[0]
        return {term: lucene_idf(n_docs, df.get(term, 0)) for term in terms}

    def vector_search(self, query: np.ndarray, limit: int) -> VectorRecall:
        """Cosine recall (offset per script group, as the SQLite index), scores in [0, 1], best first, with
        the query's background: measured first, in the same snapshot."""
        with self._db.snapshot() as conn:
            (offsets, background), sizes = calibrate(conn, self.tenant, query)
            top, unmeasured = vector_top_k(conn, self.tenant, query, limit, hnsw_min_rows=self.hnsw_min_rows,
                                           offsets=offsets, sizes=sizes)
            if not top:
                return VectorRecall([], background)
            records = self._records(conn, [rowid for rowid, _ in top])
        hits = [(records[rowid], score) for rowid, score in top if rowid in records]
        return VectorRecall(hits, hits_background(background, unmeasured, records))

    def vectors_for(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored unit vectors of chunks by id (chunks without one are absent)."""
        if not ids:
            return {}
        rows = self._db.query("SELECT id, embedding::text FROM md_memory_chunks WHERE tenant = %s "
                              "AND id = ANY(%s) AND embedding IS NOT NULL", (self.tenant, list(ids)))
        return {str(i): parse_vector(str(v)) for i, v in rows}

    def record_access(self, ids: Sequence[str]) -> None:
        """Count that these chunks were returned."""
        if ids:
            self._db.query("UPDATE md_memory_chunks SET access_count = access_count + 1 "
                           "WHERE tenant = %s AND id = ANY(%s)", (self.tenant, list(ids)))

    def access_counts(self, ids: Sequence[str]) -> dict[str, int]:
        """How often each chunk was returned."""
        rows = self._db.query("SELECT id, access_count FROM md_memory_chunks WHERE tenant = %s "
                              "AND id = ANY(%s)", (self.tenant, list(ids)))
        return {str(i): int(n) for i, n in rows}

    def _records(self, conn: Conn, rowids: Sequence[int]) -> dict[int, ChunkRecord]:
        rows = _rows(conn, f"SELECT {_RECORD} FROM md_memory_chunks WHERE tenant = %s AND rowid = ANY(%s)",
                     (self.tenant, list(rowids)))
        return {int(r[0]): chunk_record(r) for r in rows}

    # -- plumbing ------------------------------------------------------------------------

    @contextlib.contextmanager
    def writing(self) -> Iterator[Conn]:
        """One transaction holding the tenant's index lock; writes inside join it."""
        with self._db.transaction() as conn:
            _rows(conn, "SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (LOCK_INDEX, self.tenant))
            yield conn

    def close(self) -> None:
        """Nothing to release: the connections belong to the database object."""
