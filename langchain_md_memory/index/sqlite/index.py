"""The SQLite index beside the Markdown: chunks, FTS5 terms, vectors, cache, meta.

Everything here is derived from the Markdown files and can be thrown away:
a missing, corrupt, foreign or outdated index file is rebuilt, never an error.

Example:
    .. code-block:: python

        idx = MemoryIndex.open("memory/index.sqlite")
        recall = idx.keyword_search([["仓位"]], limit=10)   # recall.hits[0]: [(ChunkRecord, score)]
        idx.close()
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
import sqlite3
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, cast

import numpy as np

from ...files.sections import PastFact
from ...types import ChunkRecord, FileKind
from ..base import KeywordRecall, VectorRecall
from ..rows import ChunkRow, FileState, PastRow, chunk_values, from_blob, past_fact, past_values, to_blob
from ..scoring import hits_background, lucene_idf, scaled_to_best
from .cache import EmbeddingCache
from .connection import IndexConnection, Rows
from .health import IndexHealth
from .postings import Change, KeywordPostings
from .records import RecordCache
from .schema import IDENTITY, bump_generation, connect, index_error, repair_if_inconsistent
from .script_groups import ScriptVectors, load_script_vectors, scripts_of, stored_vectors
from .vectors import VectorDtype, VectorMatrix

__all__ = ["MemoryIndex"]

logger = logging.getLogger(__name__)


class MemoryIndex:
    """One SQLite index file (WAL, busy timeout), safe to share across threads: the
    :class:`~langchain_md_memory.index.base.SearchIndex` of a folder memory.

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
        self.health = IndexHealth(self._db)
        self._vectors: ScriptVectors | None = None
        self._postings = KeywordPostings(self._db.query)
        self._records = RecordCache(self._db, self._postings.size)

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
        with self._db.lock:  # the records are read and kept under it
            self._records.close()
        self._db.close()

    def finish_for_swap(self) -> None:
        """Fold the WAL into the main file and close, so the file can be renamed."""
        self._db.checkpoint_and_close()

    def get_meta(self, key: str) -> str | None:
        """A value from the ``meta`` table, or ``None``."""
        row = self._db.query("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        """Store a value in the ``meta`` table."""
        with self._db.write() as conn:
            conn.execute("INSERT INTO meta(key, value) VALUES (?, ?) "
                         "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (key, value))

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
            conn.execute("UPDATE files SET mtime_ns = ?, size = ? WHERE path = ?",
                         (state.mtime_ns, state.size, state.path))

    def replace_file(self, state: FileState, kind: FileKind, rows: Sequence[ChunkRow],
                     past: Sequence[PastRow] = ()) -> tuple[int, int]:
        """Replace every chunk (and struck History line) of one file in one transaction; returns
        (chunks removed, chunks added).

        An edited file's old text never stays searchable: its old chunks and
        their FTS rows go in the same transaction that adds the new ones.
        """
        with self._write() as conn:
            removed = self._delete_chunks(conn, state.path)
            conn.executemany("INSERT INTO past_facts(path, line, text, statement, since, until, embed_hash) "
                             "VALUES (?, ?, ?, ?, ?, ?, ?)", map(past_values, past))
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
            added = [(rowids[i], row.n_terms, row.terms) for i, row in enumerate(rows)]
            self._wrote(conn, removed, added, [(rowids[i], row.record) for i, row in enumerate(rows)])
        if self._vectors is not None:
            self._vectors.remove([rowid for rowid, _, _ in removed])
            self._vectors.add(added_ids, added_vectors, added_groups)
            self._vectors.generation = self._generation()
        return len(removed), len(rows)

    def remove_file(self, path: str) -> int:
        """Forget a file and all its chunks; returns the number of chunks removed."""
        with self._write() as conn:
            removed = self._delete_chunks(conn, path)
            conn.execute("DELETE FROM files WHERE path = ?", (path,))
            self._wrote(conn, removed)
        if self._vectors is not None:
            self._vectors.remove([rowid for rowid, _, _ in removed])
            self._vectors.generation = self._generation()
        return len(removed)

    def _wrote(self, conn: sqlite3.Connection, removed: Sequence[Change] = (), added: Sequence[Change] = (),
               records: Sequence[tuple[int, ChunkRecord]] = ()) -> None:
        """Count a write (in its transaction) and fold it into the postings and records this process keeps."""
        before = bump_generation(conn)
        self._postings.after_write(before, removed, added)
        self._records.after_write(before, [rowid for rowid, _, _ in removed], records)

    def _delete_chunks(self, conn: sqlite3.Connection, path: str) -> list[Change]:
        """Delete one file's chunks; returns them as the keyword postings need them."""
        # Their terms only when postings are kept in memory (to take them out of the kept terms).
        terms = "(SELECT terms FROM chunks_fts WHERE rowid = c.rowid)" if self._postings.holds_terms else "''"
        sql = f"SELECT rowid, n_terms, {terms} FROM chunks c WHERE path = ?"
        removed = conn.execute(sql, (path,)).fetchall()
        if removed:
            conn.executemany("DELETE FROM chunks_fts WHERE rowid = ?", ((r[0],) for r in removed))
            conn.execute("DELETE FROM chunks WHERE path = ?", (path,))
        conn.execute("DELETE FROM past_facts WHERE path = ?", (path,))
        return [(int(r[0]), int(r[1]), str(r[2] or "")) for r in removed]

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
        with self._write() as conn:
            conn.executemany("UPDATE chunks SET has_vector = 1 WHERE rowid = ?", ((r,) for r, _ in vectors))
            self._wrote(conn)
        if self._vectors is not None:
            rowids = [rowid for rowid, _ in vectors]
            groups = scripts_of(self._db, rowids)
            self._vectors.add(rowids, [v for _, v in vectors], [groups.get(r, 0) for r in rowids])
            self._vectors.generation = self._generation()

    def past_facts_missing_vectors(self) -> list[tuple[str, str]]:
        """``(embed hash, statement)`` of each struck History line whose vector the cache lacks under
        the index's embedding identity, one per hash."""
        rows = self._db.query(
            "SELECT p.embed_hash, min(p.statement) FROM past_facts p WHERE NOT EXISTS (SELECT 1 FROM "
            f"embedding_cache e WHERE e.hash = p.embed_hash AND e.fingerprint = {IDENTITY}) "
            "GROUP BY p.embed_hash"
        ).fetchall()
        return [(str(r[0]), str(r[1])) for r in rows]

    def past_facts_on(self, day: dt.date) -> list[tuple[PastFact, np.ndarray | None]]:
        """The struck History lines that held on ``day``, each with its cached vector (``None``: none yet)."""
        rows = self._db.query(
            "SELECT p.path, p.line, p.text, p.statement, p.since, p.until, e.vector FROM past_facts p "
            f"LEFT JOIN embedding_cache e ON e.hash = p.embed_hash AND e.fingerprint = {IDENTITY} "
            "WHERE (p.since IS NULL OR p.since <= ?) AND p.until > ? ORDER BY p.path, p.line",
            (day.isoformat(), day.isoformat()),
        ).fetchall()
        return [(past_fact(r), None if r[6] is None else from_blob(r[6])) for r in rows]

    def clear_vectors(self) -> None:
        """Drop every vector: the embedding identity changed (the caller stores the new one next)."""
        with self._write() as conn:
            conn.execute("UPDATE chunks SET has_vector = 0")
            self._wrote(conn)
        self._vectors = None

    # -- search -------------------------------------------------------------------

    def keyword_search(self, queries: Sequence[Sequence[str]], limit: int) -> KeywordRecall:
        """BM25 keyword recall of each term list, scores in (0, 1] (divided by the best hit's), best first,
        with the first list's idf. Every chunk holding a term is scored (:mod:`.postings`), with the Lucene
        idf: it stays positive, where FTS5's ``bm25()`` gives a term in over half of the chunks ~0. The
        lists are answered together: one snapshot, each term's postings read once, the hits' records in one
        statement (a question and its translation, say)."""
        # One snapshot: another process's sync between these reads could delete or reuse the rowids.
        with self._db.read_snapshot():
            self._postings.follow(self._generation())
            # Kept postings answer without FTS5: this cheap read makes a damaged keyword table fail here.
            self._db.query("SELECT rowid FROM chunks_fts WHERE rowid = 0")
            tops, idf = self._postings.searches(queries, limit)
            records = self.records(sorted({rowid for top in tops for _, rowid in top}))
        return KeywordRecall([scaled_to_best(top, records) for top in tops], idf)

    def keyword_scores(self, terms: Sequence[str], ids: Sequence[str],
                       idf: Mapping[str, float] | None = None) -> dict[str, float]:
        """The BM25 (not divided by the best) of each chunk of ``ids`` holding one of ``terms``.

        ``idf`` is not needed: the postings kept give each term's, the one keyword recall weighed it by.
        """
        if not terms or not ids:
            return {}
        with self._db.read_snapshot():
            self._postings.follow(self._generation())
            by_rowid = self._records.rowids(self._generation(), ids)
            scores = self._postings.scores_of(terms, np.fromiter(by_rowid, np.int64, len(by_rowid)))
        return {chunk_id: float(s) for chunk_id, s in zip(by_rowid.values(), scores, strict=True) if s > 0}

    def term_idf(self, terms: Sequence[str]) -> dict[str, float]:
        """Each term's Lucene idf over the chunks, as keyword search weighs it (see ``keyword_search``)."""
        with self._db.read_snapshot():
            self._postings.follow(self._generation())
            df, (n_docs, _) = self._postings.doc_freqs(terms), self._postings.corpus_stats()
        return {term: lucene_idf(n_docs, df.get(term, 0)) for term in terms}

    def holds_script(self, script: int) -> bool:
        """True when some indexed term is in ``script`` (``text.SCRIPT_CJK`` or ``SCRIPT_OTHER``): keywords
        in another script can find nothing here."""
        with self._db.read_snapshot():
            self._postings.follow(self._generation())
            return self._postings.holds_script(script)

    def corpus_stats(self) -> tuple[int, float]:
        """(chunks, mean terms per chunk): BM25's N and average document length (1.0 when empty)."""
        with self._db.read_snapshot():
            self._postings.follow(self._generation())
            return self._postings.corpus_stats()

    def vector_search(self, query: np.ndarray, limit: int) -> VectorRecall:
        """Cosine recall over the in-memory normalised matrices, scores clipped to [0, 1], with the query's
        background measured in the same pass (see ``ScriptVectors.search``).

        A compact matrix (float16, int8) proposes more candidates than asked for; their stored
        float32 vectors decide the order and the scores.
        """
        # One snapshot from the generation check to the records: see keyword_search.
        with self._db.read_snapshot():
            top, background, unmeasured = self._vector_matrix().search(query, limit,
                                                                        stored=self._stored_vectors)
            if not top:  # nothing stored, or a zero query
                return VectorRecall([], background)
            by_rowid = self.records([rowid for rowid, _ in top])
        hits = [(by_rowid[rowid], score) for rowid, score in top if rowid in by_rowid]
        return VectorRecall(hits, hits_background(background, unmeasured, by_rowid))

    def _stored_vectors(self, rowids: Sequence[int]) -> dict[int, np.ndarray]:
        return stored_vectors(self._db, "rowid", rowids)

    def vectors_for(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored unit vectors of chunks by id (chunks without one are absent)."""
        return stored_vectors(self._db, "id", ids)

    def record_access(self, ids: Sequence[str]) -> None:
        """Count that these chunks were returned (for the optional access weight)."""
        if ids:
            sql = "UPDATE chunks SET access_count = access_count + 1 WHERE id = ?"
            with self._db.write() as conn:
                conn.executemany(sql, ((i,) for i in ids))

    def access_counts(self, ids: Sequence[str]) -> dict[str, int]:
        """How often each chunk was returned."""
        marks = ",".join("?" * len(ids))
        rows = self._db.query(f"SELECT id, access_count FROM chunks WHERE id IN ({marks})", list(ids))
        return {r[0]: int(r[1]) for r in rows.fetchall()}

    def records(self, rowids: Sequence[int]) -> dict[int, ChunkRecord]:
        """The chunks with these rowids (rowids of chunks that are gone are left out)."""
        if not rowids:
            return {}
        with self._db.read_snapshot():  # the records kept belong to the generation they were read in
            self._postings.follow(self._generation())  # its size says whether all can be held
            return self._records.get(self._generation(), rowids)

    def _vector_matrix(self) -> ScriptVectors:
        generation = self._generation()
        with self._db.lock:
            if self._vectors is None or self._vectors.generation != generation:
                # Another process changed the index (or first use): reload all vectors.
                self._vectors = load_script_vectors(self._db, self.vector_dtype)
                self._vectors.generation = generation
            return self._vectors

    def after_sync(self) -> None:
        """Nothing to do: every structure of the SQLite index is kept up as rows are written."""

    # -- for tools and benchmarks -----------------------------------------------------

    def snapshot(self) -> contextlib.AbstractContextManager[None]:
        """Several reads (this index's methods, :meth:`read`) that see one state of the index."""
        return self._db.read_snapshot()

    def read(self, sql: str, params: Sequence[Any] = ()) -> Rows:
        """The rows of one read-only SQL statement (``query_only``), for diagnostics and benchmarks: the
        tables are derived and may change between versions; the search methods are the interface."""
        return self._db.query(sql, params, read_only=True)

    def nearest(self, query: np.ndarray, limit: int) -> list[tuple[int, float]]:
        """``(rowid, cosine)`` of the ``limit`` stored vectors nearest ``query``, best first: plain cosines,
        without :meth:`vector_search`'s script offsets (what an exact scan elsewhere returns)."""
        with self._db.read_snapshot():
            return self._vector_matrix().top_k(query, limit, offsets=False, stored=self._stored_vectors)

    def _generation(self) -> int:
        value = self._db.once_per_snapshot("generation", lambda: self.get_meta("generation"))
        return int(value) if value is not None else 0

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """Hold the index's write lock (one transaction) across several reads and writes.

        Writes inside join this transaction. The indexer reads a file inside it, so what it writes is
        never older than what another process wrote before: the index only moves forward. If it
        fails, the postings and records kept may hold its changes: they are forgotten.
        """
        try:
            with self._db.write() as conn:
                yield conn
        except BaseException:
            with self._db.lock:
                self._postings.clear()
                self._records.clear()
            raise

    writing = _write  # the same transaction, for callers outside the index (sync batches, embedding)

