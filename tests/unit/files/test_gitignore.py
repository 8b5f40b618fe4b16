"""A memory folder the package creates gets a .gitignore; one that exists is left alone."""

from __future__ import annotations

from langchain_md_memory.files.gitignore import GITIGNORE_TEXT, write_gitignore
from langchain_md_memory.files.store import MarkdownStore


def test_a_new_memory_folder_gets_the_gitignore(tmp_path):
    MarkdownStore(tmp_path / "a" / "memory")
    assert (tmp_path / "a" / "memory" / ".gitignore").read_text(encoding="utf-8") == GITIGNORE_TEXT
    assert not (tmp_path / "a" / ".gitignore").exists()  # only the memory folder, not its parents


def test_an_existing_folder_is_not_given_one(tmp_path):
    (tmp_path / "memory").mkdir()
    MarkdownStore(tmp_path / "memory")
    assert not (tmp_path / "memory" / ".gitignore").exists()


def test_a_users_gitignore_is_never_overwritten(tmp_path):
    (tmp_path / ".gitignore").write_text("*.secret\n", encoding="utf-8")
    assert write_gitignore(tmp_path) is False
    assert (tmp_path / ".gitignore").read_text(encoding="utf-8") == "*.secret\n"
    assert write_gitignore(tmp_path / "missing") is False  # an unwritable place is not an error


def test_the_gitignore_is_not_a_memory_file(tmp_path):
    store = MarkdownStore(tmp_path / "memory")
    store.append("long_term", "- fact")
    assert store.list_files() == ["MEMORY.md"]
