"""langchain-tests standard suites for the three memory tools, plus async and ToolNode runs."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any, ClassVar

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool
from langchain_tests.integration_tests import ToolsIntegrationTests
from langchain_tests.unit_tests import ToolsUnitTests
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from langchain_md_memory import MarkdownMemory, create_memory_tools
from langchain_md_memory.errors import MemoryIndexError

MEMORY = """# Long-term memory

## Risk profile
- Risk tolerance: conservative. Max drawdown the user accepts: 15%.
- Position limit: no single stock above 5% of the total portfolio.
"""


class _SharedMemory:
    """One memory for the standard suites, whose ``tool_constructor`` takes no fixtures."""

    mem: ClassVar[MarkdownMemory | None] = None
    folder: ClassVar[Path | None] = None

    @classmethod
    def tools(cls) -> list[BaseTool]:
        if cls.mem is None:
            cls.folder = Path(tempfile.mkdtemp(prefix="md-memory-tools-"))
            cls.mem = MarkdownMemory(cls.folder, embeddings="none")
            cls.mem.write("MEMORY.md", MEMORY)
        return create_memory_tools(cls.mem)


@pytest.fixture(scope="module", autouse=True)
def _close_shared_memory():
    yield
    if _SharedMemory.mem is not None:
        _SharedMemory.mem.close()
        shutil.rmtree(_SharedMemory.folder or "", ignore_errors=True)
        _SharedMemory.mem = None


class _Suite:
    index: ClassVar[int]
    example: ClassVar[dict[str, Any]]

    @property
    def tool_constructor(self) -> BaseTool:
        return _SharedMemory.tools()[self.index]

    @property
    def tool_invoke_params_example(self) -> dict[str, Any]:
        return dict(self.example)


class TestMemorySearchUnit(_Suite, ToolsUnitTests):
    index = 0
    example: ClassVar[dict[str, Any]] = {"query": "single stock limit", "max_results": 3}


class TestMemorySearchIntegration(_Suite, ToolsIntegrationTests):
    index = 0
    example: ClassVar[dict[str, Any]] = {"query": "single stock limit", "max_results": 3}


class TestMemoryGetUnit(_Suite, ToolsUnitTests):
    index = 1
    example: ClassVar[dict[str, Any]] = {"path": "MEMORY.md", "start_line": 3, "end_line": 5}


class TestMemoryGetIntegration(_Suite, ToolsIntegrationTests):
    index = 1
    example: ClassVar[dict[str, Any]] = {"path": "MEMORY.md", "start_line": 3, "end_line": 5}


class TestMemoryUpdateUnit(_Suite, ToolsUnitTests):
    index = 2
    example: ClassVar[dict[str, Any]] = {"content": "- Prefers low-cost index funds.", "file": "daily"}


class TestMemoryUpdateIntegration(_Suite, ToolsIntegrationTests):
    index = 2
    example: ClassVar[dict[str, Any]] = {"content": "- Prefers low-cost index funds.", "file": "daily"}


# -- async paths and ToolNode --------------------------------------------------------


@pytest.fixture
def tools(kw_memory):
    kw_memory.write("MEMORY.md", MEMORY)
    return create_memory_tools(kw_memory)


async def test_search_ainvoke_returns_the_same_blocks_as_invoke(tools):
    args = {"query": "drawdown"}
    assert await tools[0].ainvoke(args) == tools[0].invoke(args)
    assert "Max drawdown the user accepts: 15%" in await tools[0].ainvoke(args)


async def test_get_ainvoke_reads_exact_lines(tools):
    assert await tools[1].ainvoke({"path": "MEMORY.md", "start_line": 5, "end_line": 5}) == (
        "- Position limit: no single stock above 5% of the total portfolio.\n"
    )


async def test_update_ainvoke_tool_call_appends_and_returns_a_tool_message(kw_memory, tools):
    args = {"content": "- Keeps 10% cash."}
    call = {"name": "memory_update", "args": args, "id": "call_7", "type": "tool_call"}
    message = await tools[2].ainvoke(call)
    assert isinstance(message, ToolMessage)
    assert (message.tool_call_id, message.status) == ("call_7", "success")
    assert message.content == "Appended to MEMORY.md."
    assert kw_memory.get("MEMORY.md").splitlines()[-1].startswith("- Keeps 10% cash. <!-- src: ")


async def test_update_ainvoke_error_is_a_tool_message_with_error_status(tools):
    call = {"name": "memory_update", "args": {"action": "delete"}, "id": "call_8", "type": "tool_call"}
    message = await tools[2].ainvoke(call)
    assert message.status == "error"
    assert "read it with memory_get" in message.content.lower()


async def test_search_ainvoke_on_a_failing_index_is_disabled_not_an_error(kw_memory, tools, monkeypatch):
    def broken(*args, **kwargs):
        raise MemoryIndexError("database is locked")

    monkeypatch.setattr(kw_memory, "search_detailed", broken)
    assert await tools[0].ainvoke({"query": "stock"}) == "memory disabled: database is locked"


def _parallel_calls() -> AIMessage:
    return AIMessage("", tool_calls=[
        {"name": "memory_search", "args": {"query": "position limit"}, "id": "a"},
        {"name": "memory_get", "args": {"path": "MEMORY.md", "start_line": 4, "end_line": 4}, "id": "b"},
        {"name": "memory_update", "args": {"content": "- Prefers ETFs.", "file": "daily"}, "id": "c"},
        {"name": "memory_update", "args": {"action": "edit", "old_text": "missing"}, "id": "d"},
    ])


def _check(messages: list[ToolMessage]) -> None:
    by_id = {m.tool_call_id: m for m in messages}
    assert set(by_id) == {"a", "b", "c", "d"}
    assert "no single stock above 5%" in by_id["a"].content
    assert by_id["b"].content.startswith("- Risk tolerance: conservative.")
    assert by_id["c"].content.startswith("Appended to ")
    assert by_id["d"].status == "error"


def _tool_graph(tools: list[BaseTool]) -> Any:
    graph = StateGraph(MessagesState)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    return graph.compile()


def test_parallel_tool_calls_in_a_tool_node_run_on_worker_threads(tools):
    result = _tool_graph(tools).invoke({"messages": [_parallel_calls()]})
    _check(result["messages"][1:])


async def test_parallel_tool_calls_in_a_tool_node_under_ainvoke(tools):
    result = await _tool_graph(tools).ainvoke({"messages": [_parallel_calls()]})
    _check(result["messages"][1:])
