"""The document-store seam: what the rest of the package needs from wherever the Markdown lives.

A backend implements a few byte-level primitives: :meth:`~DocumentStore.scan`,
:meth:`~DocumentStore.stat`, :meth:`~DocumentStore.read_stamped`, one atomic
:meth:`~DocumentStore.rewrite` of a document's bytes, :meth:`~DocumentStore.remove`,
its locks and :meth:`~DocumentStore.keep_version`. Every text operation (read,
write, append, edit, delete, update, replace or insert lines) is written once
here, over them, so a folder (:class:`~langchain_md_memory.files.store.MarkdownStore`)
and PostgreSQL rows holding each file's exact Markdown behave alike; nothing
above this seam knows which one it runs on.

Example:
    .. code-block:: python

        from langchain_md_memory.files.base import DocumentStore
        from langchain_md_memory.files.store import MarkdownStore

        store: DocumentStore = MarkdownStore("memory")
        store.append("MEMORY.md", "- Prefers index funds")
        stamp = store.stat("MEMORY.md")  # (mtime_ns, size): changes with every write
"""

from __future__ import annotations

import abc
import contextlib
import sys
from collections.abc import Callable
from pathlib import PurePath
from typing import Any, Protocol

from ..errors import MemoryPathError, MemoryStoreError
from .edits import (
    appended,
    check_needle,
    clean_text,
    cut,
    decode_lf,
    encode_lf,
    inserted_lines,
    line_slice,
    replace_first,
    replaced_lines,
)
from .facts import whole_fact
from .paths import check_relpath

__all__ = ["Change", "ChangeStamp", "DocumentStore", "JobLock", "StateStore"]

ChangeStamp = tuple[int, int]
"""What changes whenever a document changes (a folder's ``(mtime_ns, size)``, a row's revision)."""

Change = Callable[[bytes | None], bytes | None] | bytes
"""What :meth:`DocumentStore.rewrite` writes: a function of the old bytes (``None``: no such
document) giving the new ones (``None``: leave it as it is), or the new bytes themselves when the
old ones do not matter (a backend then need not read them)."""

# read_bytes without a limit: no document is this long.
_ANY_SIZE = sys.maxsize


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


