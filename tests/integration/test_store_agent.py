"""The Markdown store inside agents: create_agent + ToolRuntime.store, and langmem's memory tools."""

from __future__ import annotations

import json
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.tools import ToolRuntime
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool, tool

from langchain_md_memory import MarkdownMemory
from langchain_md_memory.integrations.basestore import MarkdownBaseStore
from tests.support.models import scripted

ALICE = ("users", "alice")


def call(name: str, **args: Any) -> AIMessage:
    tool_call = {"name": name, "args": args, "id": f"call-{uuid.uuid4().hex[:8]}"}
    return AIMessage(content="", tool_calls=[tool_call])


@tool
def save_preference(topic: str, text: str, runtime: ToolRuntime) -> str:
    """Save a user preference under a topic."""
    assert runtime.store is not None
    previous = runtime.store.get(ALICE, topic)
    runtime.store.put(ALICE, topic, {"content": text, "source": "agent"})
    return f"saved {topic} (replaced: {previous.value['content'] if previous else 'nothing'})"


@tool
def recall_preferences(query: str, runtime: ToolRuntime) -> str:
    """Look up saved user preferences."""
    assert runtime.store is not None
    hits = runtime.store.search(ALICE, query=query, limit=3)
    return "\n".join(f"{h.key}: {h.value['content']}" for h in hits) or "nothing found"


def tool_messages(result: dict[str, Any]) -> list[ToolMessage]:
    return [m for m in result["messages"] if isinstance(m, ToolMessage)]


@pytest.fixture
def store(kw_memory: MarkdownMemory) -> MarkdownBaseStore:
    return kw_memory.as_store()


# -- create_agent + ToolRuntime.store ---------------------------------------------------


def test_agent_tool_reads_and_writes_markdown_through_runtime_store(store: MarkdownBaseStore) -> None:
    store.put(ALICE, "food", {"content": "Likes hotpot"})
    model = scripted(
        call("save_preference", topic="food", text="Prefers Cantonese dim sum, no coriander"),
        call("recall_preferences", query="dim sum"),
        AIMessage(content="Noted: dim sum."),
    )
    agent = create_agent(model=model, tools=[save_preference, recall_preferences], store=store)
    result = agent.invoke({"messages": [{"role": "user", "content": "I now prefer dim sum"}]})

    saved, recalled = tool_messages(result)
    assert saved.content == "saved food (replaced: Likes hotpot)"
    assert recalled.content == "food: Prefers Cantonese dim sum, no coriander"
    assert result["messages"][-1].content == "Noted: dim sum."
    text = (store.memory.memory_dir / "users/alice/store.md").read_text()
    assert "## food\n" in text and "\n\nPrefers Cantonese dim sum, no coriander\n" in text
    assert "Likes hotpot" not in text
    item = store.get(ALICE, "food")
    assert item is not None and item.value == {"content": "Prefers Cantonese dim sum, no coriander",
                                               "source": "agent"}


async def test_agent_ainvoke_uses_the_async_store_path(store: MarkdownBaseStore) -> None:
    model = scripted(call("save_preference", topic="risk", text="Conservative investor"),
                     AIMessage(content="ok"))
    agent = create_agent(model=model, tools=[save_preference], store=store)
    result = await agent.ainvoke({"messages": [{"role": "user", "content": "I am conservative"}]})
    assert tool_messages(result)[0].content == "saved risk (replaced: nothing)"
    assert "Conservative investor" in (store.memory.memory_dir / "users/alice/store.md").read_text()


def test_hand_edit_between_runs_is_what_the_next_run_reads(store: MarkdownBaseStore) -> None:
    store.put(ALICE, "food", {"content": "Likes hotpot"})
    path = store.memory.memory_dir / "users/alice/store.md"
    path.write_text(path.read_text().replace("Likes hotpot", "Allergic to peanuts"))
    model = scripted(call("recall_preferences", query="peanuts"), AIMessage(content="careful"))
    agent = create_agent(model=model, tools=[recall_preferences], store=store)
    result = agent.invoke({"messages": [{"role": "user", "content": "what can I eat?"}]})
    assert tool_messages(result)[0].content == "food: Allergic to peanuts"


