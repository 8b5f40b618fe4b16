"""``python -m bench.asof_cost``: the first as-of search against an ordinary search, bundled model.

A memory of 100 topic files, each with live facts and 20 struck History lines (2,000 in all) is
built once. Each round opens the memory afresh (no reads kept from an earlier round), warms it up
with an ordinary search of another question (the model loaded, the vectors read), then times in
turn, order alternating between rounds: an ordinary search of a question, and the first as-of
search of the memory (the same question, ``as_of`` a day in the middle of the History). Reported:
the median of each and their ratio, and the model calls the as-of search made (must be none: the
struck lines were embedded when their files were indexed).
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_md_memory import MarkdownMemory

FILES = 100
STRUCK_PER_FILE = 20
_SUBJECTS = ["rent", "salary", "gym membership", "phone plan", "car insurance", "dentist", "bond ladder",
             "savings goal", "coffee order", "flight seat", "book club", "piano lesson", "garden plot"]


def build(root: Path, files: int = FILES, seed: int = 7) -> None:
    """The memory: each file's live facts, then its struck lines, each written and superseded on a day."""
    rng = random.Random(seed)
    start = dt.date(2024, 1, 1)
    for n in range(files):
        subject = _SUBJECTS[n % len(_SUBJECTS)]
        live = [f"- {subject} {n}: the current value is {rng.randint(10, 9999)}" for _ in range(5)]
        struck = []
        for _ in range(STRUCK_PER_FILE):
            written = start + dt.timedelta(days=rng.randint(0, 600))
            until = written + dt.timedelta(days=rng.randint(1, 200))
            struck.append(f"- ~~{subject} {n} was {rng.randint(10, 9999)} {rng.choice(_SUBJECTS)}~~ "
                          f"(superseded {until.isoformat()}) <!-- src: via=bench {written.isoformat()} -->")
        text = "\n".join([f"# {subject.title()} {n}", "", *live, "", "## History", *struck]) + "\n"
        (root / f"topic-{n:03d}.md").write_text(text, encoding="utf-8")


class _Counted:
    """Counts the texts a memory's embedder is asked to embed as documents (queries go elsewhere)."""

    def __init__(self, mem: MarkdownMemory) -> None:
        client = mem.embedder
        assert client is not None
        self.texts = 0
        embed = client.embed_documents

        def counted(texts: Sequence[str]) -> Any:
            self.texts += len(texts)
            return embed(texts)

        client.embed_documents = counted  # type: ignore[method-assign]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--files", type=int, default=FILES,
                        help=f"topic files of {STRUCK_PER_FILE} struck lines each (default %(default)s)")
    args = parser.parse_args(argv)
    day = dt.date(2024, 12, 1)
    question = "what was the gym membership price?"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "memory"
        root.mkdir()
        build(root, args.files)
        with MarkdownMemory(root, embeddings="local") as mem:
            started = time.perf_counter()
            stats = mem.sync()
            print(f"build: {time.perf_counter() - started:.1f} s, {stats.chunks_added} chunks, "
                  f"{stats.embedded} texts embedded")
        plain: list[float] = []
        as_of: list[float] = []
        calls: list[int] = []
        for round_ in range(args.rounds):
            with MarkdownMemory(root, embeddings="local") as mem:
                mem.search("which phone plan do I have")  # warm-up: model and vectors loaded
                counter = _Counted(mem)

                def ordinary(mem: MarkdownMemory = mem) -> float:
                    started = time.perf_counter()
                    mem.search(question)
                    return time.perf_counter() - started

                def first_as_of(mem: MarkdownMemory = mem, counter: _Counted = counter) -> float:
                    before = counter.texts
                    started = time.perf_counter()
                    hits = mem.search(question, as_of=day)
                    took = time.perf_counter() - started
                    calls.append(counter.texts - before)
                    assert any(hit.valid_until for hit in hits), "no past fact in the as-of answer"
                    return took

                if round_ % 2:
                    as_of.append(first_as_of())
                    plain.append(ordinary())
                else:
                    plain.append(ordinary())
                    as_of.append(first_as_of())
    a, b = statistics.median(plain), statistics.median(as_of)
    print(f"ordinary search p50: {a * 1000:.1f} ms; first as-of search p50: {b * 1000:.1f} ms "
          f"({b / a:.2f}x, goal <= 2x); {args.rounds} rounds")
    print(f"the very first as-of search (round 1): {as_of[0] * 1000:.1f} ms ({as_of[0] / a:.2f}x)")
    print(f"texts embedded during the as-of searches: {sum(calls)} (must be 0)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
