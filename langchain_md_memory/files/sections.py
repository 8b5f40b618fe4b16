"""Where facts sit in a Markdown file: a fact's section, and the ``## History`` section that keeps the past.

A superseded or expired fact moves to the file's ``## History`` section, struck through with its day
(``- ~~Retire at 65~~ (superseded 2026-12-03)``), so a person still reads what was believed and when it
changed; search never indexes those lines. New facts go above that section, or into the section of
their subject. :func:`past_facts` reads each struck line back with the days it held. Line grammar (what a
fact is, its provenance and expiry) is :mod:`.facts`.

Example:
    .. code-block:: python

        import datetime as dt

        from langchain_md_memory.files.sections import supersede_in, superseded_statements

        text = supersede_in("- Retire at 65\n", "Retire at 65", "- Retire at 67", dt.date(2026, 12, 3), None)
        assert superseded_statements(text) == [("Retire at 65", dt.date(2026, 12, 3))]
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass

from .facts import (
    _HEADING_RE,
    _MARKER_RE,
    _SUPERSEDED_RE,
    HISTORY_TITLES,
    _outline,
    expired,
    expires_on,
    fact_lines,
    hidden_lines,
    normalize_fact,
    parse_provenance,
    provenance_day,
    strip_annotations,
    with_expiry,
    with_provenance,
)
from .paths import daily_date

__all__ = ["NOTES_SECTION", "PastFact", "before_history", "ending_section", "expire_in", "heading_above",
           "into_section", "past_facts", "supersede_in", "superseded_statements"]

NOTES_SECTION = "## Notes"
"""Where facts given without a subject go when a file's last section has one (see :func:`ending_section`)."""


@dataclass(frozen=True, slots=True)
class PastFact:
    """A struck line of ``path``: its 1-based ``line``, the statement, and the days it held."""

    path: str
    line: int
    text: str
    statement: str
    since: dt.date | None
    until: dt.date

    def holds(self, day: dt.date) -> bool:
        """True when the statement was valid on ``day``: written by then, superseded after it."""
        return (self.since is None or self.since <= day) and day < self.until


def heading_above(lines: list[str], index: int) -> str | None:
    """The heading line (``## Doctors``) of the section holding ``lines[index]`` (0-based), or ``None``.

    A heading inside fenced code is code, not a heading; ``lines[index]`` itself counts when it is one.
    """
    found = None
    for line, (_, heading) in zip(lines[: index + 1], _outline(lines[: index + 1]), strict=True):
        if heading is not None:
            found = line.strip()
    return found


def expire_in(text: str, today: dt.date) -> tuple[str, tuple[str, ...]]:
    """``text`` with its live facts past their ``expires:`` day struck under History; and those lines.

    Each goes to the ``## History`` section as ``- ~~fact~~ (expired <its expiry day>)``, as
    :func:`supersede_in` keeps a superseded fact, so a person still reads what was dropped and when.
    ``(text, ())`` when no live fact has expired.
    """
    text = text.replace("\r\n", "\n")
    gone = [fact for fact in fact_lines(text) if expired(fact.text, today)]
    if not gone:
        return text, ()
    ends_with_newline = text.endswith("\n")
    numbers = {fact.line for fact in gone}
    lines = [line for n, line in enumerate((text[:-1] if ends_with_newline else text).split("\n"), 1)
             if n not in numbers]
    entries = []
    for fact in gone:
        entries.append(_history_entry(fact.text, expires_on(fact.text) or today, "expired"))
    _add_history(lines, entries)
    return "\n".join(lines) + ("\n" if ends_with_newline else ""), tuple(fact.text for fact in gone)


def supersede_in(text: str, old_text: str, new_text: str, day: dt.date,
                 source: str | None = None, expires: dt.date | None = None) -> str | None:
    """``text`` with the lines holding ``old_text`` replaced by ``new_text`` and kept, struck, under History.

    The old lines go to the end of the first ``## History`` section (created at the end of the file
    when there is none) as ``- ~~old~~ (superseded <day>)``, keeping their ``src:`` comment. A list
    marker of the old line is given to ``new_text`` when it has none. ``None`` when ``old_text`` is
    not in ``text`` (or is blank). ``expires`` ends each new fact line with its expiry comment.
    """
    at = text.find(old_text)
    if not old_text.strip() or at < 0:
        return None
    ends_with_newline = text.endswith("\n")
    lines = (text[:-1] if ends_with_newline else text).split("\n")
    first = text.count("\n", 0, at)
    last = min(text.count("\n", 0, at + len(old_text.rstrip("\n"))), len(lines) - 1)
    old_lines = lines[first : last + 1]
    new_lines = new_text.strip("\n").split("\n")
    marker = _MARKER_RE.match(old_lines[0])
    if marker is not None and _MARKER_RE.match(new_lines[0]) is None:
        new_lines[0] = marker[0] + new_lines[0].lstrip()
    if source:
        new_lines = [with_provenance(line, source) for line in new_lines]
    if expires is not None:
        new_lines = [with_expiry(line, expires) if normalize_fact(line) else line for line in new_lines]
    entries = [_history_entry(line, day) for line in old_lines if normalize_fact(line)]
    lines[first : last + 1] = new_lines
    _add_history(lines, entries)
    return "\n".join(lines) + ("\n" if ends_with_newline else "")


