"""The PostgreSQL + pgvector backend: a memory's documents and index as one tenant's rows.

Needs the ``postgres`` extra (``pip install 'langchain-md-memory[postgres]'``)
and PostgreSQL 14 or later with the pgvector extension. Users open it with
:meth:`MarkdownMemory.from_postgres <langchain_md_memory.MarkdownMemory.from_postgres>`;
these are its parts, behind the two seams (document store, search index).

Example:
    .. code-block:: python

        from langchain_md_memory import MarkdownMemory

        with MarkdownMemory.from_postgres("postgresql://app@db/app", tenant="alice",
                                          embeddings="none") as mem:
            mem.append("- Prefers index funds")
            print(mem.search("index funds")[0].text)
"""

from __future__ import annotations

try:
    import psycopg  # noqa: F401
    import psycopg_pool  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    from ..errors import MemoryStoreError

    raise MemoryStoreError(
        "The PostgreSQL backend needs psycopg 3 and psycopg-pool: pip install 'langchain-md-memory[postgres]'"
    ) from exc

from .connection import PostgresDatabase
from .documents import PostgresDocumentStore
from .handle import PostgresIndexHandle, PostgresState
from .index import PostgresIndex, VectorSearch
from .open import open_backend
from .schema import SCHEMA_VERSION

__all__ = [
    "SCHEMA_VERSION",
    "PostgresDatabase",
    "PostgresDocumentStore",
    "PostgresIndex",
    "PostgresIndexHandle",
    "PostgresState",
    "VectorSearch",
    "open_backend",
]
