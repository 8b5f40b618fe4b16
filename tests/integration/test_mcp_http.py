"""``md-memory mcp --http``: loopback by default, other addresses refused without a token, tokens enforced.

The server runs as a real process; the tests talk to it on 127.0.0.1 (and 127.0.0.2, also loopback) only.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from langchain_md_memory import MarkdownMemory

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120), pytest.mark.enable_socket,
              pytest.mark.allow_hosts(["127.0.0.1", "127.0.0.2"])]

MD_MEMORY = shutil.which("md-memory", path=str(Path(sys.executable).parent))
TOKEN = "test-token-4f1c"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def environment(token: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "MD_MEMORY_MCP_TOKEN")}
    if token is not None:
        env["MD_MEMORY_MCP_TOKEN"] = token
    return env


def md_memory(*args: str, token: str | None = None) -> subprocess.Popen[str]:
    assert MD_MEMORY is not None
    return subprocess.Popen([MD_MEMORY, *args], env=environment(token), text=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def listening(port: int) -> set[str]:
    """The local addresses (hex, as /proc/net/tcp writes them) listening on ``port``."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(table):
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.rsplit(":", 1)
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                found.add(address)
    return found


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    folder = tmp_path / "memory"
    with MarkdownMemory(folder, embeddings="none") as mem:
        mem.append("- Prefers aisle seats")
    return folder


def wait_until_listening(proc: subprocess.Popen[str], port: int, address: str = "127.0.0.1") -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            stderr = proc.stderr.read() if proc.stderr else ""
            raise AssertionError(f"server exited {proc.returncode}: {stderr}")
        try:
            with socket.create_connection((address, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise AssertionError("server did not start listening")


@contextlib.contextmanager
def serving(folder: Path, *args: str, token: str | None = None, address: str = "127.0.0.1") -> Iterator[int]:
    """``md-memory mcp --http`` on a free port (``args``: more options), stopped at the end."""
    port = free_port()
    proc = md_memory("--dir", str(folder), "--embeddings", "none", "mcp", "--http", "--port", str(port),
                     *args, token=token)
    try:
        wait_until_listening(proc, port, address)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@pytest.fixture
def served(folder: Path, request: pytest.FixtureRequest) -> Iterator[int]:
    with serving(folder, token=getattr(request, "param", None)) as port:
        yield port


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "t", "version": "0"}}}
ACCEPT = {"Accept": "application/json, text/event-stream"}


async def tool_names(port: int, headers: dict[str, str] | None = None,
                     address: str = "127.0.0.1") -> list[str]:
    async with httpx.AsyncClient(headers=headers, trust_env=False) as http, \
            streamable_http_client(f"http://{address}:{port}/mcp", http_client=http) as (read, write, _), \
            ClientSession(read, write) as session:
        await session.initialize()
        found = await session.call_tool("memory_search", {"query": "aisle seats"})
        assert not found.isError
        return [t.name for t in (await session.list_tools()).tools]


async def test_http_binds_loopback_by_default_and_serves_the_tools(served: int) -> None:
    assert listening(served) == {"0100007F"}  # 127.0.0.1 only
    assert await tool_names(served) == ["memory_search", "memory_get", "memory_update"]


@pytest.mark.parametrize("served", [TOKEN], indirect=True)
async def test_with_a_token_a_request_without_it_is_refused(served: int) -> None:
    url = f"http://127.0.0.1:{served}/mcp"
    async with httpx.AsyncClient(trust_env=False) as http:
        missing = await http.post(url, json=INITIALIZE, headers=ACCEPT)
        wrong = await http.post(url, json=INITIALIZE, headers={**ACCEPT, "Authorization": "Bearer nope"})
        other = await http.post(url, json=INITIALIZE, headers={**ACCEPT, "Authorization": f"Basic {TOKEN}"})
    assert missing.status_code == 401 and wrong.status_code == 401 and other.status_code == 401
    assert missing.headers["www-authenticate"] == "Bearer"
    assert await tool_names(served, {"Authorization": f"Bearer {TOKEN}"}) == [
        "memory_search", "memory_get", "memory_update"]


