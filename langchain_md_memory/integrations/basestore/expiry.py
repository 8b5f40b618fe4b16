"""When a store item expires, written where a person reads it: a comment after its md-memory line.

An item put with a TTL (LangGraph's ``ttl=``, in minutes) carries, at the end of the line
below its heading, ``<!-- expires: 2026-07-14T12:30:00+00:00, ttl 10 min -->``: the moment
it expires (UTC) and the TTL a read refreshes it by. A person may edit the moment, drop the
``ttl`` part (the item then expires at that moment whatever reads it) or the whole comment
(it never expires); a bare date (``<!-- expires: 2027-01-31 -->``) is the last day it holds,
as for the facts of a memory file. The comment is one of the memory's annotations, so it stays
out of the index's terms and embeddings: refreshing an expiry never re-embeds an item.

Example:
    .. code-block:: python

        import datetime as dt
        from langchain_md_memory.integrations.basestore.expiry import Expiry, parse_expiry

        now = dt.datetime(2026, 7, 14, 12, 0, tzinfo=dt.UTC)
        expiry = Expiry.after(10, now)
        assert parse_expiry(expiry.comment()) == expiry
        assert expiry.refreshed(now + dt.timedelta(minutes=5)).at == now + dt.timedelta(minutes=15)
"""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import dataclass

from ...errors import MemoryInputError
from ...files.facts import expiry_day

__all__ = ["Expiry", "check_ttl", "parse_expiry"]

# The last whole second a datetime holds: written back as it reads (a comment keeps at most milliseconds).
_END_OF_TIME = dt.datetime.max.replace(microsecond=0, tzinfo=dt.UTC)
_COMMENT_RE = re.compile(r"<!--[ \t]*expires:[ \t]*(\S+?),?(?:[ \t]+ttl[ \t]+(\S+)[ \t]+min)?[ \t]*-->")


@dataclass(frozen=True, slots=True)
class Expiry:
    """An item's expiry: the moment ``at`` (UTC) and the TTL in minutes a read refreshes it by.

    ``minutes`` is ``None`` for an expiry written by hand without a TTL: reads leave it as is.
    """

    at: dt.datetime
    minutes: float | None = None

    @classmethod
    def after(cls, minutes: float, now: dt.datetime) -> Expiry:
        """The expiry of an item put (or read, refreshing it) at ``now`` with a TTL of ``minutes``."""
        return cls(now + dt.timedelta(minutes=check_ttl(minutes)), float(minutes))

    def refreshed(self, now: dt.datetime) -> Expiry:
        """This expiry after a read at ``now``: pushed to ``now`` plus the TTL (unchanged without one)."""
        return self if self.minutes is None else Expiry.after(self.minutes, now)

    def passed(self, now: dt.datetime) -> bool:
        """True when the item has expired at ``now`` (as LangGraph's stores: strictly after ``at``)."""
        return self.at < now

    def comment(self) -> str:
        """The comment that carries this expiry in the Markdown."""
        spec = "seconds" if self.at.microsecond == 0 else "milliseconds"
        moment = self.at.astimezone(dt.UTC).isoformat(timespec=spec)
        return f"<!-- expires: {moment} -->" if self.minutes is None else \
            f"<!-- expires: {moment}, ttl {_minutes(self.minutes)} min -->"


def check_ttl(minutes: float) -> float:
    """``minutes`` as a float when it is a finite number of minutes (LangGraph's unit).

    Raises:
        MemoryInputError: for anything else (``nan``, ``inf``, a string), naming the value.
    """
    if isinstance(minutes, bool) or not isinstance(minutes, int | float) or not math.isfinite(minutes) \
            or abs(minutes) > 1e9:
        raise MemoryInputError(f"ttl must be a finite number of minutes, got {minutes!r}")
    return float(minutes)


def parse_expiry(line: str) -> Expiry | None:
    """The expiry in ``line``'s ``<!-- expires: ... -->`` comment, or ``None`` (none, or unreadable).

    Every read of an item goes through here, so nothing a person writes in the comment can make
    it raise: the last day a date can name (``9999-12-31``) expires at the end of time.
    """
    match = _COMMENT_RE.search(line)
    if match is None:
        return None
    moment, minutes = match[1], match[2]
    try:
        if len(moment) == 10:  # a bare date: the last day the item holds, read as a fact's is
            day = expiry_day(moment)
            if day is None:
                return None
            at = _END_OF_TIME if day == dt.date.max else \
                dt.datetime.combine(day + dt.timedelta(days=1), dt.time(), dt.UTC)
        else:
            at = _utc(dt.datetime.fromisoformat(moment))
        ttl = None if minutes is None else check_ttl(float(minutes))
    except ValueError:
        return None
    return Expiry(at, ttl)


def _utc(at: dt.datetime) -> dt.datetime:
    """``at`` in UTC (naive: taken as UTC); a moment UTC cannot hold, a day from either end, clamped."""
    if at.tzinfo is None:
        return at.replace(tzinfo=dt.UTC)
    try:
        return at.astimezone(dt.UTC)
    except OverflowError:
        return _END_OF_TIME if at.year == dt.MAXYEAR else dt.datetime.min.replace(tzinfo=dt.UTC)


def _minutes(value: float) -> str:
    """``value`` as short as it reads back exactly (``10``, ``0.5``, ``0.0166...``)."""
    short = f"{value:g}"
    return short if float(short) == value else repr(value)
