"""The as-of harness asks each question about last month, in every way it claims to."""

from __future__ import annotations

import datetime as dt

from bench.quality.asof import questions
from langchain_md_memory.search.asof import asked_day

TODAY = dt.date(2026, 12, 5)


def test_every_variant_asks_about_last_month_or_an_earlier_day():
    last = dt.date(2026, 11, 30)
    for question in ("How much is my rent now?", "我现在房租是多少？"):
        variants = questions(question, TODAY)
        assert len(variants) >= 4
        for kind, text, as_of in variants:
            day = as_of or asked_day(text, TODAY)
            assert day is not None and day <= last, (kind, text)
            assert "now" not in text and "现在" not in text
        assert [as_of for _, _, as_of in variants].count(None) == len(variants) - 1  # one passes as_of
