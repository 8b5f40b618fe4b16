"""``python -m bench.quality.hygiene``: do dedup and supersede cost retrieval, and does the current fact win?

Six memories, built in one run with the default config and the same model:

- ``plain``: the dev set as written (what ``python -m bench.quality`` measures);
- ``dedup``: the same files replayed into an empty memory through ``mem.remember`` (dedup on), so
  facts a file already states are left out; gold is found again by its text (a gold line dedup
  dropped counts as missed);
- ``dedup anywhere``: the same replay with ``dedup="memory"``: a fact any earlier-replayed file
  already states is left out too (files replay in the dev set's order);
- ``both live``: ``plain`` plus each case of ``bench/quality_data/superseded.json``: its old
  statement (appended to its file unless the dev file already holds it: to the end of the section
  the case names, ``section``, where the file states facts on its subject, else to the file's
  end), then its new one, appended (a memory without supersede);
- ``superseded``: ``plain`` plus each old statement (as above), then ``mem.supersede(old, new)``;
- ``edited``: ``plain`` plus each old statement (as above), then the old line rewritten in place to
  the new one, as a person would edit the file: the same facts as ``superseded`` without supersede
  (no history, no ``src:`` comment, no ordering of statements), the control that tells what
  supersede itself does to R@5, apart from what the cases' new facts do.

Reported: R@5 on the dev questions for each memory, and on the cases' questions how often the
current fact ranks above the old one (found in the top 10, and the old one absent or below it)
and how often it is the first hit. A hit "holds" a statement when its text contains it.

Example:
    .. code-block:: bash

        python -m bench.quality.hygiene                   # local model
        python -m bench.quality.hygiene --embeddings none # keyword-only
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import difflib
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from langchain_md_memory import MarkdownMemory, MemoryConfig

from .cli import run_measurement
from .configs import build_spec
from .dataset import GoldRef, MemorySet, Query, write_tree
from .devset import DEV_DIR, load_dev, materialised_names
from .embedder import QueryCachedEmbeddings
from .metrics import summarise
from .run import DEPTH, build, evaluate

__all__ = ["CASES_FILE", "load_cases", "main"]

CASES_FILE = Path(__file__).resolve().parents[1] / "quality_data" / "superseded.json"


def load_cases(path: Path = CASES_FILE, today: dt.date | None = None) -> list[dict[str, Any]]:
    """The superseded-fact cases: ``{"id", "file", "old", "new", "queries"}`` each, some with ``section``.

    A ``file`` naming a dated file of the dev set (``daily/ago-2.md``) becomes its name in the
    memory folder (``memory/YYYY-MM-DD.md``), as :func:`~bench.quality.devset.load_dev` names it.
    """
    cases: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))["cases"]
    manifest = json.loads((DEV_DIR / "manifest.json").read_text(encoding="utf-8"))
    names = materialised_names(manifest, today or dt.date.today())
    return [{**case, "file": names[case["file"]][0] if case["file"] in names else case["file"]}
            for case in cases]


def _open(folder: Path, embeddings: QueryCachedEmbeddings | None,
          config: MemoryConfig | None = None) -> MarkdownMemory:
    return MarkdownMemory(folder, embeddings=embeddings if embeddings is not None else "none", config=config)


def _replayed(dev: MemorySet, folder: Path, embeddings: QueryCachedEmbeddings | None,
              dedup: Literal["file", "memory"] = "file") -> MemorySet:
    """The dev memory written through ``remember`` (``dedup`` mode), its gold found again by its text."""
    with _open(folder, embeddings, MemoryConfig(hygiene={"dedup": dedup})) as mem:
        for rel, text in dev.documents.items():
            if rel.startswith("sessions/"):  # transcripts are logs, not remembered facts
                (folder / rel).parent.mkdir(parents=True, exist_ok=True)
                (folder / rel).write_text(text, encoding="utf-8")
            else:
                mem.remember(text, file=rel)
        written = {rel: mem.get(rel) for rel in dev.documents}

    def moved(ref: GoldRef) -> GoldRef:
        assert ref.start_line is not None and ref.end_line is not None
        lines = dev.documents[ref.path].split("\n")[ref.start_line - 1 : ref.end_line]
        at = written[ref.path].find("\n".join(lines))
        if at < 0:
            return GoldRef(ref.path, -1, -1)  # dropped by dedup: never found
        start = written[ref.path].count("\n", 0, at) + 1
        return GoldRef(ref.path, start, start + len(lines) - 1)

    queries = [Query(q.qid, q.text, q.category, tuple(tuple(moved(r) for r in group) for group in q.gold))
               for q in dev.queries]
    return MemorySet(f"dedup={dedup}", written, queries)


def _line_map(before: str, after: str) -> dict[int, int]:
    """1-based line numbers of ``before`` to where they stand in ``after`` (lines rewritten in place too)."""
    moved: dict[int, int] = {}
    matcher = difflib.SequenceMatcher(None, before.split("\n"), after.split("\n"), autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
            moved.update({i + 1: j1 + (i - i1) + 1 for i in range(i1, i2)})
    return moved


Mode = Literal["append", "supersede", "edit"]


def _with_cases(dev: MemorySet, folder: Path, embeddings: QueryCachedEmbeddings | None,
                cases: Sequence[dict[str, Any]], *, mode: Mode) -> MemorySet:
    """``dev`` plus the cases (see the module docstring), its gold moved with lines filed above it."""
    write_tree(folder, dev.documents)
    with _open(folder, embeddings) as mem:
        for case in cases:
            if case["old"] not in dev.documents.get(case["file"], ""):  # else superseded where it stands
                if case.get("section"):  # filed with the facts on its subject, as a person would
                    done = mem.remember(f"- {case['old']}", file=case["file"], section=case["section"])
                    if done.written != 1:
                        raise RuntimeError(f"case {case['id']}: old statement not written to its section")
                else:
                    mem.append(f"- {case['old']}", file=case["file"])
            if mode == "supersede":
                if not mem.supersede(case["old"], case["new"], file=case["file"]):
                    raise RuntimeError(f"case {case['id']}: old statement not found to supersede")
            elif mode == "edit":
                text = mem.get(case["file"])
                if case["old"] not in text:
                    raise RuntimeError(f"case {case['id']}: old statement not found to edit")
                mem.write(case["file"], text.replace(case["old"], case["new"], 1))
            else:
                mem.append(f"- {case['new']}", file=case["file"])
        mem.sync()
        maps = {rel: _line_map(text, mem.get(rel)) for rel, text in dev.documents.items()
                if not rel.startswith("sessions/")}

    def moved(ref: GoldRef) -> GoldRef:
        lines = maps.get(ref.path)
        if lines is None or ref.start_line is None or ref.end_line is None:
            return ref
        return GoldRef(ref.path, lines.get(ref.start_line, -1), lines.get(ref.end_line, -1))

    queries = [dataclasses.replace(q, gold=tuple(tuple(moved(r) for r in group) for group in q.gold))
               for q in dev.queries]
    return MemorySet(f"cases, {mode}", dev.documents, queries)


def _rank(hits: Sequence[Any], text: str) -> int | None:
    return next((i for i, hit in enumerate(hits, 1) if text in hit.text), None)


def current_wins(folder: Path, embeddings: QueryCachedEmbeddings | None,
                 cases: Sequence[dict[str, Any]]) -> dict[str, float | int]:
    """Over the cases' questions: the share where the new statement outranks the old, and is first."""
    above = first = asked = 0
    with _open(folder, embeddings) as mem:
        for case in cases:
            for question in case["queries"]:
                hits = mem.search(question, max_results=DEPTH)
                new, old = _rank(hits, case["new"]), _rank(hits, case["old"])
                asked += 1
                above += new is not None and (old is None or new < old)
                first += new == 1 and old != 1
    return {"questions": asked, "current_above_old": above / asked, "current_first": first / asked}


