"""The index file's schema as an ordered list of migrations, only ever appended to.

``MIGRATIONS[i]`` takes an index from schema version ``i`` to ``i + 1`` (version 0 is an
empty file), and the version reached is the ``schema_version`` row of the ``meta`` table,
where the versions before this list were kept too (1: the first release, 2: vectors in the
embedding cache only). So an index of any version opens without a rebuild: it gains the
steps it lacks, in the opener's write transaction. A step is SQL (statements separated by
``;``) or a function of the connection, written to run on a database that already has part
of it (the first releases created their tables ``IF NOT EXISTS`` on every open).

A step that has shipped is never edited or reordered: an index past it never runs it again,
so two shapes would share one version number. A change of schema is a new step at the end.
The index is derived data: a database this package cannot migrate (a newer package's version,
an unknown one, a database that is not an index) is not an error but rebuilt from the
Markdown by :func:`~langchain_md_memory.index.sqlite.schema.connect`, which says why in the log.
A table of the current schema that damage removed is created again, empty, on open
(:func:`restore_missing`): what it held is re-indexed, the rest of the file kept.

Example:
    .. code-block:: python

        conn = sqlite3.connect("index.sqlite", isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        assert migrate(conn) == 0  # a new file: every step ran
        conn.execute("COMMIT")
        assert recorded_version(conn) == SCHEMA_VERSION
"""

from __future__ import annotations

import functools
import logging
import sqlite3
from collections.abc import Callable
from typing import TypeAlias

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "SchemaMismatch", "Step", "migrate", "recorded_version",
           "restore_missing"]

logger = logging.getLogger(__name__)

Step: TypeAlias = str | Callable[[sqlite3.Connection], None]
"""One migration: SQL statements, or a function given the connection (inside the transaction)."""


def _chunks_of_schema_2(conn: sqlite3.Connection) -> None:
    """Chunks gain ``context``, ``script`` and ``has_vector``; a chunk's vector lives in the cache only.

    Indexes of schema 1 gained the three columns on open after it shipped, so some may be there.
    Every vector in ``chunks.embedding`` came from the cache or went into it, but is copied anyway
    (an upgrade never loses a paid-for vector) before the column goes, or is emptied where SQLite
    predates ``DROP COLUMN``.
    """
    columns = {row[1] for row in conn.execute("PRAGMA table_info(chunks)")}
    added = (("context", "TEXT NOT NULL DEFAULT ''"), ("script", "INTEGER NOT NULL DEFAULT 0"),
             ("has_vector", "INTEGER NOT NULL DEFAULT 0"))
    for column, declaration in added:
        if column not in columns:
            conn.execute(f"ALTER TABLE chunks ADD COLUMN {column} {declaration}")
    if "embedding" not in columns:
        return
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


MIGRATIONS: tuple[Step, ...] = (
    # 1: the first release's tables (0.1.0), as it created them; a chunk kept its vector in `embedding`.
    """
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
)
""",
    # 2: heading context and script group per chunk; vectors read from the embedding cache only.
    _chunks_of_schema_2,
    # 3: the chunks waiting for a vector, found without reading the others (every sync asks).
    "CREATE INDEX IF NOT EXISTS chunks_unembedded ON chunks(rowid) WHERE has_vector = 0",
    # 4: each term's postings (chunk, column, offset) read by term, for keyword recall kept in memory.
    "CREATE VIRTUAL TABLE IF NOT EXISTS chunks_instances USING fts5vocab(chunks_fts, 'instance')",
    # 5: struck History lines with the days they held, for as-of search (never chunks). Forgetting the
    # chunking signature makes the next sync read every file again, so an older index gains them; the
    # chunks' vectors come back from the embedding cache.
    """
CREATE TABLE IF NOT EXISTS past_facts (
    path TEXT NOT NULL,
    line INTEGER NOT NULL,
    text TEXT NOT NULL,
    statement TEXT NOT NULL,
    since TEXT,
    until TEXT NOT NULL,
    embed_hash TEXT NOT NULL,
    PRIMARY KEY (path, line)
);
DELETE FROM meta WHERE key = 'chunking'
""",
)
"""Schema changes in order: ``MIGRATIONS[i]`` takes version ``i`` to ``i + 1``. Append only, never edit."""

