"""``md-memory --dir D mcp`` as a real process, driven by the official MCP client over stdio.

The same server then serves a LangGraph agent through ``langchain-mcp-adapters``.
"""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable
from mcp import ClientSession, McpError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult, TextContent, TextResourceContents
from pydantic import AnyUrl

from langchain_md_memory import MarkdownMemory, __version__, create_memory_tools
from tests.support.slow_cli import VOCABULARY

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

MD_MEMORY = shutil.which("md-memory", path=str(Path(sys.executable).parent))
ROOT = Path(__file__).resolve().parents[2]


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


async def test_the_server_names_its_own_version_and_says_which_tools_change_the_memory(folder: Path) -> None:
    async with stdio_client(server_params(folder)) as (read, write), ClientSession(read, write) as session:
        started = await session.initialize()
        tools = {tool.name: tool.annotations for tool in (await session.list_tools()).tools}

    assert started.serverInfo.version == __version__
    for name in ("memory_search", "memory_get"):
        hints = tools[name]
        assert hints is not None and hints.readOnlyHint is True
    update = tools["memory_update"]
    assert update is not None
    # It edits and deletes: a client must not take it for an additive tool and skip asking the user.
    assert (update.readOnlyHint, update.destructiveHint, update.idempotentHint) == (False, True, False)


@pytest.mark.parametrize("uri", ["memory://missing.md", "memory://../secret.md", "memory://notes.txt",
                                 "file:///etc/passwd"])
async def test_reading_a_resource_that_is_not_there_fails_with_the_resource_not_found_code(
        folder: Path, uri: str) -> None:
    (folder.parent / "secret.md").write_text("- not the memory's\n", encoding="utf-8")
    async with session_on(folder) as session:
        with pytest.raises(McpError) as caught:
            await session.read_resource(AnyUrl(uri))
        assert (await session.read_resource(AnyUrl("memory://MEMORY.md"))).contents

    assert caught.value.error.code == -32002  # the spec's "resource not found"
    assert "not the memory's" not in caught.value.error.message


async def test_a_fact_deleted_through_memory_update_leaves_no_provenance_behind(folder: Path) -> None:
    before = (folder / "MEMORY.md").read_text(encoding="utf-8")
    async with session_on(folder) as session:
        added = await session.call_tool("memory_update", {"content": "- Likes green tea"})
        written = (folder / "MEMORY.md").read_text(encoding="utf-8")
        deleted = await session.call_tool("memory_update",
                                          {"action": "delete", "old_text": "- Likes green tea"})
        found = await session.call_tool("memory_search", {"query": "memory_update src"})

    assert not added.isError and "src: via=memory_update" in written
    assert not deleted.isError and text_of(deleted).startswith("Deleted")
    assert (folder / "MEMORY.md").read_text(encoding="utf-8") == before
    assert "src:" not in text_of(found)


def test_ctrl_c_stops_the_server_with_one_line_of_its_own(folder: Path) -> None:
    params = server_params(folder)
    proc = subprocess.Popen([params.command, *params.args], env=params.env, text=True, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(3)  # serving: its input is open
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)

    assert (proc.returncode, out) == (0, "")
    assert err == "md-memory: stopped serving the memory over MCP\n"


def many_notes(folder: Path, count: int) -> None:
    """``count`` one-line notes in files of their own, and the one a test looks for."""
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        words = " ".join(VOCABULARY[(i + k) % len(VOCABULARY)] for k in range(6))
        (folder / f"note-{i:04d}.md").write_text(f"- Note {i}: {words}\n", encoding="utf-8")
    (folder / "MEMORY.md").write_text("- Keeps an emergency reserve of six months\n", encoding="utf-8")


@pytest.mark.timeout(240)
async def test_a_first_search_of_5000_unindexed_notes_answers_in_time_and_reports_progress(
        tmp_path: Path) -> None:
    # 5,000 notes, as measured with the bundled model (313 s). A fake model sleeping 50 ms a text makes
    # embedding them take over four minutes here too, without the cost of the real model in CI.
    folder = tmp_path / "memory"
    many_notes(folder, 5000)
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    args = ["-m", "tests.support.slow_cli", "--dir", str(folder), "--embeddings", "slow", "mcp"]
    params = StdioServerParameters(command=sys.executable, args=args, cwd=ROOT,
                                   env={**env, "SLOW_EMBED_SECONDS": "0.05"})
    progress: list[tuple[float, float | None, str | None]] = []

    async def record(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        started = time.monotonic()
        found = await session.call_tool("memory_search", {"query": "emergency reserve"},
                                        read_timeout_seconds=timedelta(seconds=60), progress_callback=record)
        took = time.monotonic() - started
        again = await session.call_tool("memory_search", {"query": "emergency reserve"},
                                        read_timeout_seconds=timedelta(seconds=30))

    assert not found.isError and took < 60
    answer = text_of(found)
    assert answer.startswith("[1] MEMORY.md#L1") and "emergency reserve of six months" in answer
    note = answer.rsplit("Note: ", 1)[1]
    assert "not embedded yet" in note and "keywords" in note  # the model is told what it got
    assert progress and all(b[0] > a[0] for a, b in itertools.pairwise(progress))
    assert any("embed" in (message or "") for _, _, message in progress)
    assert "emergency reserve of six months" in text_of(again)
