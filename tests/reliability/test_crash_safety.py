"""SIGKILL a writer at random points: the Markdown is always a whole old or new version.

A fork server (``writer_proc.py``) forks a writer that loops rewriting
``notes.md``, appending facts to ``MEMORY.md``, editing ``counter.md`` and
syncing the index, all through the facade. The test kills it with SIGKILL
after a random delay, checks every file byte for byte, and after a restart
``verify()`` must find (or make) the index consistent and search must find
the last committed content.
"""

from __future__ import annotations

import logging
import os
import queue
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from langchain_md_memory import MarkdownMemory
from langchain_md_memory.files.store import MarkdownStore
from tests.reliability.writer_proc import counter_text, fact_line, version_text

HERE = Path(__file__).parent
KILLS = 60
VERIFY_EVERY = 4
SEED = 20260714

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the writer fork server needs os.fork")


class _Server:
    """The fork server and a thread reading its stdout into a queue."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "writer_proc.py")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.strip())

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def next_line(self, timeout: float = 30.0) -> str:
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError("the writer server went silent") from None

    def close(self) -> None:
        if self.proc.poll() is None:
            self.send("quit")
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def _check_files(root: Path, committed: dict[str, int], appended: list[int]) -> dict[str, int]:
    """Assert every file is a whole version consistent with what was committed; returns what is there."""
    notes = (root / "notes.md").read_bytes().decode("utf-8")
    match = re.match(r"# notes version (\d+)\n", notes)
    assert match, f"notes.md lost its header: {notes[:80]!r}"
    version = int(match[1])
    assert notes == version_text(version), f"notes.md is not a complete version {version}"
    # A kill between os.replace and the "w" line leaves one version more than acknowledged.
    assert committed["w"] <= version <= committed["w"] + 1

    memory = (root / "MEMORY.md").read_text("utf-8")
    assert memory.endswith("\n"), "MEMORY.md ends mid-line"
    facts = []
    for line in memory.splitlines():
        m = re.fullmatch(r"- fact (\d+): remember token fact\d+tok for good", line)
        assert m and line == fact_line(int(m[1])), f"torn line in MEMORY.md: {line!r}"
        facts.append(int(m[1]))
    assert facts == sorted(set(facts)), "facts duplicated or out of order"
    assert set(appended) <= set(facts), f"acknowledged appends lost: {sorted(set(appended) - set(facts))}"

    counter = (root / "counter.md").read_text("utf-8")
    value = int(re.search(r"counter value: (\d+)", counter)[1])  # type: ignore[index]
    assert counter == counter_text(value)
    assert committed["e"] <= value <= committed["e"] + 1
    return {"version": version, "last_fact": facts[-1] if facts else 0, "counter": value}


def test_sigkill_at_random_points_leaves_whole_files_and_a_repairable_index(
    memory_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    rng = random.Random(SEED)
    caplog.set_level(logging.WARNING)
    server = _Server()
    committed = {"w": 0, "a": 0, "e": 0, "s": 0}
    appended: list[int] = []
    tally: Counter[str] = Counter()
    try:
        for iteration in range(KILLS):
            server.send(f"run {memory_dir}")
            first = server.next_line()
            assert first.startswith("pid "), first
            pid = int(first.split()[1])
            assert server.next_line() == "ready"
            time.sleep(rng.uniform(0.0, 0.3))
            os.kill(pid, signal.SIGKILL)
            last = "ready"
            while True:
                line = server.next_line()
                assert not line.startswith("error"), f"the writer failed on its own: {line}"
                if line.startswith(f"exit {pid} "):
                    status = int(line.split()[2])
                    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
                    break
                kind, value = line.split()
                committed[kind] = max(committed[kind], int(value))
                if kind == "a":
                    appended.append(int(value))
                last = kind
            tally[f"killed_after_{last}"] += 1
            state = _check_files(memory_dir, committed, appended)
            if state["version"] > committed["w"]:
                tally["killed_between_replace_and_ack"] += 1

            managed = MarkdownStore(memory_dir).list_files()
            assert managed == ["MEMORY.md", "counter.md", "notes.md"]
            tally["temp_files_left"] = sum(1 for p in memory_dir.iterdir() if p.name.endswith(".tmp"))

            if iteration % VERIFY_EVERY == VERIFY_EVERY - 1 or iteration == KILLS - 1:
                with MarkdownMemory(memory_dir, embeddings="none") as mem:
                    report = mem.verify()
                    assert report.ok, report
                    tally["verify_consistent" if report.consistent else "verify_repaired"] += 1
                    assert mem.verify(repair=False).consistent
                    marker = f"ver{state['version']}x"
                    hit = mem.search(marker)[0]
                    assert hit.path == "notes.md" and marker in hit.text
                    if state["last_fact"]:
                        token = f"fact{state['last_fact']}tok"
                        hit = mem.search(token)[0]
                        assert hit.path == "MEMORY.md" and token in hit.text
    finally:
        server.close()
    # Counts for the suite's closing table (visible with -s or in the junit properties).
    print(f"\ncrash-safety: {KILLS} kills, committed {committed}, appends {len(appended)}, {dict(tally)}")
    assert len(appended) >= KILLS // 2, "the writer barely ran: the kills tested nothing"
