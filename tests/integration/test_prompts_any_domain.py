"""What a model is shown follows ``prompts=``: a coding assistant never sees the finance wording.

Every model here records what it is sent (messages and the schemas of the tools bound to it), and
the tests read all of it: system message, session context, first-turn recall, tool descriptions,
tool results and the flush prompt.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from langchain_md_memory import MarkdownMemoryMiddleware, MemoryPrompts, create_memory_tools
from langchain_md_memory.integrations.nodes import MemoryState, create_recall_node
from langchain_md_memory.langgraph import create_memory_flush_node, create_session_context_node
from langchain_md_memory.prompts import DEFAULT_PROMPTS, FINANCE_PROMPTS, flush_prompt
from tests.support.models import RecordingModel, ScriptedChatModel

CONVENTIONS = """# Conventions
- Tests use pytest with plain asserts; no unittest classes.
- Python is formatted with ruff, line length 110.
"""
DECISIONS = """# Decisions

## Storage
- Chose SQLite over Postgres for the local index: one file, no server to run.
"""

CODING = MemoryPrompts(
    policy="Before proposing a code change, call memory_search for this developer's conventions and past "
           "design decisions, and follow them. Save new conventions with memory_update.",
    search_description="Search the developer's notes: coding conventions, tooling and design decisions "
                       "with their reasons. Call it before proposing a change.",
    get_description="Read exact lines of a notes file, e.g. to copy text before an edit.",
    update_description="Save a convention or a design decision to the developer's notes.",
    flush=flush_prompt(["coding conventions the developer set", "design decisions and their reasons"],
                       "build logs, stack traces and anything only true today"),
    session_context_header="# What you know about this developer",
    recall_header="# Notes recalled for this request",
)
QUESTION = "Should the local index live in Postgres?"


@pytest.fixture
def mem(kw_memory):
    kw_memory.write("MEMORY.md", CONVENTIONS)
    kw_memory.write("decisions.md", DECISIONS)
    return kw_memory


def search_then_answer() -> ScriptedChatModel:
    return ScriptedChatModel(messages=iter([
        AIMessage("", tool_calls=[{"name": "memory_search", "args": {"query": "SQLite Postgres index"},
                                   "id": "call_search"}]),
        AIMessage("Keep it in SQLite, as decided for the index (decisions.md#L1-L4)."),
    ]))


def flush_model() -> RecordingModel:
    return RecordingModel(responses=["- Wants the new cache beside the index, in SQLite."])


def shown_to(*models: ScriptedChatModel | RecordingModel) -> str:
    """Everything the models were sent: every message of every call, and the tool schemas bound to them."""
    parts = [m.text for model in models for prompt in model.prompts for m in prompt]
    parts += [json.dumps(tool) for model in models for tool in getattr(model, "bound_tools", [])]
    return "\n".join(parts)


def descriptions(model: ScriptedChatModel) -> dict[str, str]:
    return {tool["function"]["name"]: tool["function"]["description"] for tool in model.bound_tools}


def check_shown(agent_model: ScriptedChatModel, flusher: RecordingModel, prompts: MemoryPrompts) -> str:
    text = shown_to(agent_model, flusher)
    system = agent_model.prompts[0][0]
    assert isinstance(system, SystemMessage)
    assert prompts.policy in system.text
    assert prompts.session_context_header in text and "- Tests use pytest with plain asserts" in text
    assert prompts.recall_header in text and "Chose SQLite over Postgres" in text
    assert descriptions(agent_model) == {"memory_search": prompts.search_description,
                                         "memory_get": prompts.get_description,
                                         "memory_update": prompts.update_description}
    assert flusher.prompts and flusher.prompts[0][0].text == prompts.flush
    return text


def run_agent(mem: Any, prompts: MemoryPrompts | None) -> tuple[ScriptedChatModel, RecordingModel]:
    model, flusher = search_then_answer(), flush_model()
    kwargs = {} if prompts is None else {"prompts": prompts}
    middleware = MarkdownMemoryMiddleware(mem, flush_model=flusher, trigger_tokens=1, **kwargs)
    agent = create_agent(model, system_prompt="You are a coding assistant.", middleware=[middleware])
    out = agent.invoke({"messages": [HumanMessage(QUESTION)]})
    assert out["messages"][-1].text.startswith("Keep it in SQLite")
    return model, flusher


def test_coding_agent_with_custom_prompts_is_shown_no_finance_text(mem):
    model, flusher = run_agent(mem, CODING)
    text = check_shown(model, flusher, CODING)
    assert "financ" not in text.lower()
    assert "You are a coding assistant." in text
    assert "- Wants the new cache beside the index, in SQLite." in mem.get("daily")


def test_coding_agent_by_default_is_shown_the_domain_neutral_text(mem):
    model, flusher = run_agent(mem, None)
    text = check_shown(model, flusher, DEFAULT_PROMPTS)
    assert "financ" not in text.lower()
    assert "personalised advice or decisions: the user's goals, preferences, constraints and past decisions" \
        in descriptions(model)["memory_search"]


def test_finance_preset_is_what_the_model_sees_when_chosen(mem):
    model, flusher = run_agent(mem, FINANCE_PROMPTS)
    check_shown(model, flusher, FINANCE_PROMPTS)
    assert "personalised financial advice" in model.prompts[0][0].text


def graph_run(mem: Any, prompts: MemoryPrompts) -> tuple[ScriptedChatModel, RecordingModel]:
    model, flusher = search_then_answer(), flush_model()
    tools = create_memory_tools(mem, prompts=prompts)
    bound = model.bind_tools(tools)

    def agent(state: MemoryState) -> dict[str, Any]:
        return {"messages": [bound.invoke([SystemMessage(prompts.policy), *state["messages"]])]}

    graph = StateGraph(MemoryState)
    graph.add_node("memory", create_session_context_node(mem, prompts=prompts))
    graph.add_node("recall", create_recall_node(mem, prompts=prompts))
    graph.add_node("flush", create_memory_flush_node(mem, flusher, trigger_tokens=1, prompts=prompts))
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "memory")
    graph.add_edge("memory", "recall")
    graph.add_edge("recall", "flush")
    graph.add_edge("flush", "agent")
    graph.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: END})
    graph.add_edge("tools", "agent")
    out = graph.compile().invoke({"messages": [HumanMessage(QUESTION)]})
    assert out["messages"][-1].text.startswith("Keep it in SQLite")
    return model, flusher


def test_graph_with_the_nodes_and_custom_prompts_shows_no_finance_text(mem):
    model, flusher = graph_run(mem, CODING)
    text = check_shown(model, flusher, CODING)
    assert "financ" not in text.lower()
    # The tool result the model read came through the graph too.
    assert "[1] decisions.md#L1-L4" in text


def test_graph_with_the_default_prompts_shows_the_neutral_text(mem):
    model, flusher = graph_run(mem, DEFAULT_PROMPTS)
    text = check_shown(model, flusher, DEFAULT_PROMPTS)
    assert "financ" not in text.lower()
    assert "the user's goals, preferences, constraints and past decisions" in text
