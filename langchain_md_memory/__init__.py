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

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .errors import (
    BackendConnectionError,
    BackendSchemaError,
    EmbeddingError,
    IndexBusyError,
    IndexDamagedError,
    MemoryIndexError,
    MemoryInputError,
    MemoryPathError,
    MemoryStoreError,
)
from .types import MemorySearchResult, ProgressEvent

if TYPE_CHECKING:
    from .config import SEED_RANKING, MemoryConfig
    from .features.dream import DreamResult
    from .features.transcripts import create_session_log_node, write_session_log
    from .integrations.basestore import MarkdownBaseStore
    from .integrations.claude_middleware import (
        MarkdownClaudeMemoryMiddleware as MarkdownClaudeMemoryMiddleware,
    )
    from .integrations.middleware import MarkdownMemoryMiddleware as MarkdownMemoryMiddleware
    from .integrations.nodes import (
        MemoryState,
        create_dream_node,
        create_memory_flush_node,
        create_post_compaction_node,
        create_recall_node,
        create_session_context_node,
    )
    from .integrations.retriever import MarkdownMemoryRetriever
    from .integrations.tools import create_memory_tools
    from .memory import MarkdownMemory, ProjectMemory
    from .prompts import DEFAULT_PROMPTS, FINANCE_PROMPTS, MemoryPrompts

__version__ = "0.2.0"
"""The package version (``pyproject.toml`` reads it from here)."""

__all__ = [
    "DEFAULT_PROMPTS",
    "FINANCE_PROMPTS",
    "SEED_RANKING",
    "BackendConnectionError",
    "BackendSchemaError",
    "DreamResult",
    "EmbeddingError",
    "IndexBusyError",
    "IndexDamagedError",
    "MarkdownBaseStore",
    "MarkdownMemory",
    "MarkdownMemoryRetriever",
    "MemoryConfig",
    "MemoryIndexError",
    "MemoryInputError",
    "MemoryPathError",
    "MemoryPrompts",
    "MemorySearchResult",
    "MemoryState",
    "MemoryStoreError",
    "ProgressEvent",
    "ProjectMemory",
    "create_dream_node",
    "create_memory_flush_node",
    "create_memory_tools",
    "create_post_compaction_node",
    "create_recall_node",
    "create_session_context_node",
    "create_session_log_node",
    "write_session_log",
]

# Loaded on first use: the memory and its integrations import pydantic, numpy, LangChain and
# LangGraph, which `md-memory --help` (and a program that only catches our errors) never needs.
_LAZY = {
    "MemoryConfig": ".config",
    "SEED_RANKING": ".config",
    "MemoryPrompts": ".prompts",
    "DEFAULT_PROMPTS": ".prompts",
    "FINANCE_PROMPTS": ".prompts",
    "MarkdownMemory": ".memory",
    "ProjectMemory": ".memory",
    "MarkdownMemoryRetriever": ".integrations.retriever",
    "MarkdownBaseStore": ".integrations.basestore",
    "create_memory_tools": ".integrations.tools",
    "create_session_context_node": ".integrations.nodes",
    "create_memory_flush_node": ".integrations.nodes",
    "create_recall_node": ".integrations.nodes",
    "create_post_compaction_node": ".integrations.nodes",
    "MemoryState": ".integrations.nodes",
    # Not in __all__: it needs the `agents` extra (langchain), and `import *` must work without it.
    "MarkdownMemoryMiddleware": ".integrations.middleware",
    # Not in __all__ either: it needs the `anthropic` extra (langchain).
    "MarkdownClaudeMemoryMiddleware": ".integrations.claude_middleware",
    "create_session_log_node": ".features.transcripts",
    "write_session_log": ".features.transcripts",
    "DreamResult": ".features.dream",
    "create_dream_node": ".integrations.nodes",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'langchain_md_memory' has no attribute {name!r}")
    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value
