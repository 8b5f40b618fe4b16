"""``python -m bench.quality.asof``: does an as-of search return what the memory held on the asked day?

One memory: the dev set plus each case of ``bench/quality_data/superseded.json``, superseded on the
first day of the current month (``D``). A case's old statement is appended to its file (to its
``section`` when the case names one) with a provenance comment dated two years before ``D``, unless
the dev memory already states it (then it holds since always, or since its daily log's day). So
the gold interval of each old statement is ``[written, D)`` and of each new one ``[D, open)``.

Each case question is asked about a day before ``D`` in several ways, English and Chinese:

- ``as_of`` given by the caller (the question without "now" / "现在");
- an explicit date in the question: ``in November 2026``, ``in 2026-11``, ``2026年11月``;
- a relative one: ``last month``, ``上个月``, ``去年11月``, ``9月份`` (a month without a year).

Only questions whose asked day lies in the old statement's gold interval are kept. Reported: R@5 (the
old statement in the top 5), ``then_above_current`` (the old statement ranks above the new one, or the
new one is absent from the top 10), ``interval_exact`` (the old hit carries its gold interval), and,
over the cases' own present-tense questions, how often a struck line is returned at all (must be 0).

Example:
    .. code-block:: bash

        python -m bench.quality.asof                   # local model
        python -m bench.quality.asof --embeddings none # keyword-only
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_md_memory import MarkdownMemory
from langchain_md_memory.files.paths import daily_date
from langchain_md_memory.files.sections import into_section
from langchain_md_memory.search.asof import asked_day

from .cli import run_measurement
from .dataset import write_tree
from .devset import load_dev
from .embedder import QueryCachedEmbeddings
from .hygiene import load_cases
from .run import DEPTH

__all__ = ["main", "questions", "run"]

_NOW_EN = re.compile(r"\s+(?:right\s+)?now\b|\s+currently\b", re.I)
_NOW_ZH = re.compile(r"现在|目前")
_CJK = re.compile(r"[\u4e00-\u9fff]")


def questions(question: str, today: dt.date) -> list[tuple[str, str, dt.date | None]]:
    """``(kind, text, as_of)`` variants of a present-tense ``question`` asking about last month."""
    last = today.replace(day=1) - dt.timedelta(days=1)  # the last day of last month
    earlier = (today.replace(day=1) - dt.timedelta(days=80)).month  # a month two or three back
    if _CJK.search(question):
        base = _NOW_ZH.sub("", question)
        return [("zh as_of", base, last), ("zh explicit", f"{last.year}年{last.month}月{base}", None),
                ("zh relative", f"上个月{base}", None), ("zh last year", f"去年{last.month}月{base}", None),
                ("zh month", f"{earlier}月份{base}", None)]
    base = _NOW_EN.sub("", question).rstrip("?").strip()
    month = f"{calendar.month_name[last.month]} {last.year}"
    return [("en as_of", f"{base}?", last), ("en explicit", f"{base} in {month}?", None),
            ("en iso", f"{base} in {last.year}-{last.month:02d}?", None),
            ("en relative", f"{base} last month?", None)]


def _build(folder: Path, embeddings: QueryCachedEmbeddings | None, day: dt.date,
           written: dt.date) -> list[dict[str, Any]]:
    """The dev memory plus the cases superseded on ``day``; each case with its old statement's ``since``."""
    dev, cases = load_dev(held_out=False), load_cases(today=dt.date.today())
    write_tree(folder, dev.documents)
    with MarkdownMemory(folder, embeddings=embeddings if embeddings is not None else "none") as mem:
        for case in cases:
            since: dt.date | None = written
            if case["old"] in dev.documents.get(case["file"], ""):
                since = daily_date(case["file"])
            else:
                line = f"- {case['old']} <!-- src: via=bench {written.isoformat()} -->"
                text = mem.get(case["file"])
                placed = into_section(text, case["section"], line) if case.get("section") else None
                mem.write(case["file"], placed if placed is not None else f"{text.rstrip()}\n{line}\n")
            if not mem.supersede(case["old"], case["new"], file=case["file"], today=day):
                raise RuntimeError(f"case {case['id']}: old statement not found to supersede")
            case["since"] = since
        mem.sync()
    return cases


def _rank(hits: Sequence[Any], text: str) -> int | None:
    return next((i for i, hit in enumerate(hits, 1) if text in hit.text), None)


def run(embeddings: QueryCachedEmbeddings | None, folder: Path) -> dict[str, Any]:
    """Build the memory in ``folder`` and measure it; every number, as a dict."""
    today = dt.date.today()
    day = today.replace(day=1)
    written = day.replace(year=day.year - 2)
    started = time.perf_counter()
    cases = _build(folder, embeddings, day, written)
    rows: list[dict[str, Any]] = []
    struck_in_present = present = 0
    with MarkdownMemory(folder, embeddings=embeddings if embeddings is not None else "none") as mem:
        for case in cases:
            for question in case["queries"]:
                present += 1
                struck_in_present += any("~~" in hit.text for hit in mem.search(question, max_results=DEPTH))
                for kind, text, as_of in questions(question, today):
                    asked = as_of or asked_day(text, today)
                    since = case["since"]
                    if asked is None or not ((since is None or since <= asked) and asked < day):
                        continue  # the old statement did not hold on the asked day: no gold
                    hits = mem.search(text, max_results=DEPTH, as_of=as_of)
                    old, new = _rank(hits, case["old"]), _rank(hits, case["new"])
                    exact = old is not None and hits[old - 1].valid_until == day.isoformat() and \
                        hits[old - 1].valid_from == (since.isoformat() if since else None)
                    rows.append({"case": case["id"], "kind": kind, "question": text,
                                 "asked": asked.isoformat(), "old_rank": old, "new_rank": new,
                                 "interval_exact": exact})
    n = len(rows)
    kinds = sorted({row["kind"] for row in rows})

    def share(selected: list[dict[str, Any]], test: Any) -> float:
        return sum(bool(test(row)) for row in selected) / len(selected) if selected else 0.0

    def r5(row: dict[str, Any]) -> bool:
        return row["old_rank"] is not None and row["old_rank"] <= 5

    def above(row: dict[str, Any]) -> bool:
        return row["old_rank"] is not None and (row["new_rank"] is None or row["old_rank"] < row["new_rank"])

    return {
        "questions": n, "superseded_on": day.isoformat(), "r5": share(rows, r5),
        "then_above_current": share(rows, above),
        "interval_exact": share(rows, lambda row: row["interval_exact"]),
        "by_kind": {kind: {"n": len(sel := [r for r in rows if r["kind"] == kind]), "r5": share(sel, r5),
                           "then_above_current": share(sel, above)} for kind in kinds},
        "present_questions": present, "struck_in_present_answers": struck_in_present,
        "missed": [row for row in rows if not r5(row) or not above(row)],
        "seconds": time.perf_counter() - started,
    }


def main(argv: Sequence[str] | None = None) -> int:
    result = run_measurement("python -m bench.quality.asof", __doc__, run, argv)
    failed = result["r5"] < 0.9 or result["then_above_current"] < 0.9 or result["struck_in_present_answers"]
    if failed:
        print("as-of figures below the bar (R@5 and then-above-current >= 0.9, no struck line now)",
              file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
