"""Live index: a watchdog observer that syncs after Markdown changes settle.

Only managed Markdown files count (``MEMORY.md``, dated logs, topic files,
``sessions/*.md``): the index, its ``-wal``/``-shm`` sidecars, the lock file
and the hidden temp files of atomic writes are ignored, so a sync never
triggers another. Events are debounced: a burst of writes becomes one sync
``debounce_ms`` after the last of them (or ``max_delay_ms`` after the first,
so a steady stream of writes still gets indexed). One worker thread runs the
syncs, so they never overlap each other, and the indexer's own lock keeps
them apart from searches. A failing sync is logged and counted; the watcher
keeps running.

Example:
    .. code-block:: python

        from langchain_md_memory import MarkdownMemory

        with MarkdownMemory("memory", embeddings="none", watch=True) as mem:
            ...  # files edited by hand reach the index about 1.5 s later
        # close() stopped the observer and joined every watcher thread
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from watchdog.events import (
    DirDeletedEvent,
    DirMovedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver
from watchdog.observers.polling import PollingObserver

from ..errors import MemoryInputError
from ..files.paths import is_managed_file

__all__ = ["WATCHER_THREAD_NAME", "MemoryWatcher"]

logger = logging.getLogger(__name__)

WATCHER_THREAD_NAME = "md-memory-watcher"
"""Name of the watcher's sync worker thread (the observer threads are watchdog's)."""

_EVENTS: list[type[FileSystemEvent]] = [
    FileCreatedEvent, FileModifiedEvent, FileMovedEvent, FileDeletedEvent, DirMovedEvent, DirDeletedEvent,
]
# Without a cap, a file rewritten more often than the debounce would never be indexed.
_MAX_DELAY_FACTOR = 8


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: MemoryWatcher) -> None:
        self._watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        self._watcher._on_event(event)


class MemoryWatcher:
    """Watches a memory folder and calls ``sync`` once changes settle.

    Args:
        root: the memory folder.
        sync: what to run after a change (e.g. ``indexer.sync``); its return
            value is passed to ``on_sync``.
        debounce_ms: quiet time after the last relevant event before syncing.
        recursive: watch subfolders (``sessions/``, topic folders) too.
        on_change: called at once for every relevant event (e.g. ``mark_dirty``,
            so a search during the debounce syncs first).
        on_sync: called with each sync's result, on the worker thread.
        max_delay_ms: longest wait after the first event of a burst
            (default ``8 × debounce_ms``).

    Example:
        .. code-block:: python

            watcher = MemoryWatcher(mem.memory_dir, mem.sync, debounce_ms=200)
            watcher.start()
            ...
            watcher.stop()
            print(watcher.sync_count, watcher.error_count)
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        sync: Callable[[], Any],
        *,
        debounce_ms: int = 1500,
        recursive: bool = True,
        on_change: Callable[[], None] | None = None,
        on_sync: Callable[[Any], None] | None = None,
        max_delay_ms: int | None = None,
    ) -> None:
        if debounce_ms < 0:
            raise MemoryInputError(f"debounce_ms must be 0 or more, got {debounce_ms}")
        self.root = Path(os.path.realpath(root))
        self.recursive = recursive
        self.debounce_s = debounce_ms / 1000.0
        delay = max_delay_ms if max_delay_ms is not None else _MAX_DELAY_FACTOR * max(debounce_ms, 1)
        self.max_delay_s = max(delay / 1000.0, self.debounce_s)
        self._sync = sync
        self._on_change = on_change
        self._on_sync = on_sync
        self._cond = threading.Condition()
        self._due: float | None = None
        self._first: float | None = None
        self._stopping = False
        self._syncing = False
        self._observer: BaseObserver | None = None
        self._worker: threading.Thread | None = None
        self.backend: str | None = None
        self.sync_count = 0
        """Syncs run so far (failed ones included)."""
        self.error_count = 0
        self.event_count = 0
        """Relevant events seen (ignored files do not count)."""
        self.last_error: str | None = None
        self.last_sync: float | None = None

    # -- lifecycle ------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """True between :meth:`start` and :meth:`stop`."""
        return self._worker is not None and self._worker.is_alive()

    @property
    def healthy(self) -> bool:
        """True while both the observer and the sync worker are alive.

        Watchers can die silently (an observer thread killed by an error, an
        inotify queue gone): a dead one must not be trusted to report edits.
        """
        observer = self._observer
        return self.running and observer is not None and observer.is_alive()

    @property
    def pending(self) -> bool:
        """True while a change waits for its debounce or its sync is running."""
        with self._cond:
            return self._due is not None or self._syncing

    def start(self) -> None:
        """Start the observer and the sync worker; a no-op when running."""
        with self._cond:
            if self._worker is not None:
                return
            self._stopping = False
            self._observer = self._start_observer()
            self._worker = threading.Thread(target=self._run, name=WATCHER_THREAD_NAME, daemon=True)
            self._worker.start()
        logger.info("watching %s (%s, debounce %.0f ms)", self.root, self.backend, self.debounce_s * 1000)

    def _start_observer(self) -> BaseObserver:
        handler = _Handler(self)
        observer: BaseObserver = Observer()
        try:
            observer.schedule(handler, str(self.root), recursive=self.recursive, event_filter=_EVENTS)
            observer.start()
            self.backend = type(observer).__name__
            return observer
        except OSError as exc:  # e.g. inotify watch or instance limit reached
            logger.warning("native file watching unavailable (%s); polling %s instead", exc, self.root)
        observer = PollingObserver(timeout=max(self.debounce_s / 2, 0.1))
        observer.schedule(handler, str(self.root), recursive=self.recursive, event_filter=_EVENTS)
        observer.start()
        self.backend = type(observer).__name__
        return observer

    def stop(self) -> None:
        """Stop watching and join every thread; a sync in progress finishes first. Idempotent."""
        with self._cond:
            observer, worker = self._observer, self._worker
            self._observer = self._worker = None
            self._stopping = True
            self._due = self._first = None
            self._cond.notify_all()
        if observer is not None:
            observer.stop()
            if observer.is_alive():
                observer.join()
        if worker is not None and worker is not threading.current_thread():
            worker.join()
        if worker is not None:
            logger.info("stopped watching %s after %d syncs", self.root, self.sync_count)

    # -- events ---------------------------------------------------------------------

    def is_relevant(self, event: FileSystemEvent) -> bool:
        """True when ``event`` touches a managed Markdown file (or a folder that may hold some)."""
        if event.event_type not in ("created", "modified", "moved", "deleted"):
            return False
        paths = [event.src_path]
        if event.event_type == "moved":
            paths.append(event.dest_path)
        return any(self._relevant_path(os.fsdecode(p), event.is_directory) for p in paths if p)

    def _relevant_path(self, path: str, is_directory: bool) -> bool:
        rel = os.path.relpath(path, self.root)
        if rel == "." or rel.startswith(".." + os.sep) or rel == "..":
            return False
        rel = Path(rel).as_posix()
        if not self.recursive and "/" in rel:
            return False
        if is_directory:
            # A moved or deleted folder takes its Markdown with it; a hidden one never held any.
            return self.recursive and is_managed_file(f"{rel}/x.md")
        return is_managed_file(rel)

    def _on_event(self, event: FileSystemEvent) -> None:
        if not self.is_relevant(event):
            return
        logger.debug("watch event %s %s", event.event_type, event.src_path)
        if self._on_change is not None:
            try:
                self._on_change()
            except Exception:  # a hook must never kill the observer thread
                logger.exception("watcher on_change hook failed")
        with self._cond:
            if self._stopping:
                return
            self.event_count += 1
            now = time.monotonic()
            if self._first is None:
                self._first = now
            self._due = now + self.debounce_s
            self._cond.notify_all()

    # -- worker ---------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stopping and self._due is None:
                    self._cond.wait()
                last, first = self._due, self._first
                if self._stopping or last is None:
                    return
                due = min(last, (last if first is None else first) + self.max_delay_s)
                wait = due - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                self._due = self._first = None
                self._syncing = True
            try:
                self._run_sync()
            finally:
                with self._cond:
                    self._syncing = False

    def _run_sync(self) -> None:
        try:
            result = self._sync()
        except Exception as exc:  # the next change retries; the worker must survive
            with self._cond:
                self.sync_count += 1
                self.error_count += 1
                self.last_error = f"{type(exc).__name__}: {exc}"
            logger.exception("watcher sync of %s failed", self.root)
            return
        with self._cond:
            self.sync_count += 1
            self.last_sync = time.time()
        if self._on_sync is not None:
            try:
                self._on_sync(result)
            except Exception:
                logger.exception("watcher on_sync hook failed")

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"MemoryWatcher({str(self.root)!r}, {state}, syncs={self.sync_count})"
