"""``python -m bench.build_cpu``: the CPU a build costs when embedding is free, against another checkout.

A build (``mem.sync()`` of freshly written Markdown) is bound by the embedding model when there is
one; what is left is the package's own work: reading, chunking, keyword terms, hashing, SQLite
writes, the embedding cache. This measures that work alone, in process CPU seconds
(``time.process_time``, all threads), with two embedders:

- ``free``: a stand-in that costs nothing (each text gets one of 1,024 fixed unit vectors, chosen by
  CRC32), so the vector path (cache, vector writes, validation) is measured without a model;
- ``none``: keyword-only (``embeddings="none"``), no vector path at all.

and, in the same process, the two steps issue 14 names: chunking (``chunk_markdown`` over every file)
and term extraction (``index_terms`` of every chunk, as the indexer calls it), each the fastest of
three passes.

``--against DIR`` runs the same for another checkout of the package (e.g. the commit before), in the
same rounds, alternating, so load from other processes hits both alike. Each variant runs in its own
process (``python -S`` with the checkout, then this environment's site-packages, on ``PYTHONPATH``)
on its own copy of one synthetic memory (:func:`bench.synthetic.write_memory`). Median over rounds;
nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from .checkout_worker import run_worker
from .synthetic import write_memory

__all__ = ["main"]

REPO = Path(__file__).resolve().parents[1]

_WORKER = r"""
import json, sys, time, zlib
import numpy as np
from langchain_core.embeddings import Embeddings
from langchain_md_memory import MarkdownMemory
from langchain_md_memory.files.facts import strip_annotations
from langchain_md_memory.files.chunker import chunk_markdown
from langchain_md_memory.text import index_terms

_ROWS = np.random.default_rng(1).standard_normal((1024, 384)).astype(np.float32)
_ROWS = (_ROWS / np.linalg.norm(_ROWS, axis=1, keepdims=True)).tolist()

class FreeEmbeddings(Embeddings):
    model = "free-384"
    def embed_documents(self, texts):
        return [_ROWS[zlib.crc32(t.encode("utf-8", "surrogatepass")) & 1023] for t in texts]
    def embed_query(self, text):
        return _ROWS[zlib.crc32(text.encode("utf-8", "surrogatepass")) & 1023]

folder, embedder = sys.argv[1], sys.argv[2]
with MarkdownMemory(folder, embeddings=FreeEmbeddings() if embedder == "free" else "none") as mem:
    cpu, wall = time.process_time(), time.perf_counter()
    stats = mem.sync()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    chunks = mem.index.count_chunks()[0]
texts = [mem.store.read_bytes(p).decode("utf-8") for p in sorted(mem.store.scan())]
pieces = [chunk_markdown(text) for text in texts]
cut = [c for found in pieces for c in found]

def fastest(step):  # best of three passes: the code's speed, not the machine's worst moment
    best = float("inf")
    for _ in range(3):
        t = time.process_time()
        step()
        best = min(best, time.process_time() - t)
    return best

chunk_s = fastest(lambda: [chunk_markdown(text) for text in texts])

def terms():
    for c in cut:
        visible = strip_annotations(c.text)
        index_terms(f"{c.heading}\n{visible}" if c.heading else visible)

terms_s = fastest(terms)
import langchain_md_memory
print(json.dumps({"build_cpu_s": cpu, "build_wall_s": wall, "chunks": chunks, "embedded": stats.embedded,
                  "chunk_cpu_s": chunk_s, "terms_cpu_s": terms_s, "package": langchain_md_memory.__file__}))
"""


def _run(checkout: Path, markdown: Path, work: Path, embedder: str) -> dict[str, float]:
    folder = work / "memory"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(markdown, folder)
    try:
        return run_worker(checkout, _WORKER, [str(folder), embedder], work)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the rounds and print one table (Markdown) plus the medians as JSON."""
    p = argparse.ArgumentParser(prog="python -m bench.build_cpu", description=__doc__.split("\n\n")[0])
    p.add_argument("--chunks", type=int, default=20_000)
    p.add_argument("--sections-per-file", type=int, default=50, help="one chunk each (5: many small files)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--against", type=Path, help="another checkout of the package to compare with")
    args = p.parse_args(argv)
    checkouts = [("this checkout", REPO)]
    if args.against is not None:
        checkouts.append(("--against", args.against.resolve()))
    variants = [(f"{name}, {emb}", path, emb) for name, path in checkouts for emb in ("free", "none")]
    results: dict[str, list[dict[str, float]]] = {name: [] for name, _, _ in variants}
    with tempfile.TemporaryDirectory(prefix="bench-build-cpu-") as tmp:
        markdown = Path(tmp) / "markdown"
        layout = write_memory(markdown, args.chunks, sections_per_file=args.sections_per_file)
        for i in range(args.rounds):
            # Alternate who goes first, so neither always meets a cold page cache.
            for name, checkout, emb in variants if i % 2 == 0 else variants[::-1]:
                results[name].append(_run(checkout, markdown, Path(tmp), emb))
    medians = {name: {key: statistics.median(r[key] for r in rows) for key in rows[0]}
               for name, rows in results.items()}
    print(f"{args.chunks:,} chunks in {len(layout.files):,} files, default config; median of {args.rounds} "
          "rounds, each variant in its own process, alternating\n")
    print("| variant | build CPU s | build wall s | chunking CPU s | terms CPU s |")
    print("| --- | --- | --- | --- | --- |")
    for name, m in medians.items():
        print(f"| {name} | {m['build_cpu_s']:.2f} | {m['build_wall_s']:.2f} | {m['chunk_cpu_s']:.3f} "
              f"| {m['terms_cpu_s']:.3f} |")
    if args.against is not None:
        print()
        for emb in ("free", "none"):
            now, before = medians[f"this checkout, {emb}"], medians[f"--against, {emb}"]
            keys = ("build_cpu_s", "chunk_cpu_s", "terms_cpu_s")
            ratios = {key: round(before[key] / now[key], 2) for key in keys}
            print(f"{emb}: before / now = {ratios}")
    print()
    print(json.dumps({"chunks": args.chunks, "files": len(layout.files), "medians": medians}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
