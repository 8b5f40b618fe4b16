"""The LangGraph BaseStore adapter's behavioural tests on a PostgreSQL memory.

Namespaces are folders of paths (``users/alice/store.md``) in the tenant's documents; tests that
look at or plant files on disk are about a folder memory and are left out (see ``conftest.py``).
"""

from __future__ import annotations

import asyncio

import pytest

from langchain_md_memory import MarkdownMemory
from langchain_md_memory.langgraph import generate_store
from tests.integration.test_langgraph_store import *  # noqa: F403
from tests.postgres.conftest import MemoryFactory


@pytest.fixture
def kw_memory(pg_memory: MarkdownMemory) -> MarkdownMemory:
    return pg_memory


async def test_generate_store_serves_a_postgres_tenant(pg_url: str, tenant: str,
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        pg_memory_factory: MemoryFactory) -> None:
    for name in ("MD_MEMORY_DIR", "LANGGRAPH_STORE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MD_MEMORY_POSTGRES_URL", pg_url)
    monkeypatch.setenv("MD_MEMORY_TENANT", tenant)
    monkeypatch.setenv("MD_MEMORY_EMBEDDINGS", "none")
    alice = ("users", "alice")
    async with generate_store() as store:
        await store.aput(alice, "food", {"content": "Loves Sichuan hotpot"})
        await store.aput(alice, "sport", {"content": "Plays tennis on Sundays"})
        await store.aput(("users", "bob"), "pet", {"content": "Has a cat"})
        await store.aput(alice, "blink", {"content": "gone in 60 ms"}, ttl=0.001)
        await asyncio.sleep(0.2)
        assert await store.aget(alice, "blink") is None
        assert (await store.asearch(("users",), query="hotpot"))[0].key == "food"
        await store.adelete(("users", "bob"), "pet")
        assert await store.alist_namespaces(prefix=("users",)) == [alice]
        assert await store.sweep_ttl() == 1
    assert store.memory.closed
    text = pg_memory_factory().get("users/alice/store.md")  # the same tenant, opened again
    assert "## food\n" in text and "Loves Sichuan hotpot" in text and "blink" not in text
