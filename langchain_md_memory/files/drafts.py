"""A dry run of writes: the same code computes every change, which is recorded and never written.

Inside :func:`drafting`, every memory write made in this context (this thread, or a task or worker
thread started from it) runs as it would, through the path guard, the size limits, redaction, dedup
and the store's own text operations, down to the one byte-level :meth:`~.base.DocumentStore.rewrite`
(or :meth:`~.base.DocumentStore.remove`) of each document. There a :class:`DraftStore` keeps the new
bytes instead of writing them, and later reads in the same draft see them, so a write made of several
steps (a rename moves files one by one) is drafted whole. :class:`~.documents.Documents` reads its
store through :func:`active_draft`, so no write method has a second, preview-only implementation,
and other threads keep writing for real meanwhile.

Example:
    .. code-block:: python

        from langchain_md_memory.files.drafts import drafting

        with drafting() as draft:
            mem.edit("tea", "coffee")
        [change] = draft.changes  # MEMORY.md, its bytes before and after
        assert b"coffee" in change.after and "coffee" not in mem.get("MEMORY.md")
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import PurePath, PurePosixPath

from .base import Change, ChangeStamp, DocumentStore, JobLock
from .paths import is_managed_file, is_memory_file
from .tree import is_a_folder, tree_clash

__all__ = ["Draft", "DraftStore", "DraftedChange", "active_draft", "drafting"]


@dataclass(frozen=True, slots=True)
class DraftedChange:
    """One document a drafted write would change: its path, its bytes before and after.

    The path is the one the memory's methods take (a project memory's global files are ``~global/...``).
    ``before`` is ``None`` for a document the write would create, ``after`` for one it would delete.
    """

    path: str
    before: bytes | None
    after: bytes | None


class DraftStore(DocumentStore):
    """A document store over ``store`` whose writes are kept here: reads see them, ``store`` never does.

    Locks are the real store's, so a draft reads the documents as a real write would, between others'
    writes.
    """

    def __init__(self, store: DocumentStore) -> None:
        self.real = store
        self.recursive = store.recursive
        self.max_path_depth = store.max_path_depth
        self.max_name_bytes = store.max_name_bytes
        self.prefix = ""
        """What the memory's methods put before this store's paths (``~global/``: see ``aio.routed``)."""
        self.written: dict[str, bytes | None] = {}
        """Each document written in the draft, in the order first written: its bytes, ``None`` if removed."""
        self._before: dict[str, bytes | None] = {}

    def relpath(self, path: str) -> str:
        return self.real.relpath(path)

    def scan(self, *, include_unindexed: bool = False) -> dict[str, ChangeStamp]:
        found = self.real.scan(include_unindexed=include_unindexed)
        wanted = is_memory_file if include_unindexed else is_managed_file
        for rel, data in self.written.items():
            if data is None:
                found.pop(rel, None)
            elif wanted(rel):
                found[rel] = (0, len(data))
        return found

    def stat(self, path: str) -> ChangeStamp | None:
        rel = self.relpath(path)
        if rel in self.written:
            data = self.written[rel]
            return None if data is None else (0, len(data))
        return self.real.stat(rel)

    def exists(self, path: str) -> bool:
        rel = self.relpath(path)
        if rel in self.written:
            return self.written[rel] is not None
        return self.real.exists(rel)

    def read_stamped(self, path: str, *, max_bytes: int) -> tuple[ChangeStamp, bytes | None] | None:
        rel = self.relpath(path)
        if rel not in self.written:
            return self.real.read_stamped(rel, max_bytes=max_bytes)
        data = self.written[rel]
        if data is None:
            return None
        return (0, len(data)), (data if len(data) <= max_bytes else None)

    def rewrite(self, path: str, change: Change) -> bool:
        rel = self.relpath(path)
        with self.locked():
            old = self.read_bytes(rel) if self.exists(rel) else None
            if old is None:
                self._check_tree(rel)
            new = change if isinstance(change, bytes) else change(old)
            if new is None:
                return False
            self._record(rel, old, new)
            return True

    def remove(self, path: str) -> bool:
        rel = self.relpath(path)
        with self.locked():
            if not self.exists(rel):
                return False
            self._record(rel, self.read_bytes(rel), None)
            return True

    def locked(self) -> contextlib.AbstractContextManager[None]:
        return self.real.locked()

    def job_lock(self, name: str) -> JobLock:
        return self.real.job_lock(name)

    def keep_version(self, name: str, data: bytes, stamp: str, keep: int) -> PurePath:
        # A kept version is a copy of bytes the memory has already: nothing for a person to review.
        return PurePosixPath(".history") / f"{name}-{stamp}.md"

    def changes(self) -> list[DraftedChange]:
        """What the draft would change, in the order first written; a document written back unchanged: not."""
        return [DraftedChange(self.prefix + rel, self._before[rel], after)
                for rel, after in self.written.items() if after != self._before[rel]]

    def _check_tree(self, rel: str) -> None:
        """Refuse a new document where a folder is, or under a document, as every real store does."""
        existing = self.scan(include_unindexed=True)
        if any(other.startswith(f"{rel}/") for other in existing):
            raise is_a_folder(rel)
        clash = tree_clash([*existing, rel])
        if clash is not None:
            raise clash

    def _record(self, rel: str, old: bytes | None, new: bytes | None) -> None:
        self._before.setdefault(rel, old)
        self.written[rel] = new


class Draft:
    """The writes drafted by :func:`drafting`: a :class:`DraftStore` per real store, and the redactions."""

    def __init__(self) -> None:
        self._stores: dict[int, DraftStore] = {}
        self.redacted: Counter[str] = Counter()
        """How many spans each redaction label replaced in the text the drafted writes brought in."""

    def over(self, store: DocumentStore) -> DraftStore:
        """The draft of ``store`` (the same one for every write of this draft)."""
        if isinstance(store, DraftStore):
            return store
        found = self._stores.get(id(store))
        if found is None or found.real is not store:
            found = self._stores[id(store)] = DraftStore(store)
        return found

    @property
    def changes(self) -> list[DraftedChange]:
        """Every document the drafted writes would change, store by store, in the order first written."""
        return [change for store in self._stores.values() for change in store.changes()]


_ACTIVE: ContextVar[Draft | None] = ContextVar("langchain_md_memory_draft", default=None)


def active_draft() -> Draft | None:
    """The draft the writes of this context go to, or ``None``: they are written."""
    return _ACTIVE.get()


@contextlib.contextmanager
def drafting() -> Iterator[Draft]:
    """Draft, do not write, every memory write made in this context until the block ends."""
    draft = Draft()
    token = _ACTIVE.set(draft)
    try:
        yield draft
    finally:
        _ACTIVE.reset(token)
