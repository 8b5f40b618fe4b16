"""The memory as the LangGraph server's store: ``generate_store`` under the real ``langgraph dev``.

The server (``langgraph-cli[inmem]``) runs as a real process on 127.0.0.1, with a ``langgraph.json``
pointing at a two-line ``store.py`` that re-exports the factory and a tiny graph that writes and
searches through ``get_store()``; the official ``langgraph_sdk`` client drives it. The memory embeds
with the bundled offline model (``MD_MEMORY_EMBEDDINGS=local``), so nothing leaves the machine.
The factory's own settings and its background sweep are tested by opening it directly.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from langchain_md_memory import MarkdownMemory
from langchain_md_memory.errors import MemoryInputError, MemoryStoreError
from langchain_md_memory.langgraph import AsyncMarkdownBaseStore, generate_store

SERVER_START_S = 90.0
LANGGRAPH = Path(sys.executable).with_name("langgraph")

STORE_PY = """from langchain_md_memory.langgraph import generate_store
__all__ = ["generate_store"]
"""

GRAPH_PY = '''from typing import TypedDict

from langgraph.config import get_store
from langgraph.graph import END, START, StateGraph


class Notes(TypedDict, total=False):
    note: str
    found: list[str]


def remember(state: Notes) -> Notes:
    store = get_store()
    store.put(("graph", "notes"), "latest", {"content": state["note"]})
    return {"found": [hit.key for hit in store.search(("graph",), query=state["note"])]}


builder = StateGraph(Notes)
builder.add_node("remember", remember)
builder.add_edge(START, "remember")
builder.add_edge("remember", END)
graph = builder.compile()
'''


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def server_env(memory: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MD_MEMORY_", "OPENAI_", "LANGSMITH_"))}
    env.update(MD_MEMORY_DIR=str(memory), MD_MEMORY_EMBEDDINGS="local", LANGGRAPH_CLI_NO_ANALYTICS="1",
               LANGSMITH_TRACING="false", LANGCHAIN_TRACING_V2="false", PYTHONUNBUFFERED="1")
    return env


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """``langgraph dev`` serving the memory at ``tmp_path/memory``: yields its URL and the memory folder."""
    app = tmp_path / "app"
    app.mkdir()
    (app / "store.py").write_text(STORE_PY, encoding="utf-8")
    (app / "graph.py").write_text(GRAPH_PY, encoding="utf-8")
    (app / "langgraph.json").write_text(json.dumps({
        "dependencies": ["."],
        "graphs": {"notes": "./graph.py:graph"},
        "store": {"path": "./store.py:generate_store"},
    }), encoding="utf-8")
    memory = tmp_path / "memory"
    port = free_port()
    log = (tmp_path / "server.log").open("w", encoding="utf-8")
    proc = subprocess.Popen(
        [str(LANGGRAPH), "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1", "--port", str(port),
         "--config", str(app / "langgraph.json")],
        cwd=app, env=server_env(memory), stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            assert proc.poll() is None, (tmp_path / "server.log").read_text(encoding="utf-8")[-4000:]
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise AssertionError("langgraph dev did not listen in time:\n"
                                         + (tmp_path / "server.log").read_text(encoding="utf-8")[-4000:]) \
                        from None
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}", memory
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@pytest.mark.slow
@pytest.mark.timeout(240)
@pytest.mark.enable_socket
@pytest.mark.allow_hosts(["127.0.0.1"])
async def test_langgraph_dev_serves_the_markdown_store(server: tuple[str, Path]) -> None:
    from langgraph_sdk import get_client

    url, memory = server
    started = time.monotonic()
    client = get_client(url=url)
    alice = ["users", "alice"]
    await client.store.put_item(alice, "food", {"content": "Loves Sichuan hotpot, very spicy"})
    await client.store.put_item(alice, "sport", {"content": "Plays tennis on Sunday mornings"})
    await client.store.put_item(["users", "bob"], "pet", {"content": "Has a cat named Miso"})

    item = await client.store.get_item(alice, "food")
    assert item["value"] == {"content": "Loves Sichuan hotpot, very spicy"}
    hits = (await client.store.search_items(["users"], query="spicy hotpot"))["items"]
    assert hits[0]["key"] == "food"
    assert hits[0]["score"] is not None and hits[0]["score"] > max(hit["score"] or 0 for hit in hits[1:])
    listed = (await client.store.list_namespaces(prefix=["users"]))["namespaces"]
    assert sorted(map(tuple, listed)) == [("users", "alice"), ("users", "bob")]

    await client.store.delete_item(["users", "bob"], "pet")
    assert await client.store.get_item(["users", "bob"], "pet") is None

    await client.store.put_item(alice, "blink", {"content": "a one-second secret"}, ttl=1 / 60)
    assert (await client.store.get_item(alice, "blink"))["value"]["content"] == "a one-second secret"
    await asyncio.sleep(1.2)
    assert await client.store.get_item(alice, "blink") is None
    assert "blink" not in [hit["key"] for hit in (await client.store.search_items(["users"]))["items"]]

    result = await client.runs.wait(None, "notes", input={"note": "The deploy key rotates every Friday"})
    assert isinstance(result, dict) and result["found"][0] == "latest"
    stored = await client.store.get_item(["graph", "notes"], "latest")
    assert stored["value"] == {"content": "The deploy key rotates every Friday"}

    text = (memory / "users" / "alice" / "store.md").read_text(encoding="utf-8")
    assert "## food\n" in text and "\nLoves Sichuan hotpot, very spicy\n" in text
    assert "## sport\n" in text and "pet" not in (memory / "users" / "bob" / "store.md").read_text("utf-8")
    notes = (memory / "graph" / "notes" / "store.md").read_text(encoding="utf-8")
    assert "## latest\n" in notes and "The deploy key rotates every Friday" in notes
    print(f"langgraph dev store round trip: {time.monotonic() - started:.1f} s after the server listened")


@pytest.fixture
def no_store_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MD_MEMORY_DIR", "MD_MEMORY_POSTGRES_URL", "MD_MEMORY_TENANT", "MD_MEMORY_EMBEDDINGS",
                 "LANGGRAPH_STORE"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.usefixtures("no_store_env")
@pytest.mark.parametrize(("env", "named"), [
    ({}, "MD_MEMORY_DIR"),
    ({"MD_MEMORY_POSTGRES_URL": "postgresql://localhost/memory"}, "MD_MEMORY_TENANT"),
    ({"MD_MEMORY_DIR": "memory", "MD_MEMORY_POSTGRES_URL": "postgresql://x/y", "MD_MEMORY_TENANT": "t"},
     "MD_MEMORY_POSTGRES_URL"),
    ({"MD_MEMORY_DIR": "memory", "MD_MEMORY_EMBEDDINGS": "word2vec"}, "MD_MEMORY_EMBEDDINGS='word2vec'"),
    ({"MD_MEMORY_DIR": "memory", "LANGGRAPH_STORE": '{"ttl": {"sweep_interval_minutes": 0}}'},
     "store.ttl.sweep_interval_minutes"),
    ({"MD_MEMORY_DIR": "memory", "LANGGRAPH_STORE": '{"ttl": {"default_ttl": "an hour"}}'},
     "store.ttl.default_ttl"),
])
async def test_a_missing_or_wrong_setting_fails_naming_it(
    env: dict[str, str], named: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(MemoryInputError, match=named.replace("(", r"\(")):
        async with generate_store():
            pass
    assert not (tmp_path / "memory").exists()


@pytest.mark.usefixtures("no_store_env")
async def test_a_folder_that_cannot_be_opened_fails_naming_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "notes.txt").write_text("not a folder", encoding="utf-8")
    monkeypatch.setenv("MD_MEMORY_DIR", str(tmp_path / "notes.txt"))
    monkeypatch.setenv("MD_MEMORY_EMBEDDINGS", "none")
    with pytest.raises(MemoryStoreError, match=r"MD_MEMORY_DIR=.*not a directory"):
        async with generate_store():
            pass


@pytest.fixture
async def opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                 no_store_env: None) -> AsyncIterator[AsyncMarkdownBaseStore]:
    monkeypatch.setenv("MD_MEMORY_DIR", str(tmp_path / "memory"))
    monkeypatch.setenv("MD_MEMORY_EMBEDDINGS", "none")
    # langgraph.json's store section, as the server passes it: sweep every 30 ms, refresh on read
    monkeypatch.setenv("LANGGRAPH_STORE", json.dumps(
        {"path": "./store.py:generate_store",
         "ttl": {"sweep_interval_minutes": 0.0005, "refresh_on_read": True}}))
    async with generate_store() as store:
        yield store


async def test_the_factory_sweeps_expired_items_while_open_and_closes_the_memory(
    opened: AsyncMarkdownBaseStore, tmp_path: Path
) -> None:
    store = opened
    assert store.ttl_config == {"sweep_interval_minutes": 0.0005, "refresh_on_read": True}
    await store.aput(("users", "alice"), "blink", {"content": "gone soon"}, ttl=0.001)
    await store.aput(("users", "alice"), "kept", {"content": "stays"})
    path = tmp_path / "memory" / "users" / "alice" / "store.md"
    deadline = time.monotonic() + 5
    while "## blink" in path.read_text(encoding="utf-8") and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert "## blink" not in path.read_text(encoding="utf-8")  # swept from the file, not only hidden
    assert [hit.key for hit in await store.asearch(("users",))] == ["kept"]


def sweepers() -> int:
    return sum(thread.name == "md-memory-ttl-sweeper" for thread in threading.enumerate())


async def test_the_factory_stops_its_sweeper_and_closes_the_memory_on_shutdown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_store_env: None
) -> None:
    monkeypatch.setenv("MD_MEMORY_DIR", str(tmp_path / "memory"))
    monkeypatch.setenv("MD_MEMORY_EMBEDDINGS", "none")
    async with generate_store() as store:
        assert store.ttl_config == {"sweep_interval_minutes": 5.0}
        await store.aput(("users", "alice"), "food", {"content": "Loves hotpot"})
        assert sweepers() == 1
    assert sweepers() == 0
    assert store.memory.closed
    with MarkdownMemory(tmp_path / "memory", embeddings="none") as mem:
        assert mem.search("hotpot")[0].path == "users/alice/store.md"
