"""``md-memory --dir D mcp`` as a real process, driven by the official MCP client over stdio.

The same server then serves a LangGraph agent through ``langchain-mcp-adapters``.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult, TextContent, TextResourceContents
from pydantic import AnyUrl

from langchain_md_memory import MarkdownMemory, create_memory_tools

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

MD_MEMORY = shutil.which("md-memory", path=str(Path(sys.executable).parent))


def server_params(folder: Path) -> StdioServerParameters:
    assert MD_MEMORY is not None, "md-memory is not installed beside this Python"
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    args = ["--dir", str(folder), "--embeddings", "none", "mcp"]
    return StdioServerParameters(command=MD_MEMORY, args=args, env=env)


@asynccontextmanager
async def session_on(folder: Path) -> AsyncIterator[ClientSession]:
    async with stdio_client(server_params(folder)) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def text_of(result: CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    folder = tmp_path / "memory"
    with MarkdownMemory(folder, embeddings="none") as mem:
        mem.append("- Prefers window seats on long flights")
        mem.append("- Standup moved to 9:30", file="daily")
    return folder


async def test_stdio_server_lists_the_three_langchain_tools_and_every_file(folder: Path) -> None:
    with MarkdownMemory(folder, embeddings="none") as mem:
        langchain_tools = create_memory_tools(mem)
        files = mem.list_files()
    async with session_on(folder) as session:
        tools = (await session.list_tools()).tools
        resources = (await session.list_resources()).resources
        long_term = await session.read_resource(AnyUrl("memory://MEMORY.md"))

    assert [t.name for t in tools] == ["memory_search", "memory_get", "memory_update"]
    for mcp_tool, lc_tool in zip(tools, langchain_tools, strict=True):
        assert mcp_tool.description == lc_tool.description
        schema = lc_tool.tool_call_schema.model_json_schema()  # type: ignore[union-attr]
        assert mcp_tool.inputSchema["properties"] == schema["properties"]
    assert sorted(str(r.uri) for r in resources) == sorted(f"memory://{path}" for path in files)
    assert "memory://MEMORY.md" in {str(r.uri) for r in resources}
    content = long_term.contents[0]
    assert isinstance(content, TextResourceContents)
    assert "Prefers window seats" in content.text


async def test_update_lands_on_disk_and_is_found_by_search(folder: Path) -> None:
    async with session_on(folder) as session:
        written = await session.call_tool("memory_update", {"content": "- Allergic to peanuts"})
        found = await session.call_tool("memory_search", {"query": "peanuts"})
        read = await session.call_tool("memory_get", {"path": "MEMORY.md"})

    assert not written.isError and "Appended to MEMORY.md" in text_of(written)
    assert "- Allergic to peanuts" in (folder / "MEMORY.md").read_text(encoding="utf-8")
    assert not found.isError and "Allergic to peanuts" in text_of(found)
    assert "MEMORY.md#L" in text_of(found)
    assert "Allergic to peanuts" in text_of(read)


async def test_bad_path_and_oversized_write_are_tool_errors_and_the_server_keeps_serving(
        folder: Path) -> None:
    before = (folder / "MEMORY.md").read_bytes()
    async with session_on(folder) as session:
        escape = await session.call_tool("memory_get", {"path": "../../etc/passwd"})
        outside = await session.call_tool("memory_update", {"content": "- x", "file": "../outside.md"})
        huge = await session.call_tool("memory_update", {"content": "- " + "x" * 1_100_000})
        invalid = await session.call_tool("memory_search", {"query": "seats", "max_results": 500})
        after = await session.call_tool("memory_search", {"query": "window seats"})
        still = await session.read_resource(AnyUrl("memory://MEMORY.md"))

    for result in (escape, outside, huge, invalid):
        assert result.isError, text_of(result)
        assert text_of(result).startswith("Error:")
    assert "invalid arguments for memory_search" in text_of(invalid)
    assert "over max_write_bytes" in text_of(huge)
    assert "outside the memory directory" in text_of(escape)
    assert not (folder.parent / "outside.md").exists()
    assert (folder / "MEMORY.md").read_bytes() == before
    assert not after.isError and "window seats" in text_of(after)
    assert still.contents


async def test_a_bad_resource_uri_is_an_error_not_a_crash(folder: Path) -> None:
    async with session_on(folder) as session:
        with pytest.raises(Exception, match=r"cannot read|not a memory resource"):
            await session.read_resource(AnyUrl("memory://../secret.md"))
        assert (await session.list_tools()).tools


class ToolCallingFake(GenericFakeChatModel):
    """A scripted chat model that accepts tools: ``create_agent`` binds them, no fake model does."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[LanguageModelInput, BaseMessage]:
        return self


async def test_langgraph_agent_with_the_adapters_writes_to_the_markdown(folder: Path) -> None:
    from langchain.agents import create_agent
    from langchain_mcp_adapters.client import MultiServerMCPClient

    params = server_params(folder)
    client = MultiServerMCPClient({"memory": {"transport": "stdio", "command": params.command,
                                              "args": list(params.args), "env": params.env}})
    tools = await client.get_tools()
    assert sorted(t.name for t in tools) == ["memory_get", "memory_search", "memory_update"]
    model = ToolCallingFake(messages=iter([
        AIMessage("", tool_calls=[{"name": "memory_update", "id": "c1",
                                   "args": {"content": "- Learning Portuguese for a trip to Lisbon"}}]),
        AIMessage("", tool_calls=[{"name": "memory_search", "id": "c2", "args": {"query": "Portuguese"}}]),
        AIMessage("Noted: you are learning Portuguese."),
    ]))
    agent = create_agent(model, tools=tools)

    result = await agent.ainvoke({"messages": [("user", "Remember that I'm learning Portuguese.")]})

    text = (folder / "MEMORY.md").read_text(encoding="utf-8")
    assert "- Learning Portuguese for a trip to Lisbon" in text
    tool_replies = [m for m in result["messages"] if m.type == "tool"]
    assert "Appended to MEMORY.md" in str(tool_replies[0].content)
    assert "Learning Portuguese" in str(tool_replies[1].content)


def test_server_exits_cleanly_when_the_client_closes_its_input(folder: Path) -> None:
    import subprocess

    params = server_params(folder)
    done = subprocess.run([params.command, *params.args], input="", capture_output=True, text=True,
                          env=params.env, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
