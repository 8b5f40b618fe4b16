"""A broken, foreign, read-only or locked index never stops search; a full disk never eats Markdown.

The index is derived: every fault here must end with search answering the
right hits from the Markdown, and a warning in the log saying what happened.
"""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from langchain_md_memory import MarkdownMemory
from langchain_md_memory.errors import MemoryIndexError, MemoryStoreError
from langchain_md_memory.index.sqlite import MemoryIndex
from tests.reliability.faults import assert_finds_every_topic, read_only, seed_memory, topic_text

HERE = Path(__file__).parent
INDEX = "index.sqlite"


@pytest.fixture
def seeded(memory_dir: Path) -> Path:
    seed_memory(memory_dir)
    return memory_dir


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


# -- damaged files --------------------------------------------------------------------


def test_deleted_index_is_rebuilt_from_the_markdown(seeded: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        (seeded / (INDEX + suffix)).unlink(missing_ok=True)
    with MarkdownMemory(seeded, embeddings="none") as mem:
        assert_finds_every_topic(mem)
        assert mem.verify(repair=False).consistent
        assert mem.status()["files"] == 41


def test_index_deleted_while_open_keeps_answering_and_a_new_memory_rebuilds(seeded: Path) -> None:
    with MarkdownMemory(seeded, embeddings="none") as mem:
        assert_finds_every_topic(mem)
        for suffix in ("", "-wal", "-shm"):
            (seeded / (INDEX + suffix)).unlink(missing_ok=True)
        mem.append("- New fact: emergency fund is six months of expenses")
        assert mem.search("emergency fund")[0].path == "MEMORY.md"
    with MarkdownMemory(seeded, embeddings="none") as fresh:
        assert_finds_every_topic(fresh)
        assert "emergency fund" in fresh.search("emergency fund")[0].text


def _truncate(db: Path) -> None:
    with db.open("r+b") as handle:
        handle.truncate(db.stat().st_size // 2)


def _scribble(db: Path) -> None:
    # The middle third of the file: whole pages of any size, so the damage lands on pages in use.
    size = db.stat().st_size
    with db.open("r+b") as handle:
        handle.seek(size // 3)
        handle.write(b"\xde\xad\xbe\xef" * (size // 12))


def _foreign_db(db: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    conn.execute("INSERT INTO notes(body) VALUES ('someone else''s database')")
    conn.commit()
    conn.close()


def _foreign_db_with_our_table_names(db: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    conn.execute("CREATE TABLE files (name TEXT)")
    conn.execute("CREATE TABLE chunks (x INTEGER)")
    conn.commit()
    conn.close()


def _future_schema(db: Path) -> None:
    conn = sqlite3.connect(db)
    conn.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()


def _not_sqlite(db: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    db.write_bytes(b"this is not a database at all\n" * 200)


DAMAGE: dict[str, Callable[[Path], None]] = {
    "truncated": _truncate,
    "corrupted_middle": _scribble,
    "foreign_schema": _foreign_db,
    "foreign_same_table_names": _foreign_db_with_our_table_names,
    "future_schema_version": _future_schema,
    "not_sqlite": _not_sqlite,
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_damaged_index_is_rebuilt_on_open_and_search_answers(
    seeded: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    DAMAGE[damage](seeded / INDEX)
    caplog.set_level(logging.WARNING)
    with MarkdownMemory(seeded, embeddings="none") as mem:
        assert_finds_every_topic(mem)
        report = mem.verify()
        assert report.ok, report
    assert _warnings(caplog), "a damaged index must be reported in the log"
    # The rebuilt index is a real, complete file again.
    conn = sqlite3.connect(seeded / INDEX)
    try:
        assert conn.execute("PRAGMA quick_check").fetchone() == ("ok",)
        assert conn.execute("SELECT count(*) FROM files").fetchone() == (41,)
    finally:
        conn.close()


@pytest.mark.parametrize("damage", ["truncated", "corrupted_middle"])
def test_index_damaged_while_open_is_recovered_by_the_next_search(
    seeded: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    with MarkdownMemory(seeded, embeddings="none") as mem:
        assert_finds_every_topic(mem)
        mem.index.finish_for_swap()  # fold the WAL in and close, so the damage hits the real pages
        mem._indexer.handle.reopen()
        DAMAGE[damage](seeded / INDEX)
        caplog.set_level(logging.WARNING)
        assert_finds_every_topic(mem)
        assert mem.verify().ok
    assert any("rebuild" in m or "in-memory" in m for m in _warnings(caplog)), _warnings(caplog)


def test_verify_detects_page_corruption_and_rebuilds(seeded: Path) -> None:
    with MarkdownMemory(seeded, embeddings="none") as mem:
        mem.search("alpha1")
        mem.index.finish_for_swap()
        mem._indexer.handle.reopen()
        _scribble(seeded / INDEX)
        report = mem.verify()
        assert report.index_error is not None and report.rebuilt and report.ok
        assert mem.verify(repair=False).consistent
        assert_finds_every_topic(mem)


# -- read-only --------------------------------------------------------------------------


@pytest.mark.parametrize("folder_too", [False, True], ids=["read_only_index_file", "read_only_folder"])
def test_read_only_index_answers_from_memory_and_keeps_the_file(
    seeded: Path, folder_too: bool, caplog: pytest.LogCaptureFixture
) -> None:
    before = (seeded / INDEX).read_bytes()
    markdown = {p.name: p.read_bytes() for p in seeded.glob("*.md")}
    caplog.set_level(logging.WARNING)
    with read_only(seeded, folder_too=folder_too) as how:
        with MarkdownMemory(seeded, embeddings="none") as mem:
            queries = assert_finds_every_topic(mem)
            status = mem.status()
        assert status["index_fallback"], f"{how}: the fallback must show in status()"
    assert queries == 7
    assert _warnings(caplog), how
    # Nothing was deleted or rewritten behind the user's back.
    assert (seeded / INDEX).read_bytes() == before
    assert {p.name: p.read_bytes() for p in seeded.glob("*.md")} == markdown


def test_index_whose_parent_is_a_file_raises_a_memory_index_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    with pytest.raises(MemoryIndexError):
        MemoryIndex.open(blocker / INDEX)


# -- locked by another process --------------------------------------------------------


def _hold_lock(db: Path, seconds: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, str(HERE / "lock_holder.py"), str(db), str(seconds)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "locked"
    return proc


@pytest.mark.slow
def test_index_locked_for_two_seconds_is_waited_for(seeded: Path) -> None:
    with MarkdownMemory(seeded, embeddings="none") as mem:
        mem.search("alpha1")
        holder = _hold_lock(seeded / INDEX, 2.0)
        try:
            mem.append("- Locked-time fact: rebalance every quarter")  # needs an index write to be found
            hits = mem.search("rebalance quarter")
            assert hits and hits[0].path == "MEMORY.md" and "rebalance" in hits[0].text
            assert_finds_every_topic(mem)
        finally:
            assert holder.wait(30) == 0
        assert mem.status()["index_fallback"] is None
        assert mem.verify(repair=False).consistent


@pytest.mark.slow
def test_index_locked_past_the_busy_timeout_falls_back_without_replacing_the_file(
    seeded: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    real_open = MemoryIndex.open.__func__  # type: ignore[attr-defined]

    def impatient(cls: type[MemoryIndex], path: str, *, busy_timeout_ms: int = 0, **kw: Any) -> MemoryIndex:
        return real_open(cls, path, busy_timeout_ms=150, **kw)  # type: ignore[no-any-return]

    monkeypatch.setattr(MemoryIndex, "open", classmethod(impatient))
    inode = (seeded / INDEX).stat().st_ino
    holder = _hold_lock(seeded / INDEX, 4.0)
    caplog.set_level(logging.WARNING)
    try:
        with MarkdownMemory(seeded, embeddings="none") as mem:
            assert_finds_every_topic(mem)
            assert mem.status()["index_fallback"]
        # The other process's index is the same file: a lock is not corruption.
        assert (seeded / INDEX).stat().st_ino == inode
    finally:
        assert holder.wait(30) == 0
    assert any("locked" in m for m in _warnings(caplog)), _warnings(caplog)


# -- disk full on a Markdown write ---------------------------------------------------


def _enospc(*_: object, **__: object) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


class _HalfWriter:
    """A file handle that writes half of what it is given, then runs out of space."""

    def __init__(self, handle: object) -> None:
        self._handle = handle

    def __enter__(self) -> _HalfWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self._handle.close()  # type: ignore[attr-defined]

    def write(self, data: bytes) -> int:
        self._handle.write(data[: len(data) // 2])  # type: ignore[attr-defined]
        self._handle.flush()  # type: ignore[attr-defined]
        _enospc()
        return 0

    def __getattr__(self, name: str) -> object:
        return getattr(self._handle, name)


# The store calls os.fdopen / os.fsync / os.replace on the os module itself, so patching os patches it.
def _patch_fdopen(monkeypatch: pytest.MonkeyPatch) -> None:
    real = os.fdopen
    monkeypatch.setattr(os, "fdopen", lambda fd, *a, **k: _HalfWriter(real(fd, *a, **k)))


DISK_FULL: dict[str, Callable[[pytest.MonkeyPatch], None]] = {
    "write": _patch_fdopen,
    "fsync": lambda mp: mp.setattr(os, "fsync", _enospc),
    "replace": lambda mp: mp.setattr(os, "replace", _enospc),
}
OPERATIONS: dict[str, Callable[[MarkdownMemory], object]] = {
    "append": lambda mem: mem.append("- A fact that does not fit on the disk"),
    "edit": lambda mem: mem.edit("conservative", "aggressive"),
    "delete": lambda mem: mem.delete_text("- Risk: conservative; no single stock above 5% of the portfolio"),
    "write": lambda mem: mem.write("topic3.md", "# Replaced\n"),
}


@pytest.mark.parametrize("operation", list(OPERATIONS))
@pytest.mark.parametrize("where", list(DISK_FULL))
def test_disk_full_on_a_markdown_write_raises_and_keeps_the_old_file(
    seeded: Path, monkeypatch: pytest.MonkeyPatch, where: str, operation: str
) -> None:
    files = {p.name: p.read_bytes() for p in seeded.glob("*.md")}
    with MarkdownMemory(seeded, embeddings="none") as mem:
        mem.search("alpha3")
        with monkeypatch.context() as mp:
            DISK_FULL[where](mp)
            with pytest.raises(MemoryStoreError) as caught:
                OPERATIONS[operation](mem)
        message = str(caught.value)
        assert "No space left on device" in message and "unchanged" in message
        assert {p.name: p.read_bytes() for p in seeded.glob("*.md")} == files
        assert not [p.name for p in seeded.iterdir() if p.name.endswith(".tmp")], "temp file left behind"
        assert mem.search("single stock")[0].path == "MEMORY.md"
        assert "alpha3" in mem.search("alpha3")[0].text
        assert mem.get("topic3.md") == topic_text(3)
        assert mem.verify(repair=False).consistent
