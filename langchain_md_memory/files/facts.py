"""Facts as lines of Markdown: which lines are live, when two say the same, where each came from.

The package keeps its hygiene in the Markdown itself, where a person can read and edit it:

- a fact is a non-blank, non-heading line outside code fences;
- a fact is *superseded* when it is struck through (``- ~~Retire at 65~~ (superseded 2026-12-03)``)
  or sits under a ``History`` heading; superseded lines are kept for the record and never indexed;
- a fact may end with ``<!-- src: thread=abc msg=xyz 2026-12-03 -->`` (where it came from) and
  ``<!-- expires: 2027-01-31 -->`` (the last day it holds); both are plain HTML comments, so a
  renderer hides them and an editor keeps them;
- two facts are the same when they are equal after normalising (NFKC, case, whitespace, list
  markers, trailing punctuation, those comments), or when their CJK-aware token sets overlap at
  least a Jaccard threshold while holding the same numbers and the same negations (so
  "retire at 65" never swallows "retire at 67").

Example:
    .. code-block:: python

        from langchain_md_memory.files.facts import normalize_fact, parse_provenance, same_fact

        assert normalize_fact("- [ ] Prefers  TEA. <!-- src: thread=t1 -->") == "prefers tea"
        assert same_fact("* prefers tea", "Prefers tea!")
        assert not same_fact("- Retire at 65", "- Retire at 67")
        assert parse_provenance("- Tea <!-- src: thread=t1 2026-12-03 -->") == ("thread=t1 2026-12-03",)
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ..errors import MemoryInputError
from ..text import normalize_text, token_set

__all__ = [
    "FactLine",
    "expired",
    "expires_on",
    "expiry_date",
    "expiry_day",
    "fact_lines",
    "hidden_lines",
    "normalize_fact",
    "parse_provenance",
    "provenance_day",
    "provenance_label",
    "same_fact",
    "strip_annotations",
    "whole_fact",
    "with_expiry",
    "with_provenance",
]

_SRC_RE = re.compile(r"<!--\s*src:\s*(.*?)\s*-->")
_DAY_RE = re.compile(r"(?:^|\s)(\d{4}-\d{2}-\d{2})$")  # provenance_label ends with the day
_EXPIRES_RE = re.compile(r"<!--\s*expires:\s*(\d{4}-\d{2}-\d{2})\s*-->")
_DAY_FORM_RE = re.compile(r"\d{4}-\d{2}-\d{2}")
_EXPIRES_COMMENT_RE = re.compile(r"[ \t]*<!--[ \t]*expires:[^\n]*?-->")
_ANNOTATION_RE = re.compile(r"[ \t]*<!--[ \t]*(?:src|expires):[^\n]*?-->")
_HEADING_RE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t#]*$")
_FENCE_RE = re.compile(r"^ {0,3}(?:`{3,}|~{3,})")
_MARKER_RE = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+(?:\[[ xX]?\]\s+)?")
_STRUCK_RE = re.compile(r"^\s*(?:(?:[-*+]|\d+[.)])\s+)?~~\S.*?~~")
_SUPERSEDED_RE = re.compile(
    r"^[ \t]*(?:(?:[-*+]|\d+[.)])[ \t]+)?~~(\S.*?)~~[ \t]*\(superseded (\d{4}-\d{2}-\d{2})\)", re.MULTILINE
)
_TRAILING_PUNCT_RE = re.compile(r"[\s.;,!。；，！]+$")
_NEGATIONS = frozenset({"not", "no", "never", "dont", "don", "doesn", "isn", "won", "cannot", "without",
                        "不", "没", "别", "无", "非"})
HISTORY_TITLES = frozenset({"history", "superseded", "历史"})
"""Heading titles whose sections hold superseded facts (compared case-insensitively)."""


@dataclass(frozen=True, slots=True)
class FactLine:
    """A live fact: its 1-based line number and the line as written."""

    line: int
    text: str


def strip_annotations(line: str) -> str:
    """``line`` (or a whole text, line by line) without its ``src:`` and ``expires:`` comments."""
    # Most text has no comment at all: the regex would try (and fail) at every blank it meets.
    return _ANNOTATION_RE.sub("", line) if "<!--" in line else line


def whole_fact(text: str, start: int, end: int) -> tuple[int, int]:
    """The span to delete for ``text[start:end]``: the whole line(s) when what the cut would leave of
    them is only ``src:`` or ``expires:`` comments (and a list marker); else the span as given.

    Those comments describe the fact they end: deleting the fact's text deletes them too, instead of
    leaving a line of bookkeeping about nothing.
    """
    first = text.rfind("\n", 0, start) + 1
    last = text.find("\n", end)
    last = len(text) if last < 0 else last
    left = text[first:start] + text[end:last]
    if "<!--" in left and _ANNOTATION_RE.search(left) and not normalize_fact(left):
        return first, last
    return start, end


def normalize_fact(line: str) -> str:
    """The comparable form of a fact: NFKC, no annotations or list marker, folded case and spacing."""
    text = _MARKER_RE.sub("", strip_annotations(normalize_text(line)))
    text = " ".join(text.split()).casefold()
    return _TRAILING_PUNCT_RE.sub("", text)


def same_fact(a: str, b: str, threshold: float = 0.85) -> bool:
    """True when facts ``a`` and ``b`` say the same thing (see the module docstring)."""
    na, nb = normalize_fact(a), normalize_fact(b)
    if not na or not nb:
        return False
    if na == nb:
        return True
    if threshold >= 1.0:
        return False
    ta, tb = token_set(na), token_set(nb)
    if not ta or not tb:
        return False
    if {t for t in ta if any(c.isdigit() for c in t)} != {t for t in tb if any(c.isdigit() for c in t)}:
        return False
    if _negations(ta, na) != _negations(tb, nb):
        return False
    return len(ta & tb) / len(ta | tb) >= threshold


def _negations(tokens: frozenset[str], text: str) -> frozenset[str]:
    found = {t for t in tokens if t in _NEGATIONS}
    found |= {ch for ch in text if ch in _NEGATIONS}
    if "n't" in text or "n’t" in text:
        found.add("n't")
    return frozenset(found)


def _outline(lines: Sequence[str]) -> Iterator[tuple[bool, re.Match[str] | None]]:
    """Per line: whether it is fenced code (fence lines included), and its heading match outside code."""
    fence = False
    for line in lines:
        if _FENCE_RE.match(line):
            fence = not fence
            yield True, None
            continue
        yield fence, None if fence else _HEADING_RE.match(line)


def _may_hide(lines: list[str]) -> bool:
    """False when no line can be hidden: no ``~~`` and no History title on any line holding a ``#``.

    ``str.casefold`` folds character by character, so a heading whose title folds to one of
    :data:`HISTORY_TITLES` leaves that title in its folded line. Only lines with a ``#`` are folded
    (every heading has one): most files have a few, and folding a whole file costs more than chunking it.
    """
    for line in lines:
        if "~~" in line:
            return True
        if "#" in line:
            folded = line.casefold()
            if any(title in folded for title in HISTORY_TITLES):
                return True
    return False


def hidden_lines(lines: list[str]) -> list[bool]:
    """Per line: True for superseded text (a ``History`` section, heading included, or a struck line)."""
    if not _may_hide(lines):
        return [False] * len(lines)
    hidden: list[bool] = []
    history_level: int | None = None
    for line, (fence, heading) in zip(lines, _outline(lines), strict=True):
        if heading is not None:
            level = len(heading[1])
            if history_level is not None and level <= history_level:
                history_level = None
            if history_level is None and (heading[2] or "").strip().casefold() in HISTORY_TITLES:
                history_level = level
        hidden.append(history_level is not None or (not fence and _STRUCK_RE.match(line) is not None))
    return hidden


def fact_lines(text: str) -> Iterator[FactLine]:
    """The live facts of a Markdown text: not blank, a heading, fenced code, or superseded."""
    lines = text.replace("\r\n", "\n").split("\n")
    rows = zip(lines, hidden_lines(lines), _outline(lines), strict=True)
    for number, (line, gone, (code, heading)) in enumerate(rows, start=1):
        if code or gone or heading is not None or not line.strip():
            continue
        if normalize_fact(line):
            yield FactLine(number, line)


def with_provenance(line: str, source: str) -> str:
    """``line`` ending in ``<!-- src: <source> -->`` (unchanged when it already names a source)."""
    if not line.strip() or _SRC_RE.search(line):
        return line
    return f"{line.rstrip()} <!-- src: {source} -->"


def provenance_label(*, thread: str | None = None, message: str | None = None,
                     session: str | None = None, via: str | None = None,
                     when: dt.date | None = None) -> str:
    """The body of a ``src:`` comment: ``thread=abc msg=xyz 2026-12-03`` (only the parts given)."""
    parts = [f"{key}={_safe(value)}" for key, value in
             (("via", via), ("thread", thread), ("msg", message), ("session", session)) if value]
    parts.append((when or dt.datetime.now(dt.UTC).date()).isoformat())
    return " ".join(parts)


def _safe(value: str) -> str:
    # A comment must stay one comment on one line: no "--", no whitespace, no ">".
    return re.sub(r"[\s>]+", "_", str(value)).replace("--", "-")[:80]


@functools.lru_cache(maxsize=4096)  # read from every hit of every search: its text, once
def parse_provenance(text: str) -> tuple[str, ...]:
    """Every ``src:`` comment body in ``text``, in order, without repeats."""
    if "<!--" not in text:  # most text: a search asks this of every candidate, some twice
        return ()
    return tuple(dict.fromkeys(m[1] for m in _SRC_RE.finditer(text) if m[1]))


def provenance_day(sources: Sequence[str]) -> dt.date | None:
    """The newest day ending a ``src:`` comment body (:func:`parse_provenance`); ``None`` if none does.

    The day a line was written by the package: a chunk holding it states something as of that day.
    """
    days = []
    for source in sources:
        found = _DAY_RE.search(source.strip())
        if found is not None:
            with contextlib.suppress(ValueError):  # 2026-13-40 names no day
                days.append(dt.date.fromisoformat(found[1]))
    return max(days, default=None)


def expiry_day(text: str) -> dt.date | None:
    """The day an expiry written as ``YYYY-MM-DD`` names (the last day it holds), else ``None``.

    The one reading of that form, for a fact's ``<!-- expires: 2027-01-31 -->`` and a store
    item's alike: other ISO forms (``2027-W05-1``, ``20270131``) and impossible days are no day.
    """
    if not _DAY_FORM_RE.fullmatch(text):
        return None
    try:
        return dt.date.fromisoformat(text)
    except ValueError:  # 2026-13-40 names no day
        return None


def expires_on(line: str) -> dt.date | None:
    """The last day ``line`` holds by its ``<!-- expires: YYYY-MM-DD -->`` comment; ``None`` without one."""
    found = _EXPIRES_RE.search(line)
    return None if found is None else expiry_day(found[1])


def expired(line: str, today: dt.date) -> bool:
    """True when ``line`` carries ``<!-- expires: YYYY-MM-DD -->`` and that day has passed."""
    day = expires_on(line)
    return day is not None and day < today


def expiry_date(value: str | dt.date, today: dt.date) -> dt.date:
    """``value`` as the last day a fact holds: an ISO date (``2027-01-31``), ``today`` or later.

    Raises:
        MemoryInputError: for another format or a day already past, saying which format to use.
    """
    day: dt.date | None
    if isinstance(value, dt.datetime):
        day = value.date()
    elif isinstance(value, dt.date):
        day = value
    else:
        text = str(value).strip()
        day = expiry_day(text)
        if day is None:
            raise MemoryInputError(
                f"expires={text!r} is not a date: give the last day the fact holds as YYYY-MM-DD, "
                f"e.g. expires='{(today + dt.timedelta(days=30)).isoformat()}'"
            )
    if day < today:
        raise MemoryInputError(
            f"expires={day.isoformat()!r} is already past (today is {today.isoformat()}): give the last "
            "day the fact holds, today or later, as YYYY-MM-DD, or leave expires out"
        )
    return day


def with_expiry(line: str, day: dt.date) -> str:
    """``line`` ending in ``<!-- expires: <day> -->`` (replacing an expiry it had; blank lines unchanged)."""
    if not line.strip():
        return line
    return f"{_EXPIRES_COMMENT_RE.sub('', line).rstrip()} <!-- expires: {day.isoformat()} -->"


