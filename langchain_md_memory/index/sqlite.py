"""The SQLite index beside the Markdown: chunks, FTS5 terms, vectors, cache, meta.

Everything here is derived from the Markdown files and can be thrown away:
a missing, corrupt, foreign or outdated index file is rebuilt, never an error.

Example:
    .. code-block:: python

        idx = MemoryIndex.open("memory/index.sqlite")
        hits = idx.keyword_search("仓位", limit=10)   # [(ChunkRecord, score)]
        idx.close()
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import time
from collections.abc import Sequence
from typing import cast

import numpy as np

from ..text import query_terms
from ..types import ChunkRecord, FileKind
from .cache import EmbeddingCache
from .connection import IndexConnection
from .keyword import MAX_QUERY_TERMS, POSTINGS_BUDGET, LastTermIdf, lucene_idf
from .keyword_topk import chunk_scores, document_frequencies, top_k
from .rows import ChunkRow, FileState, chunk_record, chunk_values
from .schema import (
    CHUNK_COLUMNS,
    IDENTITY,
    SCHEMA_VERSION,
    VECTOR_JOIN,
    connect,
    index_error,
    repair_if_inconsistent,
)
from .scripts import ScriptVectors, load_script_vectors, scripts_of
from .vectors import VectorDtype, VectorMatrix, from_blob, to_blob

__all__ = ["SCHEMA_VERSION", "ChunkRow", "FileState", "MemoryIndex"]

logger = logging.getLogger(__name__)


class MemoryIndex:
    """One SQLite index file (WAL, busy timeout), safe to share across threads.

    Tools run on worker threads and retrievers in executors, so the connection
    is opened with ``check_same_thread=False`` and every use holds one lock.
    """

    def __init__(self, conn: sqlite3.Connection, path: str, vector_dtype: VectorDtype = "float32") -> None:
        self._db = IndexConnection(conn, path)
        self.vector_dtype: VectorDtype = VectorMatrix(vector_dtype).dtype  # validated
        """How the in-memory matrix holds vectors (compact ones are re-scored from the stored float32)."""
        self.repaired: str | None = None
        """What opening this index found wrong and repaired, if anything."""
        self.cache = EmbeddingCache(self._db)
        """The embedding cache (vectors by content hash and embedding identity)."""
        self.path = path
        self._vectors: ScriptVectors | None = None
        # FTS5 postings the first round of keyword recall may rank (see keyword_topk.top_k).
        self.postings_budget = POSTINGS_BUDGET
        self._stats: tuple[int, int, float] | None = None
        self._last_idf = LastTermIdf()

    # -- opening -----------------------------------------------------------------

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, busy_timeout_ms: int = 10_000,
             vector_dtype: VectorDtype = "float32") -> MemoryIndex:
        """Open (or create) the index at ``path``; see :func:`schema.connect` for what is rebuilt.

        Raises:
            IndexBusyError: locked by another process, read-only or unopenable (left alone).
            IndexDamagedError: damaged and could not be recreated.
        """
        target = os.fspath(path)
        conn = connect(target, busy_timeout_ms)
        try:
            repaired = repair_if_inconsistent(conn)
        except sqlite3.Error as exc:
            conn.close()
            raise index_error(exc, f"cannot check index {target}") from exc
        index = cls(conn, target, vector_dtype)
        index.repaired = repaired
        return index

    def close(self) -> None:
        """Close the connection (idempotent)."""
        self._db.close()

    def finish_for_swap(self) -> None:
        """Fold the WAL into the main file and close, so the file can be renamed."""
        self._db.checkpoint_and_close()

    # -- meta ----------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        """A value from the ``meta`` table, or ``None``."""
        row = self._db.query("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        """Store a value in the ``meta`` table."""
        with self._db.write() as conn:
            conn.execute(
                "INSERT INTO meta(key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    # -- files and chunks ----------------------------------------------------------

    def file_states(self) -> dict[str, FileState]:
        """Every file the index knows, by relative path."""
        rows = self._db.query("SELECT path, mtime_ns, size, hash FROM files").fetchall()
        return {r[0]: FileState(r[0], r[1], r[2], r[3]) for r in rows}

    def file_state(self, path: str) -> FileState | None:
        """What the index knows of one file, or ``None``."""
        sql = "SELECT path, mtime_ns, size, hash FROM files WHERE path = ?"
        row = self._db.query(sql, (path,)).fetchone()
        return None if row is None else FileState(row[0], row[1], row[2], row[3])

    def touch_file(self, state: FileState) -> None:
        """Record a new mtime/size for a file whose content hash did not change."""
        with self._db.write() as conn:
            conn.execute(
                "UPDATE files SET mtime_ns = ?, size = ? WHERE path = ?",
                (state.mtime_ns, state.size, state.path),
            )

    def replace_file(self, state: FileState, kind: FileKind, rows: Sequence[ChunkRow]) -> tuple[int, int]:
        """Replace every chunk of one file in one transaction; returns (removed, added).

        An edited file's old text never stays searchable: its old chunks and
        their FTS rows go in the same transaction that adds the new ones.
        """
        with self._db.write() as conn:
            removed = self._delete_chunks(conn, state.path)
            # The rowids SQLite would give (max + 1 onwards; this transaction holds the write lock), so the
            # rows and their FTS entries go in by two executemany calls instead of two statements a chunk.
            first = conn.execute("SELECT coalesce(max(rowid), 0) + 1 FROM chunks").fetchone()[0]
            rowids = range(first, first + len(rows))
            scripts = [row.script for row in rows]
            conn.executemany(
                "INSERT INTO chunks(rowid, id, path, start_line, end_line, heading, text, hash, embed_hash, "
                "context, script, file_kind, updated_at, n_terms, has_vector) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                map(chunk_values, rowids, rows, scripts),
            )
            fts_rows = ((rowids[i], row.terms) for i, row in enumerate(rows))
            conn.executemany("INSERT INTO chunks_fts(rowid, terms) VALUES (?, ?)", fts_rows)
            vectored = [i for i, row in enumerate(rows) if row.vector is not None]
            added_ids = [rowids[i] for i in vectored]
            added_vectors = [cast(np.ndarray, rows[i].vector) for i in vectored]
            added_groups = [scripts[i] for i in vectored]
            if added_ids:  # usually cache hits already; a vector handed in any other way is kept there too
                sql = f"INSERT OR IGNORE INTO embedding_cache VALUES (?, {IDENTITY}, ?, ?)"
                given = ((rows[i].embed_hash, added_vectors[n]) for n, i in enumerate(vectored))
                conn.executemany(sql, ((h, int(v.shape[0]), to_blob(v)) for h, v in given))
            conn.execute(
                "INSERT INTO files(path, mtime_ns, size, hash, kind, indexed_at) VALUES (?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(path) DO UPDATE SET mtime_ns = excluded.mtime_ns, size = excluded.size, "
                "hash = excluded.hash, kind = excluded.kind, indexed_at = excluded.indexed_at",
                (state.path, state.mtime_ns, state.size, state.hash, kind, time.time()),
            )
            self._bump_generation(conn)
        if self._vectors is not None:
            self._vectors.remove(removed)
            self._vectors.add(added_ids, added_vectors, added_groups)
            self._vectors.generation = self._generation()
        return len(removed), len(rows)

    def remove_file(self, path: str) -> int:
        """Forget a file and all its chunks; returns the number of chunks removed."""
        with self._db.write() as conn:
            removed = self._delete_chunks(conn, path)
            conn.execute("DELETE FROM files WHERE path = ?", (path,))
            self._bump_generation(conn)
        if self._vectors is not None:
            self._vectors.remove(removed)
            self._vectors.generation = self._generation()
        return len(removed)

    def _delete_chunks(self, conn: sqlite3.Connection, path: str) -> list[int]:
        rowids = [r[0] for r in conn.execute("SELECT rowid FROM chunks WHERE path = ?", (path,))]
        if rowids:
            conn.executemany("DELETE FROM chunks_fts WHERE rowid = ?", ((r,) for r in rowids))
            conn.execute("DELETE FROM chunks WHERE path = ?", (path,))
        return rowids

    def count_chunks(self) -> tuple[int, int]:
        """(chunks, chunks with a vector)."""
        row = self._db.query(
            "SELECT (SELECT count(*) FROM chunks), (SELECT count(*) FROM chunks WHERE has_vector = 0)"
        ).fetchone()
        return int(row[0]), int(row[0]) - int(row[1])

    # -- embeddings ---------------------------------------------------------------

    def chunks_missing_vectors(self, limit: int, *,
                               after_rowid: int = 0) -> list[tuple[int, str, str, str, str]]:
        """Up to ``limit`` chunks without a vector, rowid above ``after_rowid``, in rowid order.

        Returns (rowid, embed_hash, heading, text, context). Pass the last rowid seen as
        ``after_rowid`` to page through them without rescanning earlier rows.
        """
        rows = self._db.query(
            "SELECT rowid, embed_hash, heading, text, context FROM chunks "
            "WHERE has_vector = 0 AND rowid > ? ORDER BY rowid LIMIT ?",
            (after_rowid, limit),
        ).fetchall()
        return [(r[0], r[1], r[2], r[3], r[4]) for r in rows]

    def set_vectors(self, vectors: Sequence[tuple[int, np.ndarray]]) -> None:
        """Attach vectors to chunks by rowid: the caller stored them in the cache (see ``VECTOR_JOIN``)."""
        if not vectors:
            return
        with self._db.write() as conn:
            conn.executemany("UPDATE chunks SET has_vector = 1 WHERE rowid = ?", ((r,) for r, _ in vectors))
            self._bump_generation(conn)
        if self._vectors is not None:
            rowids = [rowid for rowid, _ in vectors]
            groups = scripts_of(self._db, rowids)
            self._vectors.add(rowids, [v for _, v in vectors], [groups.get(r, 0) for r in rowids])
            self._vectors.generation = self._generation()

    def clear_vectors(self) -> None:
        """Drop every vector: the embedding identity changed (the caller stores the new one next)."""
        with self._db.write() as conn:
            conn.execute("UPDATE chunks SET has_vector = 0")
            self._bump_generation(conn)
        self._vectors = None

    # -- search -------------------------------------------------------------------

    def keyword_search(self, query: str, limit: int) -> list[tuple[ChunkRecord, float]]:
        """BM25 keyword recall, scores in (0, 1], best first.

        FTS5 finds the matching chunks; they are scored with BM25 using the
        Lucene idf ``ln(1 + (N - n + 0.5) / (n + 0.5))``, which stays positive.
        FTS5's own ``bm25()`` clamps the idf of a term found in more than half
        of the chunks to ~0, so in a small memory a chunk matching only such a
        term would score nothing. Scores are divided by the best hit's, so the
        best match scores 1 and the order follows BM25 relevance.
        """
        # The statements below must see one snapshot: another process's sync between them would
        # delete the candidates or, as SQLite reuses rowids, put other chunks under their rowids.
        with self._db.read_snapshot():
            return self._keyword_search(query, limit)

    def _keyword_search(self, query: str, limit: int) -> list[tuple[ChunkRecord, float]]:
        terms = query_terms(query)[:MAX_QUERY_TERMS]
        if not terms or limit <= 0:
            return []
        df = document_frequencies(self._db.query, terms)
        n_docs, avg_len = self._corpus_stats()
        self._last_idf.keep(terms, {term: lucene_idf(n_docs, df.get(term, 0)) for term in terms})
        # The exhaustive BM25 top ``limit``, read from a pool FTS5 ranks (see keyword_topk). Only rowids and
        # the pool's terms come out of FTS5: no chunk text is read beyond the hits' records.
        top = top_k(self._db.query, terms, df, n_docs=n_docs, avg_len=avg_len, limit=limit,
                    budget=self.postings_budget)
        if not top:  # no match, or the candidates were deleted (another thread's or process's sync)
            return []
        records = self._records_by_rowid([rowid for _, rowid in top])
        best = top[0][0]
        if best <= 0.0:
            return [(records[rowid], 1.0) for _, rowid in top if rowid in records]
        return [(records[rowid], max(score / best, 1e-6)) for score, rowid in top if rowid in records]

    def keyword_scores(self, query: str, ids: Sequence[str]) -> dict[str, float]:
        """The BM25 (not divided by the best) of each chunk of ``ids`` holding a term of ``query``."""
        terms = query_terms(query)[:MAX_QUERY_TERMS]
        if not terms or not ids:
            return {}
        idf = self._last_idf.peek(terms) or self.term_idf(terms)  # what this search's recall read, if it did
        with self._db.read_snapshot():
            return chunk_scores(self._db.query, ids, terms, idf, self._corpus_stats()[1])

    def term_idf(self, terms: Sequence[str]) -> dict[str, float]:
        """Each term's Lucene idf over the chunks, as keyword search weighs it (see ``keyword_search``)."""
        if (kept := self._last_idf.take(terms)) is not None:  # this search's keyword recall read them
            return kept
        with self._db.read_snapshot():
            df, (n_docs, _) = document_frequencies(self._db.query, terms), self._corpus_stats()
        return {term: lucene_idf(n_docs, df.get(term, 0)) for term in terms}

    def _corpus_stats(self) -> tuple[int, float]:
        generation = self._generation()
        if self._stats is None or self._stats[0] != generation:
            row = self._db.query("SELECT count(*), avg(n_terms) FROM chunks").fetchone()
            self._stats = (generation, int(row[0]), float(row[1] or 1.0) or 1.0)
        return self._stats[1], self._stats[2]

    def vector_search(self, query: np.ndarray, limit: int) -> list[tuple[ChunkRecord, float]]:
        """Cosine recall over the in-memory normalised matrices, scores clipped to [0, 1].

        A compact matrix (float16, int8) proposes more candidates than asked for; their stored
        float32 vectors decide the order and the scores (see ``ScriptVectors.top_k``).
        """
        # One snapshot from the generation check to the records: see keyword_search.
        with self._db.read_snapshot():
            top = self._vector_matrix().top_k(query, limit, stored=self._stored_vectors)
            if not top:
                return []
            by_rowid = self._records_by_rowid([rowid for rowid, _ in top])
        return [(by_rowid[rowid], score) for rowid, score in top if rowid in by_rowid]

    def _stored_vectors(self, rowids: Sequence[int]) -> dict[int, np.ndarray]:
        sql = f"SELECT c.rowid, e.vector FROM chunks c JOIN {VECTOR_JOIN} WHERE c.rowid IN ({{}})"
        rows = self._db.query(sql.format(",".join("?" * len(rowids))), list(rowids))
        return {int(r[0]): from_blob(r[1]) for r in rows}

    def vector_background(self, query: np.ndarray) -> tuple[float, float] | None:
        """Mean and spread of the query's cosine to this memory's notes (see ``ScriptVectors.background``)."""
        with self._db.read_snapshot():
            return self._vector_matrix().background(query)

    def vectors_for(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored unit vectors of chunks by id (chunks without one are absent)."""
        out: dict[str, np.ndarray] = {}
        for start in range(0, len(ids), 500):
            part = list(ids[start : start + 500])
            marks = ",".join("?" * len(part))
            sql = f"SELECT c.id, e.vector FROM chunks c JOIN {VECTOR_JOIN} WHERE c.id IN ({marks})"
            out.update((r[0], from_blob(r[1])) for r in self._db.query(sql, part).fetchall())
        return out

    def record_access(self, ids: Sequence[str]) -> None:
        """Count that these chunks were returned (for the optional access weight)."""
        if ids:
            with self._db.write() as conn:
                conn.executemany(
                    "UPDATE chunks SET access_count = access_count + 1 WHERE id = ?", ((i,) for i in ids)
                )

    def access_counts(self, ids: Sequence[str]) -> dict[str, int]:
        """How often each chunk was returned."""
        marks = ",".join("?" * len(ids))
        rows = self._db.query(f"SELECT id, access_count FROM chunks WHERE id IN ({marks})", list(ids))
        return {r[0]: int(r[1]) for r in rows.fetchall()}

    def _records_by_rowid(self, rowids: Sequence[int]) -> dict[int, ChunkRecord]:
        marks = ",".join("?" * len(rowids))
        sql = f"SELECT {CHUNK_COLUMNS} FROM chunks c WHERE c.rowid IN ({marks})"
        rows = self._db.query(sql, list(rowids))
        return {r[0]: chunk_record(r) for r in rows.fetchall()}

    def _vector_matrix(self) -> ScriptVectors:
        generation = self._generation()
        with self._db.lock:
            if self._vectors is None or self._vectors.generation != generation:
                # Another process changed the index (or first use): reload all vectors.
                self._vectors = load_script_vectors(self._db, self.vector_dtype)
                self._vectors.generation = generation
            return self._vectors

    # -- health (for verify) -------------------------------------------------------

    def integrity_problems(self) -> list[str]:
        """SQLite's ``quick_check`` findings (reads every page); empty when the file is sound."""
        found = [str(r[0]) for r in self._db.query("PRAGMA quick_check").fetchall()]
        return [] if found == ["ok"] else found

    def chunk_spans(self) -> dict[str, list[tuple[int, int, str]]]:
        """``(start_line, end_line, hash)`` of every stored chunk, by file."""
        out: dict[str, list[tuple[int, int, str]]] = {}
        for path, start, end, digest in self._db.query("SELECT path, start_line, end_line, hash FROM chunks"):
            out.setdefault(path, []).append((int(start), int(end), str(digest)))
        return out

    def paths_without_keywords(self) -> list[str]:
        """Files with a chunk that has no keyword row (it could never be found by keywords)."""
        rows = self._db.query(
            "SELECT DISTINCT c.path FROM chunks c LEFT JOIN chunks_fts f ON f.rowid = c.rowid "
            "WHERE f.rowid IS NULL"
        )
        return sorted(str(r[0]) for r in rows)

    def keyword_orphans(self) -> int:
        """Keyword rows whose chunk is gone (only a rebuild removes them)."""
        sql = "SELECT count(*) FROM chunks_fts WHERE rowid NOT IN (SELECT rowid FROM chunks)"
        return int(self._db.query(sql).fetchone()[0])

    def after_sync(self) -> None:
        """Nothing to do: every structure of the SQLite index is kept up as rows are written."""

    # -- plumbing -----------------------------------------------------------------

    def _generation(self) -> int:
        value = self.get_meta("generation")
        return int(value) if value is not None else 0

    @staticmethod
    def _bump_generation(conn: sqlite3.Connection) -> None:
        conn.execute(
            "INSERT INTO meta(key, value) VALUES ('generation', '1') "
            "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
        )

    def writing(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        """Hold the index's write lock (one transaction) across several reads and writes.

        Writes inside join this transaction. The indexer reads a file inside
        it, so what it writes is never older than what another process wrote
        before: the index only moves forward.
        """
        return self._db.write()

