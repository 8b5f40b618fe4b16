"""The memory as an MCP server: the three memory tools, and each memory file as a read-only resource.

Built on the official MCP Python SDK (``FastMCP``; the ``mcp`` extra). The MCP
tools are the LangChain tools of :func:`~.tools.create_memory_tools` seen
through MCP, not a second definition: same names, descriptions and JSON
schemas, and each call runs the LangChain tool itself, so its argument checks,
limits, error messages, path guard, size caps and redaction are the ones an
agent in a graph gets. A call the tool answers with an error (``Error: ...``, a
``ToolMessage`` with ``status="error"``) comes back as an MCP tool error
(``isError``), and the server goes on serving.

Each Markdown file of the memory is a resource ``memory://<path>``
(``memory://MEMORY.md``, ``memory://2026-12-01.md``, ``memory://sessions/t1.md``),
listed afresh on every request and read through the same path guard; a URI that names no
memory file (missing, outside the memory, not Markdown) fails with the protocol's
"resource not found" code, -32002.

A call whose request carries a ``progressToken`` gets progress notifications while it
waits: a search's sync reports the files it reads and the chunks it embeds (see
:data:`~.tools.PROGRESS_EVENT`). The server introduces itself with this package's version,
and ``memory_update`` is annotated as destructive (it edits and deletes).

Over HTTP (streamable HTTP) the server binds to 127.0.0.1 by default; with a
bearer token (:func:`serve` ``token=``) every request without
``Authorization: Bearer <token>`` is refused with 401 (the scheme in any case, as
RFC 7235 has it). On any loopback address a request whose ``Host`` or ``Origin``
names another machine is refused (421, 403): a web page whose own name was
pointed at 127.0.0.1 (DNS rebinding) cannot reach the memory.

Example:
    .. code-block:: python

        from langchain_md_memory import MarkdownMemory
        from langchain_md_memory.integrations.mcp_server import create_mcp_server, serve

        with MarkdownMemory("memory", embeddings="none") as mem:
            serve(create_mcp_server(mem))  # what `md-memory --dir memory mcp` does
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import os
import sys
import uuid
from collections.abc import Iterable
from importlib import metadata
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from pydantic import AnyUrl, ConfigDict

from ..errors import MemoryPathError, MemoryStoreError
from ..prompts import DEFAULT_PROMPTS, MemoryPrompts
from .local_http import serve_http
from .mcp_bind import DEFAULT_HOST, DEFAULT_PORT, TOKEN_ENV, allowed_hosts, allowed_origins, is_loopback
from .tools import PROGRESS_EVENT, _for_the_model, create_memory_tools

if TYPE_CHECKING:
    from ..memory import MarkdownMemory

try:
    import anyio
    from mcp.server.fastmcp import Context, FastMCP
    from mcp.server.fastmcp.tools import Tool
    from mcp.server.fastmcp.utilities.func_metadata import ArgModelBase, FuncMetadata
    from mcp.server.lowlevel.helper_types import ReadResourceContents
    from mcp.server.stdio import stdio_server
    from mcp.server.transport_security import TransportSecuritySettings
    from mcp.shared.exceptions import McpError
    from mcp.types import INTERNAL_ERROR, CallToolResult, ErrorData, TextContent, ToolAnnotations
    from mcp.types import Resource as MCPResource
except ImportError as exc:  # pragma: no cover - exercised by an install without the extra
    raise ImportError(
        "the MCP server needs the 'mcp' extra: pip install 'langchain-md-memory[mcp]'"
    ) from exc

__all__ = [
    "RESOURCE_NOT_FOUND",
    "RESOURCE_SCHEME",
    "TOKEN_ENV",
    "create_mcp_server",
    "is_loopback",
    "mcp_tool",
    "resource_path",
    "resource_uri",
    "serve",
]

logger = logging.getLogger(__name__)

RESOURCE_SCHEME = "memory://"
"""How a memory file is named as an MCP resource: ``memory://`` + its relative path."""

RESOURCE_NOT_FOUND = -32002
"""The JSON-RPC error code MCP gives a resource that does not exist."""

_READ_ONLY = {"memory_search", "memory_get"}


