"""As of a date: when each fact held, and what the memory believed on a given day.

The Markdown already records when a fact was true. A live line holds from the day it was written (the
newest day of its ``<!-- src: ... -->`` comment, else its daily log's date; undated evergreen text:
since always) and is still open. A line :func:`~langchain_md_memory.files.sections.supersede_in` struck
under ``## History`` (``- ~~old~~ (superseded 2026-03-01)``) held from its own provenance day until the
day it was superseded, that day excluded (:class:`~langchain_md_memory.files.sections.PastFact`). Struck
lines are never chunks, so ordinary search never returns them; the index keeps them apart, with their
days and vectors.

An as-of search is the pipeline's step 10 (:func:`~langchain_md_memory.search.pipeline.as_of`):
:func:`asked_period` reads the day (given by the caller, or the end of a period the question names:
``in March 2025``, ``去年三月``, ``last month``); the searcher reads the struck facts valid on it with
what scores them against the question (their vectors and the query's; else the idf of the question's
informative terms, :func:`informative_terms`) into an :class:`AsOf`; :func:`answer_as_of` ranks those
near enough the question above the current hits (:func:`as_of_ranked`).

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
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import MemoryInputError
from ..files.facts import parse_provenance, provenance_day
from ..files.paths import daily_date, file_kind
from ..files.sections import PastFact
from ..text import token_set
from ..types import MemorySearchResult
from .periods import Period, named_period

__all__ = ["AsOf", "answer_as_of", "as_of_date", "as_of_ranked", "asked_day", "asked_period", "held_on",
           "hit_interval", "informative_terms", "past_scores", "period_end"]

logger = logging.getLogger(__name__)

PAST_MARGIN = 0.1
"""A past fact joins an as-of answer when its similarity to the question is at most this far below the
best current hit's (or when no current hit has a vector score): near enough to answer the same question."""

KEYWORD_SHARE = 0.3
"""Without vectors, a past fact joins when it holds this share of the question's informative terms (idf)."""

_DATE_TERMS = token_set(" ".join([*calendar.month_name, *calendar.month_abbr,
                                  "last this past month year week 去年 今年 前年 上个月 这个月 本月 月份"]))
"""Terms of a date phrase: they say when, not what, so a past fact is not scored on them."""


def as_of_date(value: Any) -> dt.date | None:
    """``value`` as an as-of day: a ``date`` (a ``datetime``'s day), an ISO ``YYYY-MM-DD`` string or ``None``.

    Raises:
        MemoryInputError: for anything else, naming the value and the format to use.
    """
    if value is None or (isinstance(value, dt.date) and not isinstance(value, dt.datetime)):
        return value
    if isinstance(value, dt.datetime):
        return value.date()
    text = str(value).strip()
    try:
        if len(text) == 10:
            return dt.date.fromisoformat(text)
    except ValueError:
        pass
    raise MemoryInputError(
        f"as_of={value!r} is not a date: give the day as YYYY-MM-DD, e.g. as_of='2025-03-31'")


def asked_period(query: str, as_of: Any, today: dt.date) -> tuple[Period | None, dt.date | None, bool]:
    """The period the question names (read once a search: it also weighs hits), the as-of day and
    whether the caller gave it (strict), else the end of that period."""
    period = named_period(query, today)
    day = as_of_date(as_of)
    return (period, day, True) if day is not None else (period, period_end(period, today), False)


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


def informative_terms(question: str) -> list[str]:
    """The question's terms a past fact is scored on without vectors: not those of a date phrase."""
    return sorted(t for t in token_set(question) if t not in _DATE_TERMS and not t.isdecimal())


@dataclass(frozen=True, slots=True)
class AsOf:
    """An as-of search: the day it answers for, and the struck facts that held then as the searcher read them.

    ``strict``: the caller gave ``day`` (else it was read from the question). ``facts`` held on ``day``
    (the index keeps them apart, :class:`~langchain_md_memory.files.sections.PastFact`). They are
    scored against the question by cosine when the search has the query's vector: ``vectors`` (one a
    fact, stored or embedded for this search) and ``query_vector``; else by the share of the question's
    informative ``terms`` (:func:`informative_terms`) they hold, each weighing its ``idf`` in the memory
    (a term no note holds, of idf ``absent_idf``, weighs nothing).
    """

    day: dt.date
    strict: bool
    facts: Sequence[PastFact] = ()
    vectors: Sequence[np.ndarray] | None = None
    query_vector: np.ndarray | None = None
    terms: Sequence[str] = ()
    idf: Mapping[str, float] = field(default_factory=dict)
    absent_idf: float = math.inf

    @property
    def by_vector(self) -> bool:
        """Whether the facts are scored by cosine (the search has the query's vector and theirs)."""
        return self.vectors is not None and self.query_vector is not None


def past_scores(asked: AsOf) -> list[float]:
    """Each past fact's similarity to the question: its cosine (clipped at 0), else the share of the
    question's informative terms' weight it holds (see :class:`AsOf`)."""
    if not asked.facts:
        return []
    if asked.vectors is not None and asked.query_vector is not None:  # by_vector
        cosines: list[float] = np.maximum(np.vstack(asked.vectors) @ asked.query_vector, 0.0).tolist()
        return cosines
    absent = asked.absent_idf
    weights = {t: asked.idf.get(t, absent) for t in asked.terms if asked.idf.get(t, absent) < absent}
    total = sum(weights.values())
    held = [token_set(fact.statement) for fact in asked.facts]
    return [sum(w for t, w in weights.items() if t in have) / total if total else 0.0 for have in held]


def _as_hit(fact: PastFact, score: float, vector: bool, confident: bool) -> MemorySearchResult:
    return MemorySearchResult(
        path=fact.path, start_line=fact.line, end_line=fact.line, text=fact.text, score=score,
        vector_score=score if vector else None, keyword_score=None if vector else score,
        retrieved_by="vector" if vector else "keyword", file_kind=file_kind(fact.path), merged_score=score,
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


def answer_as_of(hits: list[MemorySearchResult], asked: AsOf, k: int) -> list[MemorySearchResult]:
    """``hits`` answered as of ``asked.day`` (see :func:`as_of_ranked`), at most ``k``.

    A day read from the question that adds no past fact leaves the hits as they are.
    """
    scores = past_scores(asked)
    answered = as_of_ranked(hits, asked.facts, scores, asked.day, k, vector=asked.by_vector,
                            strict=asked.strict)
    logger.debug("as of %s (%s): %d past facts valid", asked.day, "asked" if asked.strict else "read",
                 len(asked.facts))
    if not asked.strict and len(answered) == len(hits) and all(
            a.chunk_id == b.chunk_id for a, b in zip(answered, hits, strict=True)):
        return hits
    return answered
