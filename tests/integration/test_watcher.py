"""The live index with the real watchdog observer: debounce, ignored files, renames, clean shutdown."""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from watchdog.utils import BaseThread

from langchain_md_memory import MarkdownMemory, MemoryConfig
from langchain_md_memory.sync.watcher import WATCHER_THREAD_NAME, MemoryWatcher
from tests.support.keywords import keyword_hits

DEBOUNCE_MS = 300


def wait_for(condition, timeout_s, poll_s=0.02):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(poll_s)
    return condition()


def watcher_threads():
    return [t for t in threading.enumerate()
            if t.is_alive() and (isinstance(t, BaseThread) or t.name == WATCHER_THREAD_NAME)]


def indexed(mem, word):
    """Whether the index (not a search, which would sync) already holds ``word``."""
    return bool(keyword_hits(mem.index, word, 5))


@pytest.fixture
def live(memory_dir):
    config = MemoryConfig(index={"watch_debounce_ms": DEBOUNCE_MS})
    mem = MarkdownMemory(memory_dir, embeddings="none", config=config, watch=True)
    mem.sync()
    yield mem
    mem.close()


def test_an_outside_write_is_searchable_within_three_debounces_without_sync(live, memory_dir):
    assert live.watching and live._watcher is not None
    assert live._watcher.backend == "InotifyObserver"
    (memory_dir / "goals.md").write_text("- Retire at 55 with a paid-off flat\n", encoding="utf-8")
    # The watcher counts a sync once it has returned, a moment after its writes are readable.
    assert wait_for(lambda: indexed(live, "flat") and live._watcher.sync_count > 0, 3 * DEBOUNCE_MS / 1000)
    assert live._watcher.sync_count == 1
    assert live.search("paid-off flat")[0].path == "goals.md"


def test_fifty_rapid_writes_cause_at_most_three_syncs(live, memory_dir):
    for i in range(50):
        if i % 2:
            live.write("burst.md", f"- revision {i} marker{i}\n")
        else:
            (memory_dir / "burst.md").write_text(f"- revision {i} marker{i}\n", encoding="utf-8")
    assert wait_for(lambda: indexed(live, "marker49"), 10)
    assert live._watcher is not None
    assert wait_for(lambda: live._watcher.sync_count >= 1 and not live._watcher.pending, 5)
    # watchdog may fold a burst into few events (seen: 2 for 50 writes under load); what matters is that
    # the burst was seen and indexed through the watcher, in at most three syncs.
    assert live._watcher.event_count >= 1
    assert 1 <= live._watcher.sync_count <= 3
    assert not indexed(live, "marker48")


def test_index_writes_and_ignored_files_cause_no_sync_over_five_idle_seconds(live, memory_dir):
    live.append("- settled fact")
    assert wait_for(lambda: indexed(live, "settled"), 5)
    assert live._watcher is not None
    assert wait_for(lambda: not live._watcher.pending, 5)
    syncs, events = live._watcher.sync_count, live._watcher.event_count
    live.sync(force=True)
    live.rebuild()
    live.search("settled fact")
    # none of these is memory: sidecars, temp files of atomic writes, the lock, other kinds of files
    (memory_dir / ".MEMORY.md.abc123.tmp").write_text("half written", encoding="utf-8")
    (memory_dir / "notes.txt").write_text("not markdown", encoding="utf-8")
    (memory_dir / ".md-memory.lock").touch()
    (memory_dir / ".obsidian").mkdir()
    (memory_dir / ".obsidian" / "workspace.md").write_text("hidden", encoding="utf-8")
    (memory_dir / "index.sqlite-journal").write_text("x", encoding="utf-8")
    time.sleep(5)
    assert (live._watcher.sync_count, live._watcher.event_count) == (syncs, events)
    assert live._watcher.error_count == 0


def test_renames_and_deletes_reach_the_index(live, memory_dir):
    (memory_dir / "topics").mkdir()
    (memory_dir / "topics" / "tax.md").write_text("- Harvest losses in December\n", encoding="utf-8")
    assert wait_for(lambda: "topics/tax.md" in live.index.file_states(), 5)
    os.rename(memory_dir / "topics" / "tax.md", memory_dir / "topics" / "taxes.md")
    assert wait_for(lambda: set(live.index.file_states()) == {"topics/taxes.md"}, 5)
    os.rename(memory_dir / "topics", memory_dir / "finance")
    assert wait_for(lambda: set(live.index.file_states()) == {"finance/taxes.md"}, 5)
    (memory_dir / "draft.txt").write_text("- Max out the ISA allowance\n", encoding="utf-8")
    os.rename(memory_dir / "draft.txt", memory_dir / "isa.md")
    assert wait_for(lambda: "isa.md" in live.index.file_states(), 5)
    os.unlink(memory_dir / "finance" / "taxes.md")
    os.rename(memory_dir / "isa.md", memory_dir / ".isa.md.trash")
    assert wait_for(lambda: live.index.file_states() == {}, 5)
    assert not indexed(live, "December") and not indexed(live, "ISA")


