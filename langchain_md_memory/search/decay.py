"""Step 6, decay: recent daily and session memories count more.

``multiplier = floor + (1 - floor) · exp(-ln2 / half_life_days · age_days)``:
with the specification's ``floor=0``, 1.0 today, 0.5 at one half life, 0.25 at two. Evergreen files
(``MEMORY.md``, any non-dated topic file such as ``goals.md``) never decay: a standing preference
does not lose value for having been written long ago.

Recency also orders statements of one fact: a hit holding a line the package wrote on day *W*
(its ``<!-- src: ... W -->`` comment, e.g. left by ``supersede``) is newer than a log or note
dated before *W*: when it answers the query itself (it is labelled ``confident``), it takes
the place of such a hit ranked above it that it scores at least ``newer_first`` (0.8, the default
decay floor: the span age alone may move an old note by) times as much. It is raised to that hit's
score, above whatever stood between them (the query found the fact there; its current statement
belongs there), the factor recorded in its ``decay`` (above 1). The older hit's score is lowered to
just below it, the factor recorded in its ``decay``; it is not buried.

Example:
    .. code-block:: python

        from langchain_md_memory.search.decay import decay_multiplier

        assert decay_multiplier(30, 30) == 0.5
        assert decay_multiplier(-3, 30) == 1.0  # future dates clamp to "today"
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Sequence

from ..errors import MemoryInputError
from ..files.facts import provenance_day
from ..files.paths import daily_date
from ..types import MemorySearchResult
from .merge import sort_hits

__all__ = ["age_days", "apply_temporal_decay", "decay_multiplier", "hit_age_days", "hit_day", "known_day",
           "lifted_to", "newer_statements_first", "placed_below"]

_SECONDS_PER_DAY = 86_400.0


def decay_multiplier(age_days: float, half_life_days: float, floor: float = 0.0) -> float:
    """``floor + (1 - floor) · exp(-ln2 / half_life_days · max(0, age_days))``.

    With ``floor=0`` (the specification's formula) an old note fades towards 0; with a
    floor it never drops below ``floor``, so age only decides between notes
    of comparable relevance.

    Raises:
        ValueError: if ``half_life_days`` is not positive or ``floor`` is outside [0, 1].
    """
    if not half_life_days > 0:
        raise MemoryInputError(f"half_life_days must be positive, got {half_life_days}")
    if not 0.0 <= floor <= 1.0:
        raise MemoryInputError(f"the decay floor must be within [0, 1], got {floor}")
    if math.isnan(age_days):
        # An unreadable age is no evidence of staleness.
        return 1.0
    return floor + (1.0 - floor) * math.exp(-math.log(2) / half_life_days * max(0.0, age_days))


def hit_age_days(hit: MemorySearchResult, now: dt.datetime) -> float | None:
    """Age of a hit in days, or ``None`` when it must not decay.

    Session chunks age from ``updated_at`` (when they were indexed; an unknown
    ``0`` means no decay). Daily logs age in whole calendar days from the
    date in their file name (today's log is 0 days old all day, a log from 30
    days ago is exactly one half life of 30 days old), using ``now``'s own
    date. Everything else is evergreen.
    """
    return age_days(hit.file_kind, hit.updated_at, hit.path, now)


def age_days(file_kind: str, updated_at: float, path: str, now: dt.datetime) -> float | None:
    """:func:`hit_age_days` of a hit of that kind, indexing time and path."""
    if file_kind == "session":
        if updated_at <= 0:
            return None
        return (now.timestamp() - updated_at) / _SECONDS_PER_DAY
    day = daily_date(path)
    if day is None:
        return None
    # A daily file names a day, not an instant: age it by calendar days.
    return float((now.date() - day).days)


def hit_day(hit: MemorySearchResult) -> dt.date | None:
    """The newest day a hit is known to state things as of, or ``None`` when none is known.

    A daily log's day, a session chunk's indexing day, and the newest day its provenance
    comments end with (the day the package wrote a line of it); undated evergreen text has none.
    """
    return known_day(hit.provenance, hit.path, hit.file_kind, hit.updated_at)


def known_day(provenance: Sequence[str], path: str, file_kind: str, updated_at: float) -> dt.date | None:
    """:func:`hit_day` of a hit of that provenance, path, kind and indexing time."""
    days = [provenance_day(provenance), daily_date(path)]
    if file_kind == "session" and updated_at > 0:
        days.append(dt.datetime.fromtimestamp(updated_at).date())
    return max((day for day in days if day is not None), default=None)


def placed_below(older: MemorySearchResult, score: float) -> MemorySearchResult:
    """``older`` scored just below ``score`` (never raised), the factor also recorded in its ``decay``."""
    if older.score <= 0:
        return older
    factor = min(1.0, score / older.score * (1.0 - 1e-9))
    return older.revised(score=older.score * factor, decay=older.decay * factor)


def lifted_to(newer: MemorySearchResult, score: float) -> MemorySearchResult:
    """``newer`` scored ``score`` when that is higher: it takes an older statement's place."""
    if newer.score <= 0 or score <= newer.score:
        return newer
    factor = score / newer.score
    return newer.revised(score=score, decay=newer.decay * factor)


def newer_statements_first(hits: Iterable[MemorySearchResult], ratio: float,
                           min_relevance: float = 0.0) -> list[MemorySearchResult]:
    """``hits`` re-sorted: a newer written statement takes the place of older dated hits of comparable score.

    For each hit whose provenance names the day it was written (*W*) and whose ``relevance`` is at
    least ``min_relevance`` (it answers the query itself: a chunk is dated by any line written in
    it, which may be on a neighbouring subject), the dated hits ranked above it whose day is before
    *W* and whose score it reaches ``ratio`` times of give it the best of their scores
    (:func:`lifted_to`) and move to just below it (score and ``decay`` scaled by the same factor).
    Hits without provenance never move others.
    """
    out = sort_hits(hits)
    written = sorted((i for i, hit in enumerate(out)
                      if hit.relevance >= min_relevance and provenance_day(hit.provenance) is not None),
                     key=lambda i: -out[i].score)
    if not written:  # no written statement to put first: the order stands
        return out
    days = [hit_day(hit) for hit in out]
    for n in written:
        newer, day = out[n], days[n]
        assert day is not None
        older = [o for o, (hit, then) in enumerate(zip(out, days, strict=True))
                 if then is not None and then < day and hit.score > newer.score > 0
                 and newer.score >= ratio * hit.score]
        if not older:
            continue
        top = max(out[o].score for o in older)
        out[n] = lifted_to(newer, top)
        for o in older:
            out[o] = placed_below(out[o], top)
    return sort_hits(out)


def apply_temporal_decay(
    hits: Iterable[MemorySearchResult],
    *,
    half_life_days: float,
    now: dt.datetime,
    enabled: bool = True,
    floor: float = 0.0,
    newer_first: float = 1.0,
    newer_relevance: float = 0.0,
) -> list[MemorySearchResult]:
    """Multiply each dated hit's score by its decay, record it in ``decay``, re-sort.

    Undated hits, and every hit when ``enabled`` is false, pass through
    untouched, so their ``decay`` stays exactly 1.0 (the default of a fresh hit).
    When enabled and ``newer_first < 1``, :func:`newer_statements_first` then orders
    written statements above older dated hits scoring at most ``1 / newer_first`` times as much
    (only those whose ``relevance`` reaches ``newer_relevance``).
    """
    out: list[MemorySearchResult] = []
    for hit in hits:
        age = hit_age_days(hit, now) if enabled else None
        if age is None:
            out.append(hit)
            continue
        multiplier = decay_multiplier(age, half_life_days, floor)
        out.append(hit.revised(score=hit.score * multiplier, decay=hit.decay * multiplier))
    if enabled and newer_first < 1.0:
        return newer_statements_first(out, newer_first, newer_relevance)
    return sort_hits(out)