SCHEMA_VERSION = len(MIGRATIONS)


class SchemaMismatch(Exception):
    """The database is not an index of a version this package can migrate (so it is rebuilt)."""


def recorded_version(conn: sqlite3.Connection) -> int:
    """The schema version of the database behind ``conn``; 0 for a new, empty one.

    Raises:
        SchemaMismatch: a database that is not an index (tables, but no ``meta``), or one of a
            version this package cannot migrate (newer than :data:`SCHEMA_VERSION`, or no version).
    """
    has_meta = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone()
    if has_meta is None:
        if conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
            raise SchemaMismatch("a database without our meta table")
        return 0
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if row is None:  # a first release's meta table before its version was written: each step checks
        return 0
    text = str(row[0])
    if text.isdigit() and int(text) > SCHEMA_VERSION:
        raise SchemaMismatch(f"schema version {text}, newer than this package's {SCHEMA_VERSION} "
                             "(written by a newer langchain-md-memory)")
    if not text.isdigit() or int(text) < 1:
        raise SchemaMismatch(f"schema version {text!r}, not one this package knows")
    return int(text)


def migrate(conn: sqlite3.Connection) -> int:
    """Apply the steps the index lacks and record :data:`SCHEMA_VERSION`; returns the version found.

    The caller holds a write transaction (``BEGIN IMMEDIATE``), so the version read here is the one
    the steps apply to even when another process opens the same file at once.

    Raises:
        SchemaMismatch: see :func:`recorded_version`.
    """
    found = recorded_version(conn)
    for version in range(found, SCHEMA_VERSION):
        if found:
            logger.info("index: migrating schema version %d to %d", version, version + 1)
        step = MIGRATIONS[version]
        if isinstance(step, str):
            for statement in step.split(";"):
                if statement.strip():
                    conn.execute(statement)
        else:
            step(conn)
    # Written on every open, also when no step ran: the write finds a file that cannot be written (read-only,
    # another process's lock) now, so the opener falls back to memory at once instead of at its first sync.
    conn.execute("INSERT INTO meta(key, value) VALUES ('schema_version', ?) "
                 "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (str(SCHEMA_VERSION),))
    return found


def restore_missing(conn: sqlite3.Connection) -> list[str]:
    """Create again, empty, each table or index of the current schema that the index lacks; returns them.

    Only damage removes one (a table dropped behind the package's back). Everything in the index is
    derived, so an empty table is a consistent start: the open's consistency check then re-indexes
    what the lost table held (see ``repair_if_inconsistent``), and the embedding cache is kept unless
    it was the table lost. The caller holds a write transaction.
    """
    present = {str(row[0]) for row in conn.execute("SELECT name FROM sqlite_master")}
    restored = []
    for name, sql in _current_schema():
        if name not in present:
            conn.execute(sql)
            restored.append(name)
    if restored:
        logger.warning("index: %s missing; created again, empty", ", ".join(restored))
    return restored


@functools.cache
def _current_schema() -> tuple[tuple[str, str], ...]:
    """``(name, CREATE statement)`` of each table and index a new index has, in creation order.

    Read from a new in-memory index, so it is the list's own result. Virtual tables create their
    shadow tables themselves: those are left out.
    """
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        migrate(conn)
        sql = "SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid"
        rows: list[tuple[str, str]] = conn.execute(sql).fetchall()
    finally:
        conn.close()
    virtual = [name for name, sql in rows if sql.upper().startswith("CREATE VIRTUAL TABLE")]
    return tuple((name, sql) for name, sql in rows if not any(name.startswith(f"{v}_") for v in virtual))
