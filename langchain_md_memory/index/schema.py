"""The index file's schema, how it is opened, and what its errors mean.

Opening checks the schema version and the tables: a file that is not a SQLite
database, is corrupt, foreign, or of another schema version is deleted and
created afresh (the Markdown is the source of truth). SQLite errors are
classified here, once, by their result code: :class:`IndexBusyError` (another
process holds it, or it cannot be opened for writing: leave the file alone)
or :class:`IndexDamagedError` (rebuild it from the Markdown).

Example:
    .. code-block:: python

        from langchain_md_memory.index.schema import connect

        conn = connect("memory/index.sqlite", busy_timeout_ms=10_000)
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from ..errors import IndexBusyError, IndexDamagedError, MemoryIndexError

__all__ = [
    "CHUNK_COLUMNS",
    "IDENTITY",
    "PAGE_SIZE",
    "SCHEMA_VERSION",
    "VECTOR_JOIN",
    "bump_generation",
    "connect",
    "index_error",
    "is_busy",
    "remove_index_files",
    "repair_if_inconsistent",
    "retry_busy",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

SCHEMA_VERSION = "2"
PAGE_SIZE = 16_384
"""The page size of a new index file (an existing one keeps its own until rebuilt)."""

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
    context TEXT NOT NULL DEFAULT '',
    script INTEGER NOT NULL DEFAULT 0,
    file_kind TEXT NOT NULL,
    updated_at REAL NOT NULL,
    n_terms INTEGER NOT NULL DEFAULT 0,
    has_vector INTEGER NOT NULL DEFAULT 0,
    access_count INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS chunks_path ON chunks(path);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(terms, tokenize = 'unicode61 remove_diacritics 2');
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_vocab USING fts5vocab(chunks_fts, 'row');
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_instances USING fts5vocab(chunks_fts, 'instance');
CREATE TABLE IF NOT EXISTS embedding_cache (
    hash TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (hash, fingerprint)
);
"""

IDENTITY = "coalesce((SELECT value FROM meta WHERE key = 'embedding_identity'), '')"
"""The index's embedding identity, in SQL (``''`` before any embedder was used)."""

VECTOR_JOIN = f"embedding_cache e ON e.hash = c.embed_hash AND e.fingerprint = {IDENTITY}"
"""A chunk's vector is the cache's vector of its text under the index's embedding identity:
``FROM chunks c JOIN {VECTOR_JOIN}`` (``e.vector``) keeps the chunks that have one. ``chunks.has_vector``
says the same without the join (set with the vector, cleared with the identity), for counting."""

CHUNK_COLUMNS = (
    "c.rowid, c.id, c.path, c.start_line, c.end_line, c.heading, c.text, c.hash, c.file_kind, c.updated_at"
)
"""The columns of a :class:`~langchain_md_memory.types.ChunkRecord`, in its field order (after rowid)."""

# Result codes (primary, the low byte) meaning another process holds the file or it cannot be written:
# BUSY, LOCKED, READONLY, CANTOPEN, PERM, AUTH. Deleting the file would not cure these.
_BUSY_CODES = frozenset({5, 6, 8, 14, 3, 23})
# ERROR (a table or column our schema created is missing), CORRUPT, NOTADB, IOERR, SCHEMA, FORMAT.
_DAMAGE_CODES = frozenset({1, 11, 26, 10, 17, 24})


def _primary_code(exc: sqlite3.Error) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return None if code is None else int(code) & 0xFF


def is_busy(exc: sqlite3.Error) -> bool:
    """True when another connection holds the lock (worth a retry)."""
    return _primary_code(exc) in (5, 6)


def index_error(exc: sqlite3.Error, what: str) -> MemoryIndexError:
    """The package's error for a SQLite error: busy, damaged, or another index error."""
    code = _primary_code(exc)
    message = f"{what}: {exc}"
    if code in _BUSY_CODES:
        return IndexBusyError(message)
    if code in _DAMAGE_CODES or (isinstance(exc, sqlite3.DatabaseError) and code is None \
            and not isinstance(exc, sqlite3.ProgrammingError)):
        return IndexDamagedError(message)
    return MemoryIndexError(message)


def retry_busy(fn: Callable[[], T], attempts: int = 5) -> T:
    """Run ``fn``, retrying when another process holds the write lock past the busy timeout."""
    for attempt in range(attempts):
        try:
            return fn()
        except sqlite3.OperationalError as exc:
            if not is_busy(exc) or attempt == attempts - 1:
                raise
            time.sleep(0.05 * 2**attempt)
    raise AssertionError("unreachable")


def connect(target: str, busy_timeout_ms: int) -> sqlite3.Connection:
    """A connection to a usable index at ``target``, recreating a damaged file.

    Raises:
        IndexBusyError: the file is locked by another process, read-only or
            cannot be opened: it is left alone (the facade then answers from
            an in-memory index).
        IndexDamagedError: it was damaged and could not be created afresh.
    """
    try:
        conn = _connect_checked(target, busy_timeout_ms)
    except (sqlite3.DatabaseError, _SchemaMismatch) as exc:
        error = index_error(exc, f"cannot use index {target}") if isinstance(exc, sqlite3.Error) else None
        if target == ":memory:" or isinstance(error, IndexBusyError):
            raise error or IndexDamagedError(f"cannot create an in-memory index: {exc}") from exc
        logger.warning("index %s is unusable (%s); rebuilding it from the Markdown", target, exc)
        try:
            remove_index_files(target)
            return _connect_checked(target, busy_timeout_ms)
        except (sqlite3.DatabaseError, OSError) as again:
            raise IndexDamagedError(f"cannot create index {target}: {again}") from again
    return conn


