"""LangGraph parts: graph nodes, their state, the ``BaseStore`` over a memory.

For a graph you build yourself (``StateGraph``): the session-context node puts the memory into the
system prompt, the flush node saves durable facts before the conversation is compacted, the recall
node searches with the first human message, and ``MarkdownBaseStore`` (``mem.as_store()``) is the
memory as LangGraph's long-term store. ``create_agent`` users want
:class:`~langchain_md_memory.MarkdownMemoryMiddleware` instead, which composes the same parts.

Example:
    .. code-block:: python

        from langgraph.graph import MessagesState, StateGraph

        from langchain_md_memory.langgraph import create_memory_flush_node, create_session_context_node

        graph = StateGraph(MessagesState)
        graph.add_node("memory", create_session_context_node(mem))
        graph.add_node("flush", create_memory_flush_node(mem, model, trigger_tokens=6000))

For the LangGraph server (``langgraph dev``, or the same API deployed), :func:`generate_store` is the
factory ``langgraph.json`` points at: the memory, configured from the environment, as the long-term
store of every graph the server runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import AsyncIterator, Mapping

from langgraph.store.base import TTLConfig

from .cli.parser import DIR_ENV, POSTGRES_ENV, TENANT_ENV
from .config import MemoryConfig
from .embeddings import resolve_embeddings
from .errors import MemoryInputError, MemoryStoreError
from .features.transcripts import create_session_log_node, write_session_log
from .integrations.basestore import AsyncMarkdownBaseStore, MarkdownBaseStore
from .integrations.basestore.expiry import check_ttl
from .integrations.nodes import (
    MemoryState,
    create_dream_node,
    create_memory_flush_node,
    create_post_compaction_node,
    create_recall_node,
    create_session_context_node,
)
from .memory import MarkdownMemory

__all__ = [
    "AsyncMarkdownBaseStore",
    "MarkdownBaseStore",
    "MemoryState",
    "create_dream_node",
    "create_memory_flush_node",
    "create_post_compaction_node",
    "create_recall_node",
    "create_session_context_node",
    "create_session_log_node",
    "generate_store",
    "write_session_log",
]

EMBEDDINGS_ENV = "MD_MEMORY_EMBEDDINGS"
"""The embeddings of the server's memory, a spec as the CLI's ``--embeddings`` takes (default ``auto``)."""
SERVER_STORE_ENV = "LANGGRAPH_STORE"
"""Where the LangGraph server passes ``langgraph.json``'s ``store`` section (its ``ttl`` is read from it)."""
DEFAULT_SWEEP_MINUTES = 5.0
"""How often the server's store deletes expired items when ``langgraph.json`` does not say."""


@contextlib.asynccontextmanager
async def generate_store() -> AsyncIterator[AsyncMarkdownBaseStore]:
    """The memory as the LangGraph server's store: ``"store": {"path": "./store.py:generate_store"}``.

    An async context manager, as the server asks of a store factory. It opens the memory the
    environment names: ``MD_MEMORY_DIR`` (a folder), or ``MD_MEMORY_POSTGRES_URL`` and
    ``MD_MEMORY_TENANT`` (PostgreSQL), embedded as ``MD_MEMORY_EMBEDDINGS`` says (a spec as the CLI's
    ``--embeddings``; ``auto`` by default). It yields the memory's store (an
    :class:`AsyncMarkdownBaseStore`) with ``langgraph.json``'s ``store.ttl`` settings, sweeps expired
    items in the background while the server runs (the server sweeps only stores of its own), and on
    shutdown stops the sweeper and closes the memory.

    Raises:
        MemoryInputError: naming the variable, when a setting is missing or wrong; the server then
            does not start.

    Example:
        ``store.py`` beside ``langgraph.json``:

        .. code-block:: python

            from langchain_md_memory.langgraph import generate_store

            __all__ = ["generate_store"]
    """
    ttl = server_ttl_config(os.environ)
    memory = await asyncio.to_thread(open_server_memory, os.environ)
    try:
        store = AsyncMarkdownBaseStore(memory, ttl=ttl)
        await store.start_ttl_sweeper()
        try:
            yield store
        finally:
            await store.stop_ttl_sweeper()
    finally:
        await asyncio.to_thread(memory.close)


