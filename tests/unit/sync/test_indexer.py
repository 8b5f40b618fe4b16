"""Incremental sync, seen through the facade: only what changed on disk is re-chunked or re-embedded."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from langchain_md_memory import MarkdownMemory, MemoryConfig
from langchain_md_memory.files.store import MarkdownStore
from langchain_md_memory.index.base import IndexOwner
from langchain_md_memory.index.sqlite import MemoryIndex
from langchain_md_memory.sync.indexer import Indexer, SyncStats
from tests.support.embeddings import AxisEmbeddings
from tests.support.memories import write_files

PROFILE = "# Profile\n\nRisk: conservative.\n\n## Limits\n\nNo single stock above 5%.\n"
GOALS = "# Goals\n\nRetire at 60 with a pension.\n"
NOTES = "# Notes\n\nBond ladder of treasuries.\n"

T = TypeVar("T")


@pytest.fixture
def folder(memory_dir: Path) -> Path:
    write_files(memory_dir, {"MEMORY.md": PROFILE, "goals.md": GOALS, "notes.md": NOTES})
    return memory_dir


@pytest.fixture
def mem(folder: Path, kw_memory: MarkdownMemory) -> MarkdownMemory:
    kw_memory.sync()
    return kw_memory


def chunk_count(mem: MarkdownMemory) -> int:
    return int(mem.status()["chunks"])


def test_the_first_sync_indexes_every_file(folder: Path) -> None:
    with MarkdownMemory(folder, embeddings="none") as mem:
        stats = mem.sync()
        assert isinstance(stats, SyncStats)
        assert (stats.files, stats.files_changed, stats.files_removed) == (3, 3, 0)
        assert stats.chunks_added == chunk_count(mem) >= 3
        assert stats.chunks_removed == 0
        assert mem.status()["files"] == 3


def test_a_second_sync_of_an_unchanged_folder_changes_nothing(mem: MarkdownMemory) -> None:
    before = chunk_count(mem)
    stats = mem.sync()
    assert stats.files == 3
    assert stats.files_changed == stats.files_removed == 0
    assert stats.chunks_added == stats.chunks_removed == 0
    assert chunk_count(mem) == before


def test_an_edited_file_is_rechunked_alone(mem: MarkdownMemory) -> None:
    before = chunk_count(mem)
    write_files(mem.memory_dir, {"goals.md": "# Goals\n\nRetire at 55 instead.\n\n## House\n\nBy 2030.\n"})
    stats = mem.sync()
    assert (stats.files, stats.files_changed, stats.files_removed) == (3, 1, 0)
    assert stats.chunks_removed == 1  # goals.md had one chunk; the other files were not touched
    assert chunk_count(mem) == before - 1 + stats.chunks_added
    assert [h.path for h in mem.search("retire 55")] == ["goals.md"]
    assert not mem.search("pension")


def test_a_deleted_files_chunks_disappear(mem: MarkdownMemory) -> None:
    assert mem.search("bond ladder")
    before = chunk_count(mem)
    (mem.memory_dir / "notes.md").unlink()
    stats = mem.sync()
    assert (stats.files, stats.files_changed, stats.files_removed) == (2, 0, 1)
    assert stats.chunks_removed == 1 and stats.chunks_added == 0
    assert chunk_count(mem) == before - 1
    assert mem.status()["files"] == 2
    assert not mem.search("bond ladder")


def test_a_new_file_is_added_without_touching_the_others(mem: MarkdownMemory) -> None:
    write_files(mem.memory_dir, {"trips.md": "# Trips\n\nKayak trip to Lofoten.\n"})
    stats = mem.sync()
    assert (stats.files, stats.files_changed, stats.chunks_added, stats.chunks_removed) == (4, 1, 1, 0)
    assert mem.search("Lofoten")[0].path == "trips.md"


def test_a_hand_written_file_with_a_colon_in_its_name_is_indexed(mem: MarkdownMemory) -> None:
    write_files(mem.memory_dir, {"a:b.md": "# Trips\n\nKayak trip to Lofoten.\n",
                                 "C:/notes.md": "# Notes\n\nA folder named like a drive.\n"})
    stats = mem.sync()
    assert (stats.files, stats.files_changed) == (5, 2)
    assert [h.path for h in mem.search("Lofoten")] == ["a:b.md"]
    assert [h.path for h in mem.search("named like a drive")] == ["C:/notes.md"]
    assert "Kayak" in mem.get("a:b.md")
    assert mem.status()["skipped_files"] == {}


def test_a_file_whose_name_the_path_guard_refuses_is_reported_not_dropped(mem: MarkdownMemory) -> None:
    write_files(mem.memory_dir, {"a\\b.md": "# Trips\n\nKayak trip to Lofoten.\n"})
    stats = mem.sync()
    assert stats.files == 3 and not mem.search("Lofoten")
    reason = mem.status()["skipped_files"]["a\\b.md"]
    assert "backslash" in reason and "rename" in reason
    (mem.memory_dir / "a\\b.md").rename(mem.memory_dir / "trips.md")
    mem.sync()
    assert [h.path for h in mem.search("Lofoten")] == ["trips.md"]
    assert mem.status()["skipped_files"] == {}


def test_a_symlink_leading_outside_is_reported_not_dropped(mem: MarkdownMemory, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.md"
    outside.write_text("# Trips\n\nKayak trip to Lofoten.\n")
    (mem.memory_dir / "trips.md").symlink_to(outside)
    assert not mem.search("Lofoten")
    reason = mem.status()["skipped_files"]["trips.md"]
    assert "outside the memory directory" in reason and str(tmp_path) not in reason


def test_a_forced_sync_rechunks_every_file_to_the_same_index(mem: MarkdownMemory) -> None:
    before = chunk_count(mem)
    ids = sorted(h.chunk_id for q in ("risk", "retire", "bond") for h in mem.search(q))
    stats = mem.sync(force=True)
    assert (stats.files, stats.files_changed) == (3, 3)
    assert stats.chunks_added == stats.chunks_removed == before
    assert chunk_count(mem) == before
    assert sorted(h.chunk_id for q in ("risk", "retire", "bond") for h in mem.search(q)) == ids


def test_only_changed_chunks_are_sent_to_the_embedding_model(folder: Path) -> None:
    emb = AxisEmbeddings(["risk", "retire", "bond", "stock"])
    with MarkdownMemory(folder, embeddings=emb) as mem:
        first = mem.sync()
        assert first.embedded == first.chunks_added == emb.texts_embedded
        assert mem.status()["embedded"] == chunk_count(mem)

        assert mem.sync().embedded == 0
        assert emb.texts_embedded == first.embedded

        write_files(folder, {"notes.md": "# Notes\n\nBond ladder, five rungs.\n"})
        edited = mem.sync()
        assert edited.files_changed == 1 and edited.embedded == edited.chunks_added == 1
        assert emb.texts_embedded == first.embedded + 1


def test_a_forced_sync_takes_unchanged_vectors_from_the_cache(folder: Path) -> None:
    emb = AxisEmbeddings(["risk", "retire", "bond", "stock"])
    with MarkdownMemory(folder, embeddings=emb) as mem:
        first = mem.sync()
        forced = mem.sync(force=True)
        assert forced.embedded == 0
        assert forced.cached == first.embedded
        assert emb.texts_embedded == first.embedded


class InPlaceOwner:
    """An index owner that rebuilds in place, as PostgreSQL's does, around a SQLite index (no IndexHandle)."""

    fallback: str | None = None
    in_memory = False

    def __init__(self, path: Path) -> None:
        self._index = MemoryIndex.open(path)
        self.path = self._index.path
        self.lock = threading.RLock()
        self.rebuilds = 0

    @property
    def index(self) -> MemoryIndex:
        return self._index

    def fall_back(self, reason: str) -> MemoryIndex:
        raise AssertionError(f"not expected: {reason}")

    def rebuild(self, build: Callable[[IndexOwner], T]) -> T:
        self.rebuilds += 1
        return build(self)

    def close(self) -> None:
        self._index.close()


def test_an_owner_that_rebuilds_in_place_gets_its_own_index_refilled(folder: Path) -> None:
    owner = InPlaceOwner(folder / "elsewhere.sqlite")
    indexer = Indexer(MarkdownStore(folder), owner, None, MemoryConfig())
    indexer.sync()
    index = owner.index
    index.remove_file("goals.md")  # the index lost a file behind the indexer's back
    stats = indexer.rebuild()
    assert owner.rebuilds == 1 and owner.index is index  # the owner decided: no fresh file, no swap
    assert (stats.files, stats.files_changed) == (3, 3)
    assert set(index.file_states()) == {"MEMORY.md", "goals.md", "notes.md"}
    assert not list(folder.glob("*.rebuild-*"))
    owner.close()