def repair_if_inconsistent(conn: sqlite3.Connection) -> str | None:
    """Empty the derived tables when keyword rows and chunks disagree; returns what was repaired.

    A keyword table dropped (and recreated empty on open) or emptied behind our back would
    otherwise hide facts that are there. The embedding cache is kept, so re-indexing from the
    Markdown costs no embedding calls.
    """
    chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    keywords = conn.execute("SELECT count(*) FROM chunks_fts").fetchone()[0]
    if chunks == keywords:
        return None
    note = f"keyword rows ({keywords}) did not match chunks ({chunks}); re-indexed from the Markdown"
    logger.warning("index: %s", note)
    with _transaction(conn):
        conn.execute("DELETE FROM chunks_fts")
        conn.execute("DELETE FROM chunks")
        conn.execute("DELETE FROM files")
        bump_generation(conn)
    return note


def bump_generation(conn: sqlite3.Connection) -> int:
    """Count one more change of the index (readers in other processes reload what they keep); returns
    the generation before it."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
    conn.execute(
        "INSERT INTO meta(key, value) VALUES ('generation', '1') "
        "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
    )
    return int(row[0]) if row is not None else 0


def _connect_checked(target: str, busy_timeout_ms: int) -> sqlite3.Connection:
    conn = sqlite3.connect(
        target, timeout=busy_timeout_ms / 1000, check_same_thread=False, isolation_level=None
    )
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        version = _schema_version(conn)
        if version is not None and version not in (SCHEMA_VERSION, "1"):
            raise _SchemaMismatch(f"schema version {version}, expected {SCHEMA_VERSION}")
        # Only a new, empty file takes it: 16 KiB pages hold ten 1.5 KB cached vectors where 4 KiB pages
        # held two (a quarter of each page left empty), so a build writes a third less to the WAL.
        conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
        if target != ":memory:":
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        with _transaction(conn):
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            _add_missing_columns(conn)
            if version == "1":
                _vectors_into_cache(conn)
            # The chunks waiting for a vector, found without reading the others (a sync asks each time).
            conn.execute("CREATE INDEX IF NOT EXISTS chunks_unembedded ON chunks(rowid) WHERE has_vector = 0")
            conn.execute(
                "INSERT INTO meta(key, value) VALUES ('schema_version', ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (SCHEMA_VERSION,)
            )
        # A foreign database with our table names but other columns fails here.
        extra = ", ".join(f"c.{column}" for _, column, _ in _ADDED_COLUMNS)
        conn.execute(f"SELECT {CHUNK_COLUMNS}, c.embed_hash, {extra} FROM chunks c LIMIT 1")
        conn.execute("SELECT path, mtime_ns, size, hash, kind, indexed_at FROM files LIMIT 1").fetchall()
        conn.execute("SELECT rowid FROM chunks_fts LIMIT 1").fetchall()
    except BaseException:
        conn.close()
        raise
    return conn


_ADDED_COLUMNS = (
    ("chunks", "context", "TEXT NOT NULL DEFAULT ''"),
    ("chunks", "script", "INTEGER NOT NULL DEFAULT 0"),
    ("chunks", "has_vector", "INTEGER NOT NULL DEFAULT 0"),
)
"""Columns added to schema version 1 after it shipped: an index without them gains them on open."""


def _add_missing_columns(conn: sqlite3.Connection) -> None:
    for table, column, declaration in _ADDED_COLUMNS:
        if column not in {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}:
            conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")


def _vectors_into_cache(conn: sqlite3.Connection) -> None:
    """Schema 1 kept each chunk's vector in ``chunks.embedding`` too; schema 2 reads it from the cache.

    Every such vector came from the cache or went into it, but copy them anyway (a vector is
    never lost to an upgrade), then drop the column (or empty it, where SQLite predates
    ``DROP COLUMN``).
    """
    identity = conn.execute("SELECT value FROM meta WHERE key = 'embedding_identity'").fetchone()
    if identity is not None:
        conn.execute(
            "INSERT OR IGNORE INTO embedding_cache(hash, fingerprint, dim, vector) "
            "SELECT embed_hash, ?, length(embedding) / 4, embedding FROM chunks WHERE embedding IS NOT NULL",
            (identity[0],),
        )
    conn.execute("UPDATE chunks SET has_vector = embedding IS NOT NULL")
    try:
        conn.execute("ALTER TABLE chunks DROP COLUMN embedding")
    except sqlite3.OperationalError:
        conn.execute("UPDATE chunks SET embedding = NULL")


class _SchemaMismatch(Exception):
    pass


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


def remove_index_files(target: str) -> None:
    """Delete an index file and its sidecars (WAL, shared memory, journal)."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            Path(target + suffix).unlink()
