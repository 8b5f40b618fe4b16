"""Progress events of long operations: counts only grow and end at the total; the library never prints."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from langchain_md_memory import MarkdownMemory
from langchain_md_memory.types import ProgressEvent
from tests.support.embeddings import AxisEmbeddings
from tests.support.memories import write_files

VOCABULARY = ["retire", "bond", "stock", "cash", "pension", "house"]


def topic(i: int) -> str:
    word = VOCABULARY[i % len(VOCABULARY)]
    return "\n\n".join(f"## Part {j}\n\n{word} note {i}.{j}: distinct text {i * 100 + j}" for j in range(3))


@pytest.fixture
def folder(memory_dir: Path) -> Path:
    write_files(memory_dir, {f"topic-{i:02d}.md": topic(i) for i in range(20)})
    return memory_dir


def recorder() -> tuple[list[ProgressEvent], object]:
    events: list[ProgressEvent] = []
    return events, events.append


def phase(events: list[ProgressEvent], name: str) -> list[ProgressEvent]:
    return [e for e in events if e.phase == name]


def assert_counts_up_to_the_total(events: list[ProgressEvent]) -> None:
    assert events
    done = [e.done for e in events]
    assert done == sorted(done)
    assert all(0 <= e.done <= e.total for e in events)
    assert events[-1].done == events[-1].total


def test_sync_reports_chunks_embedded_increasing_to_the_total(folder: Path, capsys) -> None:
    embedder = AxisEmbeddings(VOCABULARY)
    events, record = recorder()
    with MarkdownMemory(folder, embeddings=embedder, config={"embedding": {"batch_size": 4}}) as mem:
        stats = mem.sync(progress=record)
        chunks = mem.status()["chunks"]
    embedded = phase(events, "embed")
    assert_counts_up_to_the_total(embedded)
    assert embedded[-1].total == chunks == stats.embedded >= 40
    assert len(embedded) >= chunks // 4  # one event per model call of 4 texts, not one at the end
    assert {e.unit for e in embedded} == {"chunks"}
    files = phase(events, "index")
    assert_counts_up_to_the_total(files)
    assert files[-1].total == 20 and files[-1].unit == "files"
    assert capsys.readouterr() == ("", "")  # the library never prints


def test_a_rebuild_reports_the_files_it_reindexes(folder: Path) -> None:
    embedder = AxisEmbeddings(VOCABULARY)
    with MarkdownMemory(folder, embeddings=embedder) as mem:
        mem.sync()
        calls = embedder.calls
        events, record = recorder()
        mem.rebuild(progress=record)
    assert embedder.calls == calls  # vectors come from the cache at chunking time: no embed phase
    assert phase(events, "embed") == []
    files = phase(events, "index")
    assert_counts_up_to_the_total(files)
    assert files[-1].total == 20


def test_the_memorys_callback_sees_the_sync_a_search_makes(folder: Path) -> None:
    events, record = recorder()
    with MarkdownMemory(folder, embeddings=AxisEmbeddings(VOCABULARY), progress=record) as mem:
        assert mem.search("pension")
    assert_counts_up_to_the_total(phase(events, "embed"))


def test_an_interrupted_sync_keeps_the_batches_it_finished(folder: Path) -> None:
    class Interruptible(AxisEmbeddings):
        interrupt_at: int | None = None

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            if self.calls == self.interrupt_at:
                raise KeyboardInterrupt  # Ctrl-C while the fourth batch is being embedded
            return super().embed_documents(texts)

    first = Interruptible(VOCABULARY)
    first.interrupt_at = 3
    with MarkdownMemory(folder, embeddings=first, config={"embedding": {"batch_size": 4}}) as mem:
        with pytest.raises(KeyboardInterrupt):
            mem.sync()
        info = mem.status()
    assert 0 < info["embedded"] < info["chunks"]

    second = Interruptible(VOCABULARY)  # the same model: the vectors already stored stay valid
    with MarkdownMemory(folder, embeddings=second, config={"embedding": {"batch_size": 4}}) as mem:
        mem.sync()
        after = mem.status()
    assert after["embedded"] == after["chunks"]
    assert second.texts_embedded == info["chunks"] - info["embedded"]  # only what was missing


def test_verify_reports_the_files_it_compares(folder: Path) -> None:
    with MarkdownMemory(folder, embeddings="none") as mem:
        mem.sync()
        events, record = recorder()
        assert mem.verify(progress=record).ok
    checked = phase(events, "verify")
    assert_counts_up_to_the_total(checked)
    assert checked[-1].total == 20


def test_export_and_import_report_the_files_they_move(folder: Path, tmp_path: Path) -> None:
    with MarkdownMemory(folder, embeddings="none") as mem:
        events, record = recorder()
        archive = mem.export_archive(tmp_path / "memory.tar.gz", progress=record)
    assert_counts_up_to_the_total(phase(events, "export"))
    events, record = recorder()
    with MarkdownMemory.import_archive(archive, tmp_path / "restored", embeddings="none",
                                       progress=record) as restored:
        assert restored.status()["files"] == 20
    unpacked = phase(events, "import")
    assert_counts_up_to_the_total(unpacked)
    assert unpacked[-1].total == 20
    assert phase(events, "index")  # the import's sync reported too


def test_dream_reports_its_steps(memory_dir: Path) -> None:
    events, record = recorder()
    with MarkdownMemory(memory_dir, embeddings="none") as mem:
        mem.write("sessions/2026-07-01-a.md", "# Session\n\nWants to retire at 55.\n")
        result = mem.dream(FakeListChatModel(responses=["# Profile\n\n- Retire at 55\n"]), min_sessions=1,
                           min_interval=0, recency_guard=0, progress=record)
    assert result.status == "done"
    assert [e.done for e in phase(events, "dream")] == [0, 1, 2, 3]


def test_a_file_that_is_not_utf8_is_indexed_with_a_warning(memory_dir: Path, caplog) -> None:
    (memory_dir / "legacy.md").write_bytes("# Caf\xe9\n\nbond ladder notes\n".encode("latin-1"))
    with caplog.at_level(logging.WARNING), MarkdownMemory(memory_dir, embeddings="none") as mem:
        hits = mem.search("bond ladder")
        assert [h.path for h in hits] == ["legacy.md"]
        warnings = mem.status()["file_warnings"]
        assert "not valid UTF-8" in warnings["legacy.md"]
        assert any("legacy.md" in r.getMessage() and "UTF-8" in r.getMessage() for r in caplog.records)
        (memory_dir / "legacy.md").write_text("# Café\n\nbond ladder notes, now UTF-8\n", encoding="utf-8")
        mem.sync()
        assert mem.status()["file_warnings"] == {}
