"""A LangGraph agent with Markdown memory, runnable offline: ``python examples/agent.py``.

The graph::

    START -> memory (session context) -> recall (first turn) -> flush -> compact -> reinject -> agent
    agent -> tools -> flush -> ...      (while the model calls tools)
    agent -> END                        (when it answers)

``flush`` saves durable facts to today's file before ``compact`` summarises
the history; ``reinject`` puts the session context back after a compaction.
The chat models are scripted fakes, so it needs no key and no network: what
you see is the memory being searched, updated and flushed for real, in a
temporary copy of ``examples/memory`` (or in ``--dir``).

Usage::

    python examples/agent.py                   # temp copy of the sample memory
    python examples/agent.py --dir ./my-memory # keeps the files afterwards
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from langchain_core.language_models.fake_chat_models import FakeListChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, SystemMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.prebuilt import ToolNode, tools_condition

from langchain_md_memory import MarkdownMemory, create_memory_tools
from langchain_md_memory.files.paths import daily_file_name
from langchain_md_memory.integrations.nodes import (
    MemoryState,
    create_post_compaction_node,
    create_recall_node,
)
from langchain_md_memory.langgraph import create_memory_flush_node, create_session_context_node
from langchain_md_memory.prompts import FINANCE_PROMPTS

SAMPLE = Path(__file__).resolve().parent / "memory"
FLUSH_TOKENS = 1000
"""Flush at this size: at or below the compaction trigger, so the flush always comes first."""
COMPACT_TOKENS = 1200

TURNS = [
    "Can I raise my NVDA position to 10% of the portfolio?",
    "Please remember: I keep 10% of my portfolio in cash as a safety buffer.",
    "Some background for next year: my daughter starts college in 2030 and I want 80k USD saved for it "
    "by then. " + "We talked about schools, campus visits and how tuition keeps rising every year. " * 40,
]


class ScriptedToolModel(GenericFakeChatModel):
    """A fake chat model that replays a script; ``bind_tools`` is a no-op so it can call tools."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedToolModel:
        return self


def scripted_agent_model() -> ScriptedToolModel:
    def call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
        return AIMessage("", tool_calls=[{"name": name, "args": args, "id": call_id}])

    return ScriptedToolModel(messages=iter([
        call("memory_search", {"query": "single stock position limit"}, "call_1"),
        AIMessage("I'd hold off: your memory (MEMORY.md, Risk profile) caps any single stock at 5% of the "
                  "portfolio, and in November you already trimmed NVDA for breaking that limit."),
        call("memory_update", {"content": "- Keeps 10% of the portfolio in cash as a safety buffer."},
             "call_2"),
        AIMessage("Saved: 10% cash buffer, in MEMORY.md."),
        AIMessage("Noted. For a 2030 goal a 529 plan with a conservative glide path fits your risk profile."),
    ]))


def flush_model() -> FakeListChatModel:
    """Stands in for a real model answering the finance flush prompt."""
    return FakeListChatModel(responses=[
        "- College fund goal: 80k USD saved by 2030 for the daughter's tuition.",
    ])


def compact(state: MemoryState) -> dict[str, Any] | None:
    """A minimal summariser: over COMPACT_TOKENS, replace everything before the last user turn."""
    messages = state["messages"]
    if count_tokens_approximately(messages) < COMPACT_TOKENS:
        return None
    last_human = max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage))
    dropped = len(messages[:last_human])
    summary = HumanMessage(
        "Here is a summary of the conversation to date:\n\n- Discussed NVDA sizing and a cash buffer.",
        additional_kwargs={"lc_source": "summarization"},
    )
    print(f"  compact: summarised {dropped} earlier message(s)")
    return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), summary, *messages[last_human:]]}


def build_graph(mem: MarkdownMemory) -> Any:
    # A personal-finance assistant: the specs' finance wording for tools, flush and headers.
    prompts = FINANCE_PROMPTS
    tools = create_memory_tools(mem, prompts=prompts)
    model = scripted_agent_model().bind_tools(tools)

    def agent(state: MemoryState) -> dict[str, Any]:
        return {"messages": [model.invoke([SystemMessage(prompts.policy), *state["messages"]])]}

    graph = StateGraph(MemoryState)
    graph.add_node("memory", create_session_context_node(mem, prompts=prompts))
    graph.add_node("recall", create_recall_node(mem, max_tokens=300, prompts=prompts))
    graph.add_node("flush", create_memory_flush_node(mem, flush_model(), trigger_tokens=FLUSH_TOKENS,
                                                     prompts=prompts))
    graph.add_node("compact", compact)
    graph.add_node("reinject", create_post_compaction_node(mem, prompts=prompts))
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "memory")
    graph.add_edge("memory", "recall")
    graph.add_edge("recall", "flush")
    graph.add_edge("flush", "compact")
    graph.add_edge("compact", "reinject")
    graph.add_edge("reinject", "agent")
    graph.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: END})
    graph.add_edge("tools", "flush")
    return graph.compile(checkpointer=InMemorySaver())


def show(node: str, update: dict[str, Any] | None, mem: MarkdownMemory) -> None:
    if not update:
        return
    messages = [m for m in update.get("messages", []) if not isinstance(m, RemoveMessage)]
    if node == "recall" and messages:
        recalled = [line for m in messages for line in m.text.splitlines() if line.startswith("[")]
        print(f"  recall: injected {len(recalled)} passage(s): {', '.join(r.split()[1] for r in recalled)}")
    if node == "reinject" and messages:
        print(f"  reinject: session context restored after the compaction ({len(messages[0].text)} chars)")
    if node == "flush" and update.get("memory_flushed"):
        print(f"  flush: saved durable facts to {daily_file_name()}")
    for message in messages:
        if node == "agent" and isinstance(message, AIMessage):
            for call in message.tool_calls:
                print(f"  agent -> {call['name']}({call['args']})")
            if message.text:
                print(f"  agent: {message.text}")
        if isinstance(message, ToolMessage):
            print(f"  {message.name} returned:")
            for line in message.text.splitlines()[:4]:
                print(f"    | {line}")


def seed(folder: Path, sample: Path = SAMPLE) -> None:
    """Copy the sample's Markdown into ``folder``; an index built in the sample (by a search there) stays."""
    shutil.copytree(sample, folder, dirs_exist_ok=True, ignore=shutil.ignore_patterns("index.sqlite*", ".*"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", help="memory folder (seeded with the sample when it has no MEMORY.md)")
    args = parser.parse_args(argv)
    folder = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="md-memory-agent-"))
    if not (folder / "MEMORY.md").exists():
        seed(folder)
    print(f"memory folder: {folder}")

    with MarkdownMemory(folder, embeddings="none") as mem:
        app = build_graph(mem)
        config = {"configurable": {"thread_id": "demo"}}
        for n, text in enumerate(TURNS, start=1):
            print(f"\nturn {n} user: {text[:100]}{'...' if len(text) > 100 else ''}")
            for chunk in app.stream({"messages": [HumanMessage(text)]}, config, stream_mode="updates"):
                for node, update in chunk.items():
                    show(node, update, mem)

        print("\nMEMORY.md now ends with:")
        print("  " + mem.get("MEMORY.md").rstrip().splitlines()[-1])
        today = daily_file_name()
        print(f"\n{today}:")
        try:
            print("\n".join(f"  {line}" for line in mem.get(today).rstrip().splitlines()))
        except ValueError:
            print("  (nothing flushed)")
        hit = mem.search("college fund 2030")[0]
        print(f"\nsearch 'college fund 2030' -> {hit.citation}: {hit.text.splitlines()[-1]}")
    if not args.dir:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
