"""Opening one tenant's memory in PostgreSQL: the database, its two seams and its state, as a Backend.

Example:
    .. code-block:: python

        backend = open_backend("postgresql://app@db/app", "alice", MemoryConfig())
        mem = MarkdownMemory(None, embeddings="none", backend=backend)   # what from_postgres does
"""

from __future__ import annotations

from typing import Any

from ..config import MemoryConfig
from ..errors import MemoryInputError
from ..index.base import Backend
from .connection import PostgresDatabase
from .documents import PostgresDocumentStore, check_tenant
from .handle import PostgresIndexHandle, PostgresState
from .index import PostgresIndex

__all__ = ["open_backend"]


def open_backend(conninfo_or_pool: Any, tenant: str, config: MemoryConfig, *, vector_search: str = "auto",
                 pool_max_size: int = 10) -> Backend:
    """Connect, create or migrate the schema, and wire one tenant's document store, index and state.

    Args:
        conninfo_or_pool: a connection string (``postgresql://user:pw@host/db``) or an open
            ``psycopg_pool.ConnectionPool`` (the caller keeps owning it).
        tenant: whose memory (at most :data:`~.documents.MAX_TENANT_BYTES` bytes of UTF-8); every key
            and every query carries it.
        config: the memory's config (its path limits apply to document paths).
        vector_search: ``"auto"``, ``"exact"`` or ``"hnsw"`` (see :data:`.index.VectorSearch`).
        pool_max_size: connections of the pool this opens (one per thread at most is in use).

    Raises:
        MemoryInputError: a tenant name that is empty, too long or not UTF-8 (before connecting).
        BackendConnectionError: the server is unreachable or refused the credentials.
        BackendSchemaError: no pgvector, or tables written by a newer version of this package.
    """
    if vector_search not in ("auto", "exact", "hnsw"):
        raise MemoryInputError(f"vector_search must be 'auto', 'exact' or 'hnsw', not {vector_search!r}")
    check_tenant(tenant)
    db = PostgresDatabase.connect(conninfo_or_pool, max_size=pool_max_size)
    try:
        store = PostgresDocumentStore(db, tenant, max_path_depth=config.limits.max_path_depth,
                                      max_name_bytes=config.limits.max_name_bytes)
        index = PostgresIndex(db, tenant, vector_search=vector_search)  # type: ignore[arg-type]
    except BaseException:
        db.close()
        raise
    folder_error = (f"This memory lives in PostgreSQL ({store.location}), not in a folder: watching "
                    "and importing an archive need a folder memory (searches already see every write "
                    "at once; md-memory pull/push and migrate move the Markdown to and from folders)")
    handle = PostgresIndexHandle(index, db)
    return Backend(store, handle, PostgresState(db, tenant), store.location, folder_error)
