"""As of a date: when each fact held, and what the memory believed on a given day.

The Markdown already records when a fact was true. A live line holds from the day it was written (the
newest day of its ``<!-- src: ... -->`` comment, else its daily log's date; undated evergreen text:
since always) and is still open. A line :func:`~langchain_md_memory.files.facts.supersede_in` struck under
``## History`` (``- ~~old~~ (superseded 2026-03-01)``) held from its own provenance day until the day it
was superseded, that day excluded. Struck lines are kept out of the index, so ordinary search never
returns them; an as-of search reads them here (:func:`past_facts`) and ranks those valid on the day
(:func:`as_of_ranked`) above the current statements. :func:`asked_day` reads the day a question asks
about (``in March 2025``, ``去年三月``, ``last month``) when the caller gave none.

Example:
    .. code-block:: python

        import datetime as dt

        from langchain_md_memory.search.asof import asked_day, past_facts

        text = "- Rent 1,720\\n\\n## History\\n- ~~Rent 1,650~~ (superseded 2026-03-01)\\n"
        [fact] = past_facts("MEMORY.md", text)
        assert (fact.line, fact.until) == (4, dt.date(2026, 3, 1))
        assert fact.holds(dt.date(2026, 2, 28)) and not fact.holds(dt.date(2026, 3, 1))
        assert asked_day("what was my rent in 2026-02?", dt.date(2026, 12, 5)) == (dt.date(2026, 2, 28))
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..files.facts import parse_provenance, provenance_day, strip_annotations
from ..files.paths import daily_date, file_kind
from ..types import MemorySearchResult
from .periods import Period, named_period

__all__ = ["PastFact", "as_of_ranked", "asked_day", "hit_interval", "past_facts", "period_end"]

_STRUCK_RE = re.compile(
    r"^[ \t]*(?:(?:[-*+]|\d+[.)])[ \t]+)?~~(\S.*?)~~[ \t]*\(superseded (\d{4}-\d{2}-\d{2})\)")

PAST_MARGIN = 0.1
"""A past fact joins an as-of answer when its similarity to the question is at most this far below the
best current hit's (or when no current hit has a vector score): near enough to answer the same question."""

KEYWORD_SHARE = 0.3
"""Without vectors, a past fact joins when it holds this share of the question's informative terms (idf)."""


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


def past_facts(path: str, text: str) -> list[PastFact]:
    """The lines of ``text`` (the file at ``path``) that supersede struck, with when each held."""
    if "(superseded " not in text:
        return []
    logged = daily_date(path)
    found = []
    for number, line in enumerate(text.replace("\r\n", "\n").split("\n"), start=1):
        match = _STRUCK_RE.match(line)
        if match is None:
            continue
        try:
            until = dt.date.fromisoformat(match[2])
        except ValueError:  # 2026-13-40 names no day
            continue
        since = provenance_day(parse_provenance(line)) or logged
        found.append(PastFact(path, number, line, strip_annotations(match[1]).strip(), since, until))
    return found


def hit_interval(hit: MemorySearchResult) -> tuple[dt.date | None, None]:
    """When a live hit holds: from the oldest day one of its lines was written, still open.

    A line's day is its provenance day, else its daily log's date; an undated line of an evergreen
    file holds since always, and so does the hit (``None``).
    """
    logged = daily_date(hit.path)
    days = []
    for line in hit.text.split("\n"):
        if line.strip() and not line.lstrip().startswith("#"):
            day = provenance_day(parse_provenance(line)) or logged
            if day is None:
                return None, None
            days.append(day)
    return min(days, default=logged), None


def asked_day(question: str, today: dt.date) -> dt.date | None:
    """The day a question asks about: the last day of the period it names (never after ``today``)."""
    return period_end(named_period(question, today), today)


def period_end(period: Period | None, today: dt.date) -> dt.date | None:
    """The last day of ``period`` that is not after ``today``; ``None`` for no period.

    A month named without a year (``in June``, ``三月份``) is its latest one that has begun.
    """
    if period is None:
        return None
    if period.month is not None:
        year = today.year if period.month <= today.month else today.year - 1
        end = dt.date(year, period.month, calendar.monthrange(year, period.month)[1])
    else:
        assert period.end is not None
        end = period.end
    return min(end, today)


def _as_hit(fact: PastFact, score: float, vector: bool, confident: bool) -> MemorySearchResult:
    return MemorySearchResult(
        path=fact.path, start_line=fact.line, end_line=fact.line, text=fact.text, score=score,
        vector_score=score if vector else None, keyword_score=None if vector else score,
        source="vector" if vector else "keyword", file_kind=file_kind(fact.path), merged_score=score,
        chunk_id=f"past:{fact.path}#L{fact.line}", relevance=score, provenance=parse_provenance(fact.text),
        confident=confident, valid_from=fact.since.isoformat() if fact.since else None,
        valid_until=fact.until.isoformat(),
    )


def as_of_ranked(hits: Sequence[MemorySearchResult], facts: Sequence[PastFact], scores: Sequence[float],
                 day: dt.date, k: int, *, vector: bool, strict: bool) -> list[MemorySearchResult]:
    """The top ``k`` of an as-of answer for ``day``: past facts valid then, then the current hits.

    ``scores`` are each fact's similarity to the question (cosine when ``vector``, else the share of
    the question's terms it holds). A past fact counts when it held on ``day`` and is near enough the
    best current hit (:data:`PAST_MARGIN`); those go first, most similar first, since they are the
    statements that day believed and the current ones replaced. Every hit carries its interval.
    A current hit written after ``day`` is dropped when ``strict`` (the caller asked for that day);
    a day read from the question only adds the past (the question may ask about an event logged later).
    """
    best = max((hit.vector_score or 0.0 for hit in hits), default=0.0) if vector else 0.0
    bar = best - PAST_MARGIN if vector and best > 0 else (0.0 if vector else KEYWORD_SHARE)
    chosen = sorted(((score, fact) for fact, score in zip(facts, scores, strict=True)
                     if fact.holds(day) and score >= bar and score > 0), key=lambda item: -item[0])
    # As sure as the best current hit it stands beside (a keyword-only memory: the share it holds).
    sure = any(hit.confident for hit in hits) if vector else True
    past = [_as_hit(fact, score, vector, sure) for score, fact in chosen]
    current = []
    for hit in hits:
        since, _ = hit_interval(hit)
        if strict and since is not None and since > day:
            continue
        current.append(hit.revised(valid_from=since.isoformat() if since else None))
    return [*past, *current][:k]
