"""``md-memory --postgres URL --tenant T mcp``: the MCP server on a PostgreSQL memory."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import TextContent

from langchain_md_memory import MarkdownMemory

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

MD_MEMORY = shutil.which("md-memory", path=str(Path(sys.executable).parent))


async def test_an_mcp_client_writes_to_the_tenant_and_reads_it_back(pg_url: str, tenant: str) -> None:
    assert MD_MEMORY is not None
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    params = StdioServerParameters(command=MD_MEMORY, env=env, args=[
        "--postgres", pg_url, "--tenant", tenant, "--embeddings", "none", "mcp"])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        written = await session.call_tool("memory_update", {"content": "- Prefers oolong tea"})
        found = await session.call_tool("memory_search", {"query": "oolong"})
        uris = [str(resource.uri) for resource in (await session.list_resources()).resources]

    assert not written.isError and not found.isError
    assert isinstance(found.content[0], TextContent) and "Prefers oolong tea" in found.content[0].text
    assert uris == ["memory://MEMORY.md"]
    with MarkdownMemory.from_postgres(pg_url, tenant=tenant, embeddings="none") as mem:
        assert mem.get("MEMORY.md").strip().startswith("- Prefers oolong tea")
