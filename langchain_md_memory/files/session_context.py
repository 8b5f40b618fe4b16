"""The session context: MEMORY.md, today's and yesterday's logs within a budget, never dropped silently.

When everything fits, each file is shown whole under ``## <file>``. When it
does not, each file is cut rather than left out:

- **Shares.** Today's and yesterday's logs are guaranteed up to
  :data:`LOG_SHARE` of the budget (less when they need less); MEMORY.md gets
  the rest, and whatever one file leaves unused goes to the next.
- **Structure first.** Within a file, the headings come first, then the first
  content line of every section, then every section's second line, and so on
  (:func:`cut_to_budget`): a long MEMORY.md keeps its outline and the top of
  each topic, and a flat list of rules keeps its first rules.
- **A note the model reads.** The context ends with one line per cut file,
  e.g. ``MEMORY.md: 62 of 150 lines shown; search the rest with memory_search``,
  and the first cut in a process logs a warning.

The notes always appear, so when the budget cannot hold even them the text
exceeds it by their length (a few dozen tokens); ``max_tokens <= 0`` turns the
context off.

Example:
    .. code-block:: python

        from langchain_md_memory.files.session_context import build_session_context, load_session_context

        text = load_session_context(store, max_tokens=2000)
        fit = build_session_context(store, max_tokens=2000)
        [(f.name, f.shown_lines, f.total_lines) for f in fit.files]   # [("MEMORY.md", 62, 150), ...]
"""

from __future__ import annotations

import datetime as dt
import logging
import math
from dataclasses import dataclass

from ..errors import MemoryStoreError
from ..text import CJK_CHAR_RE, estimate_tokens, heading_level
from .base import DocumentStore
from .paths import LONG_TERM_FILE, daily_file_name

__all__ = ["LOG_SHARE", "FileShown", "SessionContext", "build_session_context", "cut_to_budget",
           "load_session_context"]

logger = logging.getLogger(__name__)

LOG_SHARE = 0.3
"""Share of the budget kept for today's and yesterday's logs when not everything fits."""

_warned: set[str] = set()


@dataclass(frozen=True, slots=True)
class FileShown:
    """How much of one file the session context shows."""

    name: str
    shown_lines: int
    """Non-blank lines shown."""
    total_lines: int
    """Non-blank lines in the file."""
    tokens: int
    """Estimated tokens of the whole file's section."""

    @property
    def cut(self) -> bool:
        """True when some lines were left out."""
        return self.shown_lines < self.total_lines

    @property
    def note(self) -> str:
        """The line the model reads about a cut file."""
        rest = "the rest" if self.shown_lines else "it"
        return (f"{self.name}: {self.shown_lines} of {self.total_lines} lines shown; "
                f"search {rest} with memory_search")


@dataclass(frozen=True, slots=True)
class SessionContext:
    """The context text and what it shows of each file."""

    text: str
    files: tuple[FileShown, ...]
    max_tokens: int

    @property
    def cut(self) -> bool:
        """True when some file is not shown whole."""
        return any(f.cut for f in self.files)

    @property
    def notes(self) -> list[str]:
        """One note per cut file."""
        return [f.note for f in self.files if f.cut]


def _line_cost(line: str) -> float:
    # estimate_tokens before rounding, newline included: additive over lines.
    cjk = len(CJK_CHAR_RE.findall(line))
    return cjk + (len(line) + 1 - cjk) / 3.5


def _priorities(lines: list[str]) -> list[int]:
    """Indices of the non-blank lines, most important first: headings, then each section's n-th line."""
    ranks: list[tuple[int, int]] = []
    nth = 0
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        if heading_level(line):
            nth = 0
            ranks.append((0, i))
        else:
            nth += 1
            ranks.append((nth, i))
    return [i for _, i in sorted(ranks)]


def _render(lines: list[str], chosen: set[int]) -> str:
    out: list[str] = []
    for i, line in enumerate(lines):
        if i in chosen:
            if heading_level(line) and out and out[-1]:
                out.append("")
            out.append(line)
        elif not line.strip() and out and out[-1]:
            out.append("")
    return "\n".join(out).strip()


def cut_to_budget(content: str, max_tokens: int) -> tuple[str, int, int]:
    """``content`` cut to ``max_tokens``, keeping structure: ``(text, shown lines, total lines)``.

    Lines are taken in priority order (headings, then the first line of every
    section, then the second, ...) while they fit; a line too long for what is
    left is skipped and shorter ones are still tried. The kept lines stay in
    their original order. Lines count when not blank.
    """
    lines = content.splitlines()
    order = _priorities(lines)
    chosen: list[int] = []
    used = 0.0
    for i in order:
        cost = _line_cost(lines[i])
        if used + cost <= max_tokens:
            chosen.append(i)
            used += cost
    text = _render(lines, set(chosen))
    while chosen and estimate_tokens(text) > max_tokens:  # rounding: drop the least important line
        chosen.pop()
        text = _render(lines, set(chosen))
    return text, len(chosen), len(order)


