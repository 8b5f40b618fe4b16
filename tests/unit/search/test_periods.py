"""Dates in text: the period a question names, the day a note is dated."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langchain_md_memory.search.periods import REPORTED_WITHIN_DAYS, Period, named_period, shifted, text_day

TODAY = dt.date(2026, 12, 5)


@pytest.mark.parametrize(("question", "start", "end"), [
    ("What movie did Joanna watch on 1 May, 2022?", dt.date(2022, 5, 1), dt.date(2022, 5, 1)),
    ("What did she do on October 13, 2023?", dt.date(2023, 10, 13), dt.date(2023, 10, 13)),
    ("Where was Tim in the week before 16 November 2023?", dt.date(2023, 11, 9), dt.date(2023, 11, 16)),
    ("What did I pay in March 2025?", dt.date(2025, 3, 1), dt.date(2025, 3, 31)),
    ("expenses for 2025-03", dt.date(2025, 3, 1), dt.date(2025, 3, 31)),
    ("the 2025-03-04 incident", dt.date(2025, 3, 4), dt.date(2025, 3, 4)),
    ("How often did I travel in 2023?", dt.date(2023, 1, 1), dt.date(2023, 12, 31)),
    ("what did I buy last month", dt.date(2026, 11, 1), dt.date(2026, 11, 30)),
    ("what happened last year", dt.date(2025, 1, 1), dt.date(2025, 12, 31)),
    ("去年三月房租多少", dt.date(2025, 3, 1), dt.date(2025, 3, 31)),
    ("2025年3月的账单", dt.date(2025, 3, 1), dt.date(2025, 3, 31)),
    ("2025年3月5日去了哪里", dt.date(2025, 3, 5), dt.date(2025, 3, 5)),
    ("上个月买了什么", dt.date(2026, 11, 1), dt.date(2026, 11, 30)),
    ("妈妈今年的生日礼物", dt.date(2026, 1, 1), dt.date(2026, 12, 31)),
])
def test_a_question_names_a_period_in_english_and_chinese(question: str, start: dt.date,
                                                          end: dt.date) -> None:
    assert named_period(question, TODAY) == Period(start, end)


@pytest.mark.parametrize(("question", "month"), [
    ("When did Melanie go camping in June?", 6), ("三月份做了什么", 3), ("what was my rent in March?", 3),
])
def test_a_month_without_a_year_means_that_month_of_any_year(question: str, month: int) -> None:
    period = named_period(question, TODAY)
    assert period == Period(month=month)
    assert period.holds(dt.date(2019, month, 20)) and not period.holds(dt.date(2019, month % 12 + 1, 20))


@pytest.mark.parametrize("question", [
    "may I ask what my rent is?", "每个月多给家里多少", "搬家之前我住在哪里？", "how much is 2 + 2",
    "what is ERR_4012",
])
def test_a_question_without_a_date_names_no_period(question: str) -> None:
    assert named_period(question, TODAY) is None


def test_a_note_dated_days_after_a_period_still_tells_of_it() -> None:
    night = Period(dt.date(2022, 5, 1), dt.date(2022, 5, 1))
    assert night.holds(dt.date(2022, 5, 2), within=REPORTED_WITHIN_DAYS)
    assert not night.holds(dt.date(2022, 5, 2))
    assert not night.holds(dt.date(2022, 4, 30), within=REPORTED_WITHIN_DAYS)


@pytest.mark.parametrize(("text", "day"), [
    ("Ann (2:05 pm on 3 March, 2023): hi", dt.date(2023, 3, 3)),
    ("- May 8, 2023: paid the deposit", dt.date(2023, 5, 8)),
    ("- 2023-05-08 paid; 2024-01-01 next", dt.date(2023, 5, 8)),
    ("2023年5月8日 买了车", dt.date(2023, 5, 8)),
    ("- meeting in March 2025, no day", None),
    ("- 31 February, 2023 is no day", None),
])
def test_a_note_is_dated_by_the_first_full_date_it_gives(text: str, day: dt.date | None) -> None:
    assert text_day(text) == day


@pytest.mark.parametrize("question", [
    "What did I spend in March 0000?", "rent 0000-05", "0000年3月的账单", "on 0000-03-04",
])
def test_a_month_or_day_the_calendar_lacks_names_no_period(question: str) -> None:
    assert named_period(question, TODAY) is None


def test_the_first_real_month_wins_over_an_impossible_one_before_it() -> None:
    assert named_period("March 0000, or was it March 2025?", TODAY) == Period(dt.date(2025, 3, 1),
                                                                             dt.date(2025, 3, 31))


def test_a_span_past_the_calendars_ends_stops_there() -> None:
    assert named_period("the week before 2 January 0001", TODAY) == Period(dt.date.min, dt.date(1, 1, 2))
    december = named_period("dentist in December 9999", TODAY)
    assert december is not None and december.holds(dt.date(9999, 12, 31), within=REPORTED_WITHIN_DAYS)
    assert Period(month=1).holds(dt.date.min, within=REPORTED_WITHIN_DAYS)
    assert shifted(dt.date.max, 1) == dt.date.max and shifted(dt.date.min, -7) == dt.date.min
    assert shifted(dt.date(2026, 12, 31), 1) == dt.date(2027, 1, 1)


_years = st.sampled_from(["0000", "0001", "9999", "2025", "10000"])
_months = st.sampled_from(["January", "March", "December", "Sept", "00", "01", "12", "13", "三", "十二"])
_phrases = st.sampled_from([
    "in {m} {y}", "{y}-{m}", "{y}-{m}-{d}", "{d} {m} {y}", "{m} {d}, {y}", "{y}年{m}月{d}日", "{y}年{m}月",
    "the week before {d} {m} {y}", "the month before {m} {d}, {y}", "in {m}", "去年{m}月",
])


@settings(max_examples=300, deadline=None)
@given(_phrases, _years, _months, st.sampled_from(["1", "01", "2", "31", "00", "32"]),
       st.sampled_from([dt.date.min, TODAY, dt.date.max]))
def test_no_date_phrase_raises_and_every_period_answers_holds(phrase: str, year: str, month: str, day: str,
                                                              note: dt.date) -> None:
    period = named_period("what happened " + phrase.format(y=year, m=month, d=day), TODAY)
    if period is not None:
        period.holds(note, within=REPORTED_WITHIN_DAYS)
    text_day(phrase.format(y=year, m=month, d=day))