def test_session_files_are_watched_too(live, memory_dir):
    (memory_dir / "sessions").mkdir()
    (memory_dir / "sessions" / "2026-07-14-t1.md").write_text("## User\n\nkayak budget\n", encoding="utf-8")
    assert wait_for(lambda: indexed(live, "kayak"), 5)
    assert keyword_hits(live.index, "kayak", 1)[0][0].file_kind == "session"


def test_close_leaves_no_watcher_thread_alive(memory_dir):
    before = set(watcher_threads())
    config = MemoryConfig(index={"watch_debounce_ms": 50})
    mem = MarkdownMemory(memory_dir, embeddings="none", config=config, watch=True)
    assert mem.status()["watching"] is True
    started = set(watcher_threads()) - before
    assert any(t.name == WATCHER_THREAD_NAME for t in started)
    assert any(isinstance(t, BaseThread) for t in started)  # observer and emitter
    (memory_dir / "a.md").write_text("pending change\n", encoding="utf-8")  # a debounce in flight
    mem.close()
    assert not [t for t in started if t.is_alive()]
    assert mem.watching is False
    mem.close()  # idempotent


def test_stop_and_restart_watching(kw_memory, memory_dir):
    kw_memory.sync()
    watcher = kw_memory.start_watching(debounce_ms=50)
    assert kw_memory.start_watching() is watcher  # idempotent
    kw_memory.stop_watching()
    assert kw_memory.status()["watching"] is False and not watcher.running
    (memory_dir / "while-stopped.md").write_text("- unwatched edit\n", encoding="utf-8")
    assert kw_memory.search("unwatched edit")[0].path == "while-stopped.md"  # the stat check still syncs
    again = kw_memory.start_watching(debounce_ms=50)
    (memory_dir / "after.md").write_text("- watched again\n", encoding="utf-8")
    assert wait_for(lambda: indexed(kw_memory, "watched"), 3)
    assert again.sync_count >= 1


def test_a_failing_sync_is_counted_and_the_watcher_keeps_going(tmp_path):
    calls = []

    def flaky_sync():
        calls.append(time.monotonic())
        if len(calls) == 1:
            raise RuntimeError("disk hiccup")
        return "ok"

    results = []
    watcher = MemoryWatcher(tmp_path, flaky_sync, debounce_ms=50, on_sync=results.append)
    watcher.start()
    try:
        (tmp_path / "one.md").write_text("1", encoding="utf-8")
        assert wait_for(lambda: watcher.error_count == 1, 3)
        assert watcher.last_error == "RuntimeError: disk hiccup"
        (tmp_path / "two.md").write_text("2", encoding="utf-8")
        assert wait_for(lambda: results == ["ok"], 3)
        assert watcher.running and watcher.sync_count == 2
    finally:
        watcher.stop()


def test_syncs_never_overlap_and_a_change_during_a_sync_queues_one_more(tmp_path):
    active, peak, count = [0], [0], [0]
    gate = threading.Lock()
    entered = threading.Event()

    def slow_sync():
        with gate:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        entered.set()
        time.sleep(0.4)
        with gate:
            active[0] -= 1
            count[0] += 1

    watcher = MemoryWatcher(tmp_path, slow_sync, debounce_ms=30)
    watcher.start()
    try:
        (tmp_path / "a.md").write_text("a", encoding="utf-8")
        assert entered.wait(3)
        for i in range(5):  # arrive while the first sync runs
            (tmp_path / f"b{i}.md").write_text("b", encoding="utf-8")
        assert wait_for(lambda: count[0] == 2, 5)
    finally:
        watcher.stop()
    assert peak[0] == 1
    assert count[0] == 2


def test_a_steady_stream_of_writes_still_syncs_before_it_ends(tmp_path):
    synced = threading.Event()
    watcher = MemoryWatcher(tmp_path, synced.set, debounce_ms=200, max_delay_ms=400)
    watcher.start()
    try:
        deadline = time.monotonic() + 5
        i = 0
        while not synced.is_set() and time.monotonic() < deadline:  # every 50 ms: never 200 ms quiet
            (tmp_path / "stream.md").write_text(str(i), encoding="utf-8")
            i += 1
            time.sleep(0.05)
        assert synced.is_set()
    finally:
        watcher.stop()


def test_cli_watch_prints_a_line_per_sync_and_stops_cleanly_on_ctrl_c(memory_dir):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        [sys.executable, "-m", "langchain_md_memory", "--dir", str(memory_dir), "--embeddings", "none",
         "watch", "--debounce-ms", "100"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=root, env=env,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert "synced: files 0" in first
        assert proc.stdout.readline().startswith(f"watching {memory_dir.resolve()} (InotifyObserver")
        (memory_dir / "MEMORY.md").write_text("- a watched fact\n", encoding="utf-8")
        assert "synced: files 1, changed 1" in proc.stdout.readline()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert out.strip().splitlines()[-1] == "stopped after 1 syncs"
    assert "Traceback" not in err
