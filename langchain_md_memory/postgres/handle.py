"""The PostgreSQL backend's index owner and durable state: what a folder keeps in files.

:class:`PostgresIndexHandle` stands where a folder memory's
:class:`~langchain_md_memory.index.sqlite.handle.IndexHandle` does; the index never
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
from collections.abc import Callable
from typing import Any, TypeVar

from psycopg.types.json import Jsonb

from ..errors import MemoryIndexError
from ..index.base import IndexOwner
from .connection import LOCK_DREAM, Conn, PostgresDatabase
from .index import PostgresIndex

__all__ = ["PostgresIndexHandle", "PostgresJobLock", "PostgresState"]

T = TypeVar("T")


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

    def rebuild(self, build: Callable[[IndexOwner], T]) -> T:
        """In place: ``build`` re-reads every file into this index, replacing each one's rows at once."""
        return build(self)

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


class PostgresJobLock:
    """An exclusive job lock (dream's) of one tenant: a session advisory lock on a connection of its own.

    Taken without waiting; released by :meth:`release` or, if the process dies, by the server
    when its connection closes (so a killed dream never leaves the lock behind).
    """

    def __init__(self, db: PostgresDatabase, tenant: str, name: str) -> None:
        self._db = db
        self._key = f"{tenant}/{name}"
        self._conn: Conn | None = None

    @property
    def held(self) -> bool:
        """True while this object holds the lock."""
        return self._conn is not None

    def acquire(self) -> bool:
        """Take the lock now; False when it is held (by anyone, this object included)."""
        if self._conn is not None:
            return False
        self._conn = self._db.try_advisory_lock(LOCK_DREAM, self._key)
        return self._conn is not None

    def release(self) -> None:
        """Release the lock (a no-op when not held)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            self._db.release_advisory_lock(conn, LOCK_DREAM, self._key)

    def holder(self) -> str | None:
        """The server process of the session holding the lock, when one does."""
        # A two-key advisory lock shows its keys as classid and objid (unsigned), objsubid 2.
        rows = self._db.query(
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 2 "
            "AND classid::bigint = %s AND objid::bigint = (hashtext(%s)::bigint & 4294967295)",
            (LOCK_DREAM, self._key),
        )
        return f"database session pid {rows[0][0]}" if rows else None