class _RawArguments(ArgModelBase):
    """Passes a call's arguments through untouched: the LangChain tool validates them itself, so a bad
    argument gets the tool's own message ("Error: invalid arguments for memory_get: ...")."""

    model_config = ConfigDict(extra="allow", arbitrary_types_allowed=True)

    def model_dump_one_level(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


def mcp_tool(tool: BaseTool) -> Tool:
    """The FastMCP tool that runs the LangChain ``tool``: its name, description and JSON schema.

    Example:
        .. code-block:: python

            tools = [mcp_tool(t) for t in create_memory_tools(mem)]
            server = FastMCP("md-memory", tools=tools)
    """

    async def call(context: Context[Any, Any, Any] | None = None, **arguments: Any) -> CallToolResult:
        relay = _ProgressRelay.for_request(context)
        reply = await tool.ainvoke(
            {"type": "tool_call", "id": f"mcp-{uuid.uuid4().hex}", "name": tool.name, "args": arguments},
            config={"callbacks": [relay]} if relay is not None else None,
        )
        if relay is not None:
            await relay.sent()  # the spec: no progress after the result
        assert isinstance(reply, ToolMessage)  # a tool call in gives a ToolMessage out
        content = reply.content if isinstance(reply.content, str) else json.dumps(reply.content)
        return CallToolResult(content=[TextContent(type="text", text=content)],
                              isError=reply.status == "error")

    read_only = tool.name in _READ_ONLY
    return Tool(
        fn=call,
        name=tool.name,
        description=tool.description,
        parameters=tool.tool_call_schema.model_json_schema(),  # type: ignore[union-attr]
        fn_metadata=FuncMetadata(arg_model=_RawArguments),
        is_async=True,
        context_kwarg="context",
        # A write tool that edits and deletes is destructive: a client may skip asking the user only
        # for one that merely adds. Appending the same fact twice is deduplicated, but an edit or a
        # delete repeated is not the same call: not idempotent.
        annotations=ToolAnnotations(readOnlyHint=read_only, destructiveHint=not read_only,
                                    idempotentHint=read_only, openWorldHint=False),
    )


class _ProgressRelay(BaseCallbackHandler):
    """Turns a tool's progress events (:data:`~.tools.PROGRESS_EVENT`) into MCP progress notifications.

    The tool runs on a worker thread; each notification is sent on the server's event loop. Progress
    only grows, as the protocol asks: the phases of a sync (files read, then chunks embedded) add up.
    """

    def __init__(self, context: Context[Any, Any, Any], loop: asyncio.AbstractEventLoop) -> None:
        self.context = context
        self.loop = loop
        self.pending: list[concurrent.futures.Future[None]] = []
        self._phase: str | None = None
        self._total = 0  # of the phase under way
        self._before = 0  # the totals of the phases before it
        self._last = -1.0

    @classmethod
    def for_request(cls, context: Context[Any, Any, Any] | None) -> _ProgressRelay | None:
        """A relay when the request asked for progress (it carries a ``progressToken``), else ``None``."""
        try:
            meta = context.request_context.meta if context is not None else None
        except ValueError:  # no request under way
            return None
        if meta is None or meta.progressToken is None:
            return None
        return cls(context, asyncio.get_running_loop())  # type: ignore[arg-type]

    def on_custom_event(self, name: str, data: Any, *, run_id: Any, tags: list[str] | None = None,
                        metadata: dict[str, Any] | None = None, **kwargs: Any) -> None:
        if name != PROGRESS_EVENT:
            return
        phase, done, total = str(data["phase"]), int(data["done"]), int(data["total"])
        if phase != self._phase:
            self._before += self._total
            self._phase, self._total = phase, 0
        self._total = max(self._total, total)
        progress = float(self._before + done)
        if progress <= self._last:
            return
        self._last = progress
        message = f"{phase}: {done} of {total} {data.get('unit', '')}".rstrip()
        report = self.context.report_progress(progress, float(self._before + total), message)
        self.pending.append(asyncio.run_coroutine_threadsafe(report, self.loop))

    async def sent(self) -> None:
        """Wait until every notification queued so far has gone out (a failed one is dropped)."""
        for future in self.pending:
            try:
                await asyncio.wrap_future(future)
            except Exception as exc:  # the client went away meanwhile: the result will not reach it either
                logger.debug("progress notification not sent: %s", exc)


def resource_uri(path: str) -> str:
    """A memory file's resource URI: ``MEMORY.md`` -> ``memory://MEMORY.md`` (other characters escaped)."""
    return RESOURCE_SCHEME + quote(path, safe="/")


def resource_path(uri: str) -> str:
    """The memory file a resource URI names; ``McpError`` (-32002, not found) for a URI of another scheme."""
    if not uri.startswith(RESOURCE_SCHEME):
        raise _not_found(uri, f"not a memory resource: {uri} (memory files are {RESOURCE_SCHEME}<path>)")
    return unquote(uri[len(RESOURCE_SCHEME):])


def _not_found(uri: str, message: str) -> McpError:
    return McpError(ErrorData(code=RESOURCE_NOT_FOUND, message=message, data={"uri": uri}))


class _MemoryServer(FastMCP[Any]):
    """FastMCP whose resources are the memory's files as they are now (new files included)."""

    def __init__(self, mem: MarkdownMemory, **kwargs: Any) -> None:
        self._memory = mem
        super().__init__(**kwargs)

    async def list_resources(self) -> list[MCPResource]:
        paths = await asyncio.to_thread(self._memory.list_files)
        return [
            MCPResource(uri=AnyUrl(resource_uri(path)), name=path, mimeType="text/markdown",
                        description=f"The memory file {path} (read-only)")
            for path in paths
        ]

    async def read_resource(self, uri: AnyUrl | str) -> Iterable[ReadResourceContents]:
        path = resource_path(str(uri))
        try:
            text = await asyncio.to_thread(self._memory.get, path)
        except MemoryPathError as exc:  # missing, outside the memory, or not a memory file: no such resource
            raise _not_found(str(uri), f"cannot read {path}: {_for_the_model(exc)}") from exc
        except (MemoryStoreError, ValueError, OSError) as exc:
            message = f"cannot read {path}: {_for_the_model(exc)}"
            raise McpError(ErrorData(code=INTERNAL_ERROR, message=message, data={"uri": str(uri)})) from exc
        return [ReadResourceContents(content=text, mime_type="text/markdown")]


def create_mcp_server(mem: MarkdownMemory, *, prompts: MemoryPrompts = DEFAULT_PROMPTS,
                      name: str = "md-memory", host: str = DEFAULT_HOST,
                      port: int = DEFAULT_PORT) -> FastMCP[Any]:
    """An MCP server over ``mem``: ``memory_search``, ``memory_get``, ``memory_update`` and the files.

    ``prompts`` gives the tool descriptions and the server's instructions (the memory policy), as for
    :func:`~.tools.create_memory_tools`; ``host`` and ``port`` are used by the HTTP transport.

    Example:
        .. code-block:: python

            serve(create_mcp_server(mem))  # stdio; serve(..., http=True) for HTTP
    """
    tools = [mcp_tool(tool) for tool in create_memory_tools(mem, prompts=prompts)]
    server = _MemoryServer(mem, name=name, instructions=prompts.policy, tools=tools, host=host, port=port,
                           transport_security=_rebinding_guard(host), log_level="WARNING")
    server._mcp_server.version = _package_version()  # else the SDK names its own version in serverInfo
    return server


def _package_version() -> str | None:
    try:
        return metadata.version("langchain-md-memory")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return None


def _rebinding_guard(host: str) -> TransportSecuritySettings | None:
    """The ``Host``/``Origin`` check for a server on ``host``: only its loopback names, with any port.

    The SDK turns the check on for the exact strings ``127.0.0.1``, ``localhost`` and ``::1`` only;
    every other loopback spelling (``127.0.0.2``, ``LOCALHOST``) needs it as much. Off the loopback
    the bearer token guards the server: the names it is reached by are not known here. :func:`serve`
    puts every request through the same names first (:func:`.local_http.guarded`); this keeps a server
    run by the SDK's own ``run()`` as guarded.
    """
    if not is_loopback(host):
        return None
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=allowed_hosts(host),
                                     allowed_origins=allowed_origins(host))


