"""Stage 3: temporal decay — recent daily and session memories count more.

``multiplier = floor + (1 - floor) · exp(-ln2 / half_life_days · age_days)``:
with the seed's ``floor=0``, 1.0 today, 0.5 at one half life, 0.25 at two. Evergreen files
(``MEMORY.md``, any non-dated topic file such as ``goals.md``) never decay: a standing preference
does not lose value for having been written long ago.

Example:
    .. code-block:: python

        from langchain_md_memory.search.decay import decay_multiplier

        assert decay_multiplier(30, 30) == 0.5
        assert decay_multiplier(-3, 30) == 1.0  # future dates clamp to "today"
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from collections.abc import Iterable

from ..errors import MemoryInputError
from ..files.paths import daily_date
from ..types import MemorySearchResult
from .merge import sort_hits

__all__ = ["apply_temporal_decay", "decay_multiplier", "hit_age_days"]

_SECONDS_PER_DAY = 86_400.0


def decay_multiplier(age_days: float, half_life_days: float, floor: float = 0.0) -> float:
    """``floor + (1 - floor) · exp(-ln2 / half_life_days · max(0, age_days))``.

    With ``floor=0`` (the seed's formula) an old note fades towards 0; with a
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
    if hit.file_kind == "session":
        if hit.updated_at <= 0:
            return None
        return (now.timestamp() - hit.updated_at) / _SECONDS_PER_DAY
    day = daily_date(hit.path)
    if day is None:
        return None
    # A daily file names a day, not an instant: age it by calendar days.
    return float((now.date() - day).days)


def apply_temporal_decay(
    hits: Iterable[MemorySearchResult],
    *,
    half_life_days: float,
    now: dt.datetime,
    enabled: bool = True,
    floor: float = 0.0,
) -> list[MemorySearchResult]:
    """Multiply each dated hit's score by its decay, record it in ``decay``, re-sort.

    Undated hits, and every hit when ``enabled`` is false, pass through
    untouched, so their ``decay`` stays exactly 1.0 (the default of a fresh hit).
    """
    out: list[MemorySearchResult] = []
    for hit in hits:
        age = hit_age_days(hit, now) if enabled else None
        if age is None:
            out.append(hit)
            continue
        multiplier = decay_multiplier(age, half_life_days, floor)
        out.append(dataclasses.replace(hit, score=hit.score * multiplier, decay=hit.decay * multiplier))
    return sort_hits(out)
