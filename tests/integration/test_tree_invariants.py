"""What a folder memory cannot hold, no backend holds; a push is all or nothing (issue 39).

The same tests run on a PostgreSQL tenant (``tests/postgres/test_tree_invariants_postgres.py``
swaps the ``tree_memory`` fixture), so the error texts are compared across backends.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from langchain_md_memory import MarkdownMemory
from langchain_md_memory.errors import MemoryPathError
from langchain_md_memory.files.transfer import TransferError, pull, push

FILE_THEN_FOLDER = "'a.md/b.md' is not reachable inside the memory directory: 'a.md' is not a plain folder"
FOLDER_THEN_FILE = "'a.md' is a directory, not a memory file"


@pytest.fixture
def tree_memory(kw_memory: MarkdownMemory) -> MarkdownMemory:
    return kw_memory


def test_a_file_cannot_become_a_folder_of_another_file(tree_memory: MarkdownMemory) -> None:
    tree_memory.write("a.md", "- first\n")
    for write in (lambda: tree_memory.write("a.md/b.md", "- second\n"),
                  lambda: tree_memory.append("- second", file="a.md/b.md")):
        with pytest.raises(MemoryPathError) as caught:
            write()
        assert str(caught.value) == FILE_THEN_FOLDER
    assert tree_memory.list_files() == ["a.md"]


def test_a_folder_of_files_cannot_become_a_file(tree_memory: MarkdownMemory) -> None:
    tree_memory.write("a.md/b.md", "- first\n")
    for write in (lambda: tree_memory.write("a.md", "- second\n"),
                  lambda: tree_memory.append("- second", file="a.md")):
        with pytest.raises(MemoryPathError) as caught:
            write()
        assert str(caught.value) == FOLDER_THEN_FILE
    assert tree_memory.list_files() == ["a.md/b.md"]


def test_push_with_one_bad_file_writes_nothing_and_succeeds_after_the_fix(tree_memory: MarkdownMemory,
                                                                          tmp_path: Path) -> None:
    tree_memory.append("- Prefers tea")
    before = tree_memory.get("MEMORY.md")
    copy = tmp_path / "copy"
    pull(tree_memory.store, copy, origin="t")
    (copy / "MEMORY.md").write_text(before + "- Walks to work\n", encoding="utf-8")
    (copy / "a.md").write_text("- valid new file\n", encoding="utf-8")
    (copy / "z.md").write_bytes("- caf\u00e9 in Latin-1\n".encode("latin-1"))
    with pytest.raises(TransferError, match=r"'z.md'.*not valid UTF-8"):
        push(copy, tree_memory.store, origin="t")
    assert tree_memory.list_files() == ["MEMORY.md"]
    assert tree_memory.get("MEMORY.md") == before
    (copy / "z.md").write_text("- caf\u00e9 in UTF-8\n", encoding="utf-8")
    report = push(copy, tree_memory.store, origin="t")
    assert report.written == ["MEMORY.md", "a.md", "z.md"]
    assert [h.path for h in tree_memory.search("Walks to work")] == ["MEMORY.md"]


def test_a_refused_pull_leaves_the_folder_as_it_was(tree_memory: MarkdownMemory, tmp_path: Path) -> None:
    tree_memory.append("- Prefers tea")
    copy = tmp_path / "copy"
    pull(tree_memory.store, copy, origin="t")
    (copy / "MEMORY.md").write_text("- an unpushed edit\n", encoding="utf-8")
    with pytest.raises(TransferError, match="unpushed"):
        pull(tree_memory.store, copy, origin="t")
    assert (copy / "MEMORY.md").read_text(encoding="utf-8") == "- an unpushed edit\n"


def test_pull_of_nested_files_round_trips(tree_memory: MarkdownMemory, tmp_path: Path) -> None:
    tree_memory.write("a/b.md", "- nested\n")
    tree_memory.write("a.md", "- beside it\n")
    assert sorted(pull(tree_memory.store, tmp_path / "copy", origin="t")) == ["a.md", "a/b.md"]
    assert (tmp_path / "copy" / "a" / "b.md").read_text(encoding="utf-8") == "- nested\n"
