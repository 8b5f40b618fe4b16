"""``mem.verify()`` / ``md-memory verify``: every kind of drift is found, named and repaired."""

from __future__ import annotations

import io
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from langchain_md_memory import MarkdownMemory
from langchain_md_memory.cli import main
from tests.reliability.faults import raw_rows
from tests.support.memories import edit_keeping_size_and_mtime


@pytest.fixture
def mem(memory_dir: Path) -> Iterator[MarkdownMemory]:
    memory = MarkdownMemory(memory_dir, embeddings="none")
    memory.write("MEMORY.md", "# Profile\n\n- Risk: conservative\n")
    memory.write("goals.md", "# Goals\n\nRetire at 60.\n")
    memory.write("notes.md", "# Notes\n\nBonds over stocks.\n")
    memory.sync()
    yield memory
    memory.close()


def _sql(db: Path, *statements: str) -> None:
    conn = sqlite3.connect(db)
    try:
        for statement in statements:
            conn.execute(statement)
        conn.commit()
    finally:
        conn.close()


def test_a_synced_memory_is_consistent(mem: MarkdownMemory) -> None:
    report = mem.verify()
    assert report.consistent and report.ok and report.problems == ()
    assert (report.files, report.indexed, report.chunks) == (3, 3, 3)
    assert report.repaired == () and not report.rebuilt
    assert report.summary() == "consistent: 3 files, 3 chunks"


def test_missing_orphaned_and_stale_files_are_named_and_repaired(mem: MarkdownMemory) -> None:
    root = mem.memory_dir
    (root / "new.md").write_text("Brand new topic: kayaking.\n")
    (root / "notes.md").unlink()
    (root / "goals.md").write_text("# Goals\n\nRetire at 55, earlier than planned.\n")
    found = mem.verify(repair=False)
    assert (found.missing, found.orphaned, found.stale) == (("new.md",), ("notes.md",), ("goals.md",))
    assert not found.ok and "missing 1" in found.summary()
    report = mem.verify()
    assert report.repaired == ("goals.md", "new.md", "notes.md") and report.remaining == () and report.ok
    assert mem.verify(repair=False).consistent
    assert mem.search("kayaking")[0].path == "new.md"
    assert not mem.search("bonds stocks")


def test_a_same_size_same_mtime_edit_is_a_hash_mismatch_only_verify_sees(mem: MarkdownMemory) -> None:
    edit_keeping_size_and_mtime(mem.memory_dir / "goals.md", "Retire at 60.", "Retire at 55.")
    mem._indexer.mark_dirty()
    assert "55" not in mem.search("retire")[0].text, "an ordinary sync cannot see this edit"
    report = mem.verify()
    assert report.hash_mismatch == ("goals.md",) and report.ok
    assert "55" in mem.search("retire")[0].text


def test_lost_chunks_and_lost_keyword_rows_are_chunk_mismatches(mem: MarkdownMemory) -> None:
    db = mem.memory_dir / "index.sqlite"
    _sql(db, "DELETE FROM chunks WHERE path = 'goals.md'")
    (rowid,) = raw_rows(db, "SELECT rowid FROM chunks WHERE path = 'notes.md'")[0]
    _sql(db, f"DELETE FROM chunks_fts WHERE rowid = {rowid}")
    assert not mem.search("bonds")
    report = mem.verify()
    assert report.chunk_mismatch == ("goals.md", "notes.md") and report.ok
    assert mem.search("bonds")[0].path == "notes.md"
    assert mem.search("retire")[0].path == "goals.md"


def test_keyword_rows_without_chunks_make_verify_rebuild(mem: MarkdownMemory) -> None:
    db = mem.memory_dir / "index.sqlite"
    _sql(db, "INSERT INTO chunks_fts(rowid, terms) VALUES (99999, 'ghost')")
    report = mem.verify()
    assert report.rebuilt and report.ok
    assert raw_rows(db, "SELECT count(*) FROM chunks_fts WHERE rowid = 99999") == [(0,)]
    assert mem.verify(repair=False).consistent


def test_an_in_memory_fallback_index_is_verified_too(memory_dir: Path) -> None:
    (memory_dir / "index.sqlite").mkdir()  # a folder where the index file should be
    with MarkdownMemory(memory_dir, embeddings="none") as mem:
        assert mem.index.path == ":memory:"
        mem.append("- fact in a memory without an index file")
        report = mem.verify()
        assert report.stale == ("MEMORY.md",) or report.missing == ("MEMORY.md",)
        assert report.ok and mem.verify(repair=False).consistent


def test_cli_verify_reports_repairs_and_exits_by_result(mem: MarkdownMemory) -> None:
    root = str(mem.memory_dir)
    (mem.memory_dir / "extra.md").write_text("Extra fact.\n")
    out, err = io.StringIO(), io.StringIO()
    assert main(["--dir", root, "--embeddings", "none", "verify", "--no-repair"], out=out, err=err) == 1
    assert out.getvalue().startswith("inconsistent: missing 1; not repaired")
    out = io.StringIO()
    assert main(["--dir", root, "--embeddings", "none", "verify", "--json"], out=out, err=err) == 0
    data = json.loads(out.getvalue())
    assert data["missing"] == ["extra.md"] and data["repaired"] == ["extra.md"] and data["ok"] is True
    out = io.StringIO()
    assert main(["--dir", root, "--embeddings", "none", "verify"], out=out, err=err) == 0
    assert out.getvalue().strip() == "consistent: 4 files, 4 chunks"
