"""``python -m bench.hostile``: what a hostile size costs the next search, default config.

A 200 MB Markdown file dropped into a memory used to make the next search read, chunk and
index all of it (762 s and 2.2 GB for 211 MB). With ``max_file_bytes`` the sync stats it,
leaves it out and says so in ``status()``. Reported against the same memory's search before
the file arrived, in one run.

``python -m bench.hostile --queries``: what a pasted document costs as a query (issue 39), with
the bundled model, through ``search`` and the ``memory_search`` tool: 2,000, 20,000 and 400,000
characters, each as a ratio to the 2,000-character query in the same run (must: 20k ≤ 2×,
400k ≤ 4×). Before the bound, the model encoded the whole text in 512-token windows.
"""

from __future__ import annotations

import argparse
import functools
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from langchain_md_memory import MarkdownMemory, create_memory_tools

QUERY_SIZES = (2_000, 20_000, 400_000)
_WORDS = ["portfolio", "rebalancing", "bond", "ladder", "retirement", "account", "dividend", "harvest",
          "index", "fund", "allocation", "equity", "tolerance", "mortgage", "budget", "savings", "goal",
          "quarterly", "review", "meeting", "agenda", "minutes", "plan", "travel", "itinerary", "Kyoto",
          "hotel", "dinner", "reservation", "sourdough", "garden", "project", "deadline"]


def _timed(fn: object) -> float:
    started = time.perf_counter()
    fn()  # type: ignore[operator]
    return time.perf_counter() - started


def pasted(chars: int, seed: int = 7) -> str:
    """A document-like text of ``chars`` characters: sentences of everyday words and numbers."""
    rng = random.Random(seed)
    out: list[str] = []
    size = 0
    while size < chars:
        sentence = " ".join(rng.choice(_WORDS) + (str(rng.randint(0, 999)) if rng.random() < 0.2 else "")
                            for _ in range(rng.randint(6, 16))).capitalize() + ". "
        out.append(sentence)
        size += len(sentence)
    return "".join(out)[:chars]


def query_costs(repeats: int, sizes: Sequence[int] = QUERY_SIZES) -> int:
    """Median seconds per query size through the API and the tool, and the ratios to the first size."""
    with tempfile.TemporaryDirectory() as tmp, MarkdownMemory(tmp, embeddings="local") as mem:
        mem.append("- Rebalances the bond ladder every spring")
        mem.append("- Feeds the sourdough starter every Sunday")
        tool = next(t for t in create_memory_tools(mem) if t.name == "memory_search")
        mem.search("warm-up")  # the model loads and the index builds outside the timings
        queries = {n: pasted(n) for n in sizes}
        surfaces: dict[str, Callable[[str], object]] = {
            "search()": mem.search, "memory_search tool": lambda q: tool.invoke({"query": q})}
        for name, run in surfaces.items():
            times = {}
            for n, query in queries.items():
                times[n] = statistics.median(_timed(functools.partial(run, query)) for _ in range(repeats))
            base = times[sizes[0]]
            for n in sizes:
                print(f"{name:20} {n:>8,} chars: {times[n] * 1000:8.1f} ms  ({times[n] / base:.2f}x)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--megabytes", type=int, default=200)
    parser.add_argument("--queries", action="store_true", help="time pasted documents as queries instead")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sizes", default=",".join(map(str, QUERY_SIZES)),
                        help="with --queries: query sizes in characters (default %(default)s)")
    args = parser.parse_args(argv)
    if args.queries:
        return query_costs(args.repeats, [int(n) for n in args.sizes.split(",")])
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "memory"
        root.mkdir()
        for i in range(200):
            (root / f"topic-{i:03d}.md").write_text(f"# Topic {i}\n\n- fact {i}: bond ladder rung {i}\n")
        with MarkdownMemory(root, embeddings="none") as mem:
            mem.search("bond ladder")
            before = statistics.median(_timed(lambda: mem.search("bond ladder")) for _ in range(20))
            line = "- a very long hostile note that nobody should have to index " * 16 + "\n"
            with (root / "dump.md").open("w") as handle:
                for _ in range(args.megabytes * 1024 * 1024 // len(line)):
                    handle.write(line)
            after = _timed(lambda: mem.search("bond ladder"))
            skipped = mem.status()["skipped_files"]
    print(f"search p50 before: {before * 1000:.1f} ms")
    print(f"first search after a {args.megabytes} MB file: {after * 1000:.1f} ms ({after / before:.1f}x)")
    print(f"skipped: {skipped}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
