"""LoCoMo (snap-research/locomo) read from a local path and laid out as Markdown memories.

The data has no licence, so it is never copied into this repository: pass the
folder of a checkout (``data/locomo10.json``, ``data/locomo10.zip`` or its
unzipped ``locomo10_v2/*.json`` files are all understood).

Layout: one memory folder per conversation, one Markdown file per dialogue
turn, ``session_03/D3_7.md`` (a name without a date, so the file is evergreen
and temporal decay leaves it alone). A turn file is one line,
``Ann (2:05 pm on 3 March, 2023): <text>``, with the session's date and
time, plus ``[image: <caption>]`` on a second line when the turn shared an
image (the caption is the only trace of the image the data gives). Questions of
categories 1-4 are kept (5, adversarial, has no answer in the dialogue by
design); their ``evidence`` dia_ids are the gold turns. Conversations are sorted
by sample id; the first five are "tuned", the rest "held-out".

Example:
    .. code-block:: python

        sets = load_locomo("path/to/locomo")
        print(sets[0].name, len(sets[0].documents), len(sets[0].queries))
"""

from __future__ import annotations

import json
import re
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from .dataset import GoldRef, MemorySet, Query

__all__ = ["CATEGORIES", "TUNED_CONVERSATIONS", "load_locomo", "turn_path"]

CATEGORIES = {1: "1 multi-hop", 2: "2 temporal", 3: "3 open-domain", 4: "4 single-hop"}
"""Category numbers of ``locomo10.json`` and the names commonly used for them."""

TUNED_CONVERSATIONS = 5
"""Conversations 0-4 (by sample id) are "tuned" (looked at while tuning); 5-9 are "held-out"."""

_SESSION_KEY = re.compile(r"^session_(\d+)$")
_DIA_ID = re.compile(r"^D:?(\d+):0*(\d+)$")


def turn_path(dia_id: str) -> str | None:
    """``"D3:7"`` → ``"session_03/D3_7.md"``; tolerant of the data's stray forms (``D:11:26``, ``D30:05``)."""
    match = _DIA_ID.match(dia_id.strip())
    if match is None:
        return None
    session, turn = int(match[1]), int(match[2])
    return f"session_{session:02d}/D{session}_{turn}.md"


def _samples(root: Path) -> Iterator[dict[str, Any]]:
    """Every conversation under ``root`` as ``{"sample_id", "conversation", "qa"}``."""
    if root.is_file():
        candidates = [root]
    else:
        candidates = sorted(root.rglob("locomo10.json")) or sorted(root.rglob("locomo10*.zip"))
    if candidates:
        source = candidates[0]
        if source.suffix == ".zip":
            yield from _from_zip(source)
        else:
            yield from _from_list(json.loads(source.read_text(encoding="utf-8")))
        return
    files = sorted(root.rglob("locomo10_v2/*.json"))
    if not files:
        raise FileNotFoundError(
            f"no LoCoMo data under {root}: expected locomo10.json, locomo10.zip or locomo10_v2/*.json"
        )
    for file in files:
        yield _from_flat(file.stem, json.loads(file.read_text(encoding="utf-8")))


def _from_list(data: Any) -> Iterator[dict[str, Any]]:
    if not isinstance(data, list):
        raise ValueError("locomo10.json: expected a list of conversations")
    for sample in data:
        yield {"sample_id": str(sample["sample_id"]), "conversation": sample["conversation"],
               "qa": sample.get("qa", [])}


def _from_flat(stem: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """The zip's ``locomo10_v2/26.json``: the conversation's keys and ``qa`` side by side."""
    return {"sample_id": f"conv-{stem}", "conversation": data, "qa": data.get("qa", [])}


def _from_zip(path: Path) -> Iterator[dict[str, Any]]:
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        whole = [n for n in names if n.endswith("locomo10.json")]
        if whole:
            yield from _from_list(json.loads(archive.read(whole[0])))
            return
        flat = sorted(n for n in names if re.search(r"locomo10_v2/[^/]+\.json$", n))
        if not flat:
            raise FileNotFoundError(f"{path}: no locomo10.json or locomo10_v2/*.json inside")
        for name in flat:
            yield _from_flat(Path(name).stem, json.loads(archive.read(name)))


def _turn_text(turn: Mapping[str, Any], when: str) -> str:
    text = " ".join(str(turn.get("text", "")).split())
    lines = [f"{turn['speaker']} ({when}): {text}"]
    caption = turn.get("blip_caption")
    if caption:
        lines.append(f"[image: {' '.join(str(caption).split())}]")
    return "\n".join(lines) + "\n"


def _documents(conversation: Mapping[str, Any]) -> dict[str, str]:
    docs: dict[str, str] = {}
    for key, turns in conversation.items():
        match = _SESSION_KEY.match(key)
        if match is None or not isinstance(turns, list):
            continue
        when = str(conversation.get(f"{key}_date_time", "")).strip()
        for turn in turns:
            path = turn_path(str(turn.get("dia_id", "")))
            if path is not None:
                docs[path] = _turn_text(turn, when)
    return dict(sorted(docs.items()))


def _natural(sample_id: str) -> tuple[Any, ...]:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", sample_id))


def load_locomo(path: str | Path) -> list[MemorySet]:
    """One :class:`MemorySet` per conversation, sorted by sample id, split tuned / held-out."""
    samples = sorted(_samples(Path(path)), key=lambda s: _natural(s["sample_id"]))
    sets: list[MemorySet] = []
    for position, sample in enumerate(samples):
        split = "tuned" if position < TUNED_CONVERSATIONS else "held-out"
        docs = _documents(sample["conversation"])
        queries: list[Query] = []
        dropped_refs = dropped_questions = 0
        for number, qa in enumerate(sample["qa"]):
            category = qa.get("category")
            if category not in CATEGORIES:
                continue
            refs: list[str] = []
            for raw in qa.get("evidence") or []:
                for part in re.split(r"[;,\s]+", str(raw)):
                    target = turn_path(part) if part else None
                    if target in docs and target not in refs:
                        refs.append(target)
                    elif part:
                        dropped_refs += 1
            if not refs:
                dropped_questions += 1
                continue
            queries.append(Query(
                qid=f"{sample['sample_id']}#{number}",
                text=str(qa["question"]),
                category=CATEGORIES[category],
                gold=tuple((GoldRef(ref),) for ref in refs),
                split=split,
            ))
        info: dict[str, object] = {"turns": len(docs), "evidence_refs_dropped": dropped_refs,
                                   "questions_without_evidence": dropped_questions}
        sets.append(MemorySet(sample["sample_id"], docs, queries, split=split, info=info))
    return sets
