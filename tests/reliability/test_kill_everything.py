"""Writers, a session logger, dream, rebuild and a watcher on one memory, SIGKILLed together, repeatedly.

After every round: each acknowledged fact is in facts.md exactly once and in order, no line is
torn, MEMORY.md is either the seed or a whole dream, and after a reopen verify() is clean and no
temp file, rebuild copy or half-written state is left behind.
"""

from __future__ import annotations

import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from langchain_md_memory import MarkdownMemory
from tests.reliability.chaos_proc import DREAMED, fact

HERE = Path(__file__).parent
ROUNDS = 6
ROLES = ("append", "session", "dream", "rebuild", "watch")
SEED_MEMORY = "# Profile\n\n- Retire at 55\n"

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300),
              pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")]


def _round(root: Path, start: int, rng: random.Random) -> list[int]:
    command = [sys.executable, str(HERE / "chaos_proc.py")]
    procs = {role: subprocess.Popen([*command, role, str(root), str(start)], stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL, text=True, cwd=HERE.parent.parent)
             for role in ROLES}
    appender = procs["append"]
    assert appender.stdout is not None
    assert appender.stdout.readline().strip() == "ready"
    time.sleep(rng.uniform(0.3, 1.5))
    for proc in procs.values():
        proc.send_signal(signal.SIGKILL)
    said = appender.stdout.read().splitlines()
    acked = [int(m[1]) for line in said if (m := re.fullmatch(r"a (\d+)", line))]
    for proc in procs.values():
        proc.wait(30)
        if proc.stdout is not None:
            proc.stdout.close()
    return acked


def test_everything_killed_together_loses_no_acknowledged_line(memory_dir: Path) -> None:
    rng = random.Random(20261202)
    (memory_dir / "MEMORY.md").write_text(SEED_MEMORY)
    acknowledged: list[int] = []
    start = 0
    for _ in range(ROUNDS):
        acknowledged += _round(memory_dir, start, rng)
        text = (memory_dir / "facts.md").read_text() if (memory_dir / "facts.md").exists() else ""
        lines = text.splitlines()
        pattern = re.compile(r"- fact (\d+): chaos token c\1x")
        on_disk = [int(m[1]) for line in lines if (m := pattern.fullmatch(line))]
        assert len(on_disk) == len(lines), f"a torn or foreign line in facts.md: {lines[-3:]}"
        assert on_disk == sorted(set(on_disk)), "facts duplicated or out of order"
        assert set(acknowledged) <= set(on_disk), "an acknowledged fact was lost"
        assert (memory_dir / "MEMORY.md").read_text() in (SEED_MEMORY, DREAMED)
        start = (on_disk[-1] + 1) if on_disk else start
    with MarkdownMemory(memory_dir, embeddings="none") as mem:
        report = mem.verify()
        assert report.ok, report.summary()
        if acknowledged:
            assert mem.search(f"c{acknowledged[-1]}x")[0].text.count(fact(acknowledged[-1])) == 1
    leftovers = [p.name for p in memory_dir.rglob("*")
                 if p.name.endswith(".tmp") or ".rebuild-" in p.name]
    assert not leftovers, leftovers
    assert acknowledged, "the appender never got to write: the test proved nothing"
