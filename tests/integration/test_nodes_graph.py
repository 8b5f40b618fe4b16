"""The graph nodes inside compiled StateGraphs with a checkpointer, over several turns."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage, SystemMessage
from langchain_core.messages.utils import count_tokens_approximately
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from langchain_md_memory.features.flush import FLUSH_HEADING
from langchain_md_memory.files.facts import strip_annotations
from langchain_md_memory.files.paths import daily_file_name
from langchain_md_memory.integrations.nodes import (
    MemoryState,
    create_post_compaction_node,
    create_recall_node,
)
from langchain_md_memory.integrations.prompt_context import RECALL_ID, SESSION_CONTEXT_ID
from langchain_md_memory.langgraph import create_memory_flush_node, create_session_context_node
from langchain_md_memory.prompts import DEFAULT_PROMPTS
from langchain_md_memory.text import estimate_tokens

MEMORY = """# Long-term memory

## Risk profile
- Risk tolerance: conservative. Max drawdown the user accepts: 15%.
- Position limit: no single stock above 5% of the total portfolio.
"""
GOALS = """# Financial goals

## Retirement
- Retire at 60 with 2 million USD invested.

## House
- Down payment for a house in 2028: 120k USD, kept in savings, not in stocks.
"""


@pytest.fixture
def mem(kw_memory):
    kw_memory.write("MEMORY.md", MEMORY)
    kw_memory.write("goals.md", GOALS)
    return kw_memory


def echo(state: dict[str, Any]) -> dict[str, Any]:
    return {"messages": [AIMessage(f"ok {len(state['messages'])}")]}


def compile_graph(*nodes: tuple[str, Any], state: type = MessagesState) -> Any:
    graph = StateGraph(state)
    previous = START
    for name, node in nodes:
        graph.add_node(name, node)
        graph.add_edge(previous, name)
        previous = name
    graph.add_edge(previous, END)
    return graph.compile(checkpointer=InMemorySaver())


def thread(name: str = "t1") -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def memory_messages(messages: list[BaseMessage], message_id: str) -> list[int]:
    return [i for i, m in enumerate(messages) if m.id == message_id]


# -- session context -------------------------------------------------------------------


def test_session_context_node_twice_keeps_exactly_one_system_message_first(mem):
    app = compile_graph(("memory", create_session_context_node(mem)), ("agent", echo))
    app.invoke({"messages": [HumanMessage("Can I buy more NVDA?")]}, thread())
    out = app.invoke({"messages": [HumanMessage("And bonds?")]}, thread())
    messages = out["messages"]
    assert [type(m).__name__ for m in messages] == [
        "SystemMessage", "HumanMessage", "AIMessage", "HumanMessage", "AIMessage"]
    assert memory_messages(messages, SESSION_CONTEXT_ID) == [0]
    assert "no single stock above 5% of the total portfolio" in messages[0].content
    assert messages[2].content == "ok 2" and messages[4].content == "ok 4"


async def test_session_context_node_under_ainvoke_keeps_one_system_message(mem):
    app = compile_graph(("memory", create_session_context_node(mem)), ("agent", echo))
    await app.ainvoke({"messages": [HumanMessage("hi")]}, thread())
    out = await app.ainvoke({"messages": [HumanMessage("again")]}, thread())
    assert memory_messages(out["messages"], SESSION_CONTEXT_ID) == [0]
    assert sum(isinstance(m, SystemMessage) for m in out["messages"]) == 1


def test_session_context_is_replaced_in_place_when_memory_changes(mem):
    app = compile_graph(("memory", create_session_context_node(mem)), ("agent", echo))
    app.invoke({"messages": [HumanMessage("hi")]}, thread())
    mem.append("- Keeps 10% of the portfolio in cash.")
    out = app.invoke({"messages": [HumanMessage("again")]}, thread())
    assert memory_messages(out["messages"], SESSION_CONTEXT_ID) == [0]
    assert "- Keeps 10% of the portfolio in cash." in out["messages"][0].content


def test_session_context_goes_first_even_after_an_existing_system_prompt(mem):
    app = compile_graph(("memory", create_session_context_node(mem)), ("agent", echo))
    out = app.invoke({"messages": [SystemMessage("You are a financial assistant."), HumanMessage("hi")]},
                     thread())
    assert [m.content for m in out["messages"][1:3]] == ["You are a financial assistant.", "hi"]
    assert out["messages"][0].id == SESSION_CONTEXT_ID


def test_a_budget_too_small_for_memory_md_still_says_it_exists(mem):
    node = create_session_context_node(mem, max_tokens=5)
    update = node({"messages": [HumanMessage("hi")]})
    assert update is not None
    content = update["messages"][1].content
    assert content.endswith("MEMORY.md: 0 of 4 lines shown; search it with memory_search")
    assert "Position limit" not in content


def test_session_context_turned_off_by_a_zero_budget(mem):
    assert create_session_context_node(mem, max_tokens=0)({"messages": [HumanMessage("hi")]}) is None


def test_empty_memory_removes_a_previous_session_context(mem):
    app = compile_graph(("memory", create_session_context_node(mem)), ("agent", echo))
    app.invoke({"messages": [HumanMessage("hi")]}, thread())
    mem.write("MEMORY.md", "")
    out = app.invoke({"messages": [HumanMessage("again")]}, thread())
    assert memory_messages(out["messages"], SESSION_CONTEXT_ID) == []


# -- first-turn recall -----------------------------------------------------------------


def test_recall_node_injects_new_hits_once_after_the_session_context(mem):
    app = compile_graph(("memory", create_session_context_node(mem)), ("recall", create_recall_node(mem)),
                        ("agent", echo))
    out = app.invoke({"messages": [HumanMessage("How much do I need to retire at 60?")]}, thread())
    messages = out["messages"]
    assert memory_messages(messages, SESSION_CONTEXT_ID) == [0]
    assert memory_messages(messages, RECALL_ID) == [1]
    recall = messages[1].content
    assert "goals.md#L" in recall
    assert "Retire at 60 with 2 million USD invested." in recall
    assert "MEMORY.md#" not in recall  # already in the session context

    out = app.invoke({"messages": [HumanMessage("What about my house down payment?")]}, thread())
    assert memory_messages(out["messages"], RECALL_ID) == [1]  # not a first turn: no second recall
    assert out["messages"][1].content == recall


def test_recall_skips_hits_whose_lines_are_already_in_the_messages(mem):
    node = create_recall_node(mem)
    fresh = node({"messages": [HumanMessage("When do I retire?")]})
    assert fresh is not None and "goals.md#L1-L4" in fresh["messages"][1].content
    quoted = "Financial goals. Retirement: - Retire at 60 with 2 million USD invested."
    assert node({"messages": [SystemMessage(quoted), HumanMessage("When do I retire?")]}) is None


def test_recall_is_capped_by_its_token_budget(mem):
    question = [HumanMessage("retire house stock portfolio")]
    wide = create_recall_node(mem, max_tokens=2000)({"messages": question})
    narrow = create_recall_node(mem, max_tokens=110)({"messages": question})
    assert wide is not None and narrow is not None
    wide_hits = wide["messages"][1].content.count("(score ")
    narrow_hits = narrow["messages"][1].content.count("(score ")
    assert wide_hits >= 2
    assert 1 <= narrow_hits < wide_hits
    # What did not fit is named, not dropped silently.
    left = wide_hits - narrow_hits
    assert narrow["messages"][1].content.endswith(
        f"{left} more memory hit{'s' if left > 1 else ''} did not fit here; find them with memory_search")
    assert "did not fit" not in wide["messages"][1].content
    assert create_recall_node(mem, max_tokens=10)({"messages": question}) is None


def test_recall_does_nothing_once_the_model_answered(mem):
    node = create_recall_node(mem)
    assert node({"messages": [HumanMessage("retire"), AIMessage("...")]}) is None


# -- post-compaction re-injection --------------------------------------------------------


def summarize(state: dict[str, Any]) -> dict[str, Any]:
    """A compaction that, like SummarizationMiddleware, replaces everything but the last message."""
    summary = HumanMessage(
        "Here is a summary of the conversation to date:\n\n"
        "- Risk tolerance: conservative. Max drawdown the user accepts: 15%.",
        additional_kwargs={"lc_source": "summarization"},
    )
    return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), summary, state["messages"][-1]]}


def test_post_compaction_node_reinjects_context_without_what_the_summary_holds(mem):
    app = compile_graph(("memory", create_session_context_node(mem)), ("agent", echo),
                        ("summarize", summarize), ("reinject", create_post_compaction_node(mem)))
    out = app.invoke({"messages": [HumanMessage("Can I buy more NVDA?")]}, thread())
    messages = out["messages"]
    assert memory_messages(messages, SESSION_CONTEXT_ID) == [0]
    context = messages[0].content
    assert "- Position limit: no single stock above 5% of the total portfolio." in context
    assert "Max drawdown the user accepts" not in context  # the summary already carries it
    assert [type(m).__name__ for m in messages] == ["SystemMessage", "HumanMessage", "AIMessage"]

    out = app.invoke({"messages": [HumanMessage("and now?")]}, thread())
    assert memory_messages(out["messages"], SESSION_CONTEXT_ID) == [0]


def test_post_compaction_node_does_nothing_without_a_summary_or_with_context_present(mem):
    node = create_post_compaction_node(mem)
    assert node({"messages": [HumanMessage("hi")]}) is None
    context = SystemMessage("ctx", id=SESSION_CONTEXT_ID)
    summary = HumanMessage("Here is a summary of the conversation to date: x")
    assert node({"messages": [context, summary]}) is None
    update = node({"messages": [summary]})
    assert update is not None and update["messages"][1].id == SESSION_CONTEXT_ID


def test_post_compaction_node_accepts_a_custom_summary_predicate(mem):
    node = create_post_compaction_node(mem, is_summary=lambda m: m.name == "digest")
    assert node({"messages": [HumanMessage("Here is a summary of the conversation to date")]}) is None
    assert node({"messages": [HumanMessage("short", name="digest")]}) is not None


# -- flush in a graph ------------------------------------------------------------------


def compact_over(limit: int):
    def compact(state: dict[str, Any]) -> dict[str, Any] | None:
        if count_tokens_approximately(state["messages"]) < limit:
            return None
        return summarize(state)

    return compact


def test_flush_node_in_a_graph_flushes_once_per_compaction_cycle(mem):
    long = "I decided to keep 10% of my portfolio in cash from now on. " + "More details. " * 30
    trigger = count_tokens_approximately([HumanMessage(long)])
    model = FakeListChatModel(responses=["- Keeps 10% of the portfolio in cash.", "- Second cycle fact."])
    app = compile_graph(("flush", create_memory_flush_node(mem, model, trigger_tokens=trigger)),
                        ("agent", echo), state=MemoryState)

    app.invoke({"messages": [HumanMessage(long)]}, thread())
    assert app.get_state(thread()).values["memory_flushed"] is True
    app.invoke({"messages": [HumanMessage("ok")]}, thread())  # still over the trigger, same cycle
    assert strip_annotations(mem.get("daily")).count(FLUSH_HEADING) == 1

    app.update_state(thread(), summarize(app.get_state(thread()).values))  # a compaction
    app.invoke({"messages": [HumanMessage("short")]}, thread())
    assert app.get_state(thread()).values["memory_flushed"] is False
    app.invoke({"messages": [HumanMessage(long)]}, thread())
    assert strip_annotations(mem.get("daily")) == (
        f"{FLUSH_HEADING}\n- Keeps 10% of the portfolio in cash.\n\n{FLUSH_HEADING}\n- Second cycle fact.\n"
    )
    assert mem.search("cash portfolio")[0].path == daily_file_name()


async def test_flush_node_runs_natively_under_ainvoke_before_a_compaction(mem):
    long = "My emergency fund target is six months of expenses. " + "Padding words. " * 30
    trigger = count_tokens_approximately([HumanMessage(long)])
    model = FakeListChatModel(responses=["- Emergency fund target: six months of expenses."])
    app = compile_graph(("flush", create_memory_flush_node(mem, model, trigger_tokens=trigger)),
                        ("compact", compact_over(trigger)), ("agent", echo), state=MemoryState)
    out = await app.ainvoke({"messages": [HumanMessage(long)]}, thread())
    assert out["messages"][0].additional_kwargs == {"lc_source": "summarization"}  # compacted after the flush
    saved = strip_annotations(mem.get("daily"))
    assert saved == f"{FLUSH_HEADING}\n- Emergency fund target: six months of expenses.\n"
    assert "Emergency fund target" in mem.search("emergency fund")[0].text


async def test_nodes_can_be_called_directly_sync_and_async(mem):
    node = create_session_context_node(mem)
    state = {"messages": [HumanMessage("hi")]}
    sync_update = node(state)
    async_update = await node.acall(state)
    assert sync_update is not None and async_update is not None
    assert sync_update["messages"][1].content == async_update["messages"][1].content
    assert sync_update["messages"][1].id == SESSION_CONTEXT_ID
    assert await node.ainvoke(state) == async_update


def test_recall_on_a_failing_memory_injects_nothing_and_the_graph_goes_on(mem, monkeypatch):
    from langchain_md_memory.errors import MemoryIndexError

    def broken(*args, **kwargs):
        raise MemoryIndexError("database is locked")

    monkeypatch.setattr(mem, "search_detailed", broken)
    app = compile_graph(("recall", create_recall_node(mem)), ("agent", echo))
    out = app.invoke({"messages": [HumanMessage("When can I retire?")]}, thread())
    assert [type(m).__name__ for m in out["messages"]] == ["HumanMessage", "AIMessage"]


# -- a MEMORY.md larger than the budget ------------------------------------------------------


def test_a_memory_md_over_the_default_budget_reaches_the_graph_cut_with_its_note(kw_memory):
    kw_memory.write("MEMORY.md", "".join(f"- Rule {i}: when the user asks about topic {i}, answer in the "
                                         f"style agreed for topic {i}\n" for i in range(1, 151)))
    kw_memory.append("- today: the user moved to Berlin", file="daily")
    app = compile_graph(("memory", create_session_context_node(kw_memory)), ("agent", echo))
    out = app.invoke({"messages": [HumanMessage("hi")]}, thread())
    context = out["messages"][0].content
    assert out["messages"][0].id == SESSION_CONTEXT_ID
    assert "- Rule 1: when the user" in context and "- Rule 150: " not in context
    assert "the user moved to Berlin" in context
    last = context.splitlines()[-1]
    assert last.startswith("MEMORY.md: ")
    assert last.endswith(" of 150 lines shown; search the rest with memory_search")


def test_post_compaction_reinjects_a_cut_memory_md_bounded_with_its_note_and_no_repeats(kw_memory):
    kw_memory.write("MEMORY.md", "".join(f"- Rule {i}: when the user asks about topic {i}, answer in the "
                                         f"style agreed for topic {i}\n" for i in range(1, 151)))
    summary = HumanMessage("Here is a summary of the conversation to date:\n\n- Rule 1: when the user asks "
                           "about topic 1, answer in the style agreed for topic 1")
    update = create_post_compaction_node(kw_memory, max_tokens=500)({"messages": [summary]})
    assert update is not None
    context = update["messages"][1].content
    header = DEFAULT_PROMPTS.session_context_header
    assert context.startswith(header) and estimate_tokens(context[len(header):]) <= 500
    assert "- Rule 1: " not in context and "- Rule 2: " in context  # rule 1 is in the summary already
    assert context.splitlines()[-1].endswith(" of 150 lines shown; search the rest with memory_search")
