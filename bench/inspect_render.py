"""``python -m bench.inspect_render``: how long ``md-memory inspect`` takes to render its pages.

Writes a memory of ``--files`` files (:func:`bench.synthetic.write_memory`: ``MEMORY.md`` and daily logs of
five sections each) and indexes it untimed with the default config and the hashing embedder of the other
speed benchmarks (:class:`bench.synthetic.HashingEmbeddings`): a search runs its whole hybrid path, and the
figures are the page's own cost, not a model's. Then requests the home page, a search and one file
``--rounds`` times each, interleaved, in process through Starlette's ``TestClient`` (no socket, no
browser), and reports the median and the slowest in ms. The baseline, timed in the same rounds, is
``search_detailed`` of the same query called directly: the search page's median over it is what the page
adds to the search it shows.

It also counts the Markdown files each page read (the folder store's ``read_stamped``, which every read of
a file's text goes through): the home page lists every file from the index's rows (size, last change,
chunks) and reads only the session context's files (``MEMORY.md``, today's and yesterday's logs), however
large the memory. Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from bench.synthetic import HashingEmbeddings, write_memory
from langchain_md_memory import MarkdownMemory
from langchain_md_memory.files.store import MarkdownStore
from langchain_md_memory.integrations.inspect_page import create_inspect_app

__all__ = ["main", "measure"]

QUERY = "portfolio rebalance 仓位"
SECTIONS_PER_FILE = 5


@contextmanager
def _reads_counted() -> Iterator[list[str]]:
    """The paths the folder store reads text of while the block runs."""
    seen: list[str] = []
    original = MarkdownStore.read_stamped

    def counted(self: MarkdownStore, path: str, *, max_bytes: int) -> Any:
        seen.append(path)
        return original(self, path, max_bytes=max_bytes)

    MarkdownStore.read_stamped = counted  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        MarkdownStore.read_stamped = original  # type: ignore[method-assign]


def _chunks_for(files: int) -> int:
    """The chunk count that makes :func:`write_memory` write ``files`` files: ``MEMORY.md`` takes one
    chunk in a hundred (at most 200), each daily log :data:`SECTIONS_PER_FILE`."""
    logged = SECTIONS_PER_FILE * (files - 1)
    chunks = logged
    while chunks - min(200, max(1, chunks // 100)) < logged:
        chunks += 1
    return chunks


def measure(files: int, rounds: int, workdir: Path) -> dict[str, Any]:
    """Render times (ms) and files read per page for a memory of ``files`` files (``MEMORY.md``, logs)."""
    layout = write_memory(workdir / "memory", _chunks_for(files), sections_per_file=SECTIONS_PER_FILE)
    some_file = sorted(p for p in layout.files if p != "MEMORY.md")[len(layout.files) // 2]
    pages = {"home": "/", "search": f"/search?q={QUERY}", "file": f"/file/{some_file}"}
    times: dict[str, list[float]] = {name: [] for name in pages}
    baseline: list[float] = []
    reads: dict[str, int] = {}
    start = time.perf_counter()
    with MarkdownMemory(layout.root, embeddings=HashingEmbeddings()) as mem:
        stats = mem.sync()
        index_seconds = time.perf_counter() - start
        client = TestClient(create_inspect_app(mem))
        for name, url in pages.items():  # one untimed round: templates compiled, caches warm
            with _reads_counted() as seen:
                answer = client.get(url)
            assert answer.status_code == 200, (url, answer.status_code, answer.text[:300])
            reads[name] = len(seen)
        for _ in range(rounds):
            for name, url in pages.items():
                start = time.perf_counter()
                client.get(url)
                times[name].append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            mem.search_detailed(QUERY)
            baseline.append((time.perf_counter() - start) * 1000)
    return {
        "files": stats.files,
        "chunks": layout.chunks,
        "markdown_mb": round(layout.markdown_bytes / 1e6, 2),
        "index_seconds": round(index_seconds, 2),
        "rounds": rounds,
        "pages": {name: {"url": pages[name], "median_ms": round(statistics.median(ms), 1),
                         "max_ms": round(max(ms), 1), "files_read": reads[name]}
                  for name, ms in times.items()},
        "search_detailed_median_ms": round(statistics.median(baseline), 1),
        "search_page_over_search_detailed": round(statistics.median(times["search"])
                                                  / statistics.median(baseline), 2),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Run the measurement and print a table (``--json FILE``: also the figures as JSON)."""
    parser = argparse.ArgumentParser(prog="python -m bench.inspect_render", description=__doc__)
    parser.add_argument("--files", type=int, default=2000, help="files in the memory (default 2000)")
    parser.add_argument("--rounds", type=int, default=15, help="requests of each page (default 15)")
    parser.add_argument("--workdir", type=Path, default=None, help="where to write the memory (default: tmp)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures to this file")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        result = measure(args.files, args.rounds, args.workdir or Path(tmp))
    print(f"{result['files']} files, {result['chunks']} chunks, {result['markdown_mb']} MB of Markdown "
          f"(indexed in {result['index_seconds']} s, hashing embedder); {result['rounds']} rounds")
    print(f"{'page':<8} {'median ms':>10} {'max ms':>8} {'files read':>11}")
    for name, page in result["pages"].items():
        print(f"{name:<8} {page['median_ms']:>10} {page['max_ms']:>8} {page['files_read']:>11}")
    print(f"search_detailed alone: median {result['search_detailed_median_ms']} ms; the search page is "
          f"{result['search_page_over_search_detailed']}x that")
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