def _read(store: DocumentStore, name: str) -> str:
    try:
        return store.read(name).strip() if store.exists(name) else ""
    except MemoryStoreError as exc:
        logger.warning("session context: skipping %s: %s", name, exc)
        return ""


def _count_lines(content: str) -> int:
    return sum(1 for line in content.splitlines() if line.strip())


def _section(name: str, body: str) -> str:
    return f"## {name}\n\n{body}"


def _water_fill(needs: list[int], total: int) -> list[int]:
    """``total`` split over ``needs``: equal shares, a need below its share keeps only what it needs."""
    alloc = [0] * len(needs)
    pending = list(range(len(needs)))
    left = total
    while pending and left > 0:
        share = left // len(pending)
        settled = [i for i in pending if needs[i] - alloc[i] <= share]
        if not settled:
            for i in pending:
                alloc[i] += share
            break
        for i in settled:
            left -= needs[i] - alloc[i]
            alloc[i] = needs[i]
        pending = [i for i in pending if i not in settled]
    return alloc


def _cut_all(files: list[tuple[str, str]], avail: int) -> tuple[list[str], list[FileShown]]:
    """Each file cut to its share of ``avail`` tokens: the sections and what each shows."""
    need = {name: estimate_tokens(_section(name, body)) + 1 for name, body in files}
    logs = [name for name, _ in files if name != LONG_TERM_FILE]
    shares = _water_fill([need[n] for n in logs], math.floor(avail * LOG_SHARE))
    log_alloc = dict(zip(logs, shares, strict=True))
    spare = avail - sum(log_alloc.values())  # MEMORY.md's share; what a file leaves unused flows on
    sections: list[str] = []
    shown: list[FileShown] = []
    for name, body in files:
        budget = spare + log_alloc.get(name, 0)
        header = estimate_tokens(_section(name, "")) + 1
        text, kept, total = cut_to_budget(body, max(budget - header, 0))
        spare = budget
        if kept:
            section = _section(name, text)
            sections.append(section)
            spare -= estimate_tokens(section) + 1  # +1: the blank line joining sections
        shown.append(FileShown(name, kept, total, need[name] - 1))
    return sections, shown


def build_session_context(store: DocumentStore, max_tokens: int, today: dt.date | None = None, *,
                          warn: bool = True) -> SessionContext:
    """MEMORY.md, today's and yesterday's logs as ``## <file>`` sections within ``max_tokens``.

    Tokens are counted by :func:`text.estimate_tokens` (CJK-aware). Files that
    do not all fit are cut (see the module docstring), never left out, and the
    text ends with a note per cut file. Empty and missing files are skipped;
    the text is ``""`` only when no file has content or ``max_tokens <= 0``.
    ``warn``: log the first cut of each file in the process (off for reports).
    """
    day = today or dt.date.today()
    names = dict.fromkeys([LONG_TERM_FILE, daily_file_name(day), daily_file_name(day - dt.timedelta(days=1))])
    files = [(name, body) for name in names if (body := _read(store, name))]
    if max_tokens <= 0 or not files:
        return SessionContext("", tuple(FileShown(n, 0, _count_lines(b), 0) for n, b in files), max_tokens)
    whole = "\n\n".join(_section(name, body) for name, body in files)
    if estimate_tokens(whole) <= max_tokens:
        return SessionContext(whole, tuple(FileShown(n, _count_lines(b), _count_lines(b),
                                                     estimate_tokens(_section(n, b))) for n, b in files),
                              max_tokens)
    # Room for the longest notes the cut can need (every file, full line counts).
    worst = [FileShown(n, _count_lines(b), _count_lines(b) + 1, 0).note for n, b in files]
    avail = max_tokens - estimate_tokens("\n".join(worst)) - 2
    for _ in range(3):  # estimates of joined text are not exactly additive: shrink until it fits
        sections, shown = _cut_all(files, max(avail, 0))
        notes = [f.note for f in shown if f.cut]
        text = "\n\n".join([*sections, "\n".join(notes)] if notes else sections)
        over = estimate_tokens(text) - max_tokens
        if over <= 0 or avail <= 0:
            break
        avail -= over
    result = SessionContext(text, tuple(shown), max_tokens)
    if warn:
        _warn_once(result)
    return result


def _warn_once(context: SessionContext) -> None:
    for shown in context.files:
        if shown.cut and shown.name not in _warned:
            _warned.add(shown.name)
            hint = " (consolidate it with `md-memory dream`)" if shown.name == LONG_TERM_FILE else ""
            logger.warning("session context over its %d-token budget: %s%s; raise max_session_context_tokens "
                           "to show more", context.max_tokens, shown.note, hint)


def load_session_context(store: DocumentStore, max_tokens: int, today: dt.date | None = None) -> str:
    """The text of :func:`build_session_context`."""
    return build_session_context(store, max_tokens, today).text
