"""``python -m bench.freshness``: what a search pays to notice edits made outside the package.

Before each search the memory checks whether any Markdown file changed behind its back. This
measures that check on a memory that changed nothing (the common case), and a whole keyword search
with it, with the default config, on a memory of ``--files`` files of six paragraphs each:

- no watcher: the check walks the folder;
- a healthy watcher (``watch=True``): the check trusts it;
- ``--against DIR``: the same two numbers for another checkout of the package (e.g. the commit
  before), run in the same rounds, alternating, so load from other processes hits both alike.

Each variant runs in its own process (``python -S`` with the checkout, then this environment's
site-packages, on ``PYTHONPATH``). Median of the per-round medians; nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from .checkout_worker import run_worker

__all__ = ["main", "write_memory"]

REPO = Path(__file__).resolve().parents[1]

_WORKER = r"""
import json, statistics, sys, time
from langchain_md_memory import MarkdownMemory
folder, watch, repeats = sys.argv[1], sys.argv[2] == "1", int(sys.argv[3])
with MarkdownMemory(folder, embeddings="none", watch=watch) as mem:
    mem.search("bond ladder")  # the first search syncs; later ones only check
    checks, searches = [], []
    for _ in range(repeats):
        t = time.perf_counter(); mem._indexer.sync_if_needed(); checks.append(time.perf_counter() - t)
        t = time.perf_counter(); mem.search("bond ladder rebalance"); searches.append(time.perf_counter() - t)
import langchain_md_memory
print(json.dumps({"check_ms": statistics.median(checks) * 1000,
                  "search_ms": statistics.median(searches) * 1000, "package": langchain_md_memory.__file__}))
"""


def write_memory(root: Path, files: int) -> None:
    """``files`` dated logs and topic files under a few folders, six short paragraphs each."""
    words = ["bond", "ladder", "retire", "pension", "cash", "buffer", "position", "portfolio", "rebalance",
             "quarterly", "decision"]
    for i in range(files):
        folder = root / ("sessions" if i % 5 == 0 else f"topics/{i % 40:02d}")
        folder.mkdir(parents=True, exist_ok=True)
        paragraphs = [" ".join(words[(i + j + k) % len(words)] for k in range(9)) for j in range(6)]
        (folder / f"note-{i:05d}.md").write_text(f"# Note {i}\n\n" + "\n\n".join(paragraphs) + "\n")


def _run(checkout: Path, folder: Path, watch: bool, repeats: int) -> dict[str, float]:
    return run_worker(checkout, _WORKER, [str(folder), "1" if watch else "0", str(repeats)], folder.parent)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the rounds and print one table (Markdown)."""
    p = argparse.ArgumentParser(prog="python -m bench.freshness", description=__doc__.split("\n\n")[0])
    p.add_argument("--files", type=int, default=2500)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--repeats", type=int, default=30, help="checks and searches per process")
    p.add_argument("--against", type=Path, help="another checkout of the package to compare with")
    args = p.parse_args(argv)
    variants: list[tuple[str, Path, bool]] = [("this checkout, no watcher", REPO, False),
                                              ("this checkout, healthy watcher", REPO, True)]
    if args.against is not None:
        variants += [("--against, no watcher", args.against, False),
                     ("--against, healthy watcher", args.against, True)]
    results: dict[str, list[dict[str, float]]] = {name: [] for name, _, _ in variants}
    with tempfile.TemporaryDirectory(prefix="bench-freshness-") as tmp:
        for _, checkout, _ in variants:  # one memory per checkout: index formats may differ
            folder = Path(tmp) / str(abs(hash(str(checkout))))
            if not folder.exists():
                write_memory(folder, args.files)
        for _ in range(args.rounds):
            for name, checkout, watch in variants:
                folder = Path(tmp) / str(abs(hash(str(checkout))))
                results[name].append(_run(checkout, folder, watch, args.repeats))
    print(f"{args.files} files × 6 paragraphs, default config, keyword-only; median of {args.rounds} rounds "
          f"× {args.repeats} checks and searches each\n")
    print("| variant | check (ms) | search incl. check (ms) |\n| --- | --- | --- |")
    for name, rows in results.items():
        check = statistics.median(r["check_ms"] for r in rows)
        search = statistics.median(r["search_ms"] for r in rows)
        print(f"| {name} | {check:.2f} | {search:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
