"""Drafting: a write runs its own code down to the store, which records the bytes instead of writing them."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from langchain_md_memory import MarkdownMemory
from langchain_md_memory.config import HygieneConfig, LimitsConfig
from langchain_md_memory.errors import MemoryPathError
from langchain_md_memory.files.documents import Documents
from langchain_md_memory.files.drafts import DraftedChange, active_draft, drafting
from langchain_md_memory.files.store import MarkdownStore

NOTES = b"# Notes\n- likes tea\n"


@pytest.fixture
def changed() -> list[int]:
    return []


@pytest.fixture
def docs(tmp_path: Path, changed: list[int]) -> Documents:
    store = MarkdownStore(tmp_path / "mem")
    store.write_bytes("MEMORY.md", NOTES)
    return Documents(store, LimitsConfig(), HygieneConfig(provenance=False),
                     on_change=lambda: changed.append(1))


def folder(tmp_path: Path) -> dict[str, bytes]:
    root = tmp_path / "mem"
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_a_drafted_edit_is_recorded_and_nothing_is_written_or_announced(docs: Documents, tmp_path: Path,
                                                                        changed: list[int]) -> None:
    before = folder(tmp_path)
    with drafting() as draft:
        assert docs.edit("likes tea", "likes coffee") is True
        assert docs.get("MEMORY.md") == "# Notes\n- likes coffee\n"  # the draft reads its own writes
    assert draft.changes == [DraftedChange("MEMORY.md", NOTES, b"# Notes\n- likes coffee\n")]
    assert folder(tmp_path) == before and changed == []  # no file, no index told to sync
    assert active_draft() is None
    assert docs.edit("likes tea", "likes coffee") is True  # outside the draft: written
    assert docs.get("MEMORY.md") == "# Notes\n- likes coffee\n" and changed == [1]


def test_steps_of_one_draft_build_on_each_other(docs: Documents) -> None:
    with drafting() as draft:
        docs.remember("- walks to work", file="daily")
        done = docs.remember("- Walks to work.", file="daily")  # dedup reads the drafted first write
        docs.append("- cycles on Sundays", file="daily")
    assert done.written == 0 and done.duplicates
    [change] = draft.changes
    assert change.before is None and change.after == b"- walks to work\n- cycles on Sundays\n"


def test_a_drafted_move_and_delete_record_every_file(docs: Documents, tmp_path: Path) -> None:
    docs.write("notes/a.md", "- a\n")
    before = folder(tmp_path)
    with drafting() as draft:
        docs.move_files([("notes/a.md", "done/a.md")])
        assert docs.list_files() == ["MEMORY.md", "done/a.md"]
        docs.delete_file("MEMORY.md")
    assert draft.changes == [DraftedChange("done/a.md", None, b"- a\n"),
                             DraftedChange("notes/a.md", b"- a\n", None),
                             DraftedChange("MEMORY.md", NOTES, None)]
    assert folder(tmp_path) == before


def test_a_change_written_back_as_it_was_is_no_change(docs: Documents) -> None:
    with drafting() as draft:
        docs.edit("likes tea", "likes coffee")
        docs.edit("likes coffee", "likes tea")
    assert draft.changes == []


def test_a_draft_counts_the_redactions_by_kind(docs: Documents) -> None:
    with drafting() as draft:
        docs.remember("- deploy key sk-proj-Fake0123456789abcdefGHIJ\n"
                      "- ci ghp_FakeFake0123456789abcdefghijKLMNOP")
    assert draft.redacted == {"api key": 1, "github token": 1}
    assert b"sk-proj" not in (draft.changes[0].after or b"")


def test_a_draft_refuses_what_the_folder_refuses(docs: Documents) -> None:
    docs.write("a.md", "- a\n")
    docs.write("b/c.md", "- c\n")
    for path in ("a.md/x.md", "b", "../out.md"):
        with pytest.raises(MemoryPathError) as real:
            docs.store.write(path, "x")
        with drafting(), pytest.raises(MemoryPathError) as drafted:
            docs.store.write(path, "x")
        assert str(drafted.value) == str(real.value)


def test_an_async_twin_run_in_a_draft_is_drafted_too(kw_memory: MarkdownMemory) -> None:
    kw_memory.append("- likes tea")

    async def edit() -> bool:
        return await kw_memory.aedit("likes tea", "likes coffee")  # in a worker thread, the draft's context

    with drafting() as draft:
        assert asyncio.run(edit()) is True
    assert [c.path for c in draft.changes] == ["MEMORY.md"]
    assert kw_memory.get("MEMORY.md") == "- likes tea\n"


def test_a_draft_leaves_the_memory_a_folder(kw_memory: MarkdownMemory, tmp_path: Path) -> None:
    folder = kw_memory.memory_dir
    with drafting():
        kw_memory.append("- likes tea")
        assert kw_memory.memory_dir == folder and kw_memory.in_folder
    assert not (folder / "MEMORY.md").exists()
