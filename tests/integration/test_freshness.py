"""How a search knows the Markdown changed: a healthy watcher is trusted, otherwise one walk finds it."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from langchain_md_memory import MarkdownMemory
from langchain_md_memory.files.store import MarkdownStore


def wait_for(condition, timeout_s: float) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return bool(condition())


@pytest.fixture
def walks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts directory walks of every store."""
    calls: list[int] = []
    real = MarkdownStore.scan

    def counting(self: MarkdownStore, **kwargs: bool) -> dict[str, tuple[int, int]]:
        calls.append(1)
        return real(self, **kwargs)

    monkeypatch.setattr(MarkdownStore, "scan", counting)
    return calls


def _edit_by_hand(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    stamp = time.time() + 5  # a coarse clock must still see a new mtime
    os.utime(path, (stamp, stamp))


def test_a_healthy_watcher_is_trusted_and_a_search_walks_nothing(memory_dir: Path, walks: list[int]) -> None:
    (memory_dir / "MEMORY.md").write_text("- Bond ladder\n", encoding="utf-8")
    fast = {"index": {"watch_debounce_ms": 50}}
    with MarkdownMemory(memory_dir, embeddings="none", config=fast, watch=True) as mem:
        mem.search("bond")
        assert mem.status()["watcher_healthy"] is True
        before = len(walks)
        for _ in range(5):
            mem.search("bond")
        assert len(walks) == before  # no per-search walk
        _edit_by_hand(memory_dir / "MEMORY.md", "- Bond ladder\n- Cash buffer: six months\n")
        # The watcher's event marks the memory changed; the next search syncs and finds the edit.
        assert wait_for(lambda: bool(mem.search("buffer")), 5)


def test_a_dead_watcher_is_reported_and_the_walk_takes_over(memory_dir: Path, walks: list[int]) -> None:
    (memory_dir / "MEMORY.md").write_text("- Bond ladder\n", encoding="utf-8")
    fast = {"index": {"watch_debounce_ms": 50}}
    with MarkdownMemory(memory_dir, embeddings="none", config=fast, watch=True) as mem:
        mem.search("bond")
        assert mem._watcher is not None
        observer = mem._watcher._observer  # the observer thread dies, as peers' watchers do silently
        assert observer is not None
        observer.stop()
        observer.join()
        status = mem.status()
        assert status["watching"] is True and status["watcher_healthy"] is False
        _edit_by_hand(memory_dir / "MEMORY.md", "- Bond ladder\n- Cash buffer: six months\n")
        before = len(walks)
        assert mem.search("buffer")  # found at once by the walk, no event needed
        assert len(walks) > before


def test_without_a_watcher_an_edit_to_any_file_is_found_whatever_the_memory_size(memory_dir: Path) -> None:
    # The old cap re-stat-ed only the most recently changed files above it: an edit to an old
    # file went unseen. One walk is cheaper than those re-stats and sees every file.
    for i in range(30):
        path = memory_dir / f"topic{i:02d}.md"
        path.write_text(f"- note {i}\n", encoding="utf-8")
        stamp = time.time() - 1000 + i
        os.utime(path, (stamp, stamp))
    with MarkdownMemory(memory_dir, embeddings="none", config={"index": {"stat_check_max_files": 10}}) as mem:
        assert mem.search("note")
        _edit_by_hand(memory_dir / "topic00.md", "- note 0\n- the oldest file now mentions zucchini\n")
        assert [h.path for h in mem.search("zucchini")] == ["topic00.md"]


def test_stat_check_zero_turns_the_walk_off(memory_dir: Path, walks: list[int]) -> None:
    (memory_dir / "MEMORY.md").write_text("- Bond ladder\n", encoding="utf-8")
    with MarkdownMemory(memory_dir, embeddings="none", config={"index": {"stat_check_max_files": 0}}) as mem:
        mem.search("bond")
        before = len(walks)
        mem.search("bond")
        assert len(walks) == before


# -- above stat_check_max_files: folders first, walks when one moved or one is due -----------


@pytest.fixture
def big_memory(memory_dir: Path) -> Path:
    """Twelve files in two folders (over a cap of 10), every folder and file dated well in the past."""
    (memory_dir / "memory").mkdir()
    for i in range(6):
        (memory_dir / f"topic{i}.md").write_text(f"- topic note {i}\n", encoding="utf-8")
        (memory_dir / "memory" / f"2026-01-0{i + 1}.md").write_text(f"- log note {i}\n", encoding="utf-8")
    return memory_dir


def _age_folders(root: Path) -> None:
    """Date every folder 100 s back, as folders are when nothing was added for a while."""
    old = time.time() - 100
    for folder in (root, root / "memory"):
        os.utime(folder, (old, old))


@pytest.fixture
def no_periodic_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    from langchain_md_memory.sync import freshness

    monkeypatch.setattr(freshness, "WALK_SHARE", 1e12)


def _opened(root: Path) -> MarkdownMemory:
    mem = MarkdownMemory(root, embeddings="none", config={"index": {"stat_check_max_files": 10}})
    mem.search("note")  # the first sync walks
    _age_folders(root)
    mem._indexer.freshness.walk()  # remembers the aged folders as trusted
    return mem


def test_above_the_cap_a_quiet_search_only_stats_folders(big_memory: Path, walks: list[int],
                                                         no_periodic_walk: None) -> None:
    with _opened(big_memory) as mem:
        before = len(walks)
        for _ in range(5):
            assert mem.search("note")
        assert len(walks) == before


def test_above_the_cap_another_writer_and_a_new_file_are_seen_at_once(big_memory: Path, walks: list[int],
                                                                      no_periodic_walk: None) -> None:
    with _opened(big_memory) as mem:
        other = MarkdownStore(big_memory)  # another process's package write: a temp file renamed in
        other.append("memory/2026-01-03.md", "- the landlord raised the rent to 1,700")
        before = len(walks)
        assert [h.path for h in mem.search("landlord")] == ["memory/2026-01-03.md"]
        assert len(walks) == before + 1
        _age_folders(big_memory)
        mem._indexer.freshness.walk()
        new_log = big_memory / "memory" / "2026-02-01.md"
        new_log.write_text("- booked the zucchini festival\n", encoding="utf-8")
        assert [h.path for h in mem.search("zucchini")] == ["memory/2026-02-01.md"]


def test_above_the_cap_an_edit_in_place_is_seen_when_the_periodic_walk_is_due(
        big_memory: Path, monkeypatch: pytest.MonkeyPatch, no_periodic_walk: None) -> None:
    from types import SimpleNamespace

    from langchain_md_memory.sync import freshness

    with _opened(big_memory) as mem:
        _edit_by_hand(big_memory / "topic0.md", "- topic note 0\n- quince jam recipe\n")
        assert mem.search("quince") == []  # in place: no folder moved, the periodic walk is not due
        later = SimpleNamespace(monotonic=lambda: time.monotonic() + 1e13, time_ns=time.time_ns)
        monkeypatch.setattr(freshness, "time", later)
        mem.search("quince")  # finds the walk due and starts it behind itself
        mem._indexer.freshness.wait(5)
        assert [h.path for h in mem.search("quince")] == ["topic0.md"]


def test_above_the_cap_a_search_does_not_wait_for_the_periodic_walk(
        big_memory: Path, monkeypatch: pytest.MonkeyPatch, no_periodic_walk: None) -> None:
    from types import SimpleNamespace

    from langchain_md_memory.sync import freshness

    with _opened(big_memory) as mem:
        _edit_by_hand(big_memory / "topic1.md", "- topic note 1\n- medlar chutney\n")
        slow, real = threading.Event(), MarkdownStore.scan

        def held(self: MarkdownStore, **kwargs: bool) -> dict[str, tuple[int, int]]:
            slow.wait(10)  # a walk of a very large memory
            return real(self, **kwargs)

        monkeypatch.setattr(MarkdownStore, "scan", held)
        later = SimpleNamespace(monotonic=lambda: time.monotonic() + 1e13, time_ns=time.time_ns)
        monkeypatch.setattr(freshness, "time", later)
        started = time.monotonic()
        assert mem.search("medlar") == []  # answered from the index as it is, the walk still running
        assert time.monotonic() - started < 5
        assert mem.search("medlar") == []  # one walk at a time: this search starts no other
        slow.set()
        mem._indexer.freshness.wait(5)
        assert [h.path for h in mem.search("medlar")] == ["topic1.md"]


def test_above_the_cap_the_periodic_walk_starts_once_the_search_has_answered(
        big_memory: Path, monkeypatch: pytest.MonkeyPatch, no_periodic_walk: None) -> None:
    from types import SimpleNamespace

    from langchain_md_memory.sync import freshness

    events: list[str] = []
    with _opened(big_memory) as mem:
        real_scan, real_recall = MarkdownStore.scan, mem.index.keyword_search

        def scan(self: MarkdownStore, **kwargs: bool) -> dict[str, tuple[int, int]]:
            events.append("walk")
            return real_scan(self, **kwargs)

        def recall(*args, **kwargs):  # type: ignore[no-untyped-def]
            time.sleep(0.2)  # a walk started before the recall would show up meanwhile
            events.append("recall")
            return real_recall(*args, **kwargs)

        monkeypatch.setattr(MarkdownStore, "scan", scan)
        monkeypatch.setattr(mem.index, "keyword_search", recall)
        monkeypatch.setattr(freshness, "time", SimpleNamespace(monotonic=lambda: time.monotonic() + 1e13,
                                                               time_ns=time.time_ns))
        mem.search("note")
        mem._indexer.freshness.wait(5)
        assert events == ["recall", "walk"]  # the walk does not compete with the search it found due


def test_folders_changed_just_before_a_walk_are_not_trusted(big_memory: Path, walks: list[int],
                                                            no_periodic_walk: None) -> None:
    with MarkdownMemory(big_memory, embeddings="none", config={"index": {"stat_check_max_files": 10}}) as mem:
        mem.search("note")  # the folders were written a moment ago
        before = len(walks)
        for _ in range(3):
            mem.search("note")
        assert len(walks) == before + 3


def test_at_or_below_the_cap_every_search_walks(big_memory: Path, walks: list[int],
                                                no_periodic_walk: None) -> None:
    with MarkdownMemory(big_memory, embeddings="none", config={"index": {"stat_check_max_files": 12}}) as mem:
        mem.search("note")
        _age_folders(big_memory)
        before = len(walks)
        for _ in range(3):
            mem.search("note")
        assert len(walks) == before + 3


def test_a_failed_background_walk_makes_the_next_search_walk_itself(
        big_memory: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
        no_periodic_walk: None) -> None:
    from types import SimpleNamespace

    from langchain_md_memory.sync import freshness

    with _opened(big_memory) as mem:
        real = MarkdownStore.scan

        def failing(self: MarkdownStore, **kwargs: bool) -> dict[str, tuple[int, int]]:
            raise PermissionError("memory folder unreadable")

        monkeypatch.setattr(MarkdownStore, "scan", failing)
        later = SimpleNamespace(monotonic=lambda: time.monotonic() + 1e13, time_ns=time.time_ns)
        monkeypatch.setattr(freshness, "time", later)
        mem.search("note")
        mem._indexer.freshness.wait(5)
        assert "background walk of the memory folder failed" in caplog.text
        assert mem._indexer.freshness.state() == "stale"
        monkeypatch.setattr(MarkdownStore, "scan", real)
        _edit_by_hand(big_memory / "topic2.md", "- topic note 2\n- loquat tart\n")
        assert [h.path for h in mem.search("loquat")] == ["topic2.md"]  # walked in the search


def test_close_lets_a_background_walk_finish(big_memory: Path, monkeypatch: pytest.MonkeyPatch,
                                             no_periodic_walk: None) -> None:
    from types import SimpleNamespace

    from langchain_md_memory.sync import freshness

    mem = _opened(big_memory)
    release, real = threading.Event(), MarkdownStore.scan

    def held(self: MarkdownStore, **kwargs: bool) -> dict[str, tuple[int, int]]:
        release.wait(10)
        return real(self, **kwargs)

    monkeypatch.setattr(MarkdownStore, "scan", held)
    monkeypatch.setattr(freshness, "time", SimpleNamespace(monotonic=lambda: time.monotonic() + 1e13,
                                                           time_ns=time.time_ns))
    mem.search("note")  # starts the walk behind itself
    closing = threading.Thread(target=mem.close)
    closing.start()
    closing.join(0.3)
    assert closing.is_alive()  # waits for the walk rather than leave it running on a closed memory
    release.set()
    closing.join(5)
    assert not closing.is_alive() and mem.closed
    assert not [t for t in threading.enumerate() if t.name == "md-memory-walk"]
