"""The session context: MEMORY.md, today's and yesterday's logs, within a token budget."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from langchain_md_memory.files.session_context import load_session_context
from langchain_md_memory.files.store import MarkdownStore
from langchain_md_memory.text import estimate_tokens

TODAY = dt.date(2026, 7, 14)


@pytest.fixture
def store(tmp_path: Path) -> MarkdownStore:
    return MarkdownStore(tmp_path)


def test_session_context_orders_memory_today_yesterday(store: MarkdownStore) -> None:
    store.write("MEMORY.md", "  long term  \n")
    store.write("2026-07-13.md", "yesterday\n")
    store.write("2026-07-14.md", "today\n")
    store.write("2026-07-12.md", "too old\n")
    assert load_session_context(store, 1000, today=TODAY) == (
        "## MEMORY.md\n\nlong term\n\n## 2026-07-14.md\n\ntoday\n\n## 2026-07-13.md\n\nyesterday"
    )


def test_session_context_skips_too_big_section_but_keeps_later_ones(store: MarkdownStore) -> None:
    store.write("MEMORY.md", "word " * 400)
    store.write("2026-07-14.md", "short note\n")
    store.write("2026-07-13.md", "also short\n")
    context = load_session_context(store, 20, today=TODAY)
    assert context == "## 2026-07-14.md\n\nshort note\n\n## 2026-07-13.md\n\nalso short"
    assert estimate_tokens(context) == 17


def test_session_context_stops_short_of_the_budget(store: MarkdownStore) -> None:
    store.write("MEMORY.md", "a" * 35)
    store.write("2026-07-14.md", "b" * 35)
    first = load_session_context(store, 1000, today=TODAY).split("\n\n## ")[0]
    budget = estimate_tokens(first)
    assert load_session_context(store, budget, today=TODAY) == first
    assert load_session_context(store, budget - 1, today=TODAY) == ""


def test_session_context_skips_empty_and_missing_files(store: MarkdownStore) -> None:
    store.write("MEMORY.md", "\n\n  \n")
    assert load_session_context(store, 1000, today=TODAY) == ""
    store.write("2026-07-13.md", "y\n")
    assert load_session_context(store, 1000, today=TODAY) == "## 2026-07-13.md\n\ny"
    assert load_session_context(store, 0, today=TODAY) == ""
