"""Several processes appending to one memory file never lose or duplicate a line."""

from __future__ import annotations

import multiprocessing
from collections import Counter
from pathlib import Path

import pytest

from langchain_md_memory.files.store import MarkdownStore

pytestmark = pytest.mark.slow

WORKERS = 3
APPENDS = 100


def _append_many(root: str, worker: int) -> None:
    store = MarkdownStore(root)
    for i in range(APPENDS):
        store.append("MEMORY.md", f"- worker {worker} fact {i}")


def test_three_processes_appending_keep_all_300_lines(tmp_path: Path) -> None:
    store = MarkdownStore(tmp_path)
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_append_many, args=(str(tmp_path), w)) for w in range(WORKERS)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=100)
    assert [proc.exitcode for proc in procs] == [0] * WORKERS

    lines = store.read("MEMORY.md").splitlines()
    expected = {f"- worker {w} fact {i}" for w in range(WORKERS) for i in range(APPENDS)}
    counts = Counter(lines)
    assert len(lines) == WORKERS * APPENDS
    assert set(counts) == expected
    assert max(counts.values()) == 1
    # Each writer's own lines stay in the order it wrote them.
    for w in range(WORKERS):
        mine = [line for line in lines if line.startswith(f"- worker {w} ")]
        assert mine == [f"- worker {w} fact {i}" for i in range(APPENDS)]
    assert not list(tmp_path.glob(".*.tmp"))