def open_server_memory(env: Mapping[str, str]) -> MarkdownMemory:
    """The memory :func:`generate_store` serves, opened from the variables in ``env``.

    Raises:
        MemoryInputError: naming the variable that is missing or wrong.
    """
    folder = env.get(DIR_ENV, "").strip()
    url = env.get(POSTGRES_ENV, "").strip()
    tenant = env.get(TENANT_ENV, "").strip()
    if folder and url:
        raise MemoryInputError(f"both {DIR_ENV} and {POSTGRES_ENV} are set: the store is either a "
                               "folder or a PostgreSQL tenant; unset one")
    if not folder and not url:
        raise MemoryInputError(f"set {DIR_ENV} to the memory folder (or {POSTGRES_ENV} and {TENANT_ENV} "
                               "for PostgreSQL) in the environment of the LangGraph server")
    if url and not tenant:
        raise MemoryInputError(f"{POSTGRES_ENV} is set but {TENANT_ENV} is not: name whose memory the "
                               "server uses")
    config = MemoryConfig()
    spec = env.get(EMBEDDINGS_ENV, "").strip() or "auto"
    try:
        embedder = resolve_embeddings(spec, batch_size=config.embedding.batch_size, env=env,
                                      timeout_s=config.embedding.timeout_s, retries=config.embedding.retries)
    except MemoryStoreError as exc:
        raise MemoryInputError(f"{EMBEDDINGS_ENV}={spec!r}: {exc}") from exc
    if url:
        try:
            return MarkdownMemory.from_postgres(url, tenant, embeddings=embedder or "none", config=config)
        except MemoryStoreError as exc:
            raise type(exc)(f"{POSTGRES_ENV} (tenant {TENANT_ENV}={tenant!r}): {exc}") from exc
    try:
        return MarkdownMemory(folder, embeddings=embedder or "none", config=config)
    except MemoryStoreError as exc:
        raise type(exc)(f"{DIR_ENV}={folder!r}: {exc}") from exc


def server_ttl_config(env: Mapping[str, str]) -> TTLConfig:
    """The TTL settings of ``langgraph.json``'s ``store.ttl``, as the server passes them in ``env``.

    ``refresh_on_read`` and ``default_ttl`` as LangGraph's stores read them; the sweep runs every
    ``sweep_interval_minutes``, else every :data:`DEFAULT_SWEEP_MINUTES`.

    Raises:
        MemoryInputError: for a ``ttl`` setting that is not one, naming it.
    """
    raw = env.get(SERVER_STORE_ENV, "").strip()
    try:
        section = json.loads(raw) if raw else {}
    except ValueError as exc:
        raise MemoryInputError(f"{SERVER_STORE_ENV} is not JSON (langgraph.json's store section): {exc}") \
            from exc
    given = section.get("ttl") if isinstance(section, dict) else None
    given = given if isinstance(given, dict) else {}
    ttl = TTLConfig(sweep_interval_minutes=DEFAULT_SWEEP_MINUTES)  # type: ignore[typeddict-item]
    for name in ("sweep_interval_minutes", "default_ttl"):
        value = given.get(name)
        if value is None:
            continue
        try:
            minutes = check_ttl(value)
        except MemoryInputError:
            minutes = -1.0
        if minutes <= 0:
            raise MemoryInputError(f"langgraph.json store.ttl.{name} must be a number of minutes above 0, "
                                   f"got {value!r}")
        ttl[name] = minutes
    if "refresh_on_read" in given:
        ttl["refresh_on_read"] = bool(given["refresh_on_read"])
    return ttl
