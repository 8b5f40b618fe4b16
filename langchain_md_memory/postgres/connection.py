"""One way into PostgreSQL for a memory: a pool, a connection pinned per thread, advisory locks.

Every query of the PostgreSQL backend runs through :class:`PostgresDatabase`.
A thread that holds a lock or runs a transaction keeps its connection until it
is done, and every nested use on that thread reuses it, so a thread never needs
two connections at once (a full pool cannot deadlock a writer waiting for
itself). psycopg errors become the package's errors here, once.

Example:
    .. code-block:: python

        db = PostgresDatabase.connect("postgresql://app@db/app")
        with db.transaction() as conn:
            conn.execute("SELECT 1")
        db.close()
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import psycopg
from psycopg import Connection
from psycopg.pq import TransactionStatus
from psycopg.rows import TupleRow, tuple_row
from psycopg.sql import Composed
from psycopg_pool import ConnectionPool, PoolTimeout

from ..errors import BackendConnectionError, MemoryIndexError, MemoryStoreError
from .schema import ensure_schema

__all__ = ["Conn", "PostgresDatabase", "server_name"]

logger = logging.getLogger(__name__)

Conn = Connection[Any]
"""A psycopg connection of the pool (rows read as tuples through :meth:`PostgresDatabase.rows`)."""

# Advisory lock namespaces (the first key of the two-key form; the second is hashtext(tenant)).
LOCK_DOCUMENTS = 0x6D64_0001
LOCK_INDEX = 0x6D64_0002
LOCK_DREAM = 0x6D64_0003
LOCK_TREE = 0x6D64_0005  # new documents of a tenant, one at a time (see PostgresDocumentStore)

_LOCK_TIMEOUT = "60s"
_CONNECT_TIMEOUT_S = 10


def server_name(conninfo: str) -> str:
    """``host:port/dbname`` of a conninfo string or URL, never its password."""
    try:
        parts = psycopg.conninfo.conninfo_to_dict(conninfo)
    except psycopg.ProgrammingError:
        return "(unparseable connection string)"
    host = str(parts.get("host") or "localhost")
    port = f":{parts['port']}" if parts.get("port") else ""
    return f"{host}{port}/{parts.get('dbname') or parts.get('user') or ''}"


def _connect_error(exc: psycopg.Error, where: str) -> MemoryStoreError:
    state = getattr(exc, "sqlstate", None)
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    # libpq reports a refused login before any SQLSTATE exists: its wording is all there is.
    credentials = state in ("28P01", "28000") or "password authentication failed" in text \
        or "no pg_hba.conf entry" in text or ("role " in text and "does not exist" in text)
    if credentials:
        return BackendConnectionError(
            f"PostgreSQL at {where} refused the credentials ({text}): check the user and password "
            "in the connection string (or PGUSER / PGPASSWORD)"
        )
    if state == "3D000":
        return BackendConnectionError(f"PostgreSQL at {where} has no such database ({text}): create it first")
    return BackendConnectionError(
        f"Cannot reach PostgreSQL at {where} ({text}): check that the server runs and the host, port "
        "or socket folder in the connection string"
    )


class PostgresDatabase:
    """A connection pool plus per-thread pinning, transactions and advisory locks.

    Args:
        pool: an open ``psycopg_pool.ConnectionPool``. Its connections may use any row factory
            and autocommit setting: queries here ask for tuples, and a connection is switched to
            autocommit while borrowed.
        owns_pool: close the pool in :meth:`close` (true when :meth:`connect` made it).
    """

    def __init__(self, pool: ConnectionPool[Any], *, owns_pool: bool = False, name: str = "") -> None:
        self.pool = pool
        self.owns_pool = owns_pool
        self.name = name or "postgresql"
        """Where the database is (``host:port/dbname``), for messages; never the password."""
        self._local = threading.local()

    @classmethod
    def connect(cls, conninfo_or_pool: str | ConnectionPool[Any], *, min_size: int = 1,
                max_size: int = 10) -> PostgresDatabase:
        """Open a pool (or adopt one), check the server and create or migrate the schema.

        Raises:
            BackendConnectionError: the server cannot be reached or refused the credentials.
            BackendSchemaError: no pgvector, or a schema written by a newer version of this package.
        """
        if isinstance(conninfo_or_pool, ConnectionPool):
            info = conninfo_or_pool.conninfo
            name = server_name(info if isinstance(info, str) else "")
            db = cls(conninfo_or_pool, owns_pool=False, name=name)
            with db.connection() as conn:
                ensure_schema(conn)
            return db
        if not isinstance(conninfo_or_pool, str) or not conninfo_or_pool.strip():
            raise MemoryStoreError("Give a PostgreSQL connection string (e.g. 'postgresql://user@host/db') "
                                   "or a psycopg_pool.ConnectionPool")
        where = server_name(conninfo_or_pool)
        try:  # one plain connection first: its error says why, where a pool would only time out
            with psycopg.connect(conninfo_or_pool, autocommit=True,
                                 connect_timeout=_CONNECT_TIMEOUT_S) as conn:
                ensure_schema(conn)
        except psycopg.OperationalError as exc:
            raise _connect_error(exc, where) from exc
        pool: ConnectionPool[Any] = ConnectionPool(
            conninfo_or_pool, min_size=min_size, max_size=max_size, open=True,
            kwargs={"autocommit": True, "connect_timeout": _CONNECT_TIMEOUT_S}, name=f"md-memory {where}",
        )
        return cls(pool, owns_pool=True, name=where)

    # -- connections ------------------------------------------------------------------

    @contextlib.contextmanager
    def connection(self) -> Iterator[Conn]:
        """This thread's connection: the pinned one when there is one, else one from the pool.

        psycopg errors raised inside become :class:`MemoryIndexError` (connection lost, pool
        exhausted) with the server named.
        """
        held: Conn | None = getattr(self._local, "conn", None)
        if held is not None:
            yield held
            return
        try:
            with self.pool.connection() as conn:
                restore = not conn.autocommit
                if restore:
                    conn.autocommit = True
                self._local.conn = conn
                try:
                    yield conn
                finally:
                    self._local.conn = None
                    if restore and conn.info.transaction_status == TransactionStatus.IDLE:
                        conn.autocommit = False
        except PoolTimeout as exc:
            raise MemoryIndexError(
                f"No free connection to PostgreSQL at {self.name} ({exc}): raise the pool's max_size "
                "or lower the number of threads using this memory"
            ) from exc
        except psycopg.OperationalError as exc:
            # No SQLSTATE (libpq lost the server) or class 08 / 28 / 3D: the connection, not the query.
            state = exc.sqlstate or ""
            if not state or state[:2] in ("08", "28", "3D"):
                raise _connect_error(exc, self.name) from exc
            raise MemoryIndexError(f"PostgreSQL at {self.name}: {type(exc).__name__}: {exc}") from exc
        except psycopg.Error as exc:
            raise MemoryIndexError(f"PostgreSQL at {self.name}: {type(exc).__name__}: {exc}") from exc

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Conn]:
        """One transaction on this thread's connection (a savepoint inside another one)."""
        with self.connection() as conn, conn.transaction():
            yield conn

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[Conn]:
        """Several reads that see one snapshot (repeatable read); inside a transaction, that one's."""
        with self.connection() as conn:
            if conn.info.transaction_status != TransactionStatus.IDLE:
                yield conn
                return
            with conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                yield conn

    @staticmethod
    def rows(conn: Conn, sql: str | Composed, params: Sequence[Any] | dict[str, Any] = ()) -> list[TupleRow]:
        """Run one statement and return its rows as tuples (whatever the pool's row factory)."""
        with conn.cursor(row_factory=tuple_row) as cur:
            cur.execute(sql, params)
            return cur.fetchall() if cur.description is not None else []

    def query(self, sql: str | Composed, params: Sequence[Any] | dict[str, Any] = ()) -> list[TupleRow]:
        """One statement on this thread's connection; its rows as tuples."""
        with self.connection() as conn:
            return self.rows(conn, sql, params)

    # -- locks ---------------------------------------------------------------------

    @contextlib.contextmanager
    def advisory_lock(self, namespace: int, tenant: str) -> Iterator[None]:
        """A session advisory lock on ``(namespace, tenant)``, re-entrant within a thread.

        Waits up to a minute, then raises :class:`MemoryStoreError`. The thread keeps its
        connection while it holds the lock: what it does under the lock runs on that connection.
        """
        depths: dict[tuple[int, str], int] = self._local.__dict__.setdefault("locks", {})
        key = (namespace, tenant)
        with self.connection() as conn:
            if depths.get(key, 0) == 0:
                self._acquire(conn, namespace, tenant)
            depths[key] = depths.get(key, 0) + 1
            try:
                yield
            finally:
                depths[key] -= 1
                if depths[key] == 0:
                    del depths[key]
                    with contextlib.suppress(psycopg.Error):  # a lost connection released it already
                        self.rows(conn, "SELECT pg_advisory_unlock(%s, hashtext(%s))", (namespace, tenant))

    def _acquire(self, conn: Conn, namespace: int, tenant: str) -> None:
        try:
            with conn.transaction():  # SET LOCAL: the pooled connection keeps its own timeout
                self.rows(conn, f"SET LOCAL lock_timeout = '{_LOCK_TIMEOUT}'")
                # Session-level, so it outlives this little transaction.
                self.rows(conn, "SELECT pg_advisory_lock(%s, hashtext(%s))", (namespace, tenant))
        except psycopg.errors.LockNotAvailable as exc:
            raise MemoryStoreError(
                f"Timed out after {_LOCK_TIMEOUT} waiting for the memory lock of tenant {tenant!r}; "
                "another process is writing (or a session holding it hangs)"
            ) from exc

    def try_advisory_lock(self, namespace: int, tenant: str) -> Conn | None:
        """Take ``(namespace, tenant)`` now on a connection of its own, or ``None`` when it is held.

        Not re-entrant: for exclusive jobs (dream). Release with :meth:`release_advisory_lock`.
        """
        conn: Conn = self.pool.getconn()
        try:
            conn.autocommit = True
            got = self.rows(conn, "SELECT pg_try_advisory_lock(%s, hashtext(%s))", (namespace, tenant))[0][0]
        except BaseException:
            self.pool.putconn(conn)
            raise
        if not got:
            self.pool.putconn(conn)
            return None
        return conn

    def release_advisory_lock(self, conn: Conn, namespace: int, tenant: str) -> None:
        """Release a lock from :meth:`try_advisory_lock` and give its connection back."""
        try:
            with contextlib.suppress(psycopg.Error):
                self.rows(conn, "SELECT pg_advisory_unlock(%s, hashtext(%s))", (namespace, tenant))
        finally:
            self.pool.putconn(conn)

    def close(self) -> None:
        """Close the pool when this object opened it (idempotent)."""
        if self.owns_pool:
            self.pool.close()
