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

A second layout, ``layout="sessions"``, is what :mod:`langchain_md_memory.features.transcripts`
writes for a conversation: one file per session, ``session_03.md``, headed
``# Session 3 (<date and time>)``, each turn a ``## <speaker>`` section. The
chunker gives each turn its own chunk, so a short reply ("Yes, last Tuesday")
is a chunk that needs its neighbours to mean anything; gold is the turn's line
span in its session file.

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

__all__ = ["CATEGORIES", "LAYOUTS", "TUNED_CONVERSATIONS", "load_locomo", "turn_path"]

CATEGORIES = {1: "1 multi-hop", 2: "2 temporal", 3: "3 open-domain", 4: "4 single-hop"}
"""Category numbers of ``locomo10.json`` and the names commonly used for them."""

TUNED_CONVERSATIONS = 5
"""Conversations 0-4 (by sample id) are "tuned" (looked at while tuning); 5-9 are "held-out"."""

LAYOUTS = ("turns", "sessions")
"""One file per dialogue turn, or one file per session with a section per turn."""

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


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def _turn_lines(turn: Mapping[str, Any]) -> list[str]:
    lines = [_one_line(turn.get("text", ""))]
    caption = turn.get("blip_caption")
    if caption:
        lines.append(f"[image: {_one_line(caption)}]")
    return lines


def _sessions(conversation: Mapping[str, Any]) -> Iterator[tuple[int, str, list[Mapping[str, Any]]]]:
    """(session number, its date and time, its turns), in session order."""
    found = []
    for key, turns in conversation.items():
        match = _SESSION_KEY.match(key)
        if match is not None and isinstance(turns, list):
            found.append((int(match[1]), str(conversation.get(f"{key}_date_time", "")).strip(), turns))
    yield from sorted(found, key=lambda item: item[0])


def _documents(conversation: Mapping[str, Any], layout: str) -> tuple[dict[str, str], dict[str, GoldRef]]:
    """The memory's files, and where each turn (by its ``turn_path``) stands in them."""
    docs: dict[str, str] = {}
    where: dict[str, GoldRef] = {}
    for number, when, turns in _sessions(conversation):
        if layout == "turns":
            for turn in turns:
                path = turn_path(str(turn.get("dia_id", "")))
                if path is not None:
                    lines = _turn_lines(turn)
                    docs[path] = "\n".join([f"{turn['speaker']} ({when}): {lines[0]}", *lines[1:]]) + "\n"
                    where[path] = GoldRef(path)
            continue
        session = f"session_{number:02d}.md"
        lines = [f"# Session {number} ({when})"]
        for turn in turns:
            path = turn_path(str(turn.get("dia_id", "")))
            lines += ["", f"## {turn['speaker']}", ""]
            start = len(lines) - 1  # 1-based line of the heading just added
            lines += _turn_lines(turn)
            if path is not None:
                where[path] = GoldRef(session, start, len(lines))
        docs[session] = "\n".join(lines) + "\n"
    return dict(sorted(docs.items())), where


def _natural(sample_id: str) -> tuple[Any, ...]:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", sample_id))


def load_locomo(path: str | Path, layout: str = "turns") -> list[MemorySet]:
    """One :class:`MemorySet` per conversation, sorted by sample id, split tuned / held-out."""
    if layout not in LAYOUTS:
        raise ValueError(f"unknown LoCoMo layout {layout!r}; choose one of {', '.join(LAYOUTS)}")
    samples = sorted(_samples(Path(path)), key=lambda s: _natural(s["sample_id"]))
    sets: list[MemorySet] = []
    for position, sample in enumerate(samples):
        split = "tuned" if position < TUNED_CONVERSATIONS else "held-out"
        docs, where = _documents(sample["conversation"], layout)
        queries: list[Query] = []
        dropped_refs = dropped_questions = 0
        for number, qa in enumerate(sample["qa"]):
            category = qa.get("category")
            if category not in CATEGORIES:
                continue
            refs: list[GoldRef] = []
            for raw in qa.get("evidence") or []:
                for part in re.split(r"[;,\s]+", str(raw)):
                    target = where.get(turn_path(part) or "") if part else None
                    if target is not None and target not in refs:
                        refs.append(target)
                    elif part and target is None:
                        dropped_refs += 1
            if not refs:
                dropped_questions += 1
                continue
            queries.append(Query(
                qid=f"{sample['sample_id']}#{number}",
                text=str(qa["question"]),
                category=CATEGORIES[category],
                gold=tuple((ref,) for ref in refs),
                split=split,
            ))
        info: dict[str, object] = {"turns": len(where), "evidence_refs_dropped": dropped_refs,
                                   "questions_without_evidence": dropped_questions}
        sets.append(MemorySet(sample["sample_id"], docs, queries, split=split, info=info))
    return sets
