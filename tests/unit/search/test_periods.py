"""Dates in text: the period a question names, the day a note is dated."""

from __future__ import annotations

import datetime as dt

import pytest

from langchain_md_memory.search.periods import REPORTED_WITHIN_DAYS, Period, named_period, text_day

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
