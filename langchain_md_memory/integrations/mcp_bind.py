"""Where a server of the memory (``md-memory mcp --http``, ``md-memory inspect``) may listen: loopback
freely, any other address only on purpose and with a token.

Standard library only, so ``md-memory mcp`` checks its options before the MCP SDK is imported.

Example:
    .. code-block:: python

        from langchain_md_memory.integrations.mcp_bind import bind_problem

        assert bind_problem("127.0.0.1", token=None, allow_remote=False) is None
        assert bind_problem("0.0.0.0", token=None, allow_remote=True)  # needs a token
"""

from __future__ import annotations

import ipaddress

__all__ = ["DEFAULT_HOST", "DEFAULT_INSPECT_PORT", "DEFAULT_PORT", "TOKEN_ENV", "allowed_hosts",
           "allowed_origins", "bind_problem", "is_loopback", "loopback_names"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
DEFAULT_INSPECT_PORT = 8001
"""``md-memory inspect``'s port, beside ``md-memory mcp --http``'s, so both can run at once."""
TOKEN_ENV = "MD_MEMORY_MCP_TOKEN"
"""The environment variable holding the HTTP bearer token (never an argument: ``ps`` shows those)."""


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (``127.0.0.0/8``, ``::1``)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def loopback_names(host: str) -> list[str]:
    """The names a server on loopback ``host`` answers to, as they stand in a ``Host`` header or an origin.

    The loopback names (``127.0.0.1``, ``localhost``, ``[::1]``) and ``host`` itself, as given and in
    lower case. A request naming anything else is a page whose own name was pointed at this machine
    (DNS rebinding): the server refuses it.

    Example:
        .. code-block:: python

            assert "127.0.0.2" in loopback_names("127.0.0.2")
            assert "evil.example" not in loopback_names("127.0.0.2")
    """
    names = ["127.0.0.1", "localhost", "[::1]"]
    bare = host.strip("[]")
    try:
        forms = [bare, ipaddress.ip_address(bare).compressed]
    except ValueError:
        forms = [bare, bare.lower()]
    names += [f"[{form}]" if ":" in form else form for form in forms]
    return list(dict.fromkeys(names))


def allowed_hosts(host: str) -> list[str]:
    """The ``Host`` headers a server on loopback ``host`` accepts: its names, bare or with a port (``:*``)."""
    return [form for name in loopback_names(host) for form in (name, f"{name}:*")]


def allowed_origins(host: str) -> list[str]:
    """The ``Origin`` headers a server on loopback ``host`` accepts: its own pages', with any port."""
    return [form for name in loopback_names(host) for form in (f"http://{name}", f"http://{name}:*")]


def bind_problem(host: str, *, token: str | None, allow_remote: bool) -> str | None:
    """Why the server must not listen on ``host``, or ``None`` when it may.

    A non-loopback address would open the memory to the network: it needs ``allow_remote`` (the
    CLI's ``--allow-remote``) and a bearer token, which every request must then carry.
    """
    if is_loopback(host):
        return None
    if not allow_remote:
        return (f"refusing to serve the memory on {host}, which is not loopback: pass --allow-remote "
                f"and set ${TOKEN_ENV} to a bearer token that every client must send")
    if not token:
        return (f"refusing to serve the memory on {host} without a bearer token: set ${TOKEN_ENV} "
                "(every request must then send 'Authorization: Bearer <token>')")
    return None
