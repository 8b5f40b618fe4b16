"""Stage 3: temporal decay by file kind."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from langchain_md_memory.files.paths import file_kind
from langchain_md_memory.search.decay import (
    apply_temporal_decay,
    decay_multiplier,
    hit_age_days,
    hit_day,
    newer_statements_first,
)
from langchain_md_memory.types import MemorySearchResult
from tests.support.hits import make_hit

NOW = dt.datetime(2026, 3, 31, 12, 0, 0)


def hit(path: str, score: float = 0.8, *, updated_at: float = 0.0) -> MemorySearchResult:
    return make_hit(path, score, path=path, end_line=3, text="same text", file_kind=file_kind(path),
                    merged_score=score, updated_at=updated_at)


def test_multiplier_is_one_at_age_zero_half_at_half_life_quarter_at_twice() -> None:
    assert decay_multiplier(0, 30) == 1.0
    assert decay_multiplier(30, 30) == pytest.approx(0.5)
    assert decay_multiplier(60, 30) == pytest.approx(0.25)
    assert decay_multiplier(7, 7) == pytest.approx(0.5)


def test_future_ages_clamp_to_one() -> None:
    assert decay_multiplier(-10, 30) == 1.0


def test_multiplier_refuses_non_positive_half_life() -> None:
    with pytest.raises(ValueError, match="half_life_days"):
        decay_multiplier(1, 0)


def test_daily_age_counts_whole_calendar_days_from_the_file_date() -> None:
    assert hit_age_days(hit("2026-03-31.md"), NOW) == 0.0
    assert hit_age_days(hit("2026-03-01.md"), NOW) == 30.0
    assert hit_age_days(hit("2026-03-30.md"), NOW.replace(hour=23, minute=59)) == 1.0


def test_daily_age_uses_the_date_of_an_aware_now_in_its_own_time_zone() -> None:
    tz = dt.timezone(dt.timedelta(hours=8))
    assert hit_age_days(hit("2026-03-30.md"), dt.datetime(2026, 3, 31, 6, 0, tzinfo=tz)) == 1.0


def test_thirty_day_old_daily_hit_decays_to_half_and_ranks_under_today() -> None:
    now = dt.datetime(2026, 3, 31, 0, 0, 0)
    old, new = hit("2026-03-01.md", 0.8), hit("2026-03-31.md", 0.8)
    out = apply_temporal_decay([old, new], half_life_days=30, now=now)
    assert [h.path for h in out] == ["2026-03-31.md", "2026-03-01.md"]
    assert out[0].decay == 1.0 and out[0].score == 0.8
    assert out[1].decay == pytest.approx(0.5)
    assert out[1].score == pytest.approx(0.4)


def test_evergreen_files_never_decay() -> None:
    out = apply_temporal_decay(
        [hit("MEMORY.md"), hit("goals.md"), hit("topics/risk.md")], half_life_days=1, now=NOW
    )
    assert [(h.decay, h.score) for h in out] == [(1.0, 0.8)] * 3
    assert hit_age_days(hit("goals.md"), NOW) is None


def test_session_hits_decay_by_updated_at() -> None:
    ten_days_ago = (NOW - dt.timedelta(days=10)).timestamp()
    s = hit("sessions/2026-03-21-abc.md", 1.0, updated_at=ten_days_ago)
    assert hit_age_days(s, NOW) == pytest.approx(10.0)
    (out,) = apply_temporal_decay([s], half_life_days=10, now=NOW)
    assert out.decay == pytest.approx(0.5)
    assert out.score == pytest.approx(0.5)


def test_session_named_like_a_date_still_ages_from_updated_at() -> None:
    s = hit("sessions/2020-01-01.md", updated_at=(NOW - dt.timedelta(days=2)).timestamp())
    assert hit_age_days(s, NOW) == pytest.approx(2.0)


def test_session_hit_without_index_time_does_not_decay() -> None:
    assert hit_age_days(hit("sessions/s.md", updated_at=0.0), NOW) is None


def test_disabled_decay_keeps_scores_and_decay_one() -> None:
    hits = [hit("2020-01-01.md", 0.3), hit("sessions/x.md", 0.6, updated_at=1.0e9)]
    out = apply_temporal_decay(hits, half_life_days=30, now=NOW, enabled=False)
    assert [(h.path, h.score, h.decay) for h in out] == [
        ("sessions/x.md", 0.6, 1.0),
        ("2020-01-01.md", 0.3, 1.0),
    ]


def test_future_dated_daily_file_clamps_to_one() -> None:
    (out,) = apply_temporal_decay([hit("2026-05-01.md")], half_life_days=30, now=NOW)
    assert out.decay == 1.0 and out.score == 0.8


def test_decay_resorts_with_deterministic_ties() -> None:
    hits = [hit("b.md", 0.5), hit("a.md", 0.5), hit("2026-03-31.md", 0.9)]
    out = apply_temporal_decay(hits, half_life_days=30, now=dt.datetime(2026, 3, 31))
    assert [h.path for h in out] == ["2026-03-31.md", "a.md", "b.md"]


def test_a_floor_keeps_old_notes_above_it_and_zero_is_the_seed_formula() -> None:
    assert decay_multiplier(30, 30, floor=0.0) == pytest.approx(0.5)
    assert decay_multiplier(30, 30, floor=0.8) == pytest.approx(0.9)
    assert decay_multiplier(10_000, 30, floor=0.8) == pytest.approx(0.8)
    with pytest.raises(ValueError, match="floor"):
        decay_multiplier(1, 30, floor=1.5)


def test_with_a_floor_recency_orders_equals_but_an_old_unique_fact_is_not_buried() -> None:
    old = hit("2025-12-01.md", 0.80)  # 120 days old: the only note holding the fact
    unrelated = hit("MEMORY.md", 0.50)  # evergreen, weaker
    stale, fresh = hit("2026-01-30.md", 0.70), hit("2026-03-30.md", 0.70)  # one fact stated twice
    seed = apply_temporal_decay([old, unrelated, stale, fresh], half_life_days=30, now=NOW)
    assert [h.path for h in seed][-1] == "2025-12-01.md"  # the seed buries the old fact (× 0.06)
    floored = apply_temporal_decay([old, unrelated, stale, fresh], half_life_days=30, now=NOW, floor=0.8)
    assert [h.path for h in floored] == ["2026-03-30.md", "2025-12-01.md", "2026-01-30.md", "MEMORY.md"]


def written(path: str, score: float, day: str) -> MemorySearchResult:
    return make_hit(path, score, path=path, file_kind=file_kind(path), merged_score=score,
                    provenance=(f"via=supersede {day}",))


def test_a_hit_is_as_new_as_its_log_day_or_the_newest_day_its_provenance_names() -> None:
    assert hit_day(hit("2026-03-01.md")) == dt.date(2026, 3, 1)
    assert hit_day(hit("MEMORY.md")) is None  # undated evergreen text
    assert hit_day(written("MEMORY.md", 0.5, "2026-03-30")) == dt.date(2026, 3, 30)
    both = make_hit("c", path="MEMORY.md", provenance=("thread=t 2026-01-02", "via=supersede 2026-03-04"))
    assert hit_day(both) == dt.date(2026, 3, 4)


def test_a_fact_written_today_ranks_above_an_older_log_of_comparable_score() -> None:
    log = hit("2026-03-01.md", 0.80)  # 30 days old: × 0.9 with the floor, 0.72
    current = written("MEMORY.md", 0.62, "2026-03-31")  # reaches 0.8 × 0.72
    between = hit("notes.md", 0.65)
    ranked = apply_temporal_decay([log, between, current], half_life_days=30, now=NOW, floor=0.8,
                                  newer_first=0.8)
    # The newer statement takes the log's place (above what stood between them), the log follows it.
    assert [h.path for h in ranked] == ["MEMORY.md", "2026-03-01.md", "notes.md"]
    lifted, moved = ranked[0], ranked[1]
    assert lifted.score == pytest.approx(0.72) and lifted.decay == pytest.approx(0.72 / 0.62)
    assert moved.score < 0.72 and moved.score == pytest.approx(0.72)  # just below, not buried
    assert moved.decay == pytest.approx(moved.score / 0.80)  # the factor is recorded in decay
    without = apply_temporal_decay([log, hit("MEMORY.md", 0.62)], half_life_days=30, now=NOW, floor=0.8,
                                   newer_first=0.8)
    assert [h.path for h in without] == ["2026-03-01.md", "MEMORY.md"]  # undated: the log wins
    off = apply_temporal_decay([log, current], half_life_days=30, now=NOW, floor=0.8, newer_first=1.0)
    assert [h.path for h in off] == ["2026-03-01.md", "MEMORY.md"]  # 1.0 turns the ordering off


def test_a_newer_statement_does_not_move_a_much_stronger_or_a_newer_hit() -> None:
    strong = hit("2026-03-01.md", 0.95)  # 0.855 after decay: 0.6 is under 0.8 of it
    newer_log = hit("2026-03-31.md", 0.70)  # today's log is not older than a write of today
    current = written("MEMORY.md", 0.60, "2026-03-31")
    ranked = apply_temporal_decay([strong, newer_log, current], half_life_days=30, now=NOW, floor=0.8,
                                  newer_first=0.8)
    assert [h.path for h in ranked] == ["2026-03-01.md", "2026-03-31.md", "MEMORY.md"]
    assert ranked[0].decay == pytest.approx(0.9) and ranked[1].decay == 1.0


def test_disabled_decay_does_not_reorder_by_writes() -> None:
    log, current = hit("2026-03-01.md", 0.80), written("MEMORY.md", 0.70, "2026-03-31")
    ranked = apply_temporal_decay([log, current], half_life_days=30, now=NOW, enabled=False, floor=0.8,
                                  newer_first=0.8)
    assert [h.path for h in ranked] == ["2026-03-01.md", "MEMORY.md"]
    assert newer_statements_first([log, current], 0.8)[0].path == "MEMORY.md"


def test_a_written_hit_that_does_not_answer_the_query_itself_moves_nothing() -> None:
    # A chunk is dated by any line written in it: a fresh line on a neighbouring subject must not
    # lift the whole chunk over an older log that answers the question.
    log = hit("2026-03-01.md", 0.80)
    neighbour = dataclasses.replace(written("MEMORY.md", 0.62, "2026-03-31"), relevance=0.3)
    answer = dataclasses.replace(neighbour, relevance=0.6)
    kept = apply_temporal_decay([log, neighbour], half_life_days=30, now=NOW, floor=0.8, newer_first=0.8,
                                newer_relevance=0.45)
    assert [h.path for h in kept] == ["2026-03-01.md", "MEMORY.md"]
    moved = apply_temporal_decay([log, answer], half_life_days=30, now=NOW, floor=0.8, newer_first=0.8,
                                 newer_relevance=0.45)
    assert [h.path for h in moved] == ["MEMORY.md", "2026-03-01.md"]
