"""Long-term memory for LangChain and LangGraph agents.

Durable knowledge lives in plain Markdown files a person can read, edit and
commit; a SQLite index beside them (vectors, FTS5 keywords, embedding cache)
is derived and can be deleted and rebuilt at any time.

Example:
    .. code-block:: python

        from langchain_md_memory import MarkdownMemory

        with MarkdownMemory("memory", embeddings="none") as mem:
            mem.append("- Never more than 5% of the portfolio in one stock")
            for hit in mem.search("single stock limit"):
                print(hit.citation, round(hit.score, 3), hit.text)
"""

from __future__ import annotations

import warnings
from importlib import import_module
from typing import TYPE_CHECKING, Any

from .errors import MemoryStoreError
from .types import MemorySearchResult

if TYPE_CHECKING:
    from .config import MemoryConfig
    from .integrations.approval import claude_memory_write_approval as claude_memory_write_approval
    from .integrations.approval import memory_write_approval as memory_write_approval
    from .integrations.claude_middleware import (
        MarkdownClaudeMemoryMiddleware as MarkdownClaudeMemoryMiddleware,
    )
    from .integrations.middleware import MarkdownMemoryMiddleware as MarkdownMemoryMiddleware
    from .integrations.retriever import MarkdownMemoryRetriever
    from .integrations.tools import create_memory_tools
    from .memory import MarkdownMemory, ProjectMemory
    from .prompts import MemoryPrompts

__version__ = "0.2.0"
"""The package version (``pyproject.toml`` reads it from here)."""

__all__ = [
    "MarkdownMemory",
    "MarkdownMemoryRetriever",
    "MemoryConfig",
    "MemoryPrompts",
    "MemorySearchResult",
    "MemoryStoreError",
    "ProjectMemory",
    "create_memory_tools",
]
"""What a first user constructs. The middleware (``MarkdownMemoryMiddleware``,
``MarkdownClaudeMemoryMiddleware``) is here too, outside ``__all__``: it needs the ``agents`` or
``anthropic`` extra, and ``import *`` must work without it; so are ``memory_write_approval`` and
``claude_memory_write_approval``, of use only beside LangChain's ``HumanInTheLoopMiddleware``.
LangGraph parts live in :mod:`langchain_md_memory.langgraph`, errors in :mod:`langchain_md_memory.errors`."""

# Loaded on first use: the memory and its integrations import pydantic, numpy, LangChain and
# LangGraph, which `md-memory --help` (and a program that only catches our errors) never needs.
_LAZY = {
    "MemoryConfig": ".config",
    "MemoryPrompts": ".prompts",
    "MarkdownMemory": ".memory",
    "ProjectMemory": ".memory",
    "MarkdownMemoryRetriever": ".integrations.retriever",
    "create_memory_tools": ".integrations.tools",
    "MarkdownMemoryMiddleware": ".integrations.middleware",
    "MarkdownClaudeMemoryMiddleware": ".integrations.claude_middleware",
    "memory_write_approval": ".integrations.approval",
    "claude_memory_write_approval": ".integrations.approval",
}

MOVED = {
    **dict.fromkeys(["MarkdownBaseStore", "MemoryState", "create_dream_node", "create_memory_flush_node",
                     "create_post_compaction_node", "create_recall_node", "create_session_context_node",
                     "create_session_log_node", "write_session_log"], "langchain_md_memory.langgraph"),
    **dict.fromkeys(["BackendConnectionError", "BackendSchemaError", "EmbeddingError", "IndexBusyError",
                     "IndexDamagedError", "MemoryIndexError", "MemoryInputError", "MemoryPathError"],
                    "langchain_md_memory.errors"),
    "SEED_RANKING": "langchain_md_memory.config",
    **dict.fromkeys(["DEFAULT_PROMPTS", "FINANCE_PROMPTS"], "langchain_md_memory.prompts"),
    "DreamResult": "langchain_md_memory.features.dream",
    "ProgressEvent": "langchain_md_memory.types",
}
"""Names that left the top level, and their home: importing one from here still works until 0.4,
with a ``DeprecationWarning`` naming it."""


def __getattr__(name: str) -> Any:
    if (home := MOVED.get(name)) is not None:
        warnings.warn(f"langchain_md_memory.{name} is deprecated here: import it from {home} "
                      "(this import works until 0.4)", DeprecationWarning, stacklevel=2)
        return getattr(import_module(home), name)
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'langchain_md_memory' has no attribute {name!r}")
    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value
