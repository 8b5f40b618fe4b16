"""The index schema is an append-only list of migrations: an index gains the steps it lacks, in order."""

from __future__ import annotations

import hashlib
import inspect
import logging
import sqlite3
from pathlib import Path

import pytest

from langchain_md_memory.index.sqlite import MemoryIndex
from langchain_md_memory.index.sqlite.migrations import MIGRATIONS, SCHEMA_VERSION, Step, recorded_version
from langchain_md_memory.index.sqlite.schema import connect
from tests.support.keywords import keyword_hits

SHIPPED = ("76d887a3b0382320", "0ac0f7335bfd1ed8", "46e5713ed3aeddcf")
"""Digests of the migrations already out in the world, in order (see the test that reads them)."""

# The tables as the package wrote them before its schema was a list of migrations (schema_version '2'):
# the shape every index in use has today. Copied from that release's index/schema.py.
_BEFORE_MIGRATIONS = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE files (path TEXT PRIMARY KEY, mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL,
    hash TEXT NOT NULL, kind TEXT NOT NULL, indexed_at REAL NOT NULL);
CREATE TABLE chunks (rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, path TEXT NOT NULL,
    start_line INTEGER NOT NULL, end_line INTEGER NOT NULL, heading TEXT NOT NULL, text TEXT NOT NULL,
    hash TEXT NOT NULL, embed_hash TEXT NOT NULL, context TEXT NOT NULL DEFAULT '',
    script INTEGER NOT NULL DEFAULT 0, file_kind TEXT NOT NULL, updated_at REAL NOT NULL,
    n_terms INTEGER NOT NULL DEFAULT 0, has_vector INTEGER NOT NULL DEFAULT 0,
    access_count INTEGER NOT NULL DEFAULT 0);
CREATE INDEX chunks_path ON chunks(path);
CREATE VIRTUAL TABLE chunks_fts USING fts5(terms, tokenize = 'unicode61 remove_diacritics 2');
CREATE VIRTUAL TABLE chunks_vocab USING fts5vocab(chunks_fts, 'row');
CREATE TABLE embedding_cache (hash TEXT NOT NULL, fingerprint TEXT NOT NULL, dim INTEGER NOT NULL,
    vector BLOB NOT NULL, PRIMARY KEY (hash, fingerprint));
CREATE INDEX chunks_unembedded ON chunks(rowid) WHERE has_vector = 0;
INSERT INTO meta VALUES ('schema_version', '2');
INSERT INTO chunks(rowid, id, path, start_line, end_line, heading, text, hash, embed_hash, file_kind,
    updated_at, n_terms) VALUES (1, 'notes.md:1-1', 'notes.md', 1, 1, '', 'bond ladder', 'h', 'e',
    'evergreen', 0, 2);
INSERT INTO chunks_fts(rowid, terms) VALUES (1, 'bond ladder');
INSERT INTO files VALUES ('notes.md', 1, 11, 'x', 'evergreen', 0);
"""


def _shape(conn: sqlite3.Connection) -> dict[str, frozenset[str]]:
    """Every table's columns and every index (by name), as SQLite reports them."""
    objects = conn.execute("SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'").fetchall()
    return {name: frozenset(row[1] for row in conn.execute(f"PRAGMA table_info({name})"))
            if kind == "table" else frozenset({kind}) for kind, name in objects}


def _index_at(path: Path, version: int) -> None:
    """An index file at ``version``: the first ``version`` steps, as a package of that version left it."""
    conn = sqlite3.connect(path, isolation_level=None)
    for step in MIGRATIONS[:version]:
        if isinstance(step, str):
            conn.executescript(step)
        else:
            step(conn)
    conn.execute("INSERT INTO meta VALUES ('schema_version', ?), ('kept', 'yes')", (str(version),))
    conn.close()


def _version_of(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return str(conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0])
    finally:
        conn.close()


