"""When a search without a watcher must walk the memory folder for edits made outside the package.

Writes through the package set the indexer's dirty flag, and a healthy watcher
reports everything else. Without a watcher:

- up to ``stat_check_max_files`` files, every search walks the folder (one
  ``os.scandir`` pass, a few µs a file), so any edit is seen by the next search;
- above it, a search first stats each folder it walked last time. A folder's
  mtime moves whenever an entry in it is created, removed or renamed: every write
  of this package, in any process (a temp file renamed into place), and every
  file a person adds, deletes or saves by renaming (as many editors do). Then it
  walks at once. An edit made in place (``>>``, an editor writing over the same
  file) moves no folder; a periodic walk finds it, due a second after the last
  walk, or ten times the last walk's duration if that is longer (so walking
  takes at most a tenth of the time, however large the folder). The search
  that finds it due does not wait for it: the walk starts in a background
  thread once that search has answered (so it does not compete with it for the
  CPU), and a change it finds makes the next search sync. So no search pays for
  a walk unless a folder moved.
- A folder changed within two seconds before a walk is not trusted (filesystem
  clocks tick coarsely, so a later change could carry the same mtime): searches
  keep walking until the folders are older than that.

Example:
    .. code-block:: python

        check = FolderCheck(store)
        files = check.walk()          # {path: (mtime_ns, size)}, folders remembered
        state = check.state()         # one stat per folder
        if state == "stale":
            files = check.walk()
        elif state == "due":          # walk in a thread; the callback gets what it found
            check.walk_later(lambda found: print("changed" if found != files else "same"))
        ...                           # answer the search
        check.start_pending()         # the walk starts now
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Literal, Protocol, runtime_checkable

from ..files.base import DocumentStore

__all__ = ["RACY_NS", "WALK_SHARE", "FolderCheck"]

logger = logging.getLogger(__name__)

RACY_NS = 2_000_000_000
"""A folder changed this recently before a walk (ns) is not trusted to show the next change."""

WALK_SHARE = 10.0
"""Above the cap, a periodic walk is due once this many times the last walk's duration has passed..."""

WALK_EVERY_S = 1.0
"""... and at least this long after the last walk (an edit made in place is found within about it)."""


@runtime_checkable
class _Folders(Protocol):
    """A store in a folder tree (:class:`~langchain_md_memory.files.store.MarkdownStore`)."""

    def scan(self, *, include_unindexed: bool = False, folders: dict[str, int] | None = None,
             refused: dict[str, str] | None = None) -> dict[str, tuple[int, int]]: ...

    def folder_stamps(self, folders: Iterable[str]) -> dict[str, int]: ...


class FolderCheck:
    """Walks a store's documents, and says when nothing can have changed since the last walk."""

    def __init__(self, store: DocumentStore) -> None:
        self.store = store
        # Decided once: a search above the cap must not pay a protocol check every time.
        self._tree: _Folders | None = store if isinstance(store, _Folders) else None
        self._folders: dict[str, int] | None = None
        self._next_walk = 0.0
        self._behind: threading.Thread | None = None
        self._behind_lock = threading.Lock()
        self._pending: Callable[[dict[str, tuple[int, int]]], None] | None = None
        self.refused: dict[str, str] = {}
        """Markdown files the last walk met that the path guard refuses (a name no memory path may have,
        ``a\\b.md``; a symlink leading outside the folder), and why."""

    def walk(self) -> dict[str, tuple[int, int]]:
        """Every document's ``(mtime_ns, size)``; a folder store's folders are remembered with it."""
        if self._tree is None:
            return self.store.scan()
        folders: dict[str, int] = {}
        refused: dict[str, str] = {}
        started, wall = time.monotonic(), time.time_ns()
        found = self._tree.scan(folders=folders, refused=refused)
        now = time.monotonic()
        for rel in refused.keys() - self.refused.keys():
            logger.warning("not indexing %s: %s", rel, refused[rel])
        self.refused = refused
        trusted = all(wall - stamp > RACY_NS for stamp in folders.values())
        self._folders = folders if trusted else None
        self._next_walk = now + max(WALK_EVERY_S, WALK_SHARE * (now - started))
        return found

    def look(self) -> tuple[dict[str, tuple[int, int]], dict[str, str]]:
        """What :meth:`walk` finds (every document's stamp, and the files the path guard refuses, with
        why), leaving the folders a search's check compares with as the last walk saw them: a look
        between two searches must not hide a change from the second."""
        if self._tree is None:
            return self.store.scan(), {}
        refused: dict[str, str] = {}
        return self._tree.scan(refused=refused), refused

    def state(self) -> Literal["unchanged", "due", "stale"]:
        """``stale``: walk now (a folder moved, or none is trusted); ``due``: nothing moved but the
        periodic walk is due (:meth:`walk_behind`); ``unchanged``: nothing to do."""
        if self._tree is None or self._folders is None:
            return "stale"
        if self._tree.folder_stamps(self._folders) != self._folders:
            return "stale"
        return "due" if time.monotonic() >= self._next_walk else "unchanged"

    def walk_behind(self, found: Callable[[dict[str, tuple[int, int]]], None]) -> bool:
        """Walk in a background thread (unless one is running) and hand the files to ``found``.

        Returns True when a walk started. A walk that fails leaves no folder trusted, so the next
        search walks itself.
        """
        with self._behind_lock:
            if self._behind is not None and self._behind.is_alive():
                return False
            self._behind = threading.Thread(target=self._walk_for, args=(found,), name="md-memory-walk",
                                            daemon=True)
            self._behind.start()
            return True

    def walk_later(self, found: Callable[[dict[str, tuple[int, int]]], None]) -> None:
        """Plan a :meth:`walk_behind` for :meth:`start_pending` to start once the caller is done."""
        self._pending = found

    def start_pending(self) -> bool:
        """Start the walk :meth:`walk_later` planned, if any; True when a walk started."""
        found, self._pending = self._pending, None
        return found is not None and self.walk_behind(found)

    def wait(self, timeout: float | None = None) -> None:
        """Wait for a background walk to finish (none running: return at once)."""
        behind = self._behind
        if behind is not None:
            behind.join(timeout)

    def _walk_for(self, found: Callable[[dict[str, tuple[int, int]]], None]) -> None:
        try:
            found(self.walk())
        except Exception as exc:  # a folder removed meanwhile, permissions: the next search walks
            self._folders = None
            logger.warning("background walk of the memory folder failed: %s", exc)
