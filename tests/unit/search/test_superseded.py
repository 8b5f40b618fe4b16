"""A dated hit restating a superseded fact gives its place to its replacement and follows it."""

from __future__ import annotations

import datetime as dt

import pytest

from langchain_md_memory.files.sections import supersede_in, superseded_statements
from langchain_md_memory.search.superseded import restated_below_successors, successor_paths
from tests.support.hits import make_hit

DAY = dt.date(2026, 12, 1)
OLD = "Rent €1,650 (Arroios flat), utilities about €140."
NEW = "Rent €1,720 (Arroios flat) since the March renewal, utilities about €140."


def _successor(score: float, relevance: float = 0.6):  # type: ignore[no-untyped-def]
    text = f"## Home\n- {NEW} <!-- src: via=supersede {DAY} -->"
    return make_hit("new", score, path="finance.md", text=text, relevance=relevance,
                    provenance=(f"via=supersede {DAY}",))


def _log(name: str, score: float, text: str, day: dt.date = dt.date(2026, 7, 1)):  # type: ignore[no-untyped-def]
    return make_hit(name, score, path=f"memory/{day}.md", text=text, file_kind="daily", relevance=0.7)


def test_the_struck_facts_of_a_file_are_read_back_with_their_day() -> None:
    text = supersede_in(f"# Finance\n- {OLD}\n- Salary in euros.\n", OLD, NEW, DAY)
    assert text is not None
    assert superseded_statements(text) == [(OLD, DAY)]
    assert superseded_statements("- ~~gone~~ (expired 2026-01-01)\n- ~~x~~ (superseded 2026-13-40)\n") == []


def test_a_log_of_the_old_value_follows_its_replacement_and_the_rest_keep_their_order() -> None:
    stale = _log("stale", 0.9, "- Keys for the Arroios flat picked up. Rent €1,650, deposit paid.")
    other = _log("other", 0.8, "- Painted the Arroios flat; the rent is due on the first.")
    evergreen = make_hit("note", 0.7, path="home.md", text="- The Arroios flat has two bedrooms.")
    hits = [stale, other, evergreen, _successor(0.5), _log("late", 0.4, "- Rent €1,650 again.")]
    assert successor_paths(hits) == {"finance.md"}
    out = restated_below_successors(hits, {"finance.md": [(OLD, DAY)]})
    # The replacement takes the place of the log stating the old value, which follows it; "other"
    # shares the subject but not the changed value (1,650); "late" was already below.
    assert [h.chunk_id for h in out] == ["new", "stale", "other", "note", "late"]
    new, moved = out[0], out[1]
    assert new.score == pytest.approx(0.9) and new.decay == pytest.approx(0.9 / 0.5)  # the lift, recorded
    assert 0.8 < moved.score < new.score and moved.decay < 1.0


def test_nothing_moves_when_the_replacement_does_not_answer_or_is_not_newer() -> None:
    stale = _log("stale", 0.9, "- Keys for the Arroios flat picked up. Rent €1,650, deposit paid.")
    weak = [stale, _successor(0.2, relevance=0.2)]
    assert successor_paths(weak) == set()
    assert restated_below_successors(weak, {"finance.md": [(OLD, DAY)]}) == weak
    later = _log("later", 0.9, "- Rent €1,650 for the Arroios flat, paid.", day=dt.date(2026, 12, 2))
    assert restated_below_successors([later, _successor(0.5)], {"finance.md": [(OLD, DAY)]})[0] is later


def test_a_successor_that_is_itself_stale_takes_its_followers_along() -> None:
    gym_day = dt.date(2026, 11, 1)
    log = _log("log", 0.9, "- Joined the gym Holmes Place for weekday mornings.")
    middle = make_hit("middle", 0.8, path=f"memory/{gym_day}.md", file_kind="daily", relevance=0.6,
                      text="- Rent €1,650 for the Arroios flat. Gym: Fitness Hut, weekday mornings.",
                      provenance=(f"via=supersede {gym_day}",))
    gym = ("Gym: Holmes Place, weekday mornings.", gym_day)
    struck = {"finance.md": [(OLD, DAY)], f"memory/{gym_day}.md": [gym]}
    out = restated_below_successors([log, middle, _successor(0.5)], struck)
    assert [h.chunk_id for h in out] == ["new", "middle", "log"]
    assert out[0].score == pytest.approx(0.9)  # the place of the first hit of the chain
    assert out[0].score > out[1].score > out[2].score
