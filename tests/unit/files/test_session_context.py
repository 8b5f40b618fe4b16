"""The session context: MEMORY.md, today's and yesterday's logs, within a token budget."""

from __future__ import annotations

import datetime as dt
import logging
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from langchain_md_memory.files import session_context
from langchain_md_memory.files.session_context import (
    build_session_context,
    cut_to_budget,
    load_session_context,
)
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


def rules(n: int, words: str = "always prefer the option numbered") -> str:
    return "".join(f"- Rule {i}: {words} {i}\n" for i in range(1, n + 1))


def test_a_memory_md_over_the_budget_is_cut_not_dropped_and_says_so(store: MarkdownStore) -> None:
    store.write("MEMORY.md", rules(150, "when choosing a thing for the user prefer the option numbered"))
    store.write("2026-07-14.md", "- today: moved the meeting to Friday\n")
    context = build_session_context(store, 2000, today=TODAY)
    text = context.text
    assert estimate_tokens(store.read("MEMORY.md")) > 2000
    assert estimate_tokens(text) <= 2000
    memory = context.files[0]
    assert (memory.name, memory.total_lines) == ("MEMORY.md", 150) and 30 < memory.shown_lines < 150
    assert text.startswith("## MEMORY.md\n\n- Rule 1: ")
    assert f"- Rule {memory.shown_lines}: " in text and f"- Rule {memory.shown_lines + 1}: " not in text
    assert "## 2026-07-14.md\n\n- today: moved the meeting to Friday" in text
    assert text.endswith(f"MEMORY.md: {memory.shown_lines} of 150 lines shown; "
                         "search the rest with memory_search")


def test_a_tiny_budget_still_gives_a_non_empty_context(store: MarkdownStore) -> None:
    store.write("MEMORY.md", rules(400))
    text = load_session_context(store, 300, today=TODAY)
    assert "- Rule 1: " in text
    assert estimate_tokens(text) <= 300
    assert "of 400 lines shown; search the rest with memory_search" in text


def test_the_logs_keep_their_share_when_memory_md_is_huge(store: MarkdownStore) -> None:
    store.write("MEMORY.md", rules(400))
    store.write("2026-07-14.md", rules(60, "today's note"))
    store.write("2026-07-13.md", "- yesterday: called the bank\n")
    context = build_session_context(store, 1000, today=TODAY)
    shown = {f.name: f.shown_lines for f in context.files}
    assert shown["2026-07-13.md"] == 1
    # Logs get up to LOG_SHARE of the budget: today's log shows a good part, MEMORY.md the most.
    assert 5 < shown["2026-07-14.md"] < 60 and shown["MEMORY.md"] > shown["2026-07-14.md"]
    assert context.notes == [f"MEMORY.md: {shown['MEMORY.md']} of 400 lines shown; search the rest with "
                             "memory_search", f"2026-07-14.md: {shown['2026-07-14.md']} of 60 lines shown; "
                             "search the rest with memory_search"]


def test_a_cut_keeps_every_heading_and_the_first_line_of_each_section_before_the_rest() -> None:
    content = "# Memory\n\n" + "".join(
        f"## Topic {t}\n\n" + "".join(f"- fact {t}.{i} on this topic\n" for i in range(1, 9)) + "\n"
        for t in range(1, 6))
    text, shown, total = cut_to_budget(content, 120)
    assert total == 46 and 11 <= shown < 46
    for t in range(1, 6):
        assert f"## Topic {t}" in text and f"- fact {t}.1 on" in text
    # no section keeps its last line while another lacks its second
    assert "- fact 1.8 " not in text and "- fact 5.2 " in text
    assert text.index("## Topic 1") < text.index("- fact 1.1") < text.index("## Topic 2")


def test_when_even_the_notes_do_not_fit_the_notes_alone_are_shown(store: MarkdownStore) -> None:
    store.write("MEMORY.md", rules(10))
    note = "MEMORY.md: 0 of 10 lines shown; search it with memory_search"
    assert load_session_context(store, 5, today=TODAY) == note


def test_the_first_cut_in_a_process_logs_one_warning(store: MarkdownStore, caplog: pytest.LogCaptureFixture,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session_context, "_warned", set())
    store.write("MEMORY.md", rules(100))
    with caplog.at_level(logging.WARNING, logger=session_context.__name__):
        load_session_context(store, 200, today=TODAY)
        load_session_context(store, 200, today=TODAY)
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and "MEMORY.md: " in warnings[0] and "md-memory dream" in warnings[0]


def test_session_context_shows_whole_files_up_to_the_exact_budget(store: MarkdownStore) -> None:
    store.write("MEMORY.md", "a" * 35)
    store.write("2026-07-14.md", "b" * 35)
    whole = load_session_context(store, 1000, today=TODAY)
    assert load_session_context(store, estimate_tokens(whole), today=TODAY) == whole
    assert load_session_context(store, estimate_tokens(whole) - 1, today=TODAY) != whole


def test_session_context_skips_empty_and_missing_files(store: MarkdownStore) -> None:
    store.write("MEMORY.md", "\n\n  \n")
    assert load_session_context(store, 1000, today=TODAY) == ""
    store.write("2026-07-13.md", "y\n")
    assert load_session_context(store, 1000, today=TODAY) == "## 2026-07-13.md\n\ny"
    assert load_session_context(store, 0, today=TODAY) == ""


_LINE = st.one_of(st.just(""), st.from_regex(r"#{1,3} [A-Za-z]{1,12}", fullmatch=True),
                  st.from_regex(r"- [A-Za-z0-9 仓位上限]{1,60}", fullmatch=True))


@given(lines=st.lists(_LINE, max_size=40), budget=st.integers(min_value=0, max_value=400))
def test_a_cut_fits_its_budget_and_keeps_lines_whole_and_in_order(lines: list[str], budget: int) -> None:
    content = "\n".join(lines)
    text, shown, total = cut_to_budget(content, budget)
    assert estimate_tokens(text) <= budget
    assert total == sum(1 for line in lines if line.strip())
    kept = [line for line in text.splitlines() if line.strip()]
    assert len(kept) == shown
    it = iter(line for line in lines if line.strip())
    assert all(any(line == original for original in it) for line in kept)  # a subsequence, lines whole
    if estimate_tokens(content) <= budget:
        assert shown == total
