from __future__ import annotations

import datetime as dt

import pytest

from langchain_md_memory.errors import MemoryInputError
from langchain_md_memory.files.chunker import chunk_markdown
from langchain_md_memory.files.facts import (
    expired,
    expiry_date,
    fact_lines,
    normalize_fact,
    parse_provenance,
    provenance_day,
    provenance_label,
    same_fact,
    with_expiry,
    with_provenance,
)
from langchain_md_memory.files.sections import expire_in, into_section, past_facts, supersede_in

DAY = dt.date(2026, 12, 3)


def test_normalising_drops_markers_case_spacing_and_annotations():
    assert normalize_fact("- [x] Prefers  TEA. <!-- src: thread=t1 2026-12-03 -->") == "prefers tea"
    assert normalize_fact("1. Ｔｅａ！") == "tea"  # NFKC: fullwidth letters and punctuation


def test_near_duplicates_need_the_same_numbers_and_negations():
    assert same_fact("- User prefers green tea in the morning at work",
                     "User prefers green tea in morning at work")
    assert not same_fact("- Retire at 65", "- Retire at 67")
    assert not same_fact("- Likes spicy food very much indeed", "- Does not like spicy food very much indeed")
    assert same_fact("- 喜欢喝绿茶", "喜欢喝绿茶。")


def test_superseded_lines_are_not_live_facts():
    text = "- Tea\n- ~~Coffee~~ (superseded 2026-01-01)\n\n## History\n- Juice\n\n## Other\n- Water\n"
    assert [f.text for f in fact_lines(text)] == ["- Tea", "- Water"]


def test_supersede_moves_the_old_line_under_history_with_its_source():
    text = "# Me\n- Retire at 65 <!-- src: thread=a 2026-01-01 -->\n- Tea\n"
    new = supersede_in(text, "Retire at 65", "Retire at 67", DAY, "thread=b 2026-12-03")
    assert new == ("# Me\n- Retire at 67 <!-- src: thread=b 2026-12-03 -->\n- Tea\n\n## History\n"
                   "- ~~Retire at 65~~ (superseded 2026-12-03) <!-- src: thread=a 2026-01-01 -->\n")
    again = supersede_in(new, "- Tea", "- Coffee", DAY)
    assert again is not None and again.endswith("(superseded 2026-12-03)\n")
    assert again.count("## History") == 1
    assert supersede_in(text, "Retire at 60", "x", DAY) is None


def test_history_is_not_indexed_and_line_numbers_still_match():
    text = "- Retire at 67\n\n## History\n- ~~Retire at 65~~ (superseded 2026-12-03)\n\n## Food\n- Tea\n"
    chunks = chunk_markdown(text)
    joined = "\n".join(c.text for c in chunks)
    assert "65" not in joined and "67" in joined and "Tea" in joined
    assert any(c.start_line == 6 and c.text.endswith("- Tea") for c in chunks)


def test_provenance_round_trips_through_a_comment():
    label = provenance_label(thread="abc --> x", message="m1", when=DAY)
    line = with_provenance("- Tea", label)
    assert line == "- Tea <!-- src: thread=abc_-_x msg=m1 2026-12-03 -->"
    assert with_provenance(line, "other") == line
    assert parse_provenance(line + "\n" + line) == ("thread=abc_-_x msg=m1 2026-12-03",)


def test_expiry_passes_the_day_after():
    line = "- Office closed <!-- expires: 2026-12-31 -->"
    assert not expired(line, dt.date(2026, 12, 31)) and expired(line, dt.date(2027, 1, 1))
    assert not expired("- no date", DAY)



@pytest.mark.parametrize(("value", "day"), [
    ("2027-01-31", dt.date(2027, 1, 31)), (" 2026-12-03 ", DAY), (dt.date(2027, 1, 1), dt.date(2027, 1, 1)),
    (dt.datetime(2027, 1, 1, 9, 30), dt.date(2027, 1, 1)),
])
def test_expiry_date_takes_an_iso_date_from_today_on(value, day):
    assert expiry_date(value, DAY) == day


@pytest.mark.parametrize(("value", "message"), [
    ("2027-1-31", "is not a date"), ("2027-02-30", "is not a date"), ("tomorrow", "is not a date"),
    ("2026-12-02", "is already past"), (dt.date(2020, 1, 1), "is already past"),
])
def test_expiry_date_refuses_other_formats_and_past_days_naming_the_format(value, message):
    with pytest.raises(MemoryInputError, match=message) as caught:
        expiry_date(value, DAY)
    assert "YYYY-MM-DD" in str(caught.value)


