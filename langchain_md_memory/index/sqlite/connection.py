"""One shared SQLite connection: a lock, whole-row reads, snapshots and write transactions.

Tools run on worker threads and retrievers in executors, so the connection is
opened with ``check_same_thread=False`` and every use holds one lock (as
langgraph's ``SqliteStore`` does). This is the index's boundary for errors: every SQLite error met
here, while a query starts, while its rows are read or inside a write, comes out as the package's
:class:`~langchain_md_memory.errors.MemoryIndexError` family (see :func:`schema.index_error`).

Example:
    .. code-block:: python

        db = IndexConnection(connect("memory/index.sqlite", 10_000), "memory/index.sqlite")
        with db.write() as conn:
            conn.execute("INSERT INTO meta(key, value) VALUES ('k', 'v')")
        assert db.query("SELECT value FROM meta WHERE key = 'k'").fetchone()[0] == "v"
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar, cast

from .schema import index_error, retry_busy

T = TypeVar("T")

__all__ = ["IndexConnection", "Rows"]


class Rows(list[Any]):
    """All rows of one query, with the two cursor methods callers use."""

    def fetchone(self) -> Any:
        return self[0] if self else None

    def fetchall(self) -> list[Any]:
        return self


class IndexConnection:
    """The index's connection and the lock every use of it holds."""

    def __init__(self, conn: sqlite3.Connection, path: str) -> None:
        self._conn = conn
        self.path = path
        self.lock = threading.RLock()
        self._write_depth = 0
        self._reader: int | None = None  # the thread in a read snapshot
        self._read_once: dict[str, Any] = {}  # what it read once (see once_per_snapshot)

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self.lock, contextlib.suppress(sqlite3.Error):
            self._conn.close()

    def checkpoint_and_close(self) -> None:
        """Fold the WAL into the main file and close, so the file can be renamed."""
        with self.lock:
            with contextlib.suppress(sqlite3.Error):
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                self._conn.execute("PRAGMA journal_mode = DELETE")
            self.close()

    def query(self, sql: str, params: Sequence[Any] = (), *, read_only: bool = False) -> Rows:
        """All rows of ``sql``, read whole under the lock; ``read_only``: under ``query_only`` (no writes)."""
        # Rows are read whole under the lock: a cursor read after it is released lets another thread
        # write on the shared connection mid-query, and FTS5 then aborts the read ("query aborted").
        with self.lock:
            try:
                if read_only:
                    self._conn.execute("PRAGMA query_only = 1")
                try:
                    return Rows(retry_busy(lambda: self._conn.execute(sql, params).fetchall()))
                finally:
                    if read_only:
                        self._conn.execute("PRAGMA query_only = 0")
            except sqlite3.Error as exc:
                raise index_error(exc, f"index query failed on {self.path}") from exc

    def stream(self, sql: str, params: Sequence[Any] = ()) -> Iterator[Any]:
        """The rows of a large read, one at a time; the caller holds ``lock`` until they are consumed.

        Damage can surface on any row, not only when the query starts: it comes out classified too.
        """
        try:
            yield from retry_busy(lambda: self._conn.execute(sql, params))
        except sqlite3.Error as exc:
            raise index_error(exc, f"index query failed on {self.path}") from exc

    def once_per_snapshot(self, key: str, read: Callable[[], T]) -> T:
        """``read()``, read once per read snapshot of the calling thread (nothing writes inside one);
        outside one, read each time."""
        if self._reader != threading.get_ident():
            return read()
        if key not in self._read_once:
            self._read_once[key] = read()
        return cast(T, self._read_once[key])

    @contextlib.contextmanager
    def read_snapshot(self) -> Iterator[None]:
        """Run several reads in one read transaction (one WAL snapshot), holding the lock throughout."""
        with self.lock:
            try:
                joined = self._conn.in_transaction  # a closed connection (a swapped-out index) raises here
                if not joined:
                    self._conn.execute("BEGIN")  # deferred: takes no lock; the first read pins the snapshot
            except sqlite3.Error as exc:
                raise index_error(exc, f"cannot read index {self.path}") from exc
            if joined:
                yield
                return
            self._reader, self._read_once = threading.get_ident(), {}
            try:
                yield
            finally:
                self._reader = None
                with contextlib.suppress(sqlite3.Error):
                    self._conn.execute("COMMIT")

    @contextlib.contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (``BEGIN IMMEDIATE``); nested uses join the outer one.

        A SQLite error raised in the block (a full disk, a damaged page, a trigger's refusal) leaves
        it classified, so nothing above the index catches ``sqlite3`` errors.
        """
        with self.lock:
            if self._write_depth:  # inside writing(): the outer block commits or rolls back
                self._write_depth += 1
                try:
                    yield self._conn
                except sqlite3.Error as exc:
                    raise index_error(exc, f"cannot write index {self.path}") from exc
                finally:
                    self._write_depth -= 1
                return
            try:
                retry_busy(lambda: self._conn.execute("BEGIN IMMEDIATE"))
            except sqlite3.Error as exc:
                raise index_error(exc, f"cannot write index {self.path}") from exc
            self._write_depth = 1
            try:
                yield self._conn
            except BaseException as exc:
                with contextlib.suppress(sqlite3.Error):
                    self._conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise index_error(exc, f"cannot write index {self.path}") from exc
                raise
            else:
                try:
                    self._conn.execute("COMMIT")
                except sqlite3.Error as exc:
                    with contextlib.suppress(sqlite3.Error):
                        self._conn.execute("ROLLBACK")
                    raise index_error(exc, f"cannot write index {self.path}") from exc
            finally:
                self._write_depth = 0
