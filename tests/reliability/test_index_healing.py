"""The index heals itself, or says it could not: nothing hides a fact silently.

Before: an FTS table dropped while the memory was closed was recreated empty and searches
answered "No memory matched" for facts that were there; dropped while open, the error text
("no such fts5 table") was not on the recovery list and every search said "memory disabled";
a full disk during index writes left new appends unsearchable with no note; a hostile trigger
made verify() raise a raw IntegrityError.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from langchain_md_memory import MarkdownMemory, create_memory_tools


def _seed(memory_dir: Path) -> None:
    (memory_dir / "MEMORY.md").write_text("- Retirement target age: 60\n- Emergency fund: six months\n")
    (memory_dir / "goals.md").write_text("- Buy a house by 2030\n")


def test_keyword_table_dropped_while_closed_is_rebuilt_and_status_says_so(memory_dir: Path) -> None:
    _seed(memory_dir)
    with MarkdownMemory(memory_dir, embeddings="none") as mem:
        assert mem.search("retirement")
    conn = sqlite3.connect(memory_dir / "index.sqlite")
    conn.execute("DROP TABLE chunks_fts")
    conn.commit()
    conn.close()
    with MarkdownMemory(memory_dir, embeddings="none") as mem:
        assert "Retirement" in mem.search("retirement")[0].text
        assert "house" in mem.search("house 2030")[0].text
        assert "did not match chunks" in (mem.status()["index_repaired"] or "")


def test_keyword_table_dropped_while_open_is_recovered_by_the_next_search(memory_dir: Path) -> None:
    _seed(memory_dir)
    with MarkdownMemory(memory_dir, embeddings="none") as mem:
        assert mem.search("retirement")
        other = sqlite3.connect(memory_dir / "index.sqlite")
        other.execute("DROP TABLE chunks_fts")
        other.commit()
        other.close()
        search = next(t for t in create_memory_tools(mem) if t.name == "memory_search")
        reply = search.invoke({"query": "retirement"})
        assert "Retirement target age: 60" in reply and "memory disabled" not in reply
        assert mem.verify(repair=False).consistent


def test_a_hostile_trigger_does_not_make_verify_raise(memory_dir: Path) -> None:
    _seed(memory_dir)
    with MarkdownMemory(memory_dir, embeddings="none") as mem:
        mem.search("retirement")
        conn = sqlite3.connect(memory_dir / "index.sqlite")
        conn.execute("CREATE TRIGGER no_delete BEFORE DELETE ON chunks BEGIN "
                     "SELECT RAISE(ABORT, 'deletes are forbidden'); END")
        conn.commit()
        conn.close()
        (memory_dir / "goals.md").write_text("- Buy a house by 2031\n")
        report = mem.verify()
        assert report.ok and report.rebuilt
        assert "2031" in mem.search("house")[0].text


@contextlib.contextmanager
def _tmpfs(size: str) -> Iterator[Path]:
    where = Path("/tmp") / f"md-memory-tmpfs-{uuid.uuid4().hex[:8]}"
    where.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                             capture_output=True).returncode == 0
    if not mounted:
        where.rmdir()
        pytest.skip("mounting a tmpfs needs root (CAP_SYS_ADMIN)")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=False)
        where.rmdir()


def _fill(filler: Path, *, leave: int) -> None:
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        for block in (1 << 16, 1 << 12):
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * block)
    finally:
        os.close(fd)
    os.truncate(filler, filler.stat().st_size - leave)


def test_disk_full_during_sync_is_said_and_the_next_sync_catches_up() -> None:
    with _tmpfs("8m") as disk:
        root = disk / "memory"
        root.mkdir()
        _seed(root)
        with MarkdownMemory(root, embeddings="none") as mem:
            assert mem.search("retirement")
            filler = disk / "filler"
            _fill(filler, leave=40 * 1024)  # room for the Markdown append, not for the index's pages
            mem.append("- Bond ladder matures in 2031 " + "detail " * 3000)
            ranked = mem.search_detailed("bond ladder 2031")
            lagging = not any("Bond ladder" in h.text for h in ranked.hits)
            if lagging:
                assert ranked.degraded is not None and "could not be updated" in ranked.degraded
                assert str(disk) not in ranked.degraded  # no host path for the model
                assert mem.status()["sync_error"]
            filler.unlink()
            caught_up = mem.search_detailed("bond ladder 2031")
            assert "Bond ladder" in caught_up.hits[0].text and caught_up.degraded is None
            assert mem.verify().ok
