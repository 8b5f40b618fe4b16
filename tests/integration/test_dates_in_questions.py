"""A date in a user's question is never an error, on every surface that searches.

"March 0000" names no month and "the week before 2 January 0001" runs off the calendar; a note dated
9999-12-05 sits on its last page. Each question is searched through the facade, the retriever, the
``memory_search`` tool, the CLI, the MCP server (a real process and the official client) and the
middleware's first-turn recall in a ``create_agent`` run: each answers with hits, none raises.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import TextContent

from langchain_md_memory import MarkdownMemory, MarkdownMemoryMiddleware, create_memory_tools
from langchain_md_memory.cli import main
from tests.support.models import ScriptedChatModel

QUESTIONS = [
    "What rent did I pay in March 0000?",
    "rent 0000-05",
    "rent in the week before 2 January 0001?",
    "dentist in December 9999",
    "0000年3月的 rent",
]
"""Each names a day or a month the calendar lacks, or one at its very end (the note below)."""

NOTES = "# Memory\n\n- Rent is 1,720 a month\n- Dentist appointment on 9999-12-05 at noon\n"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    folder = tmp_path / "memory"
    with MarkdownMemory(folder, embeddings="none") as mem:
        mem.write("notes.md", NOTES)
    return folder


@pytest.fixture
def mem(folder: Path):
    with MarkdownMemory(folder, embeddings="none") as mem:
        yield mem


@pytest.mark.parametrize("question", QUESTIONS)
def test_search_and_the_retriever_answer_a_question_naming_an_impossible_date(mem, question):
    hits = mem.search(question)
    assert hits and all(hit.path == "notes.md" for hit in hits)
    assert mem.search_detailed(question).hits == hits
    docs = mem.as_retriever().invoke(question)
    assert [doc.metadata["source"] for doc in docs] == [hit.path for hit in hits]


async def test_the_async_search_answers_too(mem):
    for question in QUESTIONS:
        assert await mem.asearch(question)


@pytest.mark.parametrize("question", QUESTIONS)
def test_the_search_tool_returns_hits_for_a_question_naming_an_impossible_date(mem, question):
    search = create_memory_tools(mem)[0]
    reply = search.invoke({"query": question})
    assert "notes.md#L" in reply


def test_the_cli_prints_hits_for_each_question(folder):
    for question in QUESTIONS:
        out, err = io.StringIO(), io.StringIO()
        code = main(["--dir", str(folder), "--embeddings", "none", "search", question, "--json"],
                     out=out, err=err)
        assert code == 0, err.getvalue()
        assert json.loads(out.getvalue())["results"], question


@pytest.mark.slow
async def test_the_mcp_server_answers_each_question(folder):
    command = shutil.which("md-memory", path=str(Path(sys.executable).parent))
    assert command is not None
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    args = ["--dir", str(folder), "--embeddings", "none", "mcp"]
    params = StdioServerParameters(command=command, args=args, env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for question in QUESTIONS:
            result = await session.call_tool("memory_search", {"query": question})
            assert not result.isError, question
            block = result.content[0]
            assert isinstance(block, TextContent) and "notes.md#L" in block.text


def test_the_middlewares_first_turn_recall_survives_the_users_words(mem):
    mem.config = mem.config.merged(session={"recall_confident_only": False})  # keyword hits shown too
    model = ScriptedChatModel(messages=iter([AIMessage("Noted.") for _ in QUESTIONS]))
    agent = create_agent(model, middleware=[MarkdownMemoryMiddleware(mem)])
    for question in QUESTIONS:
        out = agent.invoke({"messages": [HumanMessage(question)]})
        assert out["messages"][-1].content == "Noted."
    # notes.md is not in the session context: the first turn's recall is what shows it
    assert all("notes.md#L" in prompt[0].content for prompt in model.prompts)
