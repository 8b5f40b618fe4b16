"""A build with the bundled local model against its floor: the model embedding the same texts alone.

``python -m bench.build_model [--chunks N] [--rounds R]`` writes a synthetic memory
(``bench.synthetic``), then in each round, in turn first: builds it from scratch
with ``MarkdownMemory(folder, embeddings="local")`` (default config: chunking,
keyword index, embedding cache, vector writes and the model), and embeds exactly
the texts that build sent to the model, in batches of ``embedding_batch_size``,
with nothing else (the floor). The model is loaded once before the first round.
Prints a Markdown table and the medians as JSON.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from langchain_md_memory import MarkdownMemory, MemoryConfig
from langchain_md_memory.embeddings.local import LocalEmbeddings
from langchain_md_memory.sync.embedding import embed_text

from .synthetic import write_memory


def _build(source: Path, work: Path) -> tuple[float, list[str]]:
    folder = work / "memory"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(source, folder)
    started = time.perf_counter()
    with MarkdownMemory(folder, embeddings="local") as mem:
        mem.sync()
        status = mem.status()
        seconds = time.perf_counter() - started
        rows = mem.index.read("SELECT DISTINCT heading, text, context FROM chunks")  # type: ignore[attr-defined]
    if status["embedded"] != status["chunks"]:
        raise RuntimeError(f"{status['chunks'] - status['embedded']} chunks left without a vector")
    return seconds, [embed_text(*row) for row in rows]


def _floor(model: LocalEmbeddings, texts: list[str], batch: int) -> float:
    started = time.perf_counter()
    for start in range(0, len(texts), batch):
        model.embed_documents(texts[start : start + batch])
    return time.perf_counter() - started


def main(argv: Sequence[str] | None = None) -> int:
    """Run the rounds; print the table and the medians."""
    p = argparse.ArgumentParser(prog="python -m bench.build_model", description=__doc__.split("\n\n")[0])
    p.add_argument("--chunks", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args(argv)
    model = LocalEmbeddings()
    model.embed_documents(["warm-up"])  # the weights load once per process, outside both timings
    batch = MemoryConfig().embedding.batch_size
    builds: list[float] = []
    floors: list[float] = []
    with tempfile.TemporaryDirectory(prefix="bench-build-model-") as tmp:
        work = Path(tmp)
        source = work / "source"
        write_memory(source, args.chunks)
        texts: list[str] = []
        for round_ in range(args.rounds):
            if round_ % 2:
                floors.append(_floor(model, texts, batch) if texts else 0.0)
            seconds, texts = _build(source, work)
            builds.append(seconds)
            if not round_ % 2:
                floors.append(_floor(model, texts, batch))
            print(f"round {round_ + 1}: build {builds[-1]:.1f} s, floor {floors[-1]:.1f} s", file=sys.stderr)
    build, floor = statistics.median(builds), statistics.median(floors)
    print("| chunks | texts embedded | build (s) | model alone (s) | build / floor |")
    print("| --- | --- | --- | --- | --- |")
    print(f"| {args.chunks} | {len(texts)} | {build:.1f} | {floor:.1f} | {build / floor:.2f}× |")
    print(json.dumps({"chunks": args.chunks, "texts": len(texts), "build_s": build, "floor_s": floor,
                      "ratio": build / floor, "rounds": args.rounds}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
