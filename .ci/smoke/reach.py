"""Smoke test of the installed wheel, run by .ci/run from a folder outside the checkout.

Uses only what `pip install "langchain-md-memory[local,mcp,inspect]"` installed: the package, its bundled
model and dictionary, the `md-memory` script beside this Python. Exits non-zero on the first failure.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import langchain_md_memory
from langchain_md_memory import MarkdownMemory, create_memory_tools
from langchain_md_memory.text.crosslingual import bundled_dictionary

MD_MEMORY = Path(sys.executable).parent / "md-memory"


def check(condition: bool, what: str) -> None:
    if not condition:
        sys.exit(f"smoke reach: FAILED: {what}")
    print(f"smoke reach: ok: {what}")


def run(*args: str) -> str:
    done = subprocess.run([str(MD_MEMORY), *args], capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        sys.exit(f"smoke reach: FAILED: md-memory {' '.join(args)} exited {done.returncode}: {done.stderr}")
    return done.stdout


async def over_mcp(folder: Path) -> tuple[list[str], str]:
    """The installed `md-memory mcp` over stdio: its tools, and a memory_search answer."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=str(MD_MEMORY), args=["--dir", str(folder), "--embeddings", "none",
                                                                 "mcp"])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        names = [tool.name for tool in (await session.list_tools()).tools]
        found = await session.call_tool("memory_search", {"query": "index funds"})
        return names, "".join(getattr(block, "text", "") for block in found.content)


def main() -> None:
    installed = Path(langchain_md_memory.__file__).resolve()
    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    check(installed.is_relative_to(site), f"the package comes from the venv ({installed})")
    check((installed.parent / "py.typed").is_file(), "py.typed is in the wheel")
    check(bundled_dictionary() is not None, "the CC-CEDICT dictionary loads")

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "memory"
        with MarkdownMemory(folder, embeddings="local") as mem:
            mem.append("- Keeps 10% of the portfolio in cash")
            mem.append("- 单只个股仓位不超过 5%")
            hits = mem.search("cash buffer")
            check(bool(hits) and "10% of the portfolio" in hits[0].text, "append then search (local model)")
            check(mem.status()["embedded"] > 0, "the bundled model embedded the chunks")

            memory_search, memory_get, memory_update = create_memory_tools(mem)
            reply = memory_update.invoke({"content": "- Prefers index funds over single stocks"})
            check("Appended to MEMORY.md" in reply, "memory_update appends")
            check("index funds" in memory_search.invoke({"query": "index funds"}), "memory_search finds it")
            check("index funds" in memory_get.invoke({"path": "MEMORY.md"}), "memory_get reads it")
            refused = memory_get.invoke({"path": "../outside.md"})
            check(refused.startswith("Error:"), "memory_get refuses a path outside the memory")

        out = run("--dir", str(folder), "--embeddings", "local", "search", "单只个股 仓位上限")
        check("MEMORY.md#L" in out, "md-memory search from the installed script")
        help_text = run("mcp", "--help")
        check("--http" in help_text and "memory_search" in help_text, "md-memory mcp --help")
        names, found = asyncio.run(over_mcp(folder))
        check(names == ["memory_search", "memory_get", "memory_update"], "md-memory mcp lists its tools")
        check("index funds" in found, "md-memory mcp answers memory_search")

        from starlette.testclient import TestClient

        from langchain_md_memory.integrations.inspect_page import create_inspect_app

        with MarkdownMemory(folder, embeddings="none") as mem:
            home = TestClient(create_inspect_app(mem)).get("/")
        check(home.status_code == 200 and "index funds" not in home.text and "MEMORY.md" in home.text,
              "the inspect page renders with the templates the wheel ships")


if __name__ == "__main__":
    main()