@pytest.mark.parametrize("scheme", ["bearer", "BEARER", "bEaReR"])
@pytest.mark.parametrize("served", [TOKEN], indirect=True)
async def test_the_bearer_scheme_is_matched_case_insensitively(served: int, scheme: str) -> None:
    # RFC 7235 section 2.1: the authentication scheme is a case-insensitive token.
    async with httpx.AsyncClient(trust_env=False) as http:
        reply = await http.post(f"http://127.0.0.1:{served}/mcp", json=INITIALIZE,
                                headers={**ACCEPT, "Authorization": f"{scheme} {TOKEN}"})
    assert reply.status_code == 200
    assert await tool_names(served, {"Authorization": f"{scheme} {TOKEN}"}) == [
        "memory_search", "memory_get", "memory_update"]


@pytest.mark.parametrize(("host", "address"), [("127.0.0.2", "127.0.0.2"), ("LOCALHOST", "127.0.0.1")])
async def test_every_loopback_host_refuses_requests_for_another_name(folder: Path, host: str,
                                                                     address: str) -> None:
    """DNS rebinding: a page whose name resolves to loopback must not reach the memory by that name."""
    with serving(folder, "--host", host, address=address) as port:
        url = f"http://{address}:{port}/mcp"
        async with httpx.AsyncClient(trust_env=False) as http:
            rebound = await http.post(url, json=INITIALIZE,
                                      headers={**ACCEPT, "Host": f"evil.example:{port}"})
            bare = await http.post(url, json=INITIALIZE, headers={**ACCEPT, "Host": "evil.example"})
            foreign = await http.post(url, json=INITIALIZE,
                                      headers={**ACCEPT, "Origin": f"http://evil.example:{port}"})
            by_name = await http.post(url, json=INITIALIZE, headers={**ACCEPT, "Host": f"{host}:{port}"})
            from_page = await http.post(url, json=INITIALIZE,
                                        headers={**ACCEPT, "Origin": f"http://{host.lower()}:{port}"})
        assert (rebound.status_code, bare.status_code, foreign.status_code) == (421, 421, 403)
        assert by_name.status_code == 200 and from_page.status_code == 200
        assert await tool_names(port, address=address) == ["memory_search", "memory_get", "memory_update"]


@pytest.mark.parametrize("extra", [[], ["--allow-remote"]], ids=["no-flag", "flag-without-token"])
def test_a_non_loopback_bind_without_flag_and_token_is_refused_at_start(folder: Path,
                                                                       extra: list[str]) -> None:
    port = free_port()
    proc = md_memory("--dir", str(folder), "mcp", "--http", "--host", "0.0.0.0", "--port", str(port), *extra)
    _, err = proc.communicate(timeout=60)

    assert proc.returncode == 2
    assert err.startswith("md-memory: error: refusing to serve the memory on 0.0.0.0")
    assert "MD_MEMORY_MCP_TOKEN" in err
    assert listening(port) == set()


def test_stdio_refuses_http_only_options(folder: Path) -> None:
    proc = md_memory("--dir", str(folder), "mcp", "--port", "8123")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and "apply to --http" in err


def test_clients_that_come_and_go_leave_no_trace_on_stderr(folder: Path) -> None:
    port = free_port()
    proc = md_memory("--dir", str(folder), "--embeddings", "none", "mcp", "--http", "--port", str(port))
    try:
        wait_until_listening(proc, port)
        for _ in range(3):  # each disconnect: the SDK logs a ClosedResourceError traceback, filtered out
            assert asyncio.run(tool_names(port)) == ["memory_search", "memory_get", "memory_update"]
        time.sleep(1)
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    assert err.splitlines() == [f"md-memory: serving {folder} over MCP at http://127.0.0.1:{port}/mcp; "
                                "Ctrl-C to stop"]
