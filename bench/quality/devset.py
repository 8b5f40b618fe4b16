"""The bilingual development set (``bench/quality_data/dev/``): one person's memory and questions about it.

Files under ``files/`` are copied as they are, except the dated ones named in
``manifest.json``: their age in days is fixed there and turned into a real
name relative to today when the set is loaded (a daily log becomes
``memory/YYYY-MM-DD.md``, a session ``sessions/YYYY-MM-DD-<thread>.md``, and a
``{date}`` in it becomes that date), so a log that is 120 days old stays 120
days old whatever day the bench runs.

``queries.json`` holds ``{"id", "category", "query", "gold"}`` items (the "tuned" split: the
questions looked at while tuning); ``heldout.json`` more in the same format (the "held-out"
split, written after the label threshold was chosen, blind to scores); ``blind.json`` 48 more
(the "blind" split, written after every rule was fixed by a reader who saw no scores and no search
code); ``gold``
is a list of ``{"path", "text"}`` (a file under ``files/`` and a substring of
it that answers the question, optionally ``"or": [...]`` alternatives). Gold is
located by the lines the substring spans, so chunking changes do not break it.
An empty ``gold`` means the answer is not in memory.

Example:
    .. code-block:: python

        dev = load_dev()
        print(len(dev.documents), len(dev.queries))
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from .dataset import GoldRef, MemorySet, Query

__all__ = ["DEV_DIR", "load_dev", "materialised_names"]

DEV_DIR = Path(__file__).resolve().parents[1] / "quality_data" / "dev"


def materialised_names(manifest: dict[str, Any], today: dt.date) -> dict[str, tuple[str, str]]:
    """Source path → (path in the memory folder, ISO date), for every dated file of the manifest."""
    names: dict[str, tuple[str, str]] = {}
    for source, entry in manifest["dated"].items():
        day = (today - dt.timedelta(days=int(entry["age_days"]))).isoformat()
        if entry.get("kind", "daily") == "session":
            names[source] = (f"sessions/{day}-{entry['thread']}.md", day)
        else:
            names[source] = (f"memory/{day}.md", day)
    if len({name for name, _ in names.values()}) != len(names):
        raise ValueError("manifest: two dated files land on the same name")
    return names


def _line_span(text: str, needle: str) -> tuple[int, int] | None:
    at = text.find(needle)
    if at == -1:
        return None
    start = text.count("\n", 0, at) + 1
    return start, start + needle.count("\n")


def _ref(item: dict[str, Any], sources: dict[str, str], names: dict[str, tuple[str, str]],
         qid: str) -> GoldRef:
    source, needle = item["path"], item["text"]
    if source not in sources:
        raise ValueError(f"query {qid}: gold file {source!r} is not in the dev set")
    span = _line_span(sources[source], needle)
    if span is None:
        raise ValueError(f"query {qid}: {needle!r} not found in {source}")
    return GoldRef(names[source][0] if source in names else source, span[0], span[1])


SPLITS = {"tuned": "queries.json", "held-out": "heldout.json", "blind": "blind.json"}
"""Each split of the dev questions and its file."""


def load_dev(root: Path = DEV_DIR, today: dt.date | None = None, *, held_out: bool = True) -> MemorySet:
    """The dev memory (documents under their dated names) and its queries with located gold.

    ``held_out=False`` leaves out the held-out and blind splits (what the hygiene harness compares
    across runs).
    """
    today = today or dt.date.today()
    manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    files = root / "files"
    sources = {p.relative_to(files).as_posix(): p.read_text(encoding="utf-8")
               for p in sorted(files.rglob("*.md"))}
    missing = set(manifest["dated"]) - set(sources)
    if missing:
        raise ValueError(f"manifest names files that do not exist: {sorted(missing)}")
    names = materialised_names(manifest, today)
    documents: dict[str, str] = {}
    for src, text in sources.items():
        # A session transcript states its own date: "- date: {date}" in the source.
        target, day = names.get(src, (src, ""))
        documents[target] = text.replace("{date}", day) if day else text
    queries = []
    for split, name in SPLITS.items():
        path = root / name
        if split != "tuned" and (not held_out or not path.exists()):
            continue
        for item in json.loads(path.read_text(encoding="utf-8"))["queries"]:
            qid = item["id"]
            gold = tuple(
                tuple(_ref(alt, sources, names, qid) for alt in [g, *g.get("or", [])])
                for g in item["gold"]
            )
            queries.append(Query(qid, item["query"], item["category"], gold, split))
    ids = [q.qid for q in queries]
    if len(set(ids)) != len(ids):
        raise ValueError("dev questions: duplicate query ids")
    info: dict[str, object] = {"files": len(documents), "queries": len(queries)}
    return MemorySet("dev", documents, queries, info=info)