class DocumentStore(abc.ABC):
    """Markdown documents by relative POSIX path: read, write atomically, update under a lock, list.

    Paths are relative (``"MEMORY.md"``, ``"sessions/x.md"``) or the aliases ``long_term`` and
    ``daily``. Line numbers are 1-based; only ``"\\n"`` ends a line and ``"\\r\\n"`` reads as
    ``"\\n"`` (a document written with CRLF throughout stays so when changed). Bytes that are
    not UTF-8 read as U+FFFD; the byte-level changes (append, replace or insert lines) keep them.

    A backend implements the abstract methods; every other one is built on them here, once.
    """

    recursive: bool = True
    """Whether documents in subfolders belong to this memory."""

    max_path_depth: int = 16
    """How many folders deep a document may be (see :meth:`relpath`)."""

    max_name_bytes: int = 255
    """The longest name of a document or folder, in bytes of UTF-8."""

    # -- what a backend implements --------------------------------------------------

    @abc.abstractmethod
    def scan(self, *, include_unindexed: bool = False) -> dict[str, ChangeStamp]:
        """Every document with its change stamp, in one pass."""

    @abc.abstractmethod
    def stat(self, path: str) -> ChangeStamp | None:
        """The document's change stamp, or ``None`` when it does not exist."""

    @abc.abstractmethod
    def read_stamped(self, path: str, *, max_bytes: int) -> tuple[ChangeStamp, bytes | None] | None:
        """The document's stamp and exact bytes, of one version (``None`` bytes over ``max_bytes``).

        ``None`` when the document does not exist. What a sync reads: the stamp it records is
        the one of the bytes it indexed.
        """

    @abc.abstractmethod
    def rewrite(self, path: str, change: Change) -> bool:
        """Replace one document's bytes by ``change`` of them, atomically; True when it was written.

        Nobody writes the document between the read of the old bytes and the write of the new
        ones, and a reader sees the old document or the new one, never a part. ``change`` may run
        more than once (a backend that lost a race reads again); it may raise to refuse, and
        nothing is written then. A refused path, or a folder where the document would be, raises.
        """

    @abc.abstractmethod
    def remove(self, path: str) -> bool:
        """Delete the document; False when it does not exist."""

    @abc.abstractmethod
    def locked(self) -> contextlib.AbstractContextManager[None]:
        """The lock every writer takes, re-entrant within a thread."""

    @abc.abstractmethod
    def job_lock(self, name: str) -> JobLock:
        """The exclusive lock of one job of this memory (``name``: e.g. ``.dream.lock``)."""

    @abc.abstractmethod
    def keep_version(self, name: str, data: bytes, stamp: str, keep: int) -> PurePath:
        """Keep ``data`` as ``.history/<name>-<stamp>.md`` (hidden; the newest ``keep`` stay); returns it."""

    # -- paths and listing ------------------------------------------------------------

    def relpath(self, path: str) -> str:
        """``path`` with aliases resolved, as a normalised POSIX relative path within the limits.

        Raises:
            MemoryPathError: malformed, or deeper than ``max_path_depth`` folders, or a name over
                ``max_name_bytes`` bytes.
        """
        return check_relpath(path, max_path_depth=self.max_path_depth, max_name_bytes=self.max_name_bytes)

    def exists(self, path: str) -> bool:
        """True when the document exists (a refused path raises)."""
        return self.stat(path) is not None

    def list_files(self, *, include_unindexed: bool = False) -> list[str]:
        """Every document's path, sorted (``include_unindexed``: the hidden ``.<name>.unindexed.md`` too)."""
        return sorted(self.scan(include_unindexed=include_unindexed))

    def transaction(self) -> contextlib.AbstractContextManager[object]:
        """One transaction around several writes, where the backend has them: all are kept, or none.

        Here none (a no-op): each write is atomic on its own, as in a folder.
        """
        return contextlib.nullcontext()

    # -- reading ----------------------------------------------------------------------

    def read_bytes(self, path: str, *, max_bytes: int | None = None) -> bytes:
        """The document's exact bytes (no decoding, line endings as stored).

        Raises:
            MemoryPathError: when the path is refused or the document does not exist.
            MemoryStoreError: when it is over ``max_bytes`` or cannot be read.
        """
        found = self.read_stamped(path, max_bytes=_ANY_SIZE if max_bytes is None else max_bytes)
        if found is None:
            raise _missing(self.relpath(path))
        (_, size), data = found
        if data is None:
            raise MemoryStoreError(
                f"Memory file {self.relpath(path)!r} is {size} bytes, over the {max_bytes} allowed"
            )
        return data

    def read(self, path: str) -> str:
        """The document's text, invalid UTF-8 shown as U+FFFD and CRLF read as LF.

        Raises:
            MemoryPathError: when the path is refused or the document does not exist.
        """
        return decode_lf(self.read_bytes(path), "replace")[0]

    def read_lines(self, path: str, start_line: int | None = None, end_line: int | None = None) -> str:
        """Lines ``start_line..end_line`` (1-based, inclusive) with their newlines.

        ``None`` means the first / last line; an ``end_line`` past the end of the
        document is clamped, a ``start_line`` past it gives ``""``.

        Raises:
            MemoryPathError: for a refused or missing document, ``start_line < 1``
                or ``end_line < start_line`` (it is also a ``ValueError``).
        """
        return line_slice(self.read(path), start_line, end_line, path)

    # -- writing ----------------------------------------------------------------------

    def write(self, path: str, content: str) -> None:
        """Replace the whole document, atomically (creating it; CRLF kept for a CRLF document)."""
        text = clean_text(content)

        def change(old: bytes | None) -> bytes:
            crlf = old is not None and decode_lf(old, "surrogateescape")[1]
            return encode_lf(text, crlf)

        self.rewrite(path, change)

    def write_bytes(self, path: str, data: bytes) -> None:
        """Replace the whole document with exactly ``data``, atomically (migrate, pull and push)."""
        self.rewrite(path, data)

    def append(self, path: str, content: str) -> None:
        """Append ``content`` as a new line (or lines) at the end of the document.

        A line break is added before it only when the document does not already end
        with one, and after it when ``content`` lacks one. The existing bytes are
        kept exactly (a document mixing CRLF and LF lines keeps both); the new lines
        take its last line ending. Empty content is a no-op.
        """
        if content:
            self.rewrite(path, lambda old: appended(old or b"", content))

    def edit(self, path: str, old_text: str, new_text: str) -> bool:
        """Replace the one exact occurrence of ``old_text``; False when absent or no document.

        Raises:
            MemoryInputError: when ``old_text`` is empty or only whitespace, or occurs more than once.
        """
        check_needle(old_text, "replace")
        replacement = clean_text(new_text)
        return self._change_first(path, old_text, lambda text, at, end: text[:at] + replacement + text[end:])

    def delete_text(self, path: str, text: str) -> bool:
        """Remove the one exact occurrence of ``text``; False when absent or no document.

        When ``text`` is whole lines, its line goes with it; a run of three or
        more newlines left at the cut becomes one blank line. A line left holding
        only the fact's ``<!-- src: ... -->`` or ``<!-- expires: ... -->`` comments
        goes too (see :func:`~.facts.whole_fact`).

        Raises:
            MemoryInputError: when ``text`` is empty or only whitespace, or occurs more than once.
        """
        check_needle(text, "delete")
        return self._change_first(path, text,
                                  lambda content, at, end: cut(content, *whole_fact(content, at, end)))

    def update(self, path: str, fn: Callable[[str | None], str | None]) -> bool:
        """Read-modify-write one document; True when it was written.

        ``fn`` gets the current text (``None`` when the document does not exist) and
        returns the new text, or ``None`` to leave it as it is. Nobody writes between
        the read and the write, so concurrent updaters never lose each other's changes;
        ``fn`` may run again when another writer won the race. Invalid UTF-8 in the old
        text reaches ``fn`` as U+FFFD.

        Example:
            .. code-block:: python

                store.update("counter.md", lambda old: str(int(old or "0") + 1))
        """

        def change(old: bytes | None) -> bytes | None:
            current, crlf = (None, False) if old is None else decode_lf(old, "replace")
            new = fn(current)
            if new is None or new == current:
                return None
            return encode_lf(clean_text(new), crlf)

        return self.rewrite(path, change)

    def replace_lines(self, path: str, start_line: int, end_line: int, new_text: str) -> str:
        """Replace lines ``start_line..end_line`` (1-based, inclusive) by ``new_text``; returns the old lines.

        Addresses lines by number, so a line holding bytes that are not UTF-8 (shown as U+FFFD and so
        never matched by ``old_text``) can still be corrected or removed. ``new_text=""`` deletes them.

        Raises:
            MemoryPathError: no such document, or the range is outside it.
        """
        rel = self.relpath(path)
        old_lines: list[str] = []

        def change(old: bytes | None) -> bytes:
            if old is None:
                raise _missing(rel)
            data, before = replaced_lines(old, start_line, end_line, new_text, rel)
            old_lines[:] = [before]
            return data

        self.rewrite(rel, change)
        return old_lines[0]

    def insert_lines(self, path: str, after_line: int, new_text: str) -> None:
        """Insert ``new_text`` as whole lines after line ``after_line`` (0: at the top).

        Every byte of the document around them stays as it is (see
        :func:`~langchain_md_memory.files.edits.inserted_lines`).

        Raises:
            MemoryPathError: no such document, or ``after_line`` is not one of its lines (nor 0).
        """
        rel = self.relpath(path)

        def change(old: bytes | None) -> bytes:
            if old is None:
                raise _missing(rel)
            return inserted_lines(old, after_line, new_text, rel)

        self.rewrite(rel, change)

    def _change_first(self, path: str, needle: str, change: Callable[[str, int, int], str]) -> bool:
        """Rewrite the document around the one occurrence of ``needle``; False when absent or no document."""
        wanted = clean_text(needle)
        rel = self.relpath(path)

        def rewrite(old: bytes | None) -> bytes | None:
            if old is None:
                return None
            content, crlf = decode_lf(old, "surrogateescape")
            new = replace_first(content, wanted, change, rel)
            return None if new is None else encode_lf(new, crlf)

        return self.rewrite(rel, rewrite)


class StateStore(Protocol):
    """Durable key-value bookkeeping of one memory (dream's), kept when the index is rebuilt."""

    def get(self, key: str, default: Any = None) -> Any:
        """The value stored under ``key``, or ``default``."""
        ...

    def set(self, key: str, value: Any) -> None:
        """Store ``value`` (JSON-serialisable) under ``key``."""
        ...


def _missing(rel: str) -> MemoryPathError:
    return MemoryPathError(f"Memory file {rel!r} does not exist")