def superseded_statements(text: str) -> list[tuple[str, dt.date]]:
    """The facts :func:`supersede_in` struck in ``text``: ``(old statement, day superseded)``, in order."""
    found = []
    for match in _SUPERSEDED_RE.finditer(text) if "(superseded " in text else ():
        with contextlib.suppress(ValueError):  # 2026-13-40 names no day
            found.append((match[1], dt.date.fromisoformat(match[2])))
    return found


def past_facts(path: str, text: str) -> list[PastFact]:
    """The lines of ``text`` (the file at ``path``) that :func:`supersede_in` struck, with when each held.

    A struck line held from its own provenance day (else its daily log's date; undated evergreen
    text: since always, ``since`` ``None``) until the day it was superseded, that day excluded.
    """
    if "(superseded " not in text:
        return []
    logged = daily_date(path)
    found = []
    for number, line in enumerate(text.replace("\r\n", "\n").split("\n"), start=1):
        match = _SUPERSEDED_RE.match(line)
        if match is None:
            continue
        try:
            until = dt.date.fromisoformat(match[2])
        except ValueError:  # 2026-13-40 names no day
            continue
        since = provenance_day(parse_provenance(line)) or logged
        found.append(PastFact(path, number, line, strip_annotations(match[1]).strip(), since, until))
    return found


def _history_sections(lines: list[str]) -> Iterator[tuple[int, int]]:
    """``(heading index, end)`` of each History section; ``end`` is the next heading of its level or above."""
    start: tuple[int, int] | None = None
    for i, (_, heading) in enumerate(_outline(lines)):
        if heading is None:
            continue
        level = len(heading[1])
        if start is not None and level <= start[1]:
            yield start[0], i
            start = None
        if start is None and (heading[2] or "").strip().casefold() in HISTORY_TITLES:
            start = (i, level)
    if start is not None:
        yield start[0], len(lines)


def before_history(text: str, addition: str) -> str | None:
    """``text`` with ``addition`` inserted above a History section that ends it; ``None`` when none does.

    An append to such a file would land in the History section, where its facts count as superseded.
    """
    lines = text.split("\n")
    last = next((at for at, end in reversed(list(_history_sections(lines))) if end == len(lines)), None)
    if last is None:
        return None
    while last > 0 and not lines[last - 1].strip():
        last -= 1
    lines[last:last] = addition.strip("\n").split("\n")
    return "\n".join(lines)


def ending_section(text: str) -> str | None:
    """The ``##`` (or deeper) heading line whose section an append to ``text`` would join; ``None``
    when it would join none (no heading, or only the document's ``#`` title, above it).

    An append lands at the end of the text, above a History section that closes it (see
    :func:`before_history`): in the last live section there.
    """
    lines = text.split("\n")
    closing = next((at for at, end in reversed(list(_history_sections(lines))) if end == len(lines)),
                   len(lines))
    heading = heading_above(lines[:closing], closing - 1)
    return heading if heading is not None and heading.startswith("##") else None


def into_section(text: str, section: str, addition: str) -> str | None:
    """``text`` with ``addition`` at the end of its first live section titled ``section``; else ``None``.

    ``section`` is a heading (``## Doctors``: that level and title) or a bare title (any level);
    titles compare case-insensitively. The addition goes after the section's own last line,
    above its trailing blank lines and any sub-heading.
    """
    wanted = _HEADING_RE.match(section.strip())
    level = len(wanted[1]) if wanted else None
    title = (wanted[2] or "" if wanted else section).strip().casefold()
    lines = text.split("\n")
    outline = [heading for _, heading in _outline(lines)]
    hidden = hidden_lines(lines)
    for at, heading in enumerate(outline):
        if (heading is None or hidden[at] or (heading[2] or "").strip().casefold() != title
                or level not in (None, len(heading[1]))):
            continue
        end = next((i for i in range(at + 1, len(lines)) if outline[i] is not None), len(lines))
        while end - 1 > at and not lines[end - 1].strip():
            end -= 1
        lines[end:end] = addition.strip("\n").split("\n")
        return "\n".join(lines)
    return None


def _history_entry(line: str, day: dt.date, why: str = "superseded") -> str:
    body = _MARKER_RE.sub("", strip_annotations(line)).strip().replace("~~", "~")
    sources = "".join(f" <!-- src: {src} -->" for src in parse_provenance(line))
    return f"- ~~{body}~~ ({why} {day.isoformat()}){sources}"


def _add_history(lines: list[str], entries: list[str]) -> None:
    if not entries:
        return
    section = next(_history_sections(lines), None)
    if section is None:
        while lines and not lines[-1].strip():
            lines.pop()
        lines.extend(["", "## History", *entries])
        return
    at, end = section
    while end - 1 > at and not lines[end - 1].strip():
        end -= 1
    lines[end:end] = entries
