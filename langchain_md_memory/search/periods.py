"""Dates in text: the period a question names, and the day a note is dated.

A question can name when something happened: ``in March 2025``, ``on 3 June,
2023``, ``2025-03``, ``the week before 16 November 2023``, ``last month``,
``去年三月``, ``三月份``, ``上个月``. :func:`named_period` reads the first such phrase
as a :class:`Period` (relative phrases count from ``today``); a month named without
a year (``in June``, ``三月份``) means that month in any year. :func:`text_day`
reads the first full date a note's text gives (``8 May, 2023``, ``May 8, 2023``,
``2023-05-08``, ``2023年5月8日``): the day a line of a conversation or a log says it
was written.

A question's words are never an error: a phrase naming no real day ("March 0000", "2025-13") is no
date, and a span running past the calendar's ends (before 1 January 1, after 31 December 9999) stops
there.

Example:
    .. code-block:: python

        import datetime as dt

        from langchain_md_memory.search.periods import named_period, text_day

        today = dt.date(2026, 12, 5)
        march = named_period("what did I pay in March 2025?", today)
        assert march is not None and march.holds(dt.date(2025, 3, 9))
        assert named_period("上个月买了什么", today).holds(dt.date(2026, 11, 30))
        assert text_day("Ann (2:05 pm on 3 March, 2023): hi") == dt.date(2023, 3, 3)
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["REPORTED_WITHIN_DAYS", "Period", "named_period", "shifted", "text_day"]

REPORTED_WITHIN_DAYS = 7
"""A note dated up to this many days after a period still tells of it ("last night", "last Saturday")."""

_MONTHS = {name.lower(): n for n, name in enumerate(calendar.month_name) if name}
_MONTHS |= {name.lower(): n for n, name in enumerate(calendar.month_abbr) if name}
_MONTHS["sept"] = 9
_MONTH = r"(january|february|march|april|may|june|july|august|september|october|november|december|" \
         r"jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)"
_ORD = r"(?:st|nd|rd|th)?"
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}}){_ORD}\s+(?:of\s+)?{_MONTH}\.?,?\s+(\d{{4}})\b", re.I)
_MONTH_DAY_YEAR = re.compile(rf"\b{_MONTH}\.?\s+(\d{{1,2}}){_ORD},?\s+(\d{{4}})\b", re.I)
_ISO_DAY = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_MONTH_YEAR = re.compile(rf"\b{_MONTH}\.?,?\s+(\d{{4}})\b", re.I)
_ISO_MONTH = re.compile(r"\b(\d{4})-(\d{2})\b(?!-\d)")
# "May" alone is also a verb: a month without a year only after "in", "during", "since", "of".
_MONTH_ALONE = re.compile(rf"\b(?:in|during|of|since)\s+(?:early\s+|late\s+|mid-?)?{_MONTH}\b(?![\s,]+\d)",
                          re.I)
_YEAR = re.compile(r"\b(?:in|during|of)\s+((?:19|20)\d{2})\b", re.I)
_BEFORE = re.compile(r"\b(?:the\s+)?(day|weekend|week|two\s+weeks|month)\s+before\b", re.I)
_BEFORE_DAYS = {"day": 1, "weekend": 7, "week": 7, "two weeks": 14, "month": 31}
_RELATIVE = re.compile(r"\b(last|this|past)\s+(week|month|year)\b|\b(yesterday)\b", re.I)

_CN_NUMBER = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9,
              "十": 10, "十一": 11, "十二": 12}
_CN_MONTH = r"(1[0-2]|0?[1-9]|十[一二]?|[一二三四五六七八九])"
_CN_DAY_FULL = re.compile(rf"(\d{{4}})\s*年\s*{_CN_MONTH}\s*月\s*(\d{{1,2}})\s*[日号]")
_CN_MONTH_YEAR = re.compile(rf"(\d{{4}})\s*年\s*{_CN_MONTH}\s*月")
_CN_RELATIVE_MONTH = re.compile(rf"(去年|今年|前年){_CN_MONTH}\s*月")
_CN_MONTH_ALONE = re.compile(rf"(?<![\d年]){_CN_MONTH}\s*月份?(?!\s*\d|[一二三四五六七八九十]+[日号])")
_CN_RELATIVE = re.compile(r"(上个?月|这个?月|本月|去年|今年|前年|上周|上个?星期|这周|本周|昨天)")


@dataclass(frozen=True, slots=True)
class Period:
    """The days from ``start`` to ``end`` (inclusive), or one calendar ``month`` of any year."""

    start: dt.date | None = None
    end: dt.date | None = None
    month: int | None = None

    def holds(self, day: dt.date, *, within: int = 0) -> bool:
        """True when ``day`` falls in the period, or at most ``within`` days after it."""
        if self.month is not None:
            return any(d.month == self.month for d in (day, shifted(day, -within)))
        assert self.start is not None and self.end is not None
        return self.start <= day <= shifted(self.end, within)


def shifted(day: dt.date, days: int) -> dt.date:
    """``day`` moved by ``days``, stopping at the calendar's first or last day instead of overflowing."""
    if days >= 0:
        return day + dt.timedelta(days=days) if (dt.date.max - day).days >= days else dt.date.max
    return day + dt.timedelta(days=days) if (day - dt.date.min).days >= -days else dt.date.min


