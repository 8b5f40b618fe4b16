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
from dataclasses import dataclass
from pathlib import Path

import pytest

from langchain_md_memory import MarkdownMemory
from langchain_md_memory.files.store import MarkdownStore
from tests.reliability.writer_proc import counter_text, fact_line, version_text

HERE = Path(__file__).parent
KILLS = 60
VERIFY_EVERY = 4
SEED = 20260714

pytestmark = [
    pytest.mark.skipif(not hasattr(os, "fork"), reason="the writer fork server needs os.fork"),
    pytest.mark.slow,
]


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


@dataclass(frozen=True)
class _Disk:
    """What the three files hold: ``None`` for a file not written yet."""

    version: int | None = None
    facts: tuple[int, ...] = ()
    counter: int | None = None

    @property
    def step(self) -> int:
        """The step a writer started now begins with (the writer reads the same files)."""
        return max([self.version or 0, *self.facts]) + 1


@dataclass(frozen=True)
class _Run:
    """What the files may hold after a killed run: ``known`` plus at most the one step in flight."""

    known: _Disk
    version_in_flight: int | None = None
    fact_in_flight: int | None = None
    counter_in_flight: int | None = None


def _expected(before: _Disk, acks: list[tuple[str, int]]) -> _Run:
    """Replay the writer's acknowledgements over the files as they were before the run.

    The writer loops write notes ``w`` → append fact ``a`` → edit counter ``e``
    → sync ``s``; the step after the last acknowledged one may or may not have
    reached the disk when the kill came (between ``os.replace`` and the
    acknowledgement), so it is allowed but not required. Whatever an earlier
    run left in flight is in ``before``, read from disk.
    """
    version, facts, counter = before.version, list(before.facts), before.counter
    if counter is None:
        counter = 0  # written before "ready", which the test waits for
    step, last = before.step, "ready"
    for kind, value in acks:
        if kind == "w":
            version, step = value, value
        elif kind == "a":
            facts.append(value)
        elif kind == "e":
            counter = value
        last = kind
    known = _Disk(version, tuple(facts), counter)
    if last == "ready":
        return _Run(known, version_in_flight=step)
    if last == "w":
        return _Run(known, fact_in_flight=step)
    if last == "a":
        return _Run(known, counter_in_flight=counter + 1)
    if last == "s":
        return _Run(known, version_in_flight=step + 1)
    return _Run(known)  # after "e" only the index sync was in flight


def _read(root: Path, name: str) -> str | None:
    path = root / name
    return path.read_text("utf-8") if path.exists() else None


def _check_files(root: Path, run: _Run) -> _Disk:
    """Assert every file is a whole version the writer wrote, with nothing acknowledged lost."""
    known = run.known
    notes = _read(root, "notes.md")
    if notes is None:
        assert known.version is None, f"notes.md vanished after version {known.version} was acknowledged"
        version = None
    else:
        match = re.match(r"# notes version (\d+)\n", notes)
        assert match, f"notes.md lost its header: {notes[:80]!r}"
        version = int(match[1])
        assert notes == version_text(version), f"notes.md is not a complete version {version}"
        assert version in {known.version, run.version_in_flight}, (
            f"notes.md is version {version}; expected {known.version} or in flight {run.version_in_flight}")

    memory = _read(root, "MEMORY.md")
    if memory is None:
        assert not known.facts, f"MEMORY.md vanished after facts {list(known.facts)} were acknowledged"
        memory = ""
    assert memory == "" or memory.endswith("\n"), "MEMORY.md ends mid-line"
    facts = []
    for line in memory.splitlines():
        m = re.fullmatch(r"- fact (\d+): remember token fact\d+tok for good", line)
        assert m and line == fact_line(int(m[1])), f"torn line in MEMORY.md: {line!r}"
        facts.append(int(m[1]))
    allowed = [list(known.facts)]
    if run.fact_in_flight is not None:
        allowed.append([*known.facts, run.fact_in_flight])
    assert facts in allowed, f"MEMORY.md has facts {facts}; allowed: {allowed}"

    counter = _read(root, "counter.md")
    assert counter is not None, "counter.md vanished"
    value = int(re.search(r"counter value: (\d+)", counter)[1])  # type: ignore[index]
    assert counter == counter_text(value)
    assert value in {known.counter, run.counter_in_flight}, (
        f"counter.md holds {value}; expected {known.counter} or in flight {run.counter_in_flight}")
    return _Disk(version, tuple(facts), value)


def test_sigkill_at_random_points_leaves_whole_files_and_a_repairable_index(
    memory_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    rng = random.Random(SEED)
    caplog.set_level(logging.WARNING)
    server = _Server()
    disk = _Disk()
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
            acks: list[tuple[str, int]] = []
            while True:
                line = server.next_line()
                assert not line.startswith("error"), f"the writer failed on its own: {line}"
                if line.startswith(f"exit {pid} "):
                    status = int(line.split()[2])
                    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
                    break
                kind, value = line.split()
                acks.append((kind, int(value)))
                if kind == "a":
                    appended.append(int(value))
            tally[f"killed_after_{acks[-1][0] if acks else 'ready'}"] += 1
            run = _expected(disk, acks)
            disk = _check_files(memory_dir, run)
            if disk != run.known:
                tally["killed_between_replace_and_ack"] += 1
            assert set(appended) <= set(disk.facts)

            managed = MarkdownStore(memory_dir).list_files()
            written = {"MEMORY.md": bool(disk.facts), "notes.md": disk.version is not None}
            written["counter.md"] = True
            assert managed == sorted(name for name, there in written.items() if there)
            tally["temp_files_left"] = sum(1 for p in memory_dir.iterdir() if p.name.endswith(".tmp"))

            if iteration % VERIFY_EVERY == VERIFY_EVERY - 1 or iteration == KILLS - 1:
                with MarkdownMemory(memory_dir, embeddings="none") as mem:
                    report = mem.verify()
                    assert report.ok, report
                    tally["verify_consistent" if report.consistent else "verify_repaired"] += 1
                    assert mem.verify(repair=False).consistent
                    if disk.version is not None:
                        marker = f"ver{disk.version}x"
                        hit = mem.search(marker)[0]
                        assert hit.path == "notes.md" and marker in hit.text
                    if disk.facts:
                        token = f"fact{disk.facts[-1]}tok"
                        hit = mem.search(token)[0]
                        assert hit.path == "MEMORY.md" and token in hit.text
    finally:
        server.close()
    # Counts for the suite's closing table (visible with -s or in the junit properties).
    print(f"\ncrash-safety: {KILLS} kills, notes version {disk.version}, {len(disk.facts)} facts on disk, "
          f"counter {disk.counter}, appends acknowledged {len(appended)}, {dict(tally)}")
    assert len(appended) >= KILLS // 2, "the writer barely ran: the kills tested nothing"