def test_with_expiry_ends_the_line_and_replaces_an_earlier_expiry():
    line = "- Tea <!-- src: thread=t1 2026-12-03 -->"
    dated = with_expiry(line, dt.date(2027, 1, 31))
    assert dated == f"{line} <!-- expires: 2027-01-31 -->"
    assert with_expiry(dated, dt.date(2027, 3, 1)) == f"{line} <!-- expires: 2027-03-01 -->"
    assert expired(dated, dt.date(2027, 2, 1)) and not expired(dated, dt.date(2027, 1, 31))
    assert with_expiry("  ", dt.date(2027, 1, 31)) == "  "


def test_expire_in_strikes_past_facts_under_history_and_keeps_the_rest_in_place():
    permit = "- Permit A12 <!-- expires: 2027-01-31 --> <!-- src: thread=t1 2026-12-01 -->"
    history = "## History\n- ~~Coffee~~ (superseded 2026-11-02)\n"
    text = f"# Notes\n{permit}\n- Tea <!-- expires: 2027-02-01 -->\n\n{history}\n## Goals\n- Run\n"
    kept, gone = expire_in(text, dt.date(2027, 2, 1))
    assert gone == (permit,)
    assert kept == (f"# Notes\n- Tea <!-- expires: 2027-02-01 -->\n\n{history}"
                    "- ~~Permit A12~~ (expired 2027-01-31) <!-- src: thread=t1 2026-12-01 -->\n"
                    "\n## Goals\n- Run\n")
    assert [f.text for f in fact_lines(kept)] == ["- Tea <!-- expires: 2027-02-01 -->", "- Run"]
    assert expire_in(kept, dt.date(2027, 2, 1)) == (kept, ())  # struck lines never expire twice


def test_provenance_day_is_the_newest_day_ending_a_source_comment() -> None:
    sources = parse_provenance("- A <!-- src: thread=t1 2026-01-02 -->\n"
                               "- B <!-- src: via=supersede 2026-12-03 -->")
    assert provenance_day(sources) == DAY
    assert provenance_day((provenance_label(thread="t9", when=DAY),)) == DAY
    assert provenance_day(("thread=2026-05-05",)) is None  # a day inside a value is not the write day
    assert provenance_day(("via=flush 2026-13-40",)) is None and provenance_day(()) is None


def test_into_section_adds_after_the_sections_own_lines_and_none_when_no_section_has_the_title() -> None:
    text = "# Health\n\n## Doctors\n- GP: Dr. Reis.\n\n### Old\n- x\n\n## History\n## doctors\n"
    assert into_section(text, "## Doctors", "- Physio on Wednesdays.") == (
        "# Health\n\n## Doctors\n- GP: Dr. Reis.\n- Physio on Wednesdays.\n\n"
        "### Old\n- x\n\n## History\n## doctors\n")
    assert into_section(text, "old", "- y") == text.replace("- x\n", "- x\n- y\n")  # bare title: any level
    assert into_section(text, "### Doctors", "- y") is None  # the level must match
    assert into_section("# A\n## History\n### Gone\n- z", "Gone", "- y") is None  # only History holds it


def test_struck_line_holds_from_its_provenance_day_until_the_day_it_was_superseded():
    text = ("- Rent 1,720\n\n## History\n"
            "- ~~Rent 1,650~~ (superseded 2026-03-01) <!-- src: thread=t1 2025-01-10 -->\n"
            "- ~~Gym: Fitness Hut~~ (expired 2026-02-01)\n")
    [fact] = past_facts("MEMORY.md", text)  # an expired line is not a superseded statement
    assert (fact.line, fact.statement, fact.since, fact.until) == (4, "Rent 1,650", dt.date(2025, 1, 10),
                                                                  dt.date(2026, 3, 1))
    assert not fact.holds(dt.date(2025, 1, 9))
    assert fact.holds(dt.date(2025, 1, 10)) and fact.holds(dt.date(2026, 2, 28))
    assert not fact.holds(dt.date(2026, 3, 1))


def test_struck_line_of_a_daily_log_holds_from_the_log_day():
    [fact] = past_facts("memory/2026-02-03.md", "## History\n- ~~Dinner at Prado~~ (superseded 2026-02-05)\n")
    assert fact.since == dt.date(2026, 2, 3)
