"""As of a date: when each fact held, and what the memory believed on a given day.

The Markdown already records when a fact was true. A live line holds from the day it was written (the
newest day of its ``<!-- src: ... -->`` comment, else its daily log's date; undated evergreen text:
since always) and is still open. A line :func:`~langchain_md_memory.files.sections.supersede_in` struck
under ``## History`` (``- ~~old~~ (superseded 2026-03-01)``) held from its own provenance day until the
day it was superseded, that day excluded (:class:`~langchain_md_memory.files.sections.PastFact`). Struck
lines are never chunks, so ordinary search never returns them; the index keeps them apart, with their
days and vectors, and an as-of search ranks those valid on the day (:func:`as_of_ranked`) above the
current statements. :func:`asked_day` reads the day a question asks about (``in March 2025``,
``去年三月``, ``last month``) when the caller gave none.

Example:
    .. code-block:: python

        import datetime as dt

        from langchain_md_memory.search.asof import asked_day, held_on

        assert asked_day("what was my rent in 2026-02?", dt.date(2026, 12, 5)) == (dt.date(2026, 2, 28))
        text = "- Rent 1,720 <!-- src: via=x 2026-03-01 -->\n- Tea: sencha"
        assert held_on(text, "MEMORY.md", dt.date(2026, 2, 28)) == "- Tea: sencha"
"""

from __future__ import annotations

import calendar
import datetime as dt
from collections.abc import Sequence

from ..files.facts import parse_provenance, provenance_day
from ..files.paths import daily_date, file_kind
from ..files.sections import PastFact
from ..types import MemorySearchResult
from .periods import Period, named_period

__all__ = ["as_of_ranked", "asked_day", "held_on", "hit_interval", "period_end"]

PAST_MARGIN = 0.1
"""A past fact joins an as-of answer when its similarity to the question is at most this far below the
best current hit's (or when no current hit has a vector score): near enough to answer the same question."""

KEYWORD_SHARE = 0.3
"""Without vectors, a past fact joins when it holds this share of the question's informative terms (idf)."""


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


def held_on(text: str, path: str, day: dt.date) -> str | None:
    """``text`` (lines of the file at ``path``) without its lines written after ``day``; ``None`` when
    none of its facts was written by then. Headings and blank lines stay; a line's day is as in
    :func:`hit_interval`."""
    logged = daily_date(path)
    kept, facts = [], 0
    for line in text.split("\n"):
        if line.strip() and not line.lstrip().startswith("#"):
            written = provenance_day(parse_provenance(line)) or logged
            if written is not None and written > day:
                continue
            facts += 1
        kept.append(line)
    return "\n".join(kept).strip("\n") if facts else None


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
    When ``strict`` (the caller asked for that day) a current hit shows only the lines written by
    then (:func:`held_on`), and is dropped when none was; a day read from the question only adds the
    past (the question may ask about an event logged later).
    """
    best = max((hit.vector_score or 0.0 for hit in hits), default=0.0) if vector else 0.0
    bar = best - PAST_MARGIN if vector and best > 0 else (0.0 if vector else KEYWORD_SHARE)
    chosen = sorted(((score, fact) for fact, score in zip(facts, scores, strict=True)
                     if fact.holds(day) and score >= bar and score > 0), key=lambda item: -item[0])
    # As sure as the best current hit it stands beside (a keyword-only memory: the share it holds).
    sure = any(hit.confident for hit in hits) if vector else True
    past = [_as_hit(fact, score, vector, sure) for score, fact in chosen[:k]]
    current: list[MemorySearchResult] = []
    for hit in hits:
        if len(past) + len(current) >= k:
            break
        if strict:
            text = held_on(hit.text, hit.path, day)
            if text is None:
                continue
            hit = hit if text == hit.text else hit.revised(text=text)
        since, _ = hit_interval(hit)
        current.append(hit.revised(valid_from=since.isoformat() if since else None))
    return [*past, *current]
