"""How the index file is opened, the SQL its readers share, and what its errors mean.

Opening applies the schema migrations the file lacks (see :mod:`.migrations`) and
checks the tables: a file that is not a SQLite database, is corrupt, foreign, or
of a schema version this package cannot migrate is deleted and created afresh
(the Markdown is the source of truth), with a warning that says why. SQLite errors are
classified here, once, by their result code: :class:`IndexBusyError` (another
process holds it, or it cannot be opened for writing: leave the file alone)
or :class:`IndexDamagedError` (rebuild it from the Markdown).

Example:
    .. code-block:: python

        from langchain_md_memory.index.sqlite.schema import connect

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

from ...errors import IndexBusyError, IndexDamagedError, MemoryIndexError
from .migrations import SCHEMA_VERSION, SchemaMismatch, migrate, recorded_version, restore_missing

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

PAGE_SIZE = 16_384
"""The page size of a new index file (an existing one keeps its own until rebuilt)."""

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
    except (sqlite3.DatabaseError, SchemaMismatch) as exc:
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
        recorded_version(conn)  # a foreign file, or a newer package's, is refused before anything is written
        # Only a new, empty file takes it: 16 KiB pages hold ten 1.5 KB cached vectors where 4 KiB pages
        # held two (a quarter of each page left empty), so a build writes a third less to the WAL.
        conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
        if target != ":memory:":
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        with _transaction(conn):
            migrate(conn)  # reads the version again under the write lock: another opener may have migrated
            restore_missing(conn)
            # A foreign database with our table names but other columns fails here (and is rebuilt).
            conn.execute(f"SELECT {CHUNK_COLUMNS}, c.embed_hash, c.context, c.script, c.n_terms, "
                         "c.has_vector, c.access_count FROM chunks c LIMIT 1").fetchall()
            conn.execute("SELECT path, mtime_ns, size, hash, kind, indexed_at FROM files LIMIT 1").fetchall()
            conn.execute("SELECT rowid FROM chunks_fts LIMIT 1").fetchall()
    except BaseException:
        conn.close()
        raise
    return conn


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
