"""What the question asks for weighs hits: an answer over a question, the period it names over others.

Two multipliers, applied with the source weights (before decay) and recorded in a hit's ``weight``:

- **a question is not an answer.** A hit whose text only asks something ("Where did you go on
  that road trip?", a user's question kept in a transcript) shares the words of a question about
  the same thing, and outranks the reply that holds the answer. It scores ``question_weight``.
- **the period a question names.** "What did I pay in March 2025?", "上个月买了什么": a hit dated
  outside that period (the first full date its text gives, or its log's day) scores
  ``period_weight``; a note dated up to :data:`~langchain_md_memory.search.periods.REPORTED_WITHIN_DAYS`
  after it still tells of it. Undated hits are left alone.

LoCoMo (bench/QUALITY.md): the reply below a matching question is the gold turn of many misses,
and a named date the only thing that tells one session's turns from another's.

Example:
    .. code-block:: python

        from langchain_md_memory.search.focus import asks_only

        assert asks_only("Maria (2:05 pm on 3 March, 2023): Wow! Where did you go?\\n[image: a lake]")
        assert not asks_only("- Should I refinance? Decided: keep the fixed rate.")
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from ..types import MemorySearchResult
from .decay import hit_day
from .periods import REPORTED_WITHIN_DAYS, Period, text_day
from .weighting import reweighted

__all__ = ["apply_question_focus", "asks_only", "outside_period"]

_NOT_PROSE = re.compile(r"^\s*(?:#|\[[^\]]*\]\s*$|<!--)")
_COMMENT = re.compile(r"<!--.*?-->", re.S)


@functools.lru_cache(maxsize=4096)  # asked of every hit of every search: its text, once
def asks_only(text: str) -> bool:
    """True when ``text`` ends on a question: its last line of prose (not a heading, an
    ``[image: ...]`` line or a comment) ends with a question mark."""
    prose = [line for line in _COMMENT.sub("", text).splitlines()
             if line.strip() and not _NOT_PROSE.match(line)]
    return bool(prose) and prose[-1].rstrip().endswith(("?", "？"))


def outside_period(hit: MemorySearchResult, period: Period) -> bool:
    """True when ``hit`` is dated (its text's first full date, its log's day) and no date of it
    falls in ``period`` or the days just after it."""
    days = [day for day in (text_day(hit.text), hit_day(hit)) if day is not None]
    return bool(days) and not any(period.holds(day, within=REPORTED_WITHIN_DAYS) for day in days)


def apply_question_focus(
    hits: Iterable[MemorySearchResult], *, period: Period | None, question_weight: float,
    period_weight: float,
) -> list[MemorySearchResult]:
    """Multiply the score (and ``weight``) of question-only hits and of hits dated outside ``period``.

    Hits come back unchanged (same objects, same order) when no multiplier applies; otherwise
    re-sorted by the new scores.
    """
    def multiplier(hit: MemorySearchResult) -> float:
        factor = 1.0
        if question_weight != 1.0 and asks_only(hit.text):
            factor *= question_weight
        if period is not None and period_weight != 1.0 and outside_period(hit, period):
            factor *= period_weight
        return factor

    return reweighted(hits, multiplier)
