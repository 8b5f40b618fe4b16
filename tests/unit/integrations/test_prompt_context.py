"""Putting memory in front of a model: hit blocks, dedup against what it has seen, budgets, placement."""

from __future__ import annotations

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage, SystemMessage
from langgraph.graph.message import add_messages

from langchain_md_memory.integrations.prompt_context import (
    RECALL_ID,
    after_leading_system,
    dedupe_lines,
    format_hits,
    place_messages,
    select_hits,
)
from langchain_md_memory.text import estimate_tokens
from langchain_md_memory.types import MemorySearchResult
from tests.support.hits import make_hit

RULE = "- No single stock above 5% of the portfolio."
GOAL = "- Retire at 55 with 2 million invested."


# -- format_hits ------------------------------------------------------------------------------


def test_each_hit_is_a_numbered_block_with_citation_score_and_stripped_text() -> None:
    hits = [make_hit("a", 0.834, path="MEMORY.md", start_line=3, end_line=5, text=f"\n{RULE}\n\n"),
            make_hit("b", 0.5, path="goals.md", start_line=1, end_line=2, text=GOAL)]
    assert format_hits(hits) == (f"[1] MEMORY.md#L3-L5 (score 0.83)\n{RULE}\n\n"
                                 f"[2] goals.md#L1-L2 (score 0.50)\n{GOAL}")


def test_numbering_continues_from_start() -> None:
    assert format_hits([make_hit("a", 1.0, text=RULE)], start=4).startswith("[4] MEMORY.md#L1-L1")


def test_no_hits_format_as_nothing() -> None:
    assert format_hits([]) == ""


# -- dedupe_lines -----------------------------------------------------------------------------


def test_lines_already_seen_are_dropped_and_new_ones_kept() -> None:
    text = f"## Risk\n\n{RULE}\n- Max drawdown 15%.\n"
    assert dedupe_lines(text, [f"earlier: {RULE}"]) == "## Risk\n\n- Max drawdown 15%."


def test_whitespace_differences_do_not_hide_a_duplicate() -> None:
    assert dedupe_lines("-  No single   stock above 5% of the portfolio.", [RULE]) == ""


def test_a_heading_left_without_content_is_dropped() -> None:
    text = f"# Memory\n\n## Risk\n\n{RULE}\n\n## Goals\n\n{GOAL}\n"
    assert dedupe_lines(text, [RULE]) == f"# Memory\n\n## Goals\n\n{GOAL}"


def test_nothing_new_gives_an_empty_string() -> None:
    assert dedupe_lines(f"## Risk\n\n{RULE}\n", [RULE, "something else"]) == ""


def test_nothing_seen_keeps_the_text() -> None:
    assert dedupe_lines(f"## Risk\n\n{RULE}", []) == f"## Risk\n\n{RULE}"


# -- select_hits ------------------------------------------------------------------------------


def cost(*hits: MemorySearchResult) -> int:
    return sum(estimate_tokens(format_hits([h])) for h in hits)


def test_hits_are_kept_best_first_while_they_fit_the_budget() -> None:
    a, b, c = (make_hit(x, 0.9 - i / 10, text=f"fact {x} " * 5) for i, x in enumerate("abc"))
    assert select_hits([a, b, c], [], max_tokens=cost(a, b)) == [a, b]
    assert select_hits([a, b, c], [], max_tokens=cost(a, b) - 1) == [a]
    assert select_hits([a, b, c], [], max_tokens=cost(a, b, c)) == [a, b, c]


def test_a_hit_too_big_for_what_is_left_is_skipped_and_smaller_later_ones_still_fit() -> None:
    small = make_hit("small", 0.9, text="short fact")
    big = make_hit("big", 0.8, text="a long passage " * 40)
    later = make_hit("later", 0.7, text="another short")
    assert select_hits([small, big, later], [], max_tokens=cost(small, later)) == [small, later]


def test_a_hit_whose_lines_the_model_has_seen_is_skipped() -> None:
    seen = make_hit("seen", 0.9, text=f"## Risk\n{RULE}")
    new = make_hit("new", 0.8, text=GOAL)
    assert select_hits([seen, new], [f"Context:\n{RULE}"], max_tokens=10_000) == [new]


def test_the_same_chunk_twice_is_kept_once() -> None:
    a = make_hit("a", 0.9, text=RULE)
    assert select_hits([a, a], [], max_tokens=10_000) == [a]


def test_a_zero_budget_selects_nothing() -> None:
    assert select_hits([make_hit("a", 0.9, text=RULE)], [], max_tokens=0) == []


# -- place_messages ---------------------------------------------------------------------------


def place(messages: list[BaseMessage], new: BaseMessage) -> list[BaseMessage]:
    """``messages`` after the graph's ``add_messages`` reducer applied the update placing ``new``."""
    return add_messages(messages, place_messages(messages, new, after_leading_system))  # type: ignore[arg-type, return-value]


def conversation() -> list[BaseMessage]:
    return [SystemMessage("You are a careful advisor.", id="sys"), HumanMessage("Can I buy NVDA?", id="h1"),
            AIMessage("Let me check.", id="a1")]


def test_new_memory_goes_after_the_one_leading_system_message() -> None:
    result = place(conversation(), SystemMessage("recalled", id=RECALL_ID))
    assert [m.id for m in result] == ["sys", RECALL_ID, "h1", "a1"]
    assert isinstance(result[0], SystemMessage) and result[0].content == "You are a careful advisor."


def test_placing_again_replaces_in_place_and_keeps_one_copy() -> None:
    first = place(conversation(), SystemMessage("old", id=RECALL_ID))
    update = place_messages(first, SystemMessage("new", id=RECALL_ID), after_leading_system)
    assert not any(isinstance(m, RemoveMessage) for m in update)  # an in-place update, no rewrite
    result = place(first, SystemMessage("new", id=RECALL_ID))
    assert [m.id for m in result] == ["sys", RECALL_ID, "h1", "a1"]
    assert [m.content for m in result if m.id == RECALL_ID] == ["new"]


def test_a_memory_message_in_the_wrong_place_is_moved_not_duplicated() -> None:
    misplaced = [*conversation(), SystemMessage("stale", id=RECALL_ID)]
    result = place(misplaced, SystemMessage("fresh", id=RECALL_ID))
    assert [m.id for m in result] == ["sys", RECALL_ID, "h1", "a1"]
    assert [m.content for m in result if m.id == RECALL_ID] == ["fresh"]


def test_without_a_system_message_memory_goes_first() -> None:
    result = place([HumanMessage("hi", id="h1")], SystemMessage("mem", id=RECALL_ID))
    assert [m.id for m in result] == [RECALL_ID, "h1"]
