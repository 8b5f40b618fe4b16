"""The question's focus: a question-only hit weighs less, so does a hit dated outside the named period,
and a line another speaker than the one the question names says."""

from __future__ import annotations

import datetime as dt

import pytest

from langchain_md_memory.search.periods import Period
from langchain_md_memory.search.question_fit import (
    apply_question_fit,
    asks_only,
    named_speaker,
    outside_period,
    speaker,
)
from tests.support.hits import make_hit


@pytest.mark.parametrize(("text", "asks"), [
    ("Maria (2:05 pm on 3 March, 2023): Wow, great pic! Where did you go?", True),
    ("Maria: Where did you go?\n[image: a photo of a lake]", True),
    ("## 问题\n\n你平时几点起床？", True),
    ("- Should I refinance? Decided: keep the fixed rate.", False),
    ("- Where did we go? Porto, in May.", False),
    ("Where did you go? <!-- src: thread=a 2026-12-01 -->\n- Porto.", False),
    ("", False),
])
def test_a_hit_asks_only_when_its_last_line_of_prose_is_a_question(text: str, asks: bool) -> None:
    assert asks_only(text) is asks


def test_a_question_only_hit_scores_less_and_the_answer_rises_above_it() -> None:
    question = make_hit("q", 0.9, text="Joanna: What's your favourite dish from the show?")
    answer = make_hit("a", 0.8, text="Nate: Coconut milk ice cream, it's dairy-free.")
    ranked = apply_question_fit([question, answer], period=None, question_weight=0.8, period_weight=0.5)
    assert [hit.chunk_id for hit in ranked] == ["a", "q"]
    assert ranked[1].score == pytest.approx(0.72) and ranked[1].weight == pytest.approx(0.8)


def test_hits_dated_outside_the_named_period_score_less_undated_ones_not() -> None:
    may = Period(dt.date(2022, 5, 1), dt.date(2022, 5, 1))
    october = make_hit("oct", 0.9, text="Joanna (8 pm on 25 October, 2022): watch the movie!")
    reported = make_hit("may", 0.6, text="Joanna (11 am on 2 May, 2022): watched the trilogy last night")
    rule = make_hit("rule", 0.5, text="- Movies on Fridays only")
    ranked = apply_question_fit([october, reported, rule], period=may, question_weight=1.0,
                                period_weight=0.5)
    assert [hit.chunk_id for hit in ranked] == ["may", "rule", "oct"]
    assert outside_period(october, may) and not outside_period(reported, may)
    assert not outside_period(rule, may)  # undated: no date to hold against the period


def test_a_daily_log_is_dated_by_its_file() -> None:
    march = Period(dt.date(2025, 3, 1), dt.date(2025, 3, 31))
    log = make_hit("log", 0.5, path="2025-03-14.md", text="- paid the rent", file_kind="daily")
    later = make_hit("later", 0.5, path="2025-06-14.md", text="- paid the rent", file_kind="daily")
    assert not outside_period(log, march) and outside_period(later, march)


def test_nothing_changes_when_no_weight_applies() -> None:
    hits = [make_hit("a", 0.9, text="- a fact"), make_hit("b", 0.5, text="- another")]
    assert apply_question_fit(hits, period=None, question_weight=0.8, period_weight=0.5) == hits
    assert apply_question_fit(hits, period=None, question_weight=1.0, period_weight=1.0)[0] is hits[0]


@pytest.mark.parametrize(("text", "who"), [
    ("Melanie (1:56 pm on 8 May, 2023): I painted that lake sunrise last year!", "Melanie"),
    ("Ann: Where did you go?", "Ann"),
    ("Dr. Reis: stop the iron tablets.", "Dr. Reis"),
    ("妈妈：下个月去成都。", "妈妈"),
    ("- Rent: 1,650 EUR", None),  # a bullet, not a line of a conversation
    ("## Preferences\n- Editor: Neovim", None),
    ("note: lower-case is no name", None),
    ("我今天去了超市：买了牛奶", None),  # a Chinese clause before a colon, not a name
    ("See https://example.com for details", None),
])
def test_a_line_of_a_conversation_opens_with_its_speaker(text: str, who: str | None) -> None:
    assert speaker(text) == who


def test_the_question_names_one_speaker_of_the_hits_or_none() -> None:
    hits = [make_hit("m", text="Melanie (8 May, 2023): I painted it."),
            make_hit("c", text="Caroline (8 May, 2023): Lovely!"), make_hit("n", text="- a note")]
    assert named_speaker("When did Melanie paint a sunrise?", hits) == "Melanie"
    assert named_speaker("What did Melanie's friend say?", hits) == "Melanie"
    assert named_speaker("What did Caroline tell Melanie?", hits) is None  # two: no one to prefer
    assert named_speaker("What did Mel paint?", hits) is None  # a name is matched whole
    assert named_speaker("when did melanie paint", hits) is None  # names are capitalised


def test_lines_another_speaker_says_score_less_and_the_named_speakers_line_rises() -> None:
    other = make_hit("c", 0.9, text="Caroline (8 May, 2023): Wow, Melanie, you paint sunrises too?")
    own = make_hit("m", 0.8, text="Melanie (8 May, 2023): Yeah, I painted that lake last year!")
    note = make_hit("n", 0.7, text="- painting classes on Tuesdays")
    ranked = apply_question_fit([other, own, note], period=None, question_weight=1.0, period_weight=1.0,
                                question="When did Melanie paint a sunrise?", speaker_weight=0.7)
    assert [hit.chunk_id for hit in ranked] == ["m", "n", "c"]
    assert ranked[2].score == pytest.approx(0.63) and ranked[2].weight == pytest.approx(0.7)
    assert ranked[1] is note  # no speaker: left alone
    off = apply_question_fit([other, own], period=None, question_weight=1.0, period_weight=1.0,
                             question="When did Melanie paint a sunrise?", speaker_weight=1.0)
    assert [hit.chunk_id for hit in off] == ["c", "m"]
