"""A writer process for the PostgreSQL concurrency test (started with multiprocessing's spawn).

Two threads append lines to one tenant's MEMORY.md through their own memory. After each append
returns, the thread asks the test process (another process, another memory) to search for the
line's unique word and waits for the answer before the next append: the line must be found.
"""

from __future__ import annotations

import threading
from typing import Any

from langchain_md_memory import MarkdownMemory


def line(process: int, thread: int, n: int) -> str:
    """The ``n``-th line of one writer thread, with a word found nowhere else."""
    return f"- p{process} t{thread} n{n} zq{process}x{thread}y{n}"


def word(process: int, thread: int, n: int) -> str:
    """The unique word of :func:`line`."""
    return f"zq{process}x{thread}y{n}"


def run(url: str, tenant: str, process: int, appends: int, requests: Any, replies: list[Any],
        results: Any) -> None:
    """Append ``appends`` lines from each of two threads; report the lines the searcher missed."""
    missed: list[str] = []
    errors: list[str] = []
    with MarkdownMemory.from_postgres(url, tenant=tenant, embeddings="none") as mem:

        def writer(thread: int) -> None:
            try:
                for n in range(appends):
                    mem.append(line(process, thread, n))
                    requests.put((2 * process + thread, word(process, thread, n)))
                    if not replies[thread].get(timeout=60):
                        missed.append(line(process, thread, n))
            except BaseException as exc:  # reported to the test
                errors.append(f"{type(exc).__name__}: {exc}")

        threads = [threading.Thread(target=writer, args=(t,)) for t in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    results.put((process, missed, errors))
