"""Serving an ASGI app of the memory over HTTP: where it may listen, who may reach it, until Ctrl-C.

``md-memory mcp --http`` and ``md-memory inspect`` both serve through :func:`serve_http`, so both
follow one rule: loopback by default; any other address only with ``allow_remote`` and a bearer token
(:func:`.mcp_bind.bind_problem`); with a token, every request without ``Authorization: Bearer <token>``
refused (401); on a loopback address, every request whose ``Host`` names another machine refused (421)
and every one sent from a page of another origin refused (403), so a web page whose own name was pointed
at 127.0.0.1 (DNS rebinding) cannot read the memory.

Needs uvicorn (brought by the ``mcp`` and ``inspect`` extras).

Example:
    .. code-block:: python

        from langchain_md_memory.integrations.local_http import serve_http

        serve_http(app, host="127.0.0.1", port=8000)  # any ASGI app: Starlette, FastMCP's
"""

from __future__ import annotations

import asyncio
import hmac
from typing import Any

from .mcp_bind import allowed_hosts, allowed_origins, bind_problem, is_loopback

__all__ = ["guarded", "serve_http"]


async def _refuse(send: Any, status: int, message: str, headers: list[tuple[bytes, bytes]] | None = None
                  ) -> None:
    body = message.encode()
    kind = b"application/json" if message.startswith("{") else b"text/plain; charset=utf-8"
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", kind), (b"content-length", str(len(body)).encode()),
                            *(headers or [])]})
    await send({"type": "http.response.body", "body": body})


def _matches(value: str, allowed: list[str]) -> bool:
    """``value`` is one of ``allowed``, where ``name:*`` stands for ``name`` with any port."""
    value = value.lower()
    for pattern in allowed:
        pattern = pattern.lower()
        if value == pattern or (pattern.endswith(":*") and value.startswith(pattern[:-1])
                                and value[len(pattern) - 1:].isdigit()):
            return True
    return False


class _RebindingGuard:
    """ASGI middleware for a server on loopback ``host``: only its own names in ``Host`` and ``Origin``."""

    def __init__(self, app: Any, host: str) -> None:
        self.app = app
        self.hosts = allowed_hosts(host)
        self.origins = allowed_origins(host)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or ())
            host = headers.get(b"host", b"").decode("latin-1")
            if not host or not _matches(host, self.hosts):
                await _refuse(send, 421, "Invalid Host header")
                return
            origin = headers.get(b"origin", b"").decode("latin-1")
            if origin and not _matches(origin, self.origins):
                await _refuse(send, 403, "Invalid Origin header")
                return
        await self.app(scope, receive, send)


class _BearerGuard:
    """ASGI middleware refusing every HTTP request without ``Authorization: Bearer <token>`` (401).

    The scheme is matched in any case (``bearer``, ``BEARER``): RFC 7235 makes it case-insensitive.
    """

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = token.encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            scheme, _, given = dict(scope.get("headers") or ()).get(b"authorization", b"").partition(b" ")
            if scheme.lower() != b"bearer" or not hmac.compare_digest(given.strip(b" "), self.expected):
                await _refuse(send, 401, '{"error": "unauthorized: send Authorization: Bearer <token>"}',
                              [(b"www-authenticate", b"Bearer")])
                return
        await self.app(scope, receive, send)


def guarded(app: Any, *, host: str, token: str | None) -> Any:
    """``app`` behind the checks for a server on ``host``: its loopback names, and ``token`` when given.

    Off the loopback the bearer token guards the server: the names it is reached by are not known here.
    """
    if token:
        app = _BearerGuard(app, token)
    return _RebindingGuard(app, host) if is_loopback(host) else app


def serve_http(app: Any, *, host: str, port: int, token: str | None = None, allow_remote: bool = False
               ) -> None:
    """Serve ``app`` on ``host``:``port`` behind :func:`guarded` until stopped (Ctrl-C).

    An address other than loopback needs ``allow_remote`` and a token, else ``ValueError`` (see
    :func:`.mcp_bind.bind_problem`); nothing is bound then.
    """
    import uvicorn  # the mcp and inspect extras bring it; the checks above need only the standard library

    problem = bind_problem(host, token=token, allow_remote=allow_remote)
    if problem is not None:
        raise ValueError(problem)
    config = uvicorn.Config(guarded(app, host=host, token=token), host=host, port=port, log_level="warning")
    asyncio.run(uvicorn.Server(config).serve())
