"""The PostgreSQL backend's index owner and durable state: what a folder keeps in files.

:class:`PostgresIndexHandle` stands where a folder memory's
:class:`~langchain_md_memory.index.handle.IndexHandle` does; the index never
moves (a rebuild replaces each file's rows in place), so it has nothing to swap.
:class:`PostgresState` keeps what a folder keeps in ``.md-memory/state.json``
(dream's bookkeeping) in ``md_memory_state``, one row per key.

Example:
    .. code-block:: python

        state = PostgresState(db, "alice")
        state.set("dream_last_run", 1767225600.0)
        assert state.get("dream_last_run") == 1767225600.0
"""

from __future__ import annotations

import threading
from typing import Any

from psycopg.types.json import Jsonb

from ..errors import MemoryIndexError
from .connection import PostgresDatabase
from .index import PostgresIndex

__all__ = ["PostgresIndexHandle", "PostgresState"]


class PostgresIndexHandle:
    """Holds a tenant's :class:`PostgresIndex` (and closes the pool when it owns it)."""

    fallback: str | None = None
    in_memory = False

    def __init__(self, index: PostgresIndex, db: PostgresDatabase) -> None:
        self._index = index
        self._db = db
        self.path = index.path
        self.lock = threading.RLock()

    @property
    def index(self) -> PostgresIndex:
        """The tenant's index."""
        return self._index

    def fall_back(self, reason: str) -> PostgresIndex:
        """Never: the index is the database's, there is no file to give up on."""
        raise MemoryIndexError(f"the PostgreSQL index cannot fall back to memory ({reason})")

    def sweep_rebuild_files(self) -> int:
        """Nothing to sweep: rebuilds leave no files."""
        return 0

    def close(self) -> None:
        """Close the pool when this memory opened it."""
        self._db.close()


class PostgresState:
    """Durable key-value state of one tenant (JSON values), kept when the index is rebuilt."""

    def __init__(self, db: PostgresDatabase, tenant: str) -> None:
        self._db = db
        self.tenant = tenant

    def get(self, key: str, default: Any = None) -> Any:
        """The value stored under ``key``, or ``default``."""
        rows = self._db.query("SELECT value FROM md_memory_state WHERE tenant = %s AND key = %s",
                              (self.tenant, key))
        return default if not rows else rows[0][0]

    def set(self, key: str, value: Any) -> None:
        """Store ``value`` (JSON-serialisable) under ``key``."""
        self._db.query("INSERT INTO md_memory_state(tenant, key, value) VALUES (%s, %s, %s) "
                       "ON CONFLICT (tenant, key) DO UPDATE SET value = excluded.value",
                       (self.tenant, key, Jsonb(value)))
