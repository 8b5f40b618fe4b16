"""IndexHandle: the one owner of the index opens it, falls back to memory, and swaps it."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import cast

import pytest

from langchain_md_memory.index.base import IndexOwner
from langchain_md_memory.index.rows import FileState
from langchain_md_memory.index.sqlite import MemoryIndex
from langchain_md_memory.index.sqlite.handle import IN_MEMORY, IndexHandle


def _add_file(index: MemoryIndex, path: str) -> None:
    index.replace_file(FileState(path, 1, 1, "h"), "evergreen", [])


def test_swap_in_replaces_the_file_and_readers_see_the_new_index(tmp_path: Path) -> None:
    handle = IndexHandle(tmp_path / "index.sqlite")
    _add_file(handle.index, "old.md")
    old = handle.index
    fresh = handle.open_fresh()
    _add_file(fresh, "new.md")
    handle.swap_in(fresh)
    assert handle.index is not old and handle.index.path == str(tmp_path / "index.sqlite")
    assert set(handle.index.file_states()) == {"new.md"}
    assert not list(tmp_path.glob("index.sqlite.rebuild-*"))
    handle.close()
    conn = sqlite3.connect(tmp_path / "index.sqlite")  # the swap reached the file on disk
    assert conn.execute("SELECT path FROM files").fetchall() == [("new.md",)]
    conn.close()


def test_fresh_index_carries_the_embedding_cache_over(tmp_path: Path) -> None:
    import numpy as np

    handle = IndexHandle(tmp_path / "index.sqlite")
    vector = np.array([0.6, 0.8], dtype=np.float32)
    handle.index.cache.store([("h1", vector)], "p:m:2")
    fresh = handle.open_fresh()
    assert set(fresh.cache.lookup(["h1"], "p:m:2")) == {"h1"}
    fresh.close()
    handle.close()


def test_unusable_file_falls_back_to_memory_and_says_why(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    (folder / "index.sqlite").mkdir()  # a directory where the file should be: cannot be opened
    handle = IndexHandle(folder / "index.sqlite")
    assert handle.in_memory and handle.index.path == IN_MEMORY
    assert handle.fallback is not None
    handle.close()


def test_fall_back_replaces_the_index_with_an_empty_in_memory_one(tmp_path: Path) -> None:
    handle = IndexHandle(tmp_path / "index.sqlite")
    _add_file(handle.index, "a.md")
    handle.fall_back("disk is full")
    assert handle.in_memory and handle.fallback == "disk is full"
    assert handle.index.file_states() == {}
    handle.close()


def test_opening_sweeps_the_rebuild_files_of_dead_processes_only(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    for name in (f"index.sqlite.rebuild-{dead}", f"index.sqlite.rebuild-{dead}-wal",
                 f"index.sqlite.rebuild-{os.getpid()}"):
        (tmp_path / name).write_bytes(b"x")
    handle = IndexHandle(tmp_path / "index.sqlite")
    assert sorted(p.name for p in tmp_path.glob("index.sqlite.rebuild-*")) == [
        f"index.sqlite.rebuild-{os.getpid()}"  # a rebuild of a live process (this one) is left alone
    ]
    (tmp_path / f"index.sqlite.rebuild-{dead}").write_bytes(b"x")
    assert handle.sweep_rebuild_files() == 1
    handle.close()


def test_rebuild_hands_build_a_fresh_owner_and_swaps_its_index_in(tmp_path: Path) -> None:
    handle = IndexHandle(tmp_path / "index.sqlite")
    _add_file(handle.index, "old.md")
    seen: list[str] = []

    def build(owner: IndexOwner) -> str:
        assert owner is not handle and owner.index is not handle.index
        assert handle.index.file_states().keys() == {"old.md"}  # readers keep the old index meanwhile
        _add_file(cast(MemoryIndex, owner.index), "new.md")
        seen.append(owner.index.path)
        return "built"

    assert handle.rebuild(build) == "built"
    assert seen[0].startswith(str(tmp_path / "index.sqlite.rebuild-"))
    assert set(handle.index.file_states()) == {"new.md"}
    assert handle.index.path == str(tmp_path / "index.sqlite")
    handle.close()


def test_a_failed_rebuild_keeps_the_index_and_leaves_no_rebuild_file(tmp_path: Path) -> None:
    handle = IndexHandle(tmp_path / "index.sqlite")
    _add_file(handle.index, "kept.md")
    before = handle.index

    def build(owner: IndexOwner) -> None:
        _add_file(cast(MemoryIndex, owner.index), "half.md")
        raise OSError("disk went away")

    with pytest.raises(OSError, match="disk went away"):
        handle.rebuild(build)
    assert handle.index is before and set(handle.index.file_states()) == {"kept.md"}
    assert not list(tmp_path.glob("index.sqlite.rebuild-*"))
    handle.close()


def test_every_index_a_handle_opens_keeps_its_vector_dtype(tmp_path):
    handle = IndexHandle(tmp_path / "index.sqlite", vector_dtype="int8")
    try:
        assert handle.index.vector_dtype == "int8"
        handle.swap_in(handle.open_fresh())
        assert handle.index.vector_dtype == "int8"
        assert handle.fall_back("test").vector_dtype == "int8"
    finally:
        handle.close()
