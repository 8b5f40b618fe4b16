"""A sync indexes many changed files in a few write transactions, and a failure loses only its batch."""

from __future__ import annotations

from pathlib import Path

import pytest

from langchain_md_memory import MarkdownMemory
from langchain_md_memory.index.sqlite import MemoryIndex
from langchain_md_memory.sync import batches
from langchain_md_memory.sync.indexer import Indexer


def _write(root: Path, n: int) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (root / f"note{i:03d}.md").write_text(f"# Note {i}\n\n- fact number {i} about walnut{i}\n",
                                              encoding="utf-8")


@pytest.fixture
def transactions(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    opened: list[int] = []
    real = MemoryIndex.writing

    def counting(self: MemoryIndex):  # type: ignore[no-untyped-def]
        opened.append(1)
        return real(self)

    monkeypatch.setattr(MemoryIndex, "writing", counting)
    return opened


def test_two_hundred_new_files_take_a_few_transactions(tmp_path: Path, transactions: list[int],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batches, "BATCH_S", 1e9)  # count by files only: deterministic
    _write(tmp_path / "mem", 200)
    with MarkdownMemory(tmp_path / "mem", embeddings="none") as mem:
        stats = mem.sync()
        assert stats.files_changed == 200
        assert len(transactions) == 4  # 64 + 64 + 64 + 8
        assert [h.path for h in mem.search("walnut137")] == ["note137.md"]


def test_a_failed_batch_is_rolled_back_and_the_next_sync_indexes_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batches, "BATCH_S", 1e9)
    _write(tmp_path / "mem", 100)
    real = Indexer._reindex_file

    def failing(self: Indexer, path: str, *args, **kwargs):  # type: ignore[no-untyped-def]
        if path == "note070.md":
            raise OSError("disk went away")
        return real(self, path, *args, **kwargs)

    with MarkdownMemory(tmp_path / "mem", embeddings="none") as mem:
        monkeypatch.setattr(Indexer, "_reindex_file", failing)
        with pytest.raises(OSError, match="disk went away"):
            mem.sync()
        assert mem.index.count_chunks()[0] == 64  # the first batch committed, the second rolled back
        monkeypatch.setattr(Indexer, "_reindex_file", real)
        assert mem.sync().files_changed == 36
        assert [h.path for h in mem.search("walnut65")] == ["note065.md"]


def test_a_first_build_skips_the_cache_per_file_and_a_rebuild_takes_vectors_from_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from langchain_md_memory.index.sqlite.cache import EmbeddingCache
    from tests.support.embeddings import AxisEmbeddings

    _write(tmp_path / "mem", 40)
    lookups: list[int] = []
    real = EmbeddingCache.lookup

    def counting(self: EmbeddingCache, hashes, fingerprint):  # type: ignore[no-untyped-def]
        lookups.append(len(hashes))
        return real(self, hashes, fingerprint)

    monkeypatch.setattr(EmbeddingCache, "lookup", counting)
    first = AxisEmbeddings(["fact", "walnut1"])
    with MarkdownMemory(tmp_path / "mem", embeddings=first) as mem:
        mem.sync()
        status = mem.status()
        assert status["embedded"] == status["chunks"] == 40
        assert len(lookups) == 1  # the waiting chunks, one page: none of the 40 per-file lookups
        lookups.clear()
        stats = mem.sync(force=True)
    assert len(lookups) >= 40  # the cache holds vectors now: each file's rows take theirs on insert
    assert stats.cached == 40 and first.texts_embedded == 40
