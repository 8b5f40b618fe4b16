"""Validity intervals read from the Markdown, the as-of day a question asks about, and the past facts
an as-of answer puts first."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest

from langchain_md_memory.files.sections import PastFact
from langchain_md_memory.search.asof import (
    AsOf,
    answer_as_of,
    as_of_date,
    asked_day,
    held_on,
    hit_interval,
    informative_terms,
    past_scores,
)
from langchain_md_memory.types import MemorySearchResult

TODAY = dt.date(2026, 12, 5)


def _hit(path: str, text: str) -> MemorySearchResult:
    return MemorySearchResult(path, 1, 1, text, 1.0, None, 1.0, "keyword", "evergreen")


def test_live_hit_holds_from_its_oldest_written_line_or_always():
    dated = "- a <!-- src: via=x 2026-05-01 -->\n- b <!-- src: via=x 2026-03-01 -->"
    assert hit_interval(_hit("MEMORY.md", dated)) == (dt.date(2026, 3, 1), None)
    assert hit_interval(_hit("MEMORY.md", dated + "\n- undated")) == (None, None)
    assert hit_interval(_hit("memory/2026-02-03.md", "# Log\n- ran 5k")) == (dt.date(2026, 2, 3), None)


@pytest.mark.parametrize(("question", "day"), [
    ("what was my rent in March 2025?", dt.date(2025, 3, 31)),
    ("rent in 2025-03", dt.date(2025, 3, 31)),
    ("what was it on 3 June, 2023", dt.date(2023, 6, 3)),
    ("last month", dt.date(2026, 11, 30)),
    ("上个月房租多少", dt.date(2026, 11, 30)),
    ("去年三月房租多少", dt.date(2025, 3, 31)),
    ("2025年3月房租多少", dt.date(2025, 3, 31)),
    ("三月份房租多少", dt.date(2026, 3, 31)),
    ("what did I pay in December", dt.date(2026, 12, 5)),  # this month: never after today
    ("what do I pay this year", TODAY),
])
def test_asked_day_is_the_end_of_the_named_period(question, day):
    assert asked_day(question, TODAY) == day


def test_a_month_without_a_year_is_its_latest_that_has_begun():
    assert asked_day("三月份", dt.date(2026, 2, 10)) == dt.date(2025, 3, 31)


def test_present_tense_question_names_no_day():
    assert asked_day("How much is my rent now?", TODAY) is None
    assert asked_day("我现在房租是多少？", TODAY) is None


@pytest.mark.parametrize("value", ["March", "2025-3-1", "2025-02-30", "yesterday", 20250301])
def test_as_of_date_refuses_what_is_not_an_iso_day(value):
    with pytest.raises(ValueError, match="YYYY-MM-DD"):
        as_of_date(value)


def test_as_of_date_takes_dates_datetimes_and_iso_strings():
    assert as_of_date("2025-03-01") == as_of_date(dt.datetime(2025, 3, 1, 9)) == dt.date(2025, 3, 1)
    assert as_of_date(None) is None


def test_held_on_leaves_out_the_lines_written_after_the_day():
    text = ("## Home\n- Rent 1,720 <!-- src: via=supersede 2025-04-01 -->\n- Knee physio on Mondays\n"
            "- Tea: sencha <!-- src: via=x 2025-01-01 -->")
    assert held_on(text, "MEMORY.md", dt.date(2025, 3, 15)) == (
        "## Home\n- Knee physio on Mondays\n- Tea: sencha <!-- src: via=x 2025-01-01 -->")
    assert held_on(text, "MEMORY.md", dt.date(2025, 4, 1)) == text
    assert held_on("- Rent 1,720 <!-- src: via=x 2025-04-01 -->", "MEMORY.md", dt.date(2025, 3, 1)) is None
    assert held_on("- standup moved", "2025-05-02.md", dt.date(2025, 5, 1)) is None  # the log's day


def _fact(statement: str, line: int = 9, until: dt.date = dt.date(2026, 12, 1)) -> PastFact:
    return PastFact("finance.md", line, f"- ~~{statement}~~ (superseded {until})", statement, None, until)


def test_informative_terms_leave_out_the_words_of_a_date():
    assert informative_terms("What was my rent in March 2025?") == ["in", "my", "rent", "was", "what"]
    assert "上个月" not in informative_terms("上个月房租多少")


def test_past_facts_score_by_cosine_when_the_search_has_vectors():
    facts = [_fact("Rent €1,650"), _fact("Gym: Fitness Hut", line=10)]
    asked = AsOf(TODAY, strict=True, facts=facts, vectors=[np.array([1.0, 0.0]), np.array([-0.6, 0.8])],
                 query_vector=np.array([0.8, 0.6]))
    assert asked.by_vector
    assert past_scores(asked) == pytest.approx([0.8, 0.0])  # a negative cosine counts as none


def test_past_facts_score_by_the_share_of_informative_term_weight_they_hold_without_vectors():
    facts = [_fact("Rent €1,650 for the flat"), _fact("Gym: Fitness Hut", line=10)]
    asked = AsOf(TODAY, strict=True, facts=facts, terms=["flat", "nowhere", "rent"],
                 idf={"flat": 1.0, "nowhere": 5.0, "rent": 3.0}, absent_idf=5.0)
    assert not asked.by_vector
    assert past_scores(asked) == pytest.approx([1.0, 0.0])  # a term no note holds weighs nothing
    assert past_scores(AsOf(TODAY, strict=True)) == []


def test_a_day_read_from_the_question_that_adds_no_past_fact_leaves_the_hits_as_they_are():
    hits = [_hit("MEMORY.md", "- Rent €1,720 <!-- src: via=x 2026-12-01 -->")]
    assert answer_as_of(hits, AsOf(dt.date(2026, 6, 1), strict=False), 5) is hits
    strict = answer_as_of(hits, AsOf(dt.date(2026, 6, 1), strict=True), 5)
    assert strict == []  # asked for that day: the line was not written yet
    fact = _fact("Rent €1,650")
    answered = answer_as_of(hits, AsOf(dt.date(2026, 6, 1), strict=False, facts=[fact], terms=["rent"],
                                       idf={"rent": 2.0}, absent_idf=4.0), 5)
    assert [h.chunk_id for h in answered] == ["past:finance.md#L9", ""]
    assert answered[1].valid_from == "2026-12-01"