def test_a_new_index_gets_every_migration(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    conn = connect(str(tmp_path / "index.sqlite"), 1000)
    assert recorded_version(conn) == SCHEMA_VERSION == len(MIGRATIONS)
    shape = _shape(conn)
    conn.close()
    assert shape["chunks"] >= {"id", "text", "embed_hash", "context", "script", "has_vector", "access_count"}
    assert "embedding" not in shape["chunks"]  # added by the first step, gone with the second
    assert {"chunks_path", "chunks_unembedded", "chunks_fts", "chunks_vocab", "embedding_cache"} <= set(shape)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


@pytest.mark.parametrize("version", range(1, SCHEMA_VERSION))
def test_an_index_at_an_older_version_gets_the_rest_and_keeps_its_rows(
    tmp_path: Path, version: int, caplog: pytest.LogCaptureFixture
) -> None:
    _index_at(tmp_path / "old.sqlite", version)
    caplog.set_level(logging.INFO, logger="langchain_md_memory.index.sqlite.migrations")
    old = connect(str(tmp_path / "old.sqlite"), 1000)
    ran = [r.getMessage() for r in caplog.records if "migrating" in r.getMessage()]
    assert ran == [f"index: migrating schema version {v} to {v + 1}" for v in range(version, SCHEMA_VERSION)]
    assert old.execute("SELECT value FROM meta WHERE key = 'kept'").fetchone() == ("yes",)  # not rebuilt
    new = connect(str(tmp_path / "new.sqlite"), 1000)
    assert _shape(old) == _shape(new)
    assert recorded_version(old) == SCHEMA_VERSION
    old.close()
    new.close()


def test_an_index_written_before_migrations_existed_opens_without_a_rebuild(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(_BEFORE_MIGRATIONS)
    conn.close()
    index = MemoryIndex.open(path)
    try:
        assert [record.text for record, _ in keyword_hits(index, "ladder", 5)] == ["bond ladder"]
        assert set(index.file_states()) == {"notes.md"} and index.repaired is None
    finally:
        index.close()
    assert _version_of(path) == str(SCHEMA_VERSION)


def test_an_index_whose_meta_lost_its_version_is_migrated_in_place(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(_BEFORE_MIGRATIONS + "DELETE FROM meta WHERE key = 'schema_version';")
    conn.close()
    index = MemoryIndex.open(path)  # every step runs, each on a database that already has it
    try:
        assert index.count_chunks() == (1, 0)
    finally:
        index.close()
    assert _version_of(path) == str(SCHEMA_VERSION)


@pytest.mark.parametrize(("recorded", "said"), [
    (str(SCHEMA_VERSION + 1), "newer than this package's"),
    ("0", "not one this package knows"),
    ("two", "not one this package knows"),
])
def test_a_version_it_cannot_migrate_is_rebuilt_and_the_log_says_why(
    tmp_path: Path, recorded: str, said: str, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "index.sqlite"
    _index_at(path, SCHEMA_VERSION)
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (recorded,))
    conn.commit()
    conn.close()
    conn = connect(str(path), 1000)
    assert conn.execute("SELECT value FROM meta WHERE key = 'kept'").fetchone() is None  # rebuilt
    assert recorded_version(conn) == SCHEMA_VERSION
    conn.close()
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(f"schema version {recorded}" in m.replace("'", "") and said in m and "rebuilding" in m
               for m in warned), warned


def _digest(step: Step) -> str:
    text = step if isinstance(step, str) else inspect.getsource(step)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def test_shipped_migrations_are_never_edited_only_appended_to() -> None:
    # An index past a step never runs it again: an edited step would leave two shapes under one version.
    # So the steps out in the world are pinned here by digest (a function's by its source). A new step goes
    # at the end of MIGRATIONS; once it ships, append its digest to SHIPPED. Never change one.
    assert len(MIGRATIONS) >= len(SHIPPED)
    assert tuple(_digest(step) for step in MIGRATIONS[: len(SHIPPED)]) == SHIPPED


def test_a_table_dropped_behind_our_back_is_created_again_and_the_log_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "index.sqlite"
    conn = connect(str(path), 1000)
    conn.execute("INSERT INTO embedding_cache VALUES ('h', 'f', 1, x'00000000')")
    conn.execute("DROP TABLE chunks_fts")
    conn.execute("DROP INDEX chunks_unembedded")
    conn.close()
    conn = connect(str(path), 1000)
    fresh = connect(str(tmp_path / "fresh.sqlite"), 1000)
    assert _shape(conn) == _shape(fresh)
    assert conn.execute("SELECT count(*) FROM embedding_cache").fetchone()[0] == 1  # not rebuilt: kept
    conn.close()
    fresh.close()
    assert any("chunks_fts, chunks_unembedded missing; created again" in r.getMessage()
               for r in caplog.records if r.levelno == logging.WARNING)
