"""expiry: a store item's expiry comment reads back as written, by the store or by hand."""

from __future__ import annotations

import datetime as dt

import pytest

from langchain_md_memory.errors import MemoryInputError
from langchain_md_memory.integrations.basestore.expiry import Expiry, check_ttl, parse_expiry
from langchain_md_memory.integrations.basestore.sections import parse_sections, render_item, with_expiry

T0 = dt.datetime(2026, 7, 14, 12, 0, tzinfo=dt.UTC)
END_OF_TIME = dt.datetime(9999, 12, 31, 23, 59, 59, tzinfo=dt.UTC)


@pytest.mark.parametrize("minutes", [10, 0.5, 1 / 60, 0.001, 10080])
def test_an_expiry_reads_back_exactly(minutes: float) -> None:
    expiry = Expiry.after(minutes, T0)
    parsed = parse_expiry(expiry.comment())
    assert parsed is not None and parsed.minutes == minutes
    assert abs(parsed.at - expiry.at) < dt.timedelta(milliseconds=1)


@pytest.mark.parametrize(("comment", "at", "minutes"), [
    ("<!-- expires: 2026-07-14T12:30:00+00:00, ttl 30 min -->", T0 + dt.timedelta(minutes=30), 30.0),
    ("<!-- expires: 2026-07-14T12:30:00+00:00 -->", T0 + dt.timedelta(minutes=30), None),
    ("<!-- expires: 2026-07-14T14:30:00+02:00 -->", T0 + dt.timedelta(minutes=30), None),
    ("<!-- expires: 2026-07-14 -->", dt.datetime(2026, 7, 15, tzinfo=dt.UTC), None),
    # The last day a date can name: the end of time, not an overflow one day later.
    ("<!-- expires: 9999-12-31 -->", END_OF_TIME, None),
    ("<!-- expires: 9999-12-31, ttl 10 min -->", END_OF_TIME, 10.0),
])
def test_hand_written_expiries_parse(comment: str, at: dt.datetime, minutes: float | None) -> None:
    assert parse_expiry(comment) == Expiry(at, minutes)


@pytest.mark.parametrize("comment", ["<!-- expires: soon -->", "<!-- expires: 2026-07-14, ttl ten min -->",
                                     "<!-- src: thread=t1 -->",
                                     "<!-- expires: 2027-W05-1 -->"])  # not a day a memory file's facts read
def test_unreadable_expiries_are_none(comment: str) -> None:
    assert parse_expiry(comment) is None


def test_the_end_of_time_never_passes_and_a_ttl_still_refreshes_it() -> None:
    forever = parse_expiry("<!-- expires: 9999-12-31, ttl 10 min -->")
    assert forever is not None and not forever.passed(END_OF_TIME)
    assert forever.refreshed(T0) == Expiry(T0 + dt.timedelta(minutes=10), 10.0)


@pytest.mark.parametrize(("moment", "at"), [
    ("9999-12-31T23:59:59-05:00", END_OF_TIME),
    ("0001-01-01T00:00:00+05:00", dt.datetime.min.replace(tzinfo=dt.UTC)),
])
def test_a_moment_utc_cannot_hold_is_clamped_and_still_writes_back(moment: str, at: dt.datetime) -> None:
    expiry = parse_expiry(f"<!-- expires: {moment} -->")
    assert expiry == Expiry(at)
    assert parse_expiry(expiry.comment()) == expiry


def test_a_refresh_moves_only_an_expiry_with_a_ttl() -> None:
    later = T0 + dt.timedelta(minutes=5)
    assert Expiry.after(10, T0).refreshed(later).at == later + dt.timedelta(minutes=10)
    fixed = Expiry(T0)
    assert fixed.refreshed(later) is fixed
    assert not Expiry(T0).passed(T0) and Expiry(T0).passed(later)


def test_an_item_carries_its_expiry_through_render_and_parse() -> None:
    expiry = Expiry.after(10, T0)
    text = render_item("food", {"content": "Loves hotpot", "kind": "pref"}, created_at=T0, updated_at=T0,
                       expiry=expiry)
    item = parse_sections(text, fallback_time=T0).find("food")
    assert item is not None and item.expiry == expiry
    assert item.value == {"content": "Loves hotpot", "kind": "pref"}
    meta = text.split("\n")[1]
    assert with_expiry(meta, None) == render_item("food", {"content": "x", "kind": "pref"}, created_at=T0,
                                                  updated_at=T0).split("\n")[1]


@pytest.mark.parametrize("ttl", [float("nan"), float("-inf"), True, "5", 1e12])
def test_ttls_that_are_not_finite_minutes_are_refused(ttl: object) -> None:
    with pytest.raises(MemoryInputError, match="ttl must be a finite number of minutes"):
        check_ttl(ttl)  # type: ignore[arg-type]