async def _serve_stdio(server: FastMCP[Any]) -> None:
    """``server.run("stdio")`` on copies of the standard streams: the SDK closes the streams it was
    given when the client goes, and the process's own ``sys.stdout`` must outlive that."""
    stdin = open(os.dup(sys.stdin.fileno()), encoding="utf-8", errors="replace")  # noqa: SIM115
    stdout = open(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")  # noqa: SIM115
    with stdin, stdout:
        async with stdio_server(anyio.wrap_file(stdin), anyio.wrap_file(stdout)) as (read, write):
            lowlevel = server._mcp_server  # FastMCP.run_stdio_async does this with the process's streams
            await lowlevel.run(read, write, lowlevel.create_initialization_options())


def serve(server: FastMCP[Any], *, http: bool = False, token: str | None = None,
          allow_remote: bool = False) -> None:
    """Run ``server`` until it is stopped: stdio, or streamable HTTP at ``/mcp`` on its host and port.

    With ``token`` every HTTP request must carry it as a bearer token. An address other than
    loopback needs ``allow_remote`` and a token, else ``ValueError`` (see :func:`.mcp_bind.bind_problem`).
    """
    _quiet_disconnects()
    if not http:
        anyio.run(_serve_stdio, server)
        return
    serve_http(server.streamable_http_app(), host=server.settings.host, port=server.settings.port,
               token=token, allow_remote=allow_remote)


class _ClientGone(logging.Filter):
    """Drops the SDK's error log of a client that went away (an HTTP stream it left, closed under a
    writer): an ordinary disconnect, which it logs as a ten-line traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, anyio.ClosedResourceError | anyio.BrokenResourceError)


def _quiet_disconnects() -> None:
    sdk = logging.getLogger("mcp.server.streamable_http")
    if not any(isinstance(f, _ClientGone) for f in sdk.filters):
        sdk.addFilter(_ClientGone())
