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
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np

from ..errors import MemoryIndexError
from ..text import match_expression, query_terms
from ..types import ChunkRecord, FileKind
from .keyword import POSTINGS_BUDGET, bm25_score, bounded_terms, lucene_idf
from .vectors import VectorMatrix, from_blob, to_blob

__all__ = ["SCHEMA_VERSION", "ChunkRow", "FileState", "MemoryIndex"]

logger = logging.getLogger(__name__)

SCHEMA_VERSION = "1"

# Longer queries are cut to this many terms.
_FTS_MAX_TERMS = 32

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY,
    mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL,
    hash TEXT NOT NULL,
    kind TEXT NOT NULL,
    indexed_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    path TEXT NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    heading TEXT NOT NULL,
    text TEXT NOT NULL,
    hash TEXT NOT NULL,
    embed_hash TEXT NOT NULL,
    file_kind TEXT NOT NULL,
    updated_at REAL NOT NULL,
    n_terms INTEGER NOT NULL DEFAULT 0,
    embedding BLOB,
    access_count INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS chunks_path ON chunks(path);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(terms, tokenize = 'unicode61 remove_diacritics 2');
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_vocab USING fts5vocab(chunks_fts, 'row');
CREATE TABLE IF NOT EXISTS embedding_cache (
    hash TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (hash, fingerprint)
);
"""

_CHUNK_COLUMNS = (
    "c.rowid, c.id, c.path, c.start_line, c.end_line, c.heading, c.text, c.hash, c.file_kind, c.updated_at"
)


@dataclass(frozen=True, slots=True)
class FileState:
    """What the index last saw of one Markdown file."""

    path: str
    mtime_ns: int
    size: int
    hash: str


@dataclass(frozen=True, slots=True)
class ChunkRow:
    """A chunk to be written: its record, the text to embed, and its vector if known."""

    record: ChunkRecord
    embed_hash: str
    terms: str
    vector: np.ndarray | None = None


def _record(row: sqlite3.Row | tuple[Any, ...]) -> ChunkRecord:
    return ChunkRecord(
        id=row[1],
        path=row[2],
        start_line=row[3],
        end_line=row[4],
        heading=row[5],
        text=row[6],
        hash=row[7],
        file_kind=cast(FileKind, row[8]),
        updated_at=row[9],
    )


class MemoryIndex:
    """One SQLite index file (WAL, busy timeout), safe to share across threads.

    Tools run on worker threads and retrievers in executors, so the connection
    is opened with ``check_same_thread=False`` and every use holds one lock.
    """

    def __init__(self, conn: sqlite3.Connection, path: str) -> None:
        self._conn = conn
        self.path = path
        self._lock = threading.RLock()
        self._vectors: VectorMatrix | None = None
        # FTS5 postings keyword recall may score per query (see keyword.bounded_terms).
        self.postings_budget = POSTINGS_BUDGET
        self._stats: tuple[int, int, float] | None = None
        self._write_depth = 0

    # -- opening -----------------------------------------------------------------

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, busy_timeout_ms: int = 10_000) -> MemoryIndex:
        """Open (or create) the index at ``path``; rebuild it when unusable.

        A file that is not a SQLite database, is corrupt, or carries another
        schema version is deleted and a fresh index is created in its place:
        the Markdown is the source of truth, so nothing is lost. A file that is
        locked by another process, read-only, or cannot be opened at all is left
        alone and :class:`MemoryIndexError` is raised (the facade then answers
        from an in-memory index): deleting it would not help, or would pull the
        index out from under its other user.
        """
        target = os.fspath(path)
        try:
            return cls._open_checked(target, busy_timeout_ms)
        except (sqlite3.DatabaseError, _SchemaMismatch) as exc:
            if target == ":memory:":
                raise MemoryIndexError(f"cannot create an in-memory index: {exc}") from exc
            if isinstance(exc, sqlite3.OperationalError) and _not_damage(exc):
                raise MemoryIndexError(f"cannot use index {target}: {exc}") from exc
            logger.warning("index %s is unusable (%s); rebuilding it from the Markdown", target, exc)
            try:
                _remove_index_files(target)
                return cls._open_checked(target, busy_timeout_ms)
            except (sqlite3.DatabaseError, OSError) as again:
                raise MemoryIndexError(f"cannot create index {target}: {again}") from again

    @classmethod
    def _open_checked(cls, target: str, busy_timeout_ms: int) -> MemoryIndex:
        conn = sqlite3.connect(
            target, timeout=busy_timeout_ms / 1000, check_same_thread=False, isolation_level=None
        )
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            version = _schema_version(conn)
            if version is not None and version != SCHEMA_VERSION:
                raise _SchemaMismatch(f"schema version {version}, expected {SCHEMA_VERSION}")
            if target != ":memory:":
                conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            with _transaction(conn):
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute(
                    "INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', ?)", (SCHEMA_VERSION,)
                )
            # A foreign database with our table names but other columns fails here.
            conn.execute(
                f"SELECT {_CHUNK_COLUMNS}, c.embedding, c.embed_hash FROM chunks c LIMIT 1"
            ).fetchall()
            conn.execute("SELECT path, mtime_ns, size, hash, kind, indexed_at FROM files LIMIT 1").fetchall()
            conn.execute("SELECT rowid FROM chunks_fts LIMIT 1").fetchall()
        except BaseException:
            conn.close()
            raise
        return cls(conn, target)

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock, contextlib.suppress(sqlite3.Error):
            self._conn.close()

    def finish_for_swap(self) -> None:
        """Fold the WAL into the main file and close, so the file can be renamed."""
        with self._lock:
            with contextlib.suppress(sqlite3.Error):
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                self._conn.execute("PRAGMA journal_mode = DELETE")
            self.close()

    def adopt_cache(self, other_path: str) -> int:
        """Copy another index file's embedding cache into this one; returns rows copied."""
        if not os.path.exists(other_path):
            return 0
        with self._lock:
            try:
                self._conn.execute("ATTACH DATABASE ? AS old", (other_path,))
                try:
                    cur = self._conn.execute(
                        "INSERT OR IGNORE INTO embedding_cache SELECT hash, fingerprint, dim, vector "
                        "FROM old.embedding_cache"
                    )
                    return max(cur.rowcount, 0)
                finally:
                    self._conn.execute("DETACH DATABASE old")
            except sqlite3.Error as exc:
                logger.warning("could not copy the embedding cache from %s: %s", other_path, exc)
                return 0

    # -- meta ----------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        """A value from the ``meta`` table, or ``None``."""
        row = self._query("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        """Store a value in the ``meta`` table."""
        with self._write() as conn:
            conn.execute(
                "INSERT INTO meta(key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    # -- files and chunks ----------------------------------------------------------

    def file_states(self) -> dict[str, FileState]:
        """Every file the index knows, by relative path."""
        rows = self._query("SELECT path, mtime_ns, size, hash FROM files").fetchall()
        return {r[0]: FileState(r[0], r[1], r[2], r[3]) for r in rows}

    def file_state(self, path: str) -> FileState | None:
        """What the index knows of one file, or ``None``."""
        row = self._query("SELECT path, mtime_ns, size, hash FROM files WHERE path = ?", (path,)).fetchone()
        return None if row is None else FileState(row[0], row[1], row[2], row[3])

    def touch_file(self, state: FileState) -> None:
        """Record a new mtime/size for a file whose content hash did not change."""
        with self._write() as conn:
            conn.execute(
                "UPDATE files SET mtime_ns = ?, size = ? WHERE path = ?",
                (state.mtime_ns, state.size, state.path),
            )

    def replace_file(self, state: FileState, kind: FileKind, rows: Sequence[ChunkRow]) -> tuple[int, int]:
        """Replace every chunk of one file in one transaction; returns (removed, added).

        An edited file's old text never stays searchable: its old chunks and
        their FTS rows go in the same transaction that adds the new ones.
        """
        with self._write() as conn:
            removed = self._delete_chunks(conn, state.path)
            added_ids: list[int] = []
            added_vectors: list[np.ndarray] = []
            for row in rows:
                rec = row.record
                cur = conn.execute(
                    "INSERT INTO chunks(id, path, start_line, end_line, heading, text, hash, embed_hash, "
                    "file_kind, updated_at, n_terms, embedding) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        rec.id,
                        rec.path,
                        rec.start_line,
                        rec.end_line,
                        rec.heading,
                        rec.text,
                        rec.hash,
                        row.embed_hash,
                        rec.file_kind,
                        rec.updated_at,
                        len(row.terms.split()),
                        None if row.vector is None else to_blob(row.vector),
                    ),
                )
                rowid = cast(int, cur.lastrowid)
                conn.execute("INSERT INTO chunks_fts(rowid, terms) VALUES (?, ?)", (rowid, row.terms))
                if row.vector is not None:
                    added_ids.append(rowid)
                    added_vectors.append(row.vector)
            conn.execute(
                "INSERT INTO files(path, mtime_ns, size, hash, kind, indexed_at) VALUES (?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(path) DO UPDATE SET mtime_ns = excluded.mtime_ns, size = excluded.size, "
                "hash = excluded.hash, kind = excluded.kind, indexed_at = excluded.indexed_at",
                (state.path, state.mtime_ns, state.size, state.hash, kind, time.time()),
            )
            self._bump_generation(conn)
        if self._vectors is not None:
            self._vectors.remove(removed)
            self._vectors.add(added_ids, added_vectors)
            self._vectors.generation = self._generation()
        return len(removed), len(rows)

    def remove_file(self, path: str) -> int:
        """Forget a file and all its chunks; returns the number of chunks removed."""
        with self._write() as conn:
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
        row = self._query("SELECT count(*), count(embedding) FROM chunks").fetchone()
        return int(row[0]), int(row[1])

    # -- embeddings ---------------------------------------------------------------

    def chunks_missing_vectors(self, limit: int, *, after_rowid: int = 0) -> list[tuple[int, str, str, str]]:
        """Up to ``limit`` chunks without a vector, rowid above ``after_rowid``, in rowid order.

        Returns (rowid, embed_hash, heading, text). Pass the last rowid seen as
        ``after_rowid`` to page through them without rescanning earlier rows.
        """
        rows = self._query(
            "SELECT rowid, embed_hash, heading, text FROM chunks "
            "WHERE embedding IS NULL AND rowid > ? ORDER BY rowid LIMIT ?",
            (after_rowid, limit),
        ).fetchall()
        return [(r[0], r[1], r[2], r[3]) for r in rows]

    def set_vectors(self, vectors: Sequence[tuple[int, np.ndarray]]) -> None:
        """Attach vectors to existing chunks by rowid."""
        if not vectors:
            return
        with self._write() as conn:
            conn.executemany(
                "UPDATE chunks SET embedding = ? WHERE rowid = ?",
                ((to_blob(v), rowid) for rowid, v in vectors),
            )
            self._bump_generation(conn)
        if self._vectors is not None:
            self._vectors.remove([rowid for rowid, _ in vectors])
            self._vectors.add([r for r, _ in vectors], [v for _, v in vectors])
            self._vectors.generation = self._generation()

    def clear_vectors(self) -> None:
        """Drop every stored vector (the embedding identity changed)."""
        with self._write() as conn:
            conn.execute("UPDATE chunks SET embedding = NULL")
            self._bump_generation(conn)
        self._vectors = None

    def cached_vectors(self, hashes: Sequence[str], fingerprint: str) -> dict[str, np.ndarray]:
        """Cached vectors for content hashes under one embedding identity."""
        out: dict[str, np.ndarray] = {}
        for start in range(0, len(hashes), 500):
            part = list(hashes[start : start + 500])
            marks = ",".join("?" * len(part))
            rows = self._query(
                f"SELECT hash, vector FROM embedding_cache WHERE fingerprint = ? AND hash IN ({marks})",
                [fingerprint, *part],
            )
            out.update((r[0], from_blob(r[1]).copy()) for r in rows.fetchall())
        return out

    def cache_vectors(self, items: Sequence[tuple[str, np.ndarray]], fingerprint: str) -> None:
        """Store vectors in the embedding cache."""
        if not items:
            return
        with self._write() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO embedding_cache(hash, fingerprint, dim, vector) VALUES (?, ?, ?, ?)",
                ((h, fingerprint, int(v.shape[0]), to_blob(v)) for h, v in items),
            )

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
        with self._read_snapshot():
            return self._keyword_search(query, limit)

    def _keyword_search(self, query: str, limit: int) -> list[tuple[ChunkRecord, float]]:
        terms = query_terms(query)
        if not terms or limit <= 0:
            return []
        terms = terms[:_FTS_MAX_TERMS]
        marks = ",".join("?" * len(terms))
        df = dict(
            self._query(f"SELECT term, doc FROM chunks_vocab WHERE term IN ({marks})", terms).fetchall()
        )
        # FTS5's ranking picks the candidates (bounded), ours orders them. Only rowids
        # come out of FTS5, so no chunk text is read beyond the candidates' terms and the hits' records.
        candidates = [r[0] for r in self._query(
            "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY bm25(chunks_fts), rowid LIMIT ?",
            (match_expression(bounded_terms(terms, df, self.postings_budget)), max(2 * limit, 32)),
        ).fetchall()]
        if not candidates:
            return []
        n_docs, avg_len = self._corpus_stats()
        idf = {t: lucene_idf(n_docs, df.get(t, 0)) for t in terms}
        marks = ",".join("?" * len(candidates))
        scored = [
            (bm25_score(terms, indexed.split(), idf, avg_len), rowid)
            for rowid, indexed in self._query(
                f"SELECT rowid, terms FROM chunks_fts WHERE rowid IN ({marks})", candidates
            ).fetchall()
        ]
        scored.sort(key=lambda item: (-item[0], item[1]))
        top = scored[:limit]
        if not top:  # the candidates were deleted (another thread's or process's sync) between queries
            return []
        records = self._records_by_rowid([rowid for _, rowid in top])
        best = top[0][0]
        if best <= 0.0:
            return [(records[rowid], 1.0) for _, rowid in top if rowid in records]
        return [(records[rowid], max(score / best, 1e-6)) for score, rowid in top if rowid in records]

    def _corpus_stats(self) -> tuple[int, float]:
        generation = self._generation()
        if self._stats is None or self._stats[0] != generation:
            row = self._query("SELECT count(*), avg(n_terms) FROM chunks").fetchone()
            self._stats = (generation, int(row[0]), float(row[1] or 1.0) or 1.0)
        return self._stats[1], self._stats[2]

    def vector_search(self, query: np.ndarray, limit: int) -> list[tuple[ChunkRecord, float]]:
        """Cosine recall over the in-memory normalised matrix, scores clipped to [0, 1]."""
        # One snapshot from the generation check to the records: see keyword_search.
        with self._read_snapshot():
            matrix = self._vector_matrix()
            top = matrix.top_k(query, limit)
            if not top:
                return []
            by_rowid = self._records_by_rowid([rowid for rowid, _ in top])
        return [(by_rowid[rowid], score) for rowid, score in top if rowid in by_rowid]

    def vectors_for(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored unit vectors of chunks by id (chunks without one are absent)."""
        out: dict[str, np.ndarray] = {}
        for start in range(0, len(ids), 500):
            part = list(ids[start : start + 500])
            marks = ",".join("?" * len(part))
            rows = self._query(
                f"SELECT id, embedding FROM chunks WHERE embedding IS NOT NULL AND id IN ({marks})", part
            )
            out.update((r[0], from_blob(r[1])) for r in rows.fetchall())
        return out

    def record_access(self, ids: Sequence[str]) -> None:
        """Count that these chunks were returned (for the optional access weight)."""
        if ids:
            with self._write() as conn:
                conn.executemany(
                    "UPDATE chunks SET access_count = access_count + 1 WHERE id = ?", ((i,) for i in ids)
                )

    def access_counts(self, ids: Sequence[str]) -> dict[str, int]:
        """How often each chunk was returned."""
        marks = ",".join("?" * len(ids))
        rows = self._query(f"SELECT id, access_count FROM chunks WHERE id IN ({marks})", list(ids))
        return {r[0]: int(r[1]) for r in rows.fetchall()}

    def _records_by_rowid(self, rowids: Sequence[int]) -> dict[int, ChunkRecord]:
        marks = ",".join("?" * len(rowids))
        rows = self._query(f"SELECT {_CHUNK_COLUMNS} FROM chunks c WHERE c.rowid IN ({marks})", list(rowids))
        return {r[0]: _record(r) for r in rows.fetchall()}

    def _vector_matrix(self) -> VectorMatrix:
        generation = self._generation()
        with self._lock:
            if self._vectors is None or self._vectors.generation != generation:
                # Another process changed the index (or first use): reload all vectors,
                # streamed into one preallocated matrix (never every blob at once, never text).
                expected = int(self._query("SELECT count(embedding) FROM chunks").fetchone()[0])
                rows = self._stream("SELECT rowid, embedding FROM chunks WHERE embedding IS NOT NULL")
                matrix = VectorMatrix.load(rows, expected)
                matrix.generation = generation
                self._vectors = matrix
            return self._vectors

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

    def _query(self, sql: str, params: Sequence[Any] = ()) -> _Rows:
        # Rows are read whole under the lock: a cursor read after it is released lets another thread
        # write on the shared connection mid-query, and FTS5 then aborts the read ("query aborted").
        with self._lock:
            try:
                return _Rows(_retry_locked(lambda: self._conn.execute(sql, params).fetchall()))
            except sqlite3.Error as exc:
                raise MemoryIndexError(f"index query failed on {self.path}: {exc}") from exc

    def _stream(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        """A lazy cursor for a large read; the caller holds ``self._lock`` until it is consumed."""
        try:
            return cast(sqlite3.Cursor, _retry_locked(lambda: self._conn.execute(sql, params)))
        except sqlite3.Error as exc:
            raise MemoryIndexError(f"index query failed on {self.path}: {exc}") from exc

    @contextlib.contextmanager
    def _read_snapshot(self) -> Iterator[None]:
        """Run several reads in one read transaction (one WAL snapshot), holding the lock throughout."""
        with self._lock:
            if self._conn.in_transaction:
                yield
                return
            try:
                self._conn.execute("BEGIN")  # deferred: takes no lock; the first read pins the snapshot
            except sqlite3.Error as exc:
                raise MemoryIndexError(f"cannot read index {self.path}: {exc}") from exc
            try:
                yield
            finally:
                with contextlib.suppress(sqlite3.Error):
                    self._conn.execute("COMMIT")

    def writing(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        """Hold the index's write lock (one transaction) across several reads and writes.

        Writes inside join this transaction. The indexer reads a file inside
        it, so what it writes is never older than what another process wrote
        before: the index only moves forward.
        """
        return self._write()

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._write_depth:  # inside writing(): the outer block commits or rolls back
                self._write_depth += 1
                try:
                    yield self._conn
                finally:
                    self._write_depth -= 1
                return
            try:
                _retry_locked(lambda: self._conn.execute("BEGIN IMMEDIATE"))
            except sqlite3.Error as exc:
                raise MemoryIndexError(f"cannot write index {self.path}: {exc}") from exc
            self._write_depth = 1
            try:
                yield self._conn
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    self._conn.execute("ROLLBACK")
                raise
            else:
                try:
                    self._conn.execute("COMMIT")
                except sqlite3.Error as exc:
                    with contextlib.suppress(sqlite3.Error):
                        self._conn.execute("ROLLBACK")
                    raise MemoryIndexError(f"cannot write index {self.path}: {exc}") from exc
            finally:
                self._write_depth = 0


class _SchemaMismatch(Exception):
    pass


class _Rows(list[Any]):
    """All rows of one query, with the two cursor methods callers use."""

    def fetchone(self) -> Any:
        return self[0] if self else None

    def fetchall(self) -> list[Any]:
        return self


def _schema_version(conn: sqlite3.Connection) -> str | None:
    has_meta = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone()
    if has_meta is None:
        tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if tables:
            raise _SchemaMismatch("a database without our meta table")
        return None
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return None if row is None else str(row[0])


@contextlib.contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _retry_locked(fn: Any, attempts: int = 5) -> Any:
    """Run ``fn``, retrying when another process holds the write lock past the busy timeout."""
    for attempt in range(attempts):
        try:
            return fn()
        except sqlite3.OperationalError as exc:
            if ("locked" not in str(exc) and "busy" not in str(exc)) or attempt == attempts - 1:
                raise
            time.sleep(0.05 * 2**attempt)
    raise AssertionError("unreachable")


def _not_damage(exc: sqlite3.OperationalError) -> bool:
    """Locked, read-only or unopenable: a problem of access, not of the file's content."""
    message = str(exc).lower()
    return any(word in message for word in ("locked", "busy", "readonly", "read-only", "unable to open"))


def _remove_index_files(target: str) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            Path(target + suffix).unlink()
