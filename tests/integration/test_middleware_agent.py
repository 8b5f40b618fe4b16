"""``MarkdownMemoryMiddleware`` in real ``create_agent`` runs with scripted fake models."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import SummarizationMiddleware
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field

from langchain_md_memory import MarkdownMemoryMiddleware
from langchain_md_memory.features.flush import FLUSH_HEADING, MEMORY_FLUSH_TOKEN
from langchain_md_memory.files.facts import strip_annotations
from langchain_md_memory.files.paths import daily_file_name
from langchain_md_memory.integrations.tools import MEMORY_TOOLS_POLICY
from tests.support.models import FailingModel, ScriptedChatModel

MEMORY = """# Long-term memory

## Risk profile
- Risk tolerance: conservative. Max drawdown the user accepts: 15%.
- Position limit: no single stock above 5% of the total portfolio.
"""
GOALS = """# Financial goals

## Retirement
- Retire at 60 with 2 million USD invested.
"""
RULE = "- Position limit: no single stock above 5% of the total portfolio."


class FactFlushModel(FakeListChatModel):
    """A flush model that saves every transcript line containing 'FACT:' as a bullet."""

    responses: list[str] = Field(default_factory=list)

    def _call(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
              **kwargs: Any) -> str:
        facts = [line.split("FACT:", 1)[1].strip() for line in messages[-1].text.splitlines()
                 if "FACT:" in line]
        return "\n".join(f"- {fact}" for fact in facts) or MEMORY_FLUSH_TOKEN


def search_then_answer() -> ScriptedChatModel:
    return ScriptedChatModel(messages=iter([
        AIMessage("", tool_calls=[{"name": "memory_search", "args": {"query": "single stock position limit"},
                                   "id": "call_search"}]),
        AIMessage("No: your rule (MEMORY.md#L1-L5) caps any single stock at 5% of the portfolio, "
                  "so 10% in NVDA would break it."),
    ]))


@pytest.fixture
def mem(kw_memory):
    kw_memory.write("MEMORY.md", MEMORY)
    kw_memory.write("goals.md", GOALS)
    return kw_memory


def check_search_run(messages: list[BaseMessage]) -> None:
    tool_messages = [m for m in messages if isinstance(m, ToolMessage)]
    assert len(tool_messages) == 1
    assert tool_messages[0].name == "memory_search"
    assert tool_messages[0].tool_call_id == "call_search"
    assert tool_messages[0].content.startswith("[1] MEMORY.md#L1-L5 (score ")
    assert RULE in tool_messages[0].content
    final = messages[-1]
    assert isinstance(final, AIMessage) and not final.tool_calls
    assert "MEMORY.md#L1-L5" in final.content and "5%" in final.content


def test_agent_calls_memory_search_and_answers_with_the_recalled_rule(mem):
    model = search_then_answer()
    agent = create_agent(model, middleware=[MarkdownMemoryMiddleware(mem)])
    out = agent.invoke({"messages": [HumanMessage("Can I put 10% of my portfolio into NVDA?")]})
    check_search_run(out["messages"])


async def test_agent_under_ainvoke_uses_the_async_hooks(mem):
    model = search_then_answer()
    agent = create_agent(model, middleware=[MarkdownMemoryMiddleware(mem)])
    out = await agent.ainvoke({"messages": [HumanMessage("Can I put 10% of my portfolio into NVDA?")]})
    check_search_run(out["messages"])
    assert MEMORY_TOOLS_POLICY in model.prompts[0][0].content


def test_model_sees_policy_session_context_and_first_turn_recall_after_the_system_prompt(mem):
    model = search_then_answer()
    agent = create_agent(model, system_prompt="You are a careful financial assistant.",
                         middleware=[MarkdownMemoryMiddleware(mem)])
    out = agent.invoke({"messages": [HumanMessage("When can I retire?")]})
    system = model.prompts[0][0]
    assert isinstance(system, SystemMessage)
    assert sum(isinstance(m, SystemMessage) for m in model.prompts[0]) == 1
    text = system.content
    assert text.startswith("You are a careful financial assistant.\n\n")
    assert text.index(MEMORY_TOOLS_POLICY) < text.index("## MEMORY.md") < text.index("# Recalled memory")
    assert RULE in text
    recall = text[text.index("# Recalled memory"):]
    assert "goals.md#L1-L4" in recall and "Retire at 60 with 2 million USD invested." in recall
    assert "MEMORY.md#" not in recall  # already in the session context: deduplicated
    assert not any(isinstance(m, SystemMessage) for m in out["messages"])  # memory stays out of state


def test_first_turn_recall_runs_once_per_thread_and_stays_out_of_messages(mem):
    model = ScriptedChatModel(messages=iter([AIMessage("First."), AIMessage("Second.")]))
    agent = create_agent(model, middleware=[MarkdownMemoryMiddleware(mem)], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    agent.invoke({"messages": [HumanMessage("When can I retire?")]}, config)
    mem.write("goals.md", "# Financial goals\n\n## Retirement\n- Retire at 58.\n")
    out = agent.invoke({"messages": [HumanMessage("Anything else?")]}, config)
    kinds = [type(m).__name__ for m in out["messages"]]
    assert kinds == ["HumanMessage", "AIMessage", "HumanMessage", "AIMessage"]
    first, second = model.prompts[0][0].content, model.prompts[1][0].content
    assert "Retire at 60 with 2 million USD invested." in first
    assert "Retire at 60 with 2 million USD invested." in second  # the thread's recall is kept, not redone
    assert "Retire at 58" not in second


def test_session_context_is_read_fresh_on_every_model_call(mem):
    model = ScriptedChatModel(messages=iter([
        AIMessage("", tool_calls=[{"name": "memory_update", "args": {"content": "- Keeps 10% in cash."},
                                   "id": "call_update"}]),
        AIMessage("Saved."),
    ]))
    agent = create_agent(model, middleware=[MarkdownMemoryMiddleware(mem, recall_first_turn=False)])
    agent.invoke({"messages": [HumanMessage("Remember that I keep 10% in cash.")]})
    assert "- Keeps 10% in cash." not in model.prompts[0][0].content
    assert "- Keeps 10% in cash." in model.prompts[1][0].content
    assert strip_annotations(mem.get("MEMORY.md")).endswith("- Keeps 10% in cash.\n")


def test_without_registered_tools_the_middleware_adds_no_tools_and_no_policy(mem):
    middleware = MarkdownMemoryMiddleware(mem, register_tools=False)
    assert middleware.tools == []
    model = ScriptedChatModel(messages=iter([AIMessage("Hi.")]))
    create_agent(model, middleware=[middleware]).invoke({"messages": [HumanMessage("hi")]})
    assert MEMORY_TOOLS_POLICY not in model.prompts[0][0].content
    assert RULE in model.prompts[0][0].content


# -- ordering with SummarizationMiddleware ---------------------------------------------------


def long_history() -> list[BaseMessage]:
    return [
        HumanMessage("FACT: Wants a 120k USD house down payment by 2028, kept out of stocks."),
        AIMessage("Noted, the down payment stays in savings."),
        *[m for i in range(6) for m in (HumanMessage(f"Small talk {i}. " * 10), AIMessage(f"Sure {i}."))],
        HumanMessage("So what now?"),
    ]


def summarizing_agent(mem, *, memory_first: bool) -> tuple[Any, ScriptedChatModel]:
    history = long_history()
    trigger = count_tokens_approximately(history) - 10
    model = ScriptedChatModel(messages=iter([AIMessage("Let us review your plan.")]))
    memory = MarkdownMemoryMiddleware(mem, flush_model=FactFlushModel(), trigger_tokens=trigger)
    summarization = SummarizationMiddleware(model, trigger=("tokens", trigger), keep=("messages", 2),
                                            summarizer=lambda messages: "The user chatted about the weather.")
    middleware = [memory, summarization] if memory_first else [summarization, memory]
    return create_agent(model, middleware=middleware), model


def test_flush_listed_before_summarization_saves_the_fact_summarization_drops(mem):
    agent, model = summarizing_agent(mem, memory_first=True)
    agent.invoke({"messages": long_history()})
    seen = model.prompts[0]
    assert seen[1].text.startswith("Here is a summary of the conversation to date")
    assert not any("FACT:" in m.text for m in seen)  # summarisation did drop it ...
    assert strip_annotations(mem.get("daily")) == (  # ... after the flush saved it
        f"{FLUSH_HEADING}\n- Wants a 120k USD house down payment by 2028, kept out of stocks.\n"
    )
    assert "house down payment" in mem.search("house down payment 2028")[0].text


def test_flush_listed_after_summarization_only_sees_the_summary(mem):
    agent, _ = summarizing_agent(mem, memory_first=False)
    agent.invoke({"messages": long_history()})
    assert not (mem.memory_dir / daily_file_name()).exists()


async def test_flush_before_summarization_also_under_ainvoke(mem):
    agent, _ = summarizing_agent(mem, memory_first=True)
    await agent.ainvoke({"messages": long_history()})
    assert "- Wants a 120k USD house down payment by 2028" in mem.get("daily")


def test_flush_model_error_does_not_break_the_agent(mem):
    model = ScriptedChatModel(messages=iter([AIMessage("Still answering.")]))
    broken = FailingModel(error=RuntimeError("provider down"))
    agent = create_agent(model, middleware=[
        MarkdownMemoryMiddleware(mem, flush_model=broken, trigger_tokens=1)])
    out = agent.invoke({"messages": [HumanMessage("FACT: something")]})
    assert out["messages"][-1].content == "Still answering."
    assert not (mem.memory_dir / daily_file_name()).exists()


def test_importing_the_package_and_nodes_does_not_import_langchain():
    code = (
        "import sys\n"
        "import langchain_md_memory\n"
        "from langchain_md_memory import create_memory_tools, create_session_context_node, "
        "create_memory_flush_node, create_recall_node, create_post_compaction_node\n"
        "import langchain_md_memory.features.flush, langchain_md_memory.integrations.prompt_context\n"
        "print('langchain' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                            check=True)
    assert result.stdout.strip() == "False"


def test_a_memory_md_over_the_budget_reaches_the_system_message_cut_with_its_note(kw_memory):
    kw_memory.write("MEMORY.md", "".join(f"- Rule {i}: when the user asks about topic {i}, answer in the "
                                         f"style agreed for topic {i}\n" for i in range(1, 151)))
    kw_memory.append("- today: the user moved to Berlin", file="daily")
    model = ScriptedChatModel(messages=iter([AIMessage("ok")]))
    agent = create_agent(model, middleware=[MarkdownMemoryMiddleware(kw_memory, recall_first_turn=False)])
    agent.invoke({"messages": [HumanMessage("hi")]})
    text = model.prompts[0][0].content
    assert "- Rule 1: when the user" in text and "- Rule 150: " not in text
    assert "the user moved to Berlin" in text
    shown = kw_memory.session_context_report().files[0].shown_lines
    assert f"MEMORY.md: {shown} of 150 lines shown; search the rest with memory_search" in text
