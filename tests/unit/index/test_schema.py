"""SQLite errors are classified once, by result code: busy (leave the file) or damaged (rebuild)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from langchain_md_memory.errors import IndexBusyError, IndexDamagedError, MemoryIndexError
from langchain_md_memory.index.sqlite.schema import SCHEMA_VERSION, connect, index_error, is_busy


def _error_from(sql: str, conn: sqlite3.Connection) -> sqlite3.Error:
    with pytest.raises(sqlite3.Error) as caught:
        conn.execute(sql)
    return caught.value


def test_a_missing_table_is_damage(tmp_path: Path) -> None:
    conn = connect(str(tmp_path / "index.sqlite"), 1000)
    conn.execute("DROP TABLE chunks_fts")
    error = index_error(_error_from("SELECT * FROM chunks_fts", conn), "index x")
    assert isinstance(error, IndexDamagedError) and "index x" in str(error)
    conn.close()


def test_a_lock_held_by_another_connection_is_busy(tmp_path: Path) -> None:
    path = str(tmp_path / "index.sqlite")
    holder = connect(path, 1000)
    holder.execute("BEGIN IMMEDIATE")
    other = sqlite3.connect(path, timeout=0, isolation_level=None)
    exc = _error_from("BEGIN IMMEDIATE", other)
    assert is_busy(exc) and isinstance(index_error(exc, "x"), IndexBusyError)
    holder.execute("ROLLBACK")
    holder.close()
    other.close()


def test_a_closed_connection_is_neither_busy_nor_damage(tmp_path: Path) -> None:
    conn = connect(str(tmp_path / "index.sqlite"), 1000)
    conn.close()
    error = index_error(_error_from("SELECT 1", conn), "x")
    assert type(error) is MemoryIndexError


def test_a_file_that_is_not_a_database_is_recreated(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    path.write_bytes(b"not a database at all" * 100)
    conn = connect(str(path), 1000)
    assert conn.execute("SELECT count(*) FROM chunks").fetchone() == (0,)
    conn.close()


def test_an_index_from_before_the_context_column_gains_it_and_keeps_its_rows(tmp_path: Path) -> None:
    target = str(tmp_path / "index.sqlite")
    conn = connect(target, busy_timeout_ms=1000)
    conn.execute("INSERT INTO embedding_cache(hash, fingerprint, dim, vector) VALUES ('h', 'f', 1, x'00')")
    conn.execute("ALTER TABLE chunks DROP COLUMN context")  # as the first release created it,
    conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")  # and recorded it
    conn.close()
    conn = connect(target, busy_timeout_ms=1000)
    columns = {row[1] for row in conn.execute("PRAGMA table_info(chunks)")}
    assert "context" in columns
    assert conn.execute("SELECT count(*) FROM embedding_cache").fetchone()[0] == 1  # paid-for vectors kept
    conn.close()


def test_an_index_of_schema_1_keeps_every_vector_and_needs_no_embedding_call(tmp_path: Path) -> None:
    from langchain_md_memory import MarkdownMemory
    from tests.support.embeddings import AxisEmbeddings

    vocabulary = ["bonds", "stocks", "rent", "tea"]
    folder = tmp_path / "memory"
    with MarkdownMemory(folder, embeddings=AxisEmbeddings(vocabulary)) as mem:
        mem.write("MEMORY.md", "# Money\n\n- bonds over stocks\n\n# Home\n\n- rent is due monthly\n")
        mem.write("notes.md", "- tea, never coffee\n")
        mem.sync()
        assert mem.status()["embedded"] == mem.status()["chunks"] == 3
    # Schema 1 kept each chunk's vector in chunks.embedding; its cache may lack one (here: all of them).
    conn = sqlite3.connect(folder / "index.sqlite")
    conn.execute("ALTER TABLE chunks ADD COLUMN embedding BLOB")
    conn.execute("UPDATE chunks SET embedding = (SELECT vector FROM embedding_cache WHERE hash = embed_hash)")
    conn.execute("DELETE FROM embedding_cache")
    conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()

    again = AxisEmbeddings(vocabulary)
    with MarkdownMemory(folder, embeddings=again) as mem:
        mem.sync()
        status = mem.status()
        hits = mem.search("tea", max_results=1)
    assert again.calls == 0  # nothing re-embedded
    assert status["embedded"] == status["chunks"] == 3
    assert hits[0].path == "notes.md" and hits[0].vector_score is not None and hits[0].vector_score > 0
    conn = sqlite3.connect(folder / "index.sqlite")
    assert "embedding" not in {row[1] for row in conn.execute("PRAGMA table_info(chunks)")}
    version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
    assert version == str(SCHEMA_VERSION)
    conn.close()


def test_a_new_index_has_large_pages_and_an_old_one_keeps_its_own(tmp_path: Path) -> None:
    from langchain_md_memory.index.sqlite.schema import PAGE_SIZE

    conn = connect(str(tmp_path / "new.sqlite"), 1000)
    assert conn.execute("PRAGMA page_size").fetchone()[0] == PAGE_SIZE == 16_384
    conn.close()
    # An index made before (4 KiB pages) is opened as it is, not rebuilt.
    old = sqlite3.connect(tmp_path / "old.sqlite")
    old.execute("PRAGMA page_size = 4096")
    old.execute("PRAGMA journal_mode = WAL")
    old.close()
    conn = connect(str(tmp_path / "old.sqlite"), 1000)
    conn.execute("INSERT INTO meta(key, value) VALUES ('kept', 'yes')")
    conn.close()
    conn = connect(str(tmp_path / "old.sqlite"), 1000)
    assert conn.execute("PRAGMA page_size").fetchone()[0] == 4096
    assert conn.execute("SELECT value FROM meta WHERE key = 'kept'").fetchone()[0] == "yes"
    conn.close()


def test_an_index_of_unstemmed_terms_is_reindexed_once_and_needs_no_embedding_call(tmp_path: Path) -> None:
    from langchain_md_memory import MarkdownMemory
    from tests.support.embeddings import AxisEmbeddings

    vocabulary = ["painting", "tea"]
    folder = tmp_path / "memory"
    with MarkdownMemory(folder, embeddings=AxisEmbeddings(vocabulary)) as mem:
        mem.write("notes.md", "- Went painting with the kids\n")
        mem.write("tea.md", "- tea, never coffee\n")
        mem.sync()
    # An index written before keyword terms were stemmed (terms version 1).
    conn = sqlite3.connect(folder / "index.sqlite")
    conn.execute("UPDATE chunks_fts SET terms = 'went painting with the kids' "
                 "WHERE rowid = (SELECT rowid FROM chunks WHERE path = 'notes.md')")
    signature = conn.execute("SELECT value FROM meta WHERE key = 'chunking'").fetchone()[0]
    assert signature.endswith(":terms=2")
    conn.execute("UPDATE meta SET value = ? WHERE key = 'chunking'", (signature.removesuffix(":terms=2"),))
    conn.commit()
    conn.close()

    again = AxisEmbeddings(vocabulary)
    with MarkdownMemory(folder, embeddings=again) as mem:
        hits = mem.search("paintings", max_results=1)
        stats = mem.sync()
    assert again.calls == 0  # re-indexed from the embedding cache
    assert hits[0].path == "notes.md" and hits[0].keyword_score is not None  # the stemmed term matched
    assert stats.files_changed == 0  # once: the next sync has nothing to do
    conn = sqlite3.connect(folder / "index.sqlite")
    assert conn.execute("SELECT value FROM meta WHERE key = 'chunking'").fetchone()[0] == signature
    conn.close()
