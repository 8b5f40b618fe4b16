"""An exclusive, non-blocking lock file that a crashed or killed holder cannot keep.

Where ``fcntl`` exists (Linux, macOS) the lock is an ``flock`` on the file: the
kernel drops it when the holder's last descriptor closes, including on
``SIGKILL`` or a power cut, so a stale lock cannot exist. Elsewhere the lock is
the file itself, created with ``O_CREAT | O_EXCL`` and holding the owner's pid,
host and start time; it is taken over when that pid is dead on this host or the
file is older than ``stale_after_s``. Either way the file records who holds it,
so "busy" can say by whom.

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
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["LockFile", "LockHolder"]

logger = logging.getLogger(__name__)

DEFAULT_STALE_AFTER_S = 6 * 3600.0
"""Age after which a pid-file lock (no ``flock``) counts as abandoned whatever its pid."""


@dataclass(frozen=True, slots=True)
class LockHolder:
    """Who wrote a lock file: process id, host name and start time (epoch seconds)."""

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
        stale_after_s: for the pid-file fallback only, the age after which a
            lock is taken over even when its pid still seems alive (pid reuse,
            another host).
        use_flock: ``None`` picks ``flock`` when available; ``False`` forces
            the pid-file fallback (tests use it on Linux).

    Not reentrant: a second ``acquire`` on a held lock, from any object in any
    process, returns False.
    """

    def __init__(self, path: str | os.PathLike[str], *, stale_after_s: float = DEFAULT_STALE_AFTER_S,
                 use_flock: bool | None = None) -> None:
        self.path = Path(path)
        self.stale_after_s = stale_after_s
        self._use_flock = (fcntl is not None) if use_flock is None else (use_flock and fcntl is not None)
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        """True while this object holds the lock."""
        return self._fd is not None

    def acquire(self) -> bool:
        """Take the lock now; False when someone else holds it."""
        if self._fd is not None:
            return False
        fd = self._acquire_flock() if self._use_flock else self._acquire_pidfile()
        if fd is None:
            return False
        self._fd = fd
        self._write_holder(fd)
        return True

    def release(self) -> None:
        """Give the lock back. Idempotent; never raises."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        if self._use_flock:
            # The file stays: unlinking it would let a waiter lock the old inode while a newcomer
            # locks a new one, and both would think they hold the lock.
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            with contextlib.suppress(OSError):
                os.close(fd)  # closing drops the flock
            return
        with contextlib.suppress(OSError):
            os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(self.path)

    def holder(self) -> LockHolder | None:
        """Who holds (or last held) the lock, from the file; None when unknown."""
        try:
            data: Any = json.loads(self.path.read_text(encoding="utf-8"))
            return LockHolder(int(data["pid"]), str(data["host"]), float(data["started_at"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()

    # -- flock --------------------------------------------------------------------

    def _acquire_flock(self) -> int | None:
        assert fcntl is not None
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                return None
            except OSError:
                os.close(fd)
                raise
            # Someone may have replaced the file between our open and flock: then we locked an orphan.
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                return fd
            os.close(fd)

    # -- pid file -----------------------------------------------------------------

    def _acquire_pidfile(self) -> int | None:
        for _ in range(2):
            try:
                return os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                judged = self._stale_inode()
                if judged is None:
                    return None
                self._take_over(judged)
        return None

    def _stale_inode(self) -> int | None:
        """The inode of the lock file when it is stale, else None."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return 0
        holder = self.holder()
        age = time.time() - st.st_mtime
        if age > self.stale_after_s:
            return st.st_ino
        if holder is None:
            # A holder writes its record right after creating the file; give it a moment to do so.
            return st.st_ino if age > 10.0 else None
        if holder.host == socket.gethostname() and not _pid_alive(holder.pid):
            return st.st_ino
        return None

    def _take_over(self, judged_inode: int) -> None:
        # Rename rather than unlink, then check it is the file we judged: a racing successor may
        # already have replaced it with a fresh lock, which we then put back.
        grave = self.path.with_name(f"{self.path.name}.stale.{os.getpid()}")
        try:
            os.rename(self.path, grave)
        except FileNotFoundError:
            return
        try:
            if os.stat(grave).st_ino != judged_inode:
                with contextlib.suppress(OSError):
                    os.link(grave, self.path)
            else:
                logger.warning("taking over stale lock %s", self.path)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(grave)

    # -- shared -------------------------------------------------------------------

    def _write_holder(self, fd: int) -> None:
        record = {"pid": os.getpid(), "host": socket.gethostname(), "started_at": time.time()}
        data = json.dumps(record).encode("utf-8")
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, data, 0)
        except OSError as exc:  # the lock itself is held; the record is only for diagnostics
            logger.debug("cannot write lock holder to %s: %s", self.path, exc)


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True
