"""Dreams across real processes: one runs while the other reports busy; killed holders lose the lock."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import HumanMessage
from langgraph.graph import END, START, MessagesState, StateGraph

from langchain_md_memory import MarkdownMemory
from langchain_md_memory.features.dream import DREAM_LOCK_FILE
from langchain_md_memory.files.locks import LockFile
from langchain_md_memory.langgraph import create_dream_node
from tests.support.memories import write_dated

GOOD = "# Profile\n\n- Prefers ETFs\n- Retire at 55\n"

# Run by each child: dream with a model that announces it started, then waits for a go file.
DREAMER = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    from typing import Any
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_md_memory import MarkdownMemory

    memory_dir, marker_dir, name = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]

    class WaitingModel(FakeListChatModel):
        def _call(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> str:
            (marker_dir / f"{name}.started").touch()
            deadline = time.monotonic() + 60
            while not (marker_dir / "go").exists() and time.monotonic() < deadline:
                time.sleep(0.02)
            return super()._call(messages, stop, run_manager, **kw)

    with MarkdownMemory(memory_dir, embeddings="none") as mem:
        result = mem.dream(WaitingModel(responses=[sys.argv[4]]), min_sessions=1, recency_guard=0)
    print(json.dumps(result.to_dict()))
""")

HOLDER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from langchain_md_memory.files.locks import LockFile

    lock = LockFile(Path(sys.argv[1]))
    assert lock.acquire()
    Path(sys.argv[2]).touch()
    time.sleep(120)
""")


def _wait_for(path: Path, proc: subprocess.Popen[str], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            raise AssertionError(f"child exited early: {proc.communicate()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{path.name} did not appear")
        time.sleep(0.02)


def _seed(memory_dir: Path) -> None:
    with MarkdownMemory(memory_dir, embeddings="none") as mem:
        mem.write("MEMORY.md", "# Profile\n\n- Retire at 55\n")
        write_dated(mem, "sessions/2026-07-01-a.md", "User prefers ETFs.\n", time.time() - 3 * 86400)
        mem.write("sessions/2026-07-02-b.md", "User asked about fees.\n")


def _spawn(script: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, str(script), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=Path(__file__).parents[2])


@pytest.mark.slow
def test_two_concurrent_dreams_one_runs_the_other_is_busy(memory_dir: Path, tmp_path: Path) -> None:
    _seed(memory_dir)
    script = tmp_path / "dreamer.py"
    script.write_text(DREAMER, encoding="utf-8")
    markers = tmp_path / "markers"
    markers.mkdir()

    first = _spawn(script, str(memory_dir), str(markers), "first", GOOD)
    _wait_for(markers / "first.started", first)  # the first holds the lock and is inside the model call
    second = _spawn(script, str(memory_dir), str(markers), "second", "# Other\n\n- never written\n")
    second_out, second_err = second.communicate(timeout=60)
    (markers / "go").touch()
    first_out, first_err = first.communicate(timeout=60)

    assert second.returncode == 0, second_err
    assert first.returncode == 0, first_err
    busy, done = json.loads(second_out), json.loads(first_out)
    assert busy["status"] == "busy" and f"pid {first.pid}" in busy["reason"]
    assert not (markers / "second.started").exists()  # the busy dream never called its model
    assert done["status"] == "done"
    assert (memory_dir / "MEMORY.md").read_text(encoding="utf-8") == GOOD
    assert done["sessions_deleted"] == ["sessions/2026-07-01-a.md"]
    assert sorted(p.name for p in (memory_dir / "sessions").iterdir()) == ["2026-07-02-b.md"]


@pytest.mark.slow
def test_dream_killed_mid_run_changes_nothing_and_its_lock_is_taken_over(memory_dir: Path,
                                                                         tmp_path: Path) -> None:
    _seed(memory_dir)
    before = {p: p.read_bytes() for p in memory_dir.rglob("*.md")}
    script = tmp_path / "dreamer.py"
    script.write_text(DREAMER, encoding="utf-8")
    markers = tmp_path / "markers"
    markers.mkdir()

    child = _spawn(script, str(memory_dir), str(markers), "victim", GOOD)
    _wait_for(markers / "victim.started", child)
    child.send_signal(signal.SIGKILL)
    child.communicate(timeout=30)

    assert {p: p.read_bytes() for p in memory_dir.rglob("*.md")} == before
    assert (memory_dir / DREAM_LOCK_FILE).exists()  # left behind, yet not held
    with MarkdownMemory(memory_dir, embeddings="none") as mem:
        result = mem.dream(FakeListChatModel(responses=[GOOD]), min_sessions=1)
        assert result.status == "done", result.reason
        assert mem.get("MEMORY.md") == GOOD


@pytest.mark.slow
def test_lock_of_a_sigkilled_holder_is_taken_over(tmp_path: Path) -> None:
    script = tmp_path / "holder.py"
    script.write_text(HOLDER, encoding="utf-8")
    lock_path, ready = tmp_path / "x.lock", tmp_path / "ready"
    holder = _spawn(script, str(lock_path), str(ready))
    try:
        _wait_for(ready, holder)
        lock = LockFile(lock_path)
        assert not lock.acquire()
        assert lock.holder() is not None and lock.holder().pid == holder.pid  # type: ignore[union-attr]
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.communicate(timeout=30)
    assert lock_path.exists()
    lock = LockFile(lock_path)
    assert lock.acquire()
    assert lock.holder() is not None and lock.holder().pid == os.getpid()  # type: ignore[union-attr]
    assert not LockFile(lock_path).acquire()
    lock.release()
    assert LockFile(lock_path).acquire()


@pytest.mark.parametrize("use_async", [False, True])
async def test_dream_node_in_a_graph_consolidates_after_the_conversation(memory_dir: Path,
                                                                         use_async: bool) -> None:
    _seed(memory_dir)
    with MarkdownMemory(memory_dir, embeddings="none") as mem:
        graph = StateGraph(MessagesState)
        graph.add_node("dream", create_dream_node(mem, FakeListChatModel(responses=[GOOD]), min_sessions=2))
        graph.add_edge(START, "dream")
        graph.add_edge("dream", END)
        app = graph.compile()
        state_in: MessagesState = {"messages": [HumanMessage("hi")]}
        state = await app.ainvoke(state_in) if use_async else app.invoke(state_in)
        assert [m.content for m in state["messages"]] == ["hi"]
        assert mem.get("MEMORY.md") == GOOD
        assert not (memory_dir / "sessions" / "2026-07-01-a.md").exists()
