"""Chunk records kept by rowid: read row by row or all at once, right across this process's writes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import langchain_md_memory.index.sqlite.records as records_module
import langchain_md_memory.text.tokens as tokens_module
from langchain_md_memory.index.sqlite import ChunkRow, FileState, MemoryIndex
from langchain_md_memory.text import index_terms, query_terms, token_set
from langchain_md_memory.types import ChunkRecord
from tests.support.keywords import keyword_hits


def _write(idx: MemoryIndex, path: str, texts: list[str], kind: str = "evergreen") -> None:
    records = [ChunkRecord(f"{path}:{i}", path, i + 1, i + 1, f"## {path}", text, f"h{path}{i}{text}", kind,
                           float(i)) for i, text in enumerate(texts)]
    rows = [ChunkRow(record, f"e{record.id}", index_terms(record.text)) for record in records]
    idx.replace_file(FileState(path, 1, 1, path), kind, rows)  # type: ignore[arg-type]


def _write_elsewhere(idx: MemoryIndex, path: str, texts: list[str]) -> None:
    """A write by another connection (another process, as far as ``idx`` can tell)."""
    other = MemoryIndex.open(idx.path)
    try:
        _write(other, path, texts)
    finally:
        other.close()


def _every_record(idx: MemoryIndex) -> dict[int, ChunkRecord]:
    rowids = [int(r[0]) for r in idx.read("SELECT rowid FROM chunks ORDER BY rowid")]
    return idx.records([*rowids, 10**9])  # a rowid no chunk has is left out


@pytest.fixture(params=["row by row", "all at once"])
def index(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
          ) -> Iterator[MemoryIndex]:
    reads = 0 if request.param == "all at once" else 10**9
    monkeypatch.setattr(records_module, "READS_BEFORE_RESIDENT", reads)
    idx = MemoryIndex.open(tmp_path / "index.sqlite")
    for f in range(5):
        texts = [f"note {f}-{i} bond ladder" for i in range(40)]
        _write(idx, f"f{f}.md", texts, "daily" if f % 2 else "evergreen")
    yield idx
    idx.close()


def _fresh(idx: MemoryIndex) -> dict[int, ChunkRecord]:
    other = MemoryIndex.open(idx.path)
    try:
        return _every_record(other)
    finally:
        other.close()


def test_records_are_those_stored_and_follow_this_process_s_writes(index: MemoryIndex) -> None:
    first = _every_record(index)
    assert len(first) == 200 and first == _fresh(index)
    assert (index._records._resident is True) == (records_module.READS_BEFORE_RESIDENT == 0)
    _write(index, "f3.md", ["rewritten bond", "and shorter"])  # old rowids gone, new ones at the end
    index.remove_file("f1.md")
    _write(index, "new.md", ["a new note"], "daily")
    index.clear_vectors()  # a write that changes no record
    # Chunk ids a rewrite gave new rowids are scored as the chunks they now are.
    ids = ["f3.md:0", "f3.md:1", "f1.md:0", "f0.md:0"]
    other = MemoryIndex.open(index.path)
    try:
        terms = query_terms("rewritten bond")
        assert index.keyword_scores(terms, ids) == other.keyword_scores(terms, ids)
    finally:
        other.close()
    after = _every_record(index)
    assert after == _fresh(index)
    assert len(after) == 200 - 40 - 40 + 2 + 1
    assert {r.text for r in after.values()} >= {"rewritten bond", "and shorter", "a new note"}
    assert not [r for r in after.values() if r.path == "f1.md" or r.text.startswith("note 3-")]
    hits = [record.text for record, _ in keyword_hits(index, "rewritten", 5)]
    assert hits == ["rewritten bond"]


def test_another_process_s_write_is_read_again(index: MemoryIndex) -> None:
    _every_record(index)
    _write_elsewhere(index, "f0.md", ["only this now"])
    assert _every_record(index) == _fresh(index)
    assert "only this now" in {r.text for r in _every_record(index).values()}


def test_a_failed_write_forgets_the_kept_records(index: MemoryIndex) -> None:
    _every_record(index)
    with pytest.raises(RuntimeError), index.writing():
        _write(index, "f2.md", ["rolled back"])  # folded in inside the transaction, then rolled back
        raise RuntimeError("the caller fails after the write")
    _write(index, "f4.md", ["committed"])  # the next write takes the generation the failed one had
    assert _every_record(index) == _fresh(index)
    assert "rolled back" not in {r.text for r in _every_record(index).values()}


def test_records_are_held_after_enough_reads_and_not_for_a_large_memory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(records_module, "READS_BEFORE_RESIDENT", 3)
    idx = MemoryIndex.open(tmp_path / "index.sqlite")
    try:
        _write(idx, "a.md", [f"note {i}" for i in range(30)])
        rowids = [int(r[0]) for r in idx.read("SELECT rowid FROM chunks ORDER BY rowid")]
        for n in range(3):
            assert len(idx.records(rowids[n : n + 1])) == 1
        assert idx._records._resident is None  # three reads by rowid: not yet
        assert len(idx.records(rowids[5:7])) == 2
        assert idx._records._resident is True and len(idx._records._records) == 30
        monkeypatch.setattr(records_module, "RESIDENT_RECORDS", 29)
        _write(idx, "b.md", ["one more"])  # a write by another process is not folded in: read again
        _write_elsewhere(idx, "c.md", ["and another"])
        for n in range(5):
            assert len(idx.records(rowids[n : n + 1])) == 1
        assert idx._records._resident is False and len(idx._records._records) == 5  # too many to hold
        assert _every_record(idx) == _fresh(idx)
        # Few chunks of long text are not held either: the indexed words bound what is (decided again
        # in each generation another process begins).
        monkeypatch.setattr(records_module, "RESIDENT_RECORDS", 10**6)
        for words, held in ((40, False), (10**6, True)):
            monkeypatch.setattr(records_module, "RESIDENT_INSTANCES", words)
            _write_elsewhere(idx, f"long{words}.md", ["long " * 30])
            for n in range(5):
                assert len(idx.records(rowids[n : n + 1])) == 1
            assert idx._records._resident is held
    finally:
        idx.close()


def test_held_records_keep_their_token_sets_until_the_index_closes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(records_module, "READS_BEFORE_RESIDENT", 0)
    idx = MemoryIndex.open(tmp_path / "index.sqlite")
    texts = [f"Kept note {i}: bonds laddered, 退休目标 {i}" for i in range(20)]
    try:
        _write(idx, "a.md", texts)
        assert not set(texts) & set(tokens_module._KEPT)  # read row by row so far: nothing kept
        _every_record(idx)  # every record read at once
        assert idx._records._resident is True and set(texts) <= set(tokens_module._KEPT)
        _write(idx, "b.md", ["Kept later: a rewritten plan"])  # this process's write, folded in
        assert "Kept later: a rewritten plan" in tokens_module._KEPT
        for text in [*texts, "Kept later: a rewritten plan"]:
            token_set.cache_clear()
            assert token_set(text) == tokens_module._token_set(text)
    finally:
        idx.close()
    assert not set(texts) & set(tokens_module._KEPT)
