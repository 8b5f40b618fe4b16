"""The Markdown operations of a memory: read, append, edit, delete, write, update, remove, list.

Every write goes through one guard (only Markdown memory files, within the size
limits, never a subfolder of a flat memory) and marks the index for a sync.
:class:`~langchain_md_memory.core.MemoryCore` has these methods; they are here so
each module stays one concern.

Example:
    .. code-block:: python

        mem.append("- Prefers ETFs")
        with mem.locked():
            if "ETFs" in mem.get("MEMORY.md"):
                mem.edit("ETFs", "index funds")
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from .config import MemoryConfig
from .errors import MemoryInputError, MemoryPathError
from .files.paths import is_managed_file, is_memory_file
from .files.store import MarkdownStore

__all__ = ["DocumentMethods"]


class DocumentMethods:
    """Markdown file operations over ``self.store``; ``mark_changed`` tells the index."""

    store: MarkdownStore
    config: MemoryConfig

    def mark_changed(self) -> None:
        """Note that the Markdown changed (the memory marks its index for a sync)."""

    def get(self, path: str, start_line: int | None = None, end_line: int | None = None) -> str:
        """Exact lines of a memory file (1-based, inclusive); the whole file by default.

        Only the memory's Markdown is readable (the same rule as writes): never the index, a lock,
        or any other file that happens to sit in the folder.
        """
        rel = self.store.relpath(path)
        if not is_memory_file(rel):
            raise MemoryPathError(
                f"Only Markdown memory files can be read: {path!r} is not a '.md' memory file. "
                "Search first, then read a path a hit gave (e.g. 'MEMORY.md')."
            )
        self._check_flat(rel)
        return self.store.read_lines(rel, start_line, end_line)

    def append(self, content: str, file: str = "long_term") -> str:
        """Append ``content`` to a memory file; returns the file's relative path."""
        path = self._writable(file)
        if not content or not content.strip():
            raise MemoryInputError("content is empty: give the text to remember")
        self._check_size(content)
        self.store.append(path, content)
        self.mark_changed()
        return path

    def edit(self, old_text: str, new_text: str, file: str = "long_term") -> bool:
        """Replace the first exact occurrence of ``old_text``; False when absent."""
        self._check_size(new_text)
        return self._changed(self.store.edit(self._writable(file), old_text, new_text))

    def delete(self, text: str, file: str = "long_term") -> bool:
        """Remove the first exact occurrence of ``text``; False when absent."""
        return self._changed(self.store.delete(self._writable(file), text))

    def replace_lines(self, file: str, start_line: int, end_line: int, new_text: str) -> str:
        """Replace lines ``start_line..end_line`` (1-based, inclusive) by ``new_text``; returns the old lines.

        For lines that ``old_text`` cannot match (e.g. bytes that are not UTF-8); ``""`` deletes them.
        """
        self._check_size(new_text)
        old = self.store.replace_lines(self._writable(file), start_line, end_line, new_text)
        self.mark_changed()
        return old

    def write(self, file: str, content: str) -> str:
        """Replace a memory file's whole content atomically; returns its relative path."""
        path = self._writable(file)
        self._check_size(content)
        self.store.write(path, content)
        self.mark_changed()
        return path

    def update(self, file: str, fn: Callable[[str | None], str | None]) -> bool:
        """Read-modify-write one memory file under the lock; True when it was written.

        ``fn`` gets the current text (``None`` when the file does not exist) and
        returns the new text, or ``None`` to leave it. Hidden unindexed files
        (``.<name>.unindexed.md``) may be updated too.
        """
        return self._changed(self.store.update(self._writable(file, hidden=True), fn))

    def remove(self, file: str) -> bool:
        """Delete a memory file; False when it does not exist."""
        return self._changed(self.store.remove(self._writable(file, hidden=True)))

    def read_bytes(self, file: str) -> bytes:
        """A memory file's exact bytes (what a backup or an archive keeps)."""
        return self.store.read_bytes(file)

    def exists(self, file: str) -> bool:
        """True when ``file`` is an existing file of this memory (a refused path raises)."""
        return self.store.exists(file)

    def stat(self, file: str) -> tuple[int, int] | None:
        """``(mtime_ns, size)`` of a memory file, or ``None`` when it does not exist."""
        return self.store.stat(file)

    def list_files(self, *, include_unindexed: bool = False) -> list[str]:
        """Memory files as sorted relative POSIX paths (``include_unindexed``: hidden store files too)."""
        return self.store.list_files(include_unindexed=include_unindexed)

    def locked(self) -> contextlib.AbstractContextManager[None]:
        """The cross-process write lock every writer takes, for a read-check-write of your own.

        Re-entrant within a thread: the write methods above may be called inside it.
        """
        return self.store.locked()

    def _check_size(self, text: str) -> None:
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > self.config.max_write_bytes:
            raise MemoryInputError(
                f"content is {size} bytes, over max_write_bytes={self.config.max_write_bytes}: "
                "write a shorter summary of what to remember"
            )

    def _changed(self, changed: bool) -> bool:
        if changed:
            self.mark_changed()
        return changed

    def _writable(self, file: str, *, hidden: bool = False) -> str:
        path = self.store.relpath(file)
        allowed = is_memory_file(path) if hidden else is_managed_file(path)
        if not allowed:
            raise MemoryPathError(
                f"Only Markdown memory files can be written: {file!r} is not a visible '.md' file. "
                "Use 'long_term', 'daily' or a relative path such as 'goals.md'."
            )
        self._check_flat(path)
        return path

    def _check_flat(self, path: str) -> None:
        # The global memory's subfolders are other projects' memories: never reach them through it.
        if not self.store.recursive and "/" in self.store.relpath(path):
            raise MemoryPathError(
                f"{path!r} is in a subfolder; this memory holds only top-level files such as 'MEMORY.md'"
            )
