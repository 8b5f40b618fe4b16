"""``python -m bench.hostile``: what a hostile size costs the next search, default config.

A 200 MB Markdown file dropped into a memory used to make the next search read, chunk and
index all of it (762 s and 2.2 GB for 211 MB). With ``max_file_bytes`` the sync stats it,
leaves it out and says so in ``status()``. Reported against the same memory's search before
the file arrived, in one run.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from langchain_md_memory import MarkdownMemory


def _timed(fn: object) -> float:
    started = time.perf_counter()
    fn()  # type: ignore[operator]
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--megabytes", type=int, default=200)
    args = parser.parse_args(argv)
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
