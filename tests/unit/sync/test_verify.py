"""``mem.verify()`` through the facade: a consistent index passes; drift behind its back is repaired."""

from __future__ import annotations

import pytest

from langchain_md_memory import MarkdownMemory
from tests.support.memories import edit_keeping_size_and_mtime, write_files

GOALS = "# Goals\n\nRetire at 60.\n"
TRIPS = "# Trips\n\nKayak to Lofoten.\n"


@pytest.fixture
def mem(kw_memory: MarkdownMemory) -> MarkdownMemory:
    write_files(kw_memory.memory_dir, {"MEMORY.md": "# Profile\n\nRisk: conservative.\n", "goals.md": GOALS})
    kw_memory.sync()
    return kw_memory


def test_a_freshly_synced_memory_verifies_clean(mem: MarkdownMemory) -> None:
    report = mem.verify()
    assert report.ok and report.problems == ()
    assert (report.files, report.indexed) == (2, 2)
    assert report.chunks == mem.status()["chunks"]
    assert report.repaired == () and not report.rebuilt


def test_an_edit_with_the_same_size_and_mtime_is_found_and_repaired(mem: MarkdownMemory) -> None:
    edit_keeping_size_and_mtime(mem.memory_dir / "goals.md", "60", "55")
    assert mem.sync().files_changed == 0  # size and mtime match: an ordinary sync cannot see it
    assert "55" not in mem.search("retire")[0].text

    found = mem.verify(repair=False)
    assert found.hash_mismatch == ("goals.md",) and not found.ok
    assert "55" not in mem.search("retire")[0].text  # repair=False changes nothing

    report = mem.verify()
    assert report.hash_mismatch == ("goals.md",) and report.repaired == ("goals.md",)
    assert report.ok and report.remaining == ()
    assert "Retire at 55." in mem.search("retire")[0].text
    assert mem.verify(repair=False).consistent


def test_files_added_and_deleted_behind_the_index_are_named_and_repaired(mem: MarkdownMemory) -> None:
    write_files(mem.memory_dir, {"trips.md": TRIPS})
    (mem.memory_dir / "goals.md").unlink()
    found = mem.verify(repair=False)
    assert (found.missing, found.orphaned) == (("trips.md",), ("goals.md",))
    report = mem.verify()
    assert report.repaired == ("goals.md", "trips.md") and report.ok
    assert mem.status()["files"] == 2
    assert mem.search("Lofoten")[0].path == "trips.md"
    assert not mem.search("retire")


def test_verify_without_repair_leaves_the_index_as_it_was(mem: MarkdownMemory) -> None:
    write_files(mem.memory_dir, {"trips.md": TRIPS})
    before = mem.status()["chunks"]
    assert mem.verify(repair=False).missing == ("trips.md",)
    assert mem.status()["chunks"] == before
    assert mem.verify(repair=False).missing == ("trips.md",)
