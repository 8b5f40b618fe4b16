"""The document-store seam: what the rest of the package needs from wherever the Markdown lives.

The default is :class:`~langchain_md_memory.files.store.MarkdownStore` (a folder
on disk). Another backend (e.g. PostgreSQL rows holding each file's exact
Markdown) implements the same methods; nothing above this seam knows which
one it runs on.

Example:
    .. code-block:: python

        from langchain_md_memory.files.base import DocumentStore
        from langchain_md_memory.files.store import MarkdownStore

        store: DocumentStore = MarkdownStore("memory")
        store.append("MEMORY.md", "- Prefers index funds")
        stamp = store.stat("MEMORY.md")  # (mtime_ns, size): changes with every write
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import PurePath
from typing import Any, Protocol

__all__ = ["ChangeStamp", "DocumentStore", "JobLock", "StateStore", "one_transaction"]

ChangeStamp = tuple[int, int]
"""What changes whenever a document changes (a folder's ``(mtime_ns, size)``, a row's revision)."""


class JobLock(Protocol):
    """An exclusive lock for one long job (dream), taken without waiting; not re-entrant."""

    def acquire(self) -> bool:
        """Take it now; False when anyone (this object included) holds it."""
        ...

    def release(self) -> None:
        """Give it back (a no-op when not held)."""
        ...

    def holder(self) -> object | None:
        """Who holds it, when known (printable)."""
        ...


class DocumentStore(Protocol):
    """Markdown documents by relative POSIX path: read, write atomically, update under a lock, list."""

    recursive: bool
    """Whether documents in subfolders belong to this memory."""

    def relpath(self, path: str) -> str:
        """``path`` (or an alias such as ``long_term``) checked and normalised; refused paths raise."""
        ...

    def exists(self, path: str) -> bool:
        """True when the document exists."""
        ...

    def stat(self, path: str) -> ChangeStamp | None:
        """The document's change stamp, or ``None`` when it does not exist."""
        ...

    def scan(self, *, include_unindexed: bool = False) -> dict[str, ChangeStamp]:
        """Every document with its change stamp, in one pass."""
        ...

    def list_files(self, *, include_unindexed: bool = False) -> list[str]:
        """Every document's path, sorted."""
        ...

    def read(self, path: str) -> str:
        """The document's text (LF line endings, invalid UTF-8 as U+FFFD)."""
        ...

    def read_bytes(self, path: str, *, max_bytes: int | None = None) -> bytes:
        """The document's exact bytes."""
        ...

    def read_stamped(self, path: str, *, max_bytes: int) -> tuple[ChangeStamp, bytes | None] | None:
        """The document's stamp and exact bytes, of one version (``None`` bytes over ``max_bytes``).

        ``None`` when the document does not exist. What a sync reads: the stamp it records is
        the one of the bytes it indexed.
        """
        ...

    def read_lines(self, path: str, start_line: int | None = None, end_line: int | None = None) -> str:
        """Lines ``start_line..end_line`` (1-based, inclusive) with their newlines."""
        ...

    def write(self, path: str, content: str) -> None:
        """Replace the whole document, atomically."""
        ...

    def write_bytes(self, path: str, data: bytes) -> None:
        """Replace the whole document with exactly ``data``, atomically (migrate, pull and push)."""
        ...

    def append(self, path: str, content: str) -> None:
        """Append ``content`` as new lines, atomically."""
        ...

    def edit(self, path: str, old_text: str, new_text: str) -> bool:
        """Replace the first exact occurrence of ``old_text``; False when absent."""
        ...

    def delete(self, path: str, text: str) -> bool:
        """Remove the first exact occurrence of ``text``; False when absent."""
        ...

    def update(self, path: str, fn: Callable[[str | None], str | None]) -> bool:
        """Read-modify-write under the lock (nobody writes between the read and the write)."""
        ...

    def replace_lines(self, path: str, start_line: int, end_line: int, new_text: str) -> str:
        """Replace lines ``start_line..end_line`` (1-based, inclusive) by ``new_text``; returns them."""
        ...

    def remove(self, path: str) -> bool:
        """Delete the document; False when it does not exist."""
        ...

    def locked(self) -> contextlib.AbstractContextManager[None]:
        """The lock every writer takes, re-entrant within a thread."""
        ...

    def job_lock(self, name: str) -> JobLock:
        """The exclusive lock of one job of this memory (``name``: e.g. ``.dream.lock``)."""
        ...

    def keep_version(self, name: str, data: bytes, stamp: str, keep: int) -> PurePath:
        """Keep ``data`` as ``.history/<name>-<stamp>.md`` (hidden; the newest ``keep`` stay); returns it."""
        ...


class StateStore(Protocol):
    """Durable key-value bookkeeping of one memory (dream's), kept when the index is rebuilt."""

    def get(self, key: str, default: Any = None) -> Any:
        """The value stored under ``key``, or ``default``."""
        ...

    def set(self, key: str, value: Any) -> None:
        """Store ``value`` (JSON-serialisable) under ``key``."""
        ...


def one_transaction(store: DocumentStore) -> contextlib.AbstractContextManager[object]:
    """The store's transaction when it has one (PostgreSQL): a refused write undoes the others.

    A folder has none (a no-op context): there each write is atomic on its own.
    """
    begin = getattr(store, "transaction", None)
    return begin() if callable(begin) else contextlib.nullcontext()
