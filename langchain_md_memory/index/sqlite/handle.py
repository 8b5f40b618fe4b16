"""The one owner of a memory's index: it opens, falls back to memory, and swaps.

Everyone reads :attr:`IndexHandle.index` afresh for each use, so a swap (a
rebuild finished, a damaged file replaced) reaches every reader at once.

Example:
    .. code-block:: python

        handle = IndexHandle("memory/index.sqlite")
        hits = handle.index.keyword_search([["仓位"]], 10).hits[0]
        handle.close()
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from ...errors import MemoryIndexError
from ...files.locks import pid_alive
from ..base import IndexOwner
from .index import MemoryIndex
from .schema import remove_index_files
from .vectors import VectorDtype

__all__ = ["IN_MEMORY", "IndexHandle"]

logger = logging.getLogger(__name__)

IN_MEMORY = ":memory:"
"""The path of an in-memory index (the fallback when the file cannot be used)."""

_REBUILD_SUFFIX = ".rebuild-"

T = TypeVar("T")


class IndexHandle:
    """Holds the index in use; only it replaces that index.

    Args:
        path: the index file, or :data:`IN_MEMORY`. When the file cannot be
            used (read-only folder, locked by another process), an in-memory
            index takes its place and :attr:`fallback` says why. What killed
            rebuilds left beside it goes (see :meth:`sweep_rebuild_files`).
    """

    def __init__(self, path: str | os.PathLike[str], *, vector_dtype: VectorDtype = "float32") -> None:
        self.path = os.fspath(path)
        self.vector_dtype: VectorDtype = vector_dtype
        """How every index this handle opens holds its vector matrix."""
        self.fallback: str | None = None
        """Why the index is in memory instead of at :attr:`path`, or ``None``."""
        self.lock = threading.RLock()
        """Held while the index is swapped; hold it to keep the current index in place."""
        self._index = self._open()
        self.sweep_rebuild_files()

    @classmethod
    def of(cls, index: MemoryIndex) -> IndexHandle:
        """A handle around an index that is already open (e.g. one being built)."""
        handle = cls.__new__(cls)
        handle.path, handle.fallback, handle.lock, handle._index = index.path, None, threading.RLock(), index
        handle.vector_dtype = index.vector_dtype
        return handle

    @property
    def index(self) -> MemoryIndex:
        """The index in use now."""
        return self._index

    @property
    def in_memory(self) -> bool:
        """True when the index lives in memory only (by choice or as a fallback)."""
        return self._index.path == IN_MEMORY

    def _open(self) -> MemoryIndex:
        try:
            return MemoryIndex.open(self.path, vector_dtype=self.vector_dtype)
        except MemoryIndexError as exc:
            # e.g. a read-only folder: keep answering from an in-memory index built from the Markdown.
            self.fallback = str(exc)
            logger.warning("cannot use %s (%s); using an in-memory index", self.path, exc)
            return MemoryIndex.open(IN_MEMORY, vector_dtype=self.vector_dtype)

    def open_fresh(self) -> MemoryIndex:
        """A new, empty index to build beside the current one (in memory for an in-memory index).

        The embedding cache of the current file is copied in: a rebuild never pays twice for vectors.
        """
        if self.in_memory:
            return MemoryIndex.open(IN_MEMORY, vector_dtype=self.vector_dtype)
        fresh = MemoryIndex.open(f"{self.path}{_REBUILD_SUFFIX}{os.getpid()}", vector_dtype=self.vector_dtype)
        fresh.cache.adopt(self.path)
        return fresh

    def rebuild(self, build: Callable[[IndexOwner], T]) -> T:
        """``build`` fills a fresh index beside this one (:meth:`open_fresh`), then it is swapped in.

        Readers keep the current index until the new one is complete. A build that fails leaves the
        current index in place and no rebuild file behind.
        """
        fresh = self.open_fresh()
        try:
            result = build(IndexHandle.of(fresh))
        except BaseException:
            fresh.close()
            if fresh.path != IN_MEMORY:
                remove_index_files(fresh.path)
            raise
        self.swap_in(fresh)
        return result

    def swap_in(self, fresh: MemoryIndex) -> None:
        """Put ``fresh`` (from :meth:`open_fresh`) in place of the current index, atomically on disk.

        Readers keep the old index until the new one is complete; the old one is closed.
        """
        with self.lock:
            old = self._index
            if fresh.path == IN_MEMORY:
                self._index = fresh
            else:
                temp = fresh.path
                fresh.finish_for_swap()
                old.finish_for_swap()
                os.replace(temp, self.path)
                for suffix in ("-wal", "-shm"):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(self.path + suffix)
                self._index = MemoryIndex.open(self.path, vector_dtype=self.vector_dtype)
            old.close()

    def reopen(self) -> MemoryIndex:
        """Close the index and open its file again (e.g. after the file was replaced outside)."""
        with self.lock:
            self._index.close()
            self._index = self._open()
            return self._index

    def fall_back(self, reason: str) -> MemoryIndex:
        """Answer from a new in-memory index from now on (the file failed); returns it, empty."""
        with self.lock:
            old = self._index
            self.fallback = reason
            self._index = MemoryIndex.open(IN_MEMORY, vector_dtype=self.vector_dtype)
            old.close()
            return self._index

    def sweep_rebuild_files(self) -> int:
        """Delete what killed rebuilds left (``index.sqlite.rebuild-<pid>``); returns how many.

        A rebuild file whose process still runs on this host is another rebuild at work: kept.
        """
        if self.in_memory:
            return 0
        target = Path(self.path)
        removed = 0
        for leftover in target.parent.glob(f"{target.name}{_REBUILD_SUFFIX}*"):
            pid = leftover.name.rpartition(_REBUILD_SUFFIX)[2]
            if not pid.isdigit() or pid_alive(int(pid)):
                continue  # a sidecar (-wal, -shm) goes with its main file below
            with contextlib.suppress(OSError):
                remove_index_files(str(leftover))
                removed += 1
        if removed:
            logger.info("removed %d index files of interrupted rebuilds beside %s", removed, self.path)
        return removed

    def close(self) -> None:
        """Close the index in use."""
        with self.lock:
            self._index.close()