# -- langmem ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def langmem() -> Any:
    with warnings.catch_warnings():
        # langmem imports langgraph names deprecated since langgraph 1.0.
        warnings.simplefilter("ignore")
        return pytest.importorskip("langmem")


@pytest.fixture
def langmem_tools(langmem: Any, store: MarkdownBaseStore) -> Iterator[tuple[BaseTool, BaseTool]]:
    namespace = ("memories", "alice")
    yield (langmem.create_manage_memory_tool(namespace=namespace, store=store),
           langmem.create_search_memory_tool(namespace=namespace, store=store))


def test_langmem_manage_tool_creates_updates_and_deletes_sections(
    store: MarkdownBaseStore, langmem_tools: tuple[BaseTool, BaseTool]
) -> None:
    manage, search = langmem_tools
    created = manage.invoke({"content": "User's favourite cuisine is Sichuan", "action": "create"})
    memory_id = created.removeprefix("created memory ")
    assert uuid.UUID(memory_id)
    path = store.memory.memory_dir / "memories/alice/store.md"
    assert f"## {memory_id}\n" in path.read_text()
    assert "\n\nUser's favourite cuisine is Sichuan\n" in path.read_text()

    found = json.loads(search.invoke({"query": "Sichuan cuisine"}))
    assert [(m["key"], m["value"]) for m in found] == [
        (memory_id, {"content": "User's favourite cuisine is Sichuan"})
    ]
    assert found[0]["score"] > 0

    manage.invoke({"content": "User's favourite cuisine is Cantonese", "action": "update", "id": memory_id})
    item = store.get(("memories", "alice"), memory_id)
    assert item is not None and item.value == {"content": "User's favourite cuisine is Cantonese"}
    [stale] = json.loads(search.invoke({"query": "Sichuan"}))  # still listed, no longer matching
    assert stale["key"] == memory_id and stale["score"] is None

    assert manage.invoke({"action": "delete", "id": memory_id}) == f"Deleted memory {memory_id}"
    assert store.get(("memories", "alice"), memory_id) is None
    assert memory_id not in path.read_text()


async def test_langmem_tools_async(
    store: MarkdownBaseStore, langmem_tools: tuple[BaseTool, BaseTool]
) -> None:
    manage, search = langmem_tools
    created = await manage.ainvoke({"content": "Prefers index funds", "action": "create"})
    memory_id = created.removeprefix("created memory ")
    found = json.loads(await search.ainvoke({"query": "index funds", "limit": 5}))
    assert [m["key"] for m in found] == [memory_id]


def test_langmem_tools_in_an_agent_resolve_the_store_from_the_graph(
    langmem: Any, store: MarkdownBaseStore, tmp_path: Path
) -> None:
    namespace = ("memories", "{langgraph_user_id}")
    tools = [langmem.create_manage_memory_tool(namespace=namespace),
             langmem.create_search_memory_tool(namespace=namespace)]
    model = scripted(
        call("manage_memory", content="Retirement target age is 60", action="create"),
        call("search_memory", query="retirement age"),
        AIMessage(content="remembered"),
    )
    agent = create_agent(model=model, tools=tools, store=store)
    result = agent.invoke({"messages": [{"role": "user", "content": "I want to retire at 60"}]},
                          config={"configurable": {"langgraph_user_id": "bob"}})
    created, searched = tool_messages(result)
    assert str(created.content).startswith("created memory ")
    found = json.loads(str(searched.content))
    assert [m["value"]["content"] for m in found] == ["Retirement target age is 60"]
    assert found[0]["namespace"] == ["memories", "bob"]
    assert "Retirement target age is 60" in (store.memory.memory_dir / "memories/bob/store.md").read_text()
