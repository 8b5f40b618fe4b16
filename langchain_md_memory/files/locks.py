"""An exclusive, non-blocking lock that a crashed or killed holder cannot keep.

The lock is :mod:`filelock`'s (an ``flock`` on Unix, ``msvcrt`` locking on
Windows): the kernel drops it when the holder's process ends, including on
``SIGKILL``, so a stale lock cannot exist. A small holder record beside the
lock file (``<lock>.holder``) says who holds it, so "busy" can say by whom.

Example:
    .. code-block:: python

        from langchain_md_memory.files.locks import LockFile

        lock = LockFile(memory_dir / ".dream.lock")
        if lock.acquire():
            try:
                ...  # the exclusive work
            finally:
                lock.release()
        else:
            print("busy:", lock.holder())
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from filelock import FileLock, Timeout

__all__ = ["LockFile", "LockHolder", "pid_alive"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LockHolder:
    """Who holds a lock: process id, host name and start time (epoch seconds)."""

    pid: int
    host: str
    started_at: float

    def __str__(self) -> str:
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.started_at))
        return f"pid {self.pid} on {self.host} since {since}"


class LockFile:
    """An exclusive lock on ``path``, acquired without waiting.

    Args:
        path: the lock file; its folder must exist. Keep it hidden (``.name``)
            inside a memory folder so it is never indexed or archived.

    Not reentrant: a second ``acquire`` on a held lock, from any object in any
    process, returns False.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._record = self.path.with_name(self.path.name + ".holder")
        self._lock = FileLock(str(self.path), timeout=0)

    @property
    def held(self) -> bool:
        """True while this object holds the lock."""
        return self._lock.is_locked

    def acquire(self) -> bool:
        """Take the lock now; False when someone else (or this object already) holds it."""
        if self._lock.is_locked:
            return False
        try:
            self._lock.acquire()
        except Timeout:
            return False
        self._write_holder()
        return True

    def release(self) -> None:
        """Release the lock if this object holds it (idempotent)."""
        if not self._lock.is_locked:
            return
        with contextlib.suppress(OSError):
            self._record.unlink()
        self._lock.release()

    def holder(self) -> LockHolder | None:
        """Who holds (or last held, if it was killed) the lock, when known."""
        try:
            data = json.loads(self._record.read_text(encoding="utf-8"))
            return LockHolder(int(data["pid"]), str(data["host"]), float(data["started_at"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()

    def _write_holder(self) -> None:
        record = {"pid": os.getpid(), "host": socket.gethostname(), "started_at": time.time()}
        # Named like every temp file here (.<name>.<pid>.<random>.tmp): a sweep tells a dead writer's.
        temp = self._record.with_name(f"{self._record.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        try:  # written whole, then renamed: a reader never sees half a record
            temp.write_text(json.dumps(record), encoding="utf-8")
            os.replace(temp, self._record)
        except OSError as exc:  # the lock itself is held; the record is only for diagnostics
            logger.debug("cannot write lock holder beside %s: %s", self.path, exc)
            with contextlib.suppress(OSError):
                temp.unlink()


def pid_alive(pid: int) -> bool:
    """True when process ``pid`` runs on this host (always True where that cannot be told)."""
    if os.name == "nt":  # os.kill(pid, 0) would terminate it there; keep the file
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. no permission: it exists
        return True
    return True