def _month_span(year: int, month: int) -> Period | None:
    """The days of one month, or ``None`` when the year is not on the calendar (``March 0000``)."""
    if not dt.MINYEAR <= year <= dt.MAXYEAR or not 1 <= month <= 12:
        return None
    return Period(dt.date(year, month, 1), dt.date(year, month, calendar.monthrange(year, month)[1]))


def _cn_month(token: str) -> int:
    return int(token) if token.isdigit() else _CN_NUMBER[token]


def _day(year: int, month: int, day: int) -> dt.date | None:
    try:
        return dt.date(year, month, day)
    except ValueError:  # "31 February", "1 March 0000": not a date
        return None


_FULL_DATES: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], tuple[int, int, int]]], ...] = (
    (_DAY_MONTH_YEAR, lambda m: (int(m[3]), _MONTHS[m[2].lower()], int(m[1]))),
    (_MONTH_DAY_YEAR, lambda m: (int(m[3]), _MONTHS[m[1].lower()], int(m[2]))),
    (_ISO_DAY, lambda m: (int(m[1]), int(m[2]), int(m[3]))),
    (_CN_DAY_FULL, lambda m: (int(m[1]), _cn_month(m[2]), int(m[3]))),
)
"""Each way a full date is written, and how to read (year, month, day) from its match."""


def text_day(text: str) -> dt.date | None:
    """The first full date ``text`` gives (day, month and year), or ``None``; "31 February" is none."""
    found: list[tuple[int, dt.date]] = []
    for pattern, read in _FULL_DATES:
        for match in pattern.finditer(text):
            if day := _day(*read(match)):
                found.append((match.start(), day))
                break
    return min(found, key=lambda item: item[0])[1] if found else None


def _before(question: str, day: dt.date) -> Period:
    """``day`` itself, or the span before it that "the week before <day>" names."""
    match = _BEFORE.search(question)
    if match is None:
        return Period(day, day)
    span = _BEFORE_DAYS[" ".join(match[1].lower().split())]
    return Period(shifted(day, -span), day)


def _relative(word: str, unit: str, today: dt.date) -> Period | None:
    if unit == "day":
        return Period(shifted(today, -1), shifted(today, -1))
    back = word in ("last", "past")
    if unit == "year":
        return Period(dt.date(today.year - back, 1, 1), dt.date(today.year - back, 12, 31))
    if unit == "month":
        first = today.replace(day=1)
        if back:
            first = (first - dt.timedelta(days=1)).replace(day=1)
        return _month_span(first.year, first.month)
    monday = today - dt.timedelta(days=today.weekday() + (7 if back else 0))
    return Period(monday, monday + dt.timedelta(days=6))


def _cn_relative(word: str, today: dt.date) -> Period | None:
    if word == "昨天":
        return _relative("last", "day", today)
    if word in ("去年", "前年", "今年"):
        year = today.year - {"去年": 1, "前年": 2, "今年": 0}[word]
        return Period(dt.date(year, 1, 1), dt.date(year, 12, 31))
    if "月" in word:
        return _relative("last" if word.startswith("上") else "this", "month", today)
    return _relative("last" if word.startswith("上") else "this", "week", today)


_MONTH_SPANS: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], tuple[int, int]]], ...] = (
    (_MONTH_YEAR, lambda m: (int(m[2]), _MONTHS[m[1].lower()])),
    (_ISO_MONTH, lambda m: (int(m[1]), int(m[2]))),
    (_CN_MONTH_YEAR, lambda m: (int(m[1]), _cn_month(m[2]))),
)
"""Each way a month of a year is written, and how to read (year, month) from its match."""


def named_period(question: str, today: dt.date) -> Period | None:
    """The period ``question`` names, or ``None``; the most precise phrase wins (a day over a month)."""
    for pattern, read in _FULL_DATES:  # the first phrase that names a real day
        for written in pattern.finditer(question):
            if found := _day(*read(written)):
                return _before(question, found)
    for pattern, read_month in _MONTH_SPANS:  # ... else the first that names a real month
        for written in pattern.finditer(question):
            if span := _month_span(*read_month(written)):
                return span
    if match := _CN_RELATIVE_MONTH.search(question):
        year = today.year - {"去年": 1, "前年": 2, "今年": 0}[match[1]]
        return _month_span(year, _cn_month(match[2]))
    if match := _MONTH_ALONE.search(question):
        return Period(month=_MONTHS[match[1].lower()])
    if match := _CN_MONTH_ALONE.search(question):
        return Period(month=_cn_month(match[1]))
    if match := _YEAR.search(question):
        year = int(match[1])
        return Period(dt.date(year, 1, 1), dt.date(year, 12, 31))
    if match := _RELATIVE.search(question):
        if match[3]:
            return _relative("last", "day", today)
        return _relative(match[1].lower(), match[2].lower(), today)
    if match := _CN_RELATIVE.search(question):
        return _cn_relative(match[1], today)
    return None
