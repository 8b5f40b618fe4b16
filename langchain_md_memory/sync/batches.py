"""Many files indexed in a few write transactions instead of one each.

A build of many small files paid a commit, and the keyword index's flush, per
file. :class:`WriteBatches` keeps one write transaction open across up to
:data:`BATCH_FILES` files or :data:`BATCH_S` seconds, whichever comes first, so
another process's writer never waits long. A failure rolls back only the open
batch; the files in it are indexed again by the next sync.

Example:
    .. code-block:: python

        with WriteBatches(index) as batches:
            for path in changed:
                batches.enter()          # a write transaction is open from here
                reindex(path)
                batches.done()           # commits when the batch is full or old
"""

from __future__ import annotations

import contextlib
import time
from types import TracebackType

from ..index.base import SearchIndex

__all__ = ["BATCH_FILES", "BATCH_S", "WriteBatches"]

BATCH_FILES = 64
"""Changed files indexed in one write transaction, at most."""

BATCH_S = 0.05
"""How long one write transaction of a sync stays open, at most (other writers wait for it)."""


class WriteBatches:
    """Shared write transactions over a run of files; see the module docstring."""

    def __init__(self, index: SearchIndex) -> None:
        self.index = index
        self._open: contextlib.ExitStack | None = None
        self._files = 0
        self._started = 0.0

    def enter(self) -> None:
        """Make sure a write transaction is open."""
        if self._open is None:
            stack = contextlib.ExitStack()
            stack.enter_context(self.index.writing())
            self._open, self._files, self._started = stack, 0, time.perf_counter()

    def done(self) -> None:
        """One file written: commit when the batch is full or old."""
        self._files += 1
        if self._files >= BATCH_FILES or time.perf_counter() - self._started >= BATCH_S:
            self._close(None, None, None)

    def __enter__(self) -> WriteBatches:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._close(kind, exc, tb)

    def _close(self, kind: type[BaseException] | None, exc: BaseException | None,
               tb: TracebackType | None) -> None:
        if self._open is not None:
            stack, self._open = self._open, None
            stack.__exit__(kind, exc, tb)