def _r_at_5(folder: Path, mset: MemorySet, embeddings: QueryCachedEmbeddings | None) -> float:
    answerable = [q for q in mset.queries if q.gold]
    outcomes = evaluate(folder, answerable, build_spec("default", {}), embeddings)
    value = summarise(outcomes).r5
    assert value is not None
    return value


def run(embeddings: QueryCachedEmbeddings | None, workdir: Path,
        log: Callable[[str], None] = lambda m: print(m, file=sys.stderr)) -> dict[str, Any]:
    """Build the six memories under ``workdir`` and measure them; every number, as a dict."""
    dev, cases = load_dev(held_out=False), load_cases()
    started = time.perf_counter()
    result: dict[str, Any] = {"cases": len(cases)}
    build(workdir / "plain", dev, embeddings)
    result["plain"] = {"dev_r5": _r_at_5(workdir / "plain", dev, embeddings)}
    log("plain built and measured")
    for name, mode in (("dedup", "file"), ("dedup anywhere", "memory")):
        folder = workdir / name.replace(" ", "-")
        replayed = _replayed(dev, folder, embeddings, mode)
        result[name] = {"dev_r5": _r_at_5(folder, replayed, embeddings),
                        "lines_dropped": sum(len(dev.documents[r].split("\n")) - len(t.split("\n"))
                                             for r, t in replayed.documents.items())}
        log(f"{name} replay built and measured")
    modes: tuple[tuple[str, Mode], ...] = (("both live", "append"), ("superseded", "supersede"),
                                           ("edited", "edit"))
    for name, mode in modes:
        folder = workdir / name.replace(" ", "-")
        written = _with_cases(dev, folder, embeddings, cases, mode=mode)
        result[name] = {"dev_r5": _r_at_5(folder, written, embeddings),
                        **current_wins(folder, embeddings, cases)}
        log(f"{name} built and measured")
    result["seconds"] = time.perf_counter() - started
    return result


def main(argv: Sequence[str] | None = None) -> int:
    run_measurement("python -m bench.quality.hygiene", __doc__, run, argv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
