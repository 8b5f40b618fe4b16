"""Many hosts appending to one tenant's MEMORY.md at once through PostgreSQL: nothing lost, all found."""

from __future__ import annotations

import multiprocessing
import queue

import pytest

from langchain_md_memory import MarkdownMemory
from tests.postgres import appender_proc

PROCESSES, APPENDS = 4, 100  # x 2 threads each


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_appends_from_four_processes_all_land_once_and_each_is_found_at_once(pg_url: str, tenant: str):
    ctx = multiprocessing.get_context("spawn")
    requests, results = ctx.Queue(), ctx.Queue()
    replies = [ctx.Queue() for _ in range(2 * PROCESSES)]
    workers = [ctx.Process(target=appender_proc.run,
                           args=(pg_url, tenant, p, APPENDS, requests, replies[2 * p : 2 * p + 2], results))
               for p in range(PROCESSES)]
    for w in workers:
        w.start()
    searched = 0
    with MarkdownMemory.from_postgres(pg_url, tenant=tenant, embeddings="none") as searcher:
        try:
            # Answer each "just appended" with a search of this process's own memory.
            while searched < 2 * PROCESSES * APPENDS:
                try:
                    slot, word = requests.get(timeout=5)
                except queue.Empty:
                    if not any(w.is_alive() for w in workers):
                        break
                    continue
                hits = searcher.search(word)
                replies[slot].put(any(word in hit.text for hit in hits))
                searched += 1
            reports = [results.get(timeout=60) for _ in workers]
        finally:
            for w in workers:
                w.join(timeout=60)
                if w.is_alive():  # pragma: no cover - only after a failure above
                    w.kill()
        text = searcher.get("MEMORY.md")

    assert [errors for _, _, errors in reports if errors] == []
    assert [missed for _, missed, _ in reports if missed] == []
    assert searched == 2 * PROCESSES * APPENDS
    lines = text.splitlines()
    expected = [appender_proc.line(p, t, n)
                for p in range(PROCESSES) for t in range(2) for n in range(APPENDS)]
    assert sorted(lines) == sorted(expected)  # every line present, exactly once, nothing else
