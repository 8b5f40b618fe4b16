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
"""

from __future__ import annotations

from .features.transcripts import create_session_log_node, write_session_log
from .integrations.basestore import MarkdownBaseStore
from .integrations.nodes import (
    MemoryState,
    create_dream_node,
    create_memory_flush_node,
    create_post_compaction_node,
    create_recall_node,
    create_session_context_node,
)

__all__ = [
    "MarkdownBaseStore",
    "MemoryState",
    "create_dream_node",
    "create_memory_flush_node",
    "create_post_compaction_node",
    "create_recall_node",
    "create_session_context_node",
    "create_session_log_node",
    "write_session_log",
]
