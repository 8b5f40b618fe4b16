"""``python -m bench.quality.small_memory``: the confidence label on a memory of a few notes.

Every newcomer starts with a small memory, where the vector path has no background to measure a
cosine against (fewer than ``MIN_BACKGROUND`` vectors in a script group). This harness cuts the dev
memory to 5, 10 and 20 notes (chunks): for each size, ``--draws`` seeded draws of whole dev files whose
chunks add up to that size. Each draw is indexed once, and every dev question is asked of it under
each config:

- **answerable**: each gold group has a place in the kept files (the gold is cut to those places);
- **no-answer**: the dev set's own questions whose answer is stored nowhere;
- **answer cut**: questions none of whose gold is kept: nothing in this memory answers them (the
  ``superseded`` and ``near-duplicate`` categories are left out: their subject is stated in another
  file on purpose). Questions with some gold groups kept and others cut are not asked.

Reported per size and config, over all draws: R@5 and gold top-1 confident (answerable), and the
share of no-answer and answer-cut questions with no hit labelled confident (the metrics of
:mod:`.metrics`, as ``python -m bench.quality`` computes them).

Example:
    .. code-block:: bash

        python -m bench.quality.small_memory                      # local model, 5/10/20 notes, 10 draws each
        python -m bench.quality.small_memory --sizes 5 --draws 2 --configs default
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from langchain_md_memory.files.chunker import chunk_markdown

from .configs import ConfigSpec, resolve_configs
from .dataset import MemorySet, Query
from .devset import load_dev
from .embedder import QueryCachedEmbeddings, make_embeddings
from .metrics import Outcome, Summary, summarise
from .run import build, evaluate

__all__ = ["SIZES", "cut_memory", "draw_files", "main", "run"]

SIZES = (5, 10, 20)
"""Notes (chunks) in each cut memory."""
CUT_SKIPPED = ("superseded", "near-duplicate")
"""Categories whose subject another file states on purpose: a cut gold leaves them answered elsewhere."""
ANSWER_CUT = "answer-cut"


def draw_files(chunks: Mapping[str, int], size: int, seed: str) -> list[str]:
    """Files of ``chunks`` (path → its chunk count) in a seeded random order, each taken while it fits,
    until their chunks add up to ``size`` (or no file fits)."""
    order = sorted(chunks)
    random.Random(seed).shuffle(order)
    picked, left = [], size
    for path in order:
        if 0 < chunks[path] <= left:
            picked.append(path)
            left -= chunks[path]
        if left == 0:
            break
    return sorted(picked)


def cut_memory(dev: MemorySet, files: Sequence[str], name: str) -> MemorySet:
    """``dev`` holding only ``files``, with its questions sorted as the module docstring says."""
    kept = set(files)
    queries: list[Query] = []
    for q in dev.queries:
        if not q.gold:
            queries.append(q)
            continue
        groups = [tuple(ref for ref in group if ref.path in kept) for group in q.gold]
        if all(groups):
            queries.append(replace(q, gold=tuple(groups)))
        elif not any(groups) and q.category not in CUT_SKIPPED:
            queries.append(replace(q, gold=(), category=ANSWER_CUT))
    return MemorySet(name, {path: dev.documents[path] for path in files}, queries)


def _row(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    answerable = summarise(o for o in outcomes if o.answerable)
    stored_none = summarise(o for o in outcomes if not o.answerable and o.category != ANSWER_CUT)
    cut = summarise(o for o in outcomes if o.category == ANSWER_CUT)
    return {"answerable": asdict(answerable), "no_answer": asdict(stored_none), "answer_cut": asdict(cut)}


def run(embeddings: QueryCachedEmbeddings | None, workdir: Path, specs: Sequence[ConfigSpec],
        sizes: Sequence[int] = SIZES, draws: int = 10) -> dict[str, Any]:
    """Every size × draw × config; the figures per size and config, and the memories' mean chunk count."""
    dev = load_dev()
    chunks = {path: len(chunk_markdown(text)) for path, text in dev.documents.items()}
    runnable = [s for s in specs if s.skipped is None]
    result: dict[str, Any] = {"sizes": {}}
    for size in sizes:
        outcomes: dict[str, list[Outcome]] = {spec.name: [] for spec in runnable}
        built: list[int] = []
        for draw in range(draws):
            mset = cut_memory(dev, draw_files(chunks, size, f"{size}-{draw}"), f"{size}-{draw}")
            folder = workdir / "small" / mset.name
            built.append(int(build(folder, mset, embeddings)["chunks"]))
            for spec in runnable:
                outcomes[spec.name] += evaluate(folder, mset.queries, spec, embeddings)
        result["sizes"][str(size)] = {"chunks": sum(built) / len(built), "draws": draws,
                                      "configs": {name: _row(outs) for name, outs in outcomes.items()}}
        print(f"{size} notes: {draws} draws done", file=sys.stderr, flush=True)
    return result


def _share(summary: Mapping[str, Any], key: str, count: str) -> str:
    value = summary[key]
    return "-" if value is None else f"{value:.3f} ({summary[count]})"


def table(result: Mapping[str, Any]) -> str:
    """The figures as the Markdown table of ``bench/QUALITY.md``."""
    lines = ["| notes (mean chunks) | config | R@5 (answerable) | gold top-1 confident | "
             "no-answer not confident (n) | answer cut, not confident (n) |",
             "| --- | --- | --- | --- | --- | --- |"]
    for size, per in result["sizes"].items():
        for name, row in per["configs"].items():
            ans = Summary(**row["answerable"])
            r5 = "-" if ans.r5 is None else f"{ans.r5:.3f} ({ans.answerable})"
            gold = "-" if ans.gold_top_confident is None else f"{ans.gold_top_confident:.3f}"
            lines.append(f"| {size} ({per['chunks']:.1f}) | {name} | {r5} | {gold} | "
                         f"{_share(row['no_answer'], 'no_answer_rate', 'no_answer')} | "
                         f"{_share(row['answer_cut'], 'no_answer_rate', 'no_answer')} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the harness; print the table (and the JSON with ``--json``)."""
    parser = argparse.ArgumentParser(prog="python -m bench.quality.small_memory",
                                     description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--embeddings", default="local", help="as python -m bench.quality (default: local)")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)),
                        help="notes per memory (default: %(default)s)")
    parser.add_argument("--draws", type=int, default=10,
                        help="memories drawn per size (default: %(default)s)")
    parser.add_argument("--configs", default="default,keyword-only",
                        help="built-in configs of python -m bench.quality (default: %(default)s)")
    parser.add_argument("--config", metavar="NAME=JSON", action="append", default=[],
                        help="add a config, as python -m bench.quality")
    parser.add_argument("--workdir", type=Path, help="where the memories are built (default: a temp folder)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write every number as JSON")
    args = parser.parse_args(argv)
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
        specs = resolve_configs([n.strip() for n in args.configs.split(",") if n.strip()], args.config)
    except ValueError as exc:
        parser.error(str(exc))
    if args.draws < 1 or not sizes or min(sizes) < 1:
        parser.error("--draws and every --sizes value must be at least 1")
    embeddings = make_embeddings(args.embeddings)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="md-memory-small-") as tmp:
        result = run(embeddings, args.workdir or Path(tmp), specs, sizes, args.draws)
    result["embeddings"] = args.embeddings if embeddings is None else embeddings.model
    result["seconds"] = round(time.perf_counter() - started, 1)
    print(table(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
