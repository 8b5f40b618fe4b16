"""The Markdown files of a memory: guarded, atomic, lock-serialised reads and writes.

Every path goes through :func:`paths.resolve_memory_path`; every change is a
read-modify-write under one cross-process file lock, written to a hidden temp
file and swapped in with ``os.replace``, so a crash or a full disk never leaves
half a file, and concurrent writers never lose each other's lines.

Example:
    .. code-block:: python

        from langchain_md_memory.files.store import MarkdownStore

        store = MarkdownStore(tmp_path)
        store.append("long_term", "- Prefers index funds")
        assert store.edit("long_term", "index funds", "ETFs")
        assert store.read("MEMORY.md") == "- Prefers ETFs\\n"
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat as stat_module
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from filelock import FileLock, Timeout

from ..errors import MemoryStoreError
from .atomic import current_umask
from .edits import (
    appended,
    check_needle,
    clean_text,
    cut,
    decode_lf,
    encode_lf,
    line_slice,
    replace_first,
    replaced_lines,
)
from .gitignore import write_gitignore
from .history import save_version
from .locks import LockFile
from .paths import (
    check_relpath,
    is_managed_file,
    is_memory_file,
    resolve_alias,
    resolve_memory_path,
)
from .safe_open import is_regular_beneath, read_beneath, read_stamped_beneath, remove_beneath, replace_beneath
from .scan import folder_stamps, scan_folder, sweep_temp_files
from .tree import is_a_folder

__all__ = ["LOCK_FILE", "MarkdownStore"]

logger = logging.getLogger(__name__)

LOCK_FILE = ".md-memory.lock"
"""Hidden file in the memory directory that serialises every read-modify-write."""

_LOCK_TIMEOUT_S = 60.0



class MarkdownStore:
    """Reads and writes the Markdown files under one memory directory.

    Paths are relative (``"MEMORY.md"``, ``"sessions/x.md"``) or the aliases
    ``long_term`` and ``daily``; anything that could leave the directory raises
    :class:`MemoryPathError`. Line numbers are 1-based; only ``"\\n"`` ends a
    line and ``"\\r\\n"`` reads as ``"\\n"`` (CRLF files stay CRLF when changed).

    Example:
        .. code-block:: python

            store = MarkdownStore("./memory")
            store.write("goals.md", "# Goals\\n\\nRetire at 55.\\n")
            assert store.read_lines("goals.md", 3, 3) == "Retire at 55.\\n"
            assert store.list_files() == ["goals.md"]
    """

    def __init__(self, root: str | os.PathLike[str], *, recursive: bool = True, max_path_depth: int = 16,
                 max_name_bytes: int = 255) -> None:
        """Open (creating, with parents) the memory directory ``root``.

        ``recursive=False`` lists only root-level files (the global memory,
        whose subfolders are other memories). A folder created here gets a
        ``.gitignore`` for the index and lock files (see :mod:`.gitignore`).
        """
        path = Path(root).expanduser()
        try:
            path.mkdir(parents=True)
        except FileExistsError:
            pass
        except OSError as exc:
            raise MemoryStoreError(f"Cannot create the memory directory {str(path)!r}: {exc}") from exc
        else:
            write_gitignore(path)
        if not path.is_dir():
            raise MemoryStoreError(f"The memory directory {str(path)!r} is not a directory")
        self.root: Path = path.resolve()
        self.recursive = recursive
        self.max_path_depth = max_path_depth
        self.max_name_bytes = max_name_bytes
        self._lock = FileLock(str(self.root / LOCK_FILE), timeout=_LOCK_TIMEOUT_S)

    # -- paths ----------------------------------------------------------------------

    def resolve(self, path: str) -> Path:
        """Absolute path of ``path`` (aliases allowed) inside the root; the one guard."""
        return resolve_memory_path(self.root, self.relpath(path))

    def relpath(self, path: str) -> str:
        """``path`` with aliases resolved, as a normalised POSIX relative path within the limits.

        Raises:
            MemoryPathError: malformed, or deeper than ``max_path_depth`` folders, or a name over
                ``max_name_bytes`` bytes.
        """
        return check_relpath(path, max_path_depth=self.max_path_depth, max_name_bytes=self.max_name_bytes)

    def exists(self, path: str) -> bool:
        """True when ``path`` names an existing regular file.

        Raises:
            MemoryPathError: for a refused path, or a FIFO, socket or device in its place.
        """
        return is_regular_beneath(self.root, resolve_alias(path))

    def stat(self, path: str) -> tuple[int, int] | None:
        """``(mtime_ns, size)`` of the file, or ``None`` when it does not exist."""
        try:
            st = os.stat(self.resolve(path))
        except OSError:
            return None
        if not stat_module.S_ISREG(st.st_mode):
            return None
        return st.st_mtime_ns, st.st_size

    # -- reading --------------------------------------------------------------------

    def read(self, path: str) -> str:
        """The file's text, invalid UTF-8 shown as U+FFFD and CRLF read as LF.

        Raises:
            MemoryPathError: when the path is refused or the file does not exist.
        """
        return self._load(path, errors="replace")[0]

    def read_bytes(self, path: str, *, max_bytes: int | None = None) -> bytes:
        """The file's exact bytes (no decoding, line endings as stored).

        Only a regular file is read, never through a symlink swapped in after the guard.

        Raises:
            MemoryPathError: when the path is refused, the file does not exist or is not a regular file.
            MemoryStoreError: when it is over ``max_bytes`` or cannot be read.
        """
        return read_beneath(self.root, resolve_alias(path), max_bytes=max_bytes)

    def read_stamped(self, path: str, *, max_bytes: int) -> tuple[tuple[int, int], bytes | None] | None:
        """``((mtime_ns, size), bytes)`` of the file through one guarded open; ``None`` when it is absent.

        The stamp belongs to the very version read. Over ``max_bytes`` the bytes are ``None``.

        Raises:
            MemoryPathError: when the path is refused or is not a regular file.
            MemoryStoreError: when it cannot be read.
        """
        return read_stamped_beneath(self.root, resolve_alias(path), max_bytes=max_bytes)

    def read_lines(self, path: str, start_line: int | None = None, end_line: int | None = None) -> str:
        """Lines ``start_line..end_line`` (1-based, inclusive) with their newlines.

        ``None`` means the first / last line; an ``end_line`` past the end of the
        file is clamped, a ``start_line`` past it gives ``""``.

        Raises:
            MemoryPathError: for a refused or missing file, ``start_line < 1``
                or ``end_line < start_line`` (it is also a ``ValueError``).
        """
        return line_slice(self.read(path), start_line, end_line, path)

    def list_files(self, *, include_unindexed: bool = False) -> list[str]:
        """Managed Markdown files as sorted relative POSIX paths, subfolders included.

        Hidden entries, the index, temp files, non-Markdown files and symlinks
        leading outside the root are skipped; unreadable entries never raise.
        ``include_unindexed`` adds the hidden ``.<name>.unindexed.md`` files
        (memory that search must not see, but an archive must keep).
        """
        return sorted(self.scan(include_unindexed=include_unindexed))

    def scan(self, *, include_unindexed: bool = False, folders: dict[str, int] | None = None,
             refused: dict[str, str] | None = None) -> dict[str, tuple[int, int]]:
        """Every managed file with its ``(mtime_ns, size)``, from one directory walk.

        Only symlinks pay for the full guard (``realpath``): a regular file met
        while walking the real tree under root is inside it by construction.
        ``folders``, when given, receives the ``mtime_ns`` of every folder walked;
        ``refused``, the Markdown files whose names the path guard refuses, with why.
        """
        wanted = is_memory_file if include_unindexed else is_managed_file
        depth = self.max_path_depth if self.recursive else 0
        return scan_folder(self.root, wanted, max_depth=depth, resolve=self.resolve, folders=folders,
                           refused=refused)

    def folder_stamps(self, folders: Iterable[str]) -> dict[str, int]:
        """``mtime_ns`` of these folders (as :meth:`scan` named them): one ``stat`` each.

        Any file created, removed or renamed in a folder (every write of this package
        renames a temp file into place) moves its mtime; an edit made in place does not.
        """
        return folder_stamps(self.root, folders)

    # -- writing --------------------------------------------------------------------

    def write(self, path: str, content: str) -> None:
        """Replace the file's whole content atomically (creating it and its folders)."""
        with self._locked():
            rel = self._writable(path)
            crlf = self.exists(rel) and self._load(rel, errors="surrogateescape")[1]
            self._save(rel, clean_text(content), crlf)

    def write_bytes(self, path: str, data: bytes) -> None:
        """Replace the file with exactly ``data``, atomically (creating it and its folders)."""
        with self._locked():
            self._save_bytes(self._writable(path), data)

    def append(self, path: str, content: str) -> None:
        """Append ``content`` as a new line (or lines) at the end of the file.

        A line break is added before it only when the file does not already end
        with one, and after it when ``content`` lacks one. The existing bytes are
        kept exactly (a file mixing CRLF and LF lines keeps both); the new lines
        take the file's last line ending. Empty content is a no-op.
        """
        if not content:
            return
        with self._locked():
            rel = self._writable(path)
            old = self.read_bytes(rel) if self.exists(rel) else b""
            self._save_bytes(rel, appended(old, content))

    def edit(self, path: str, old_text: str, new_text: str) -> bool:
        """Replace the first exact occurrence of ``old_text``; False when absent or no file.

        Raises:
            MemoryInputError: when ``old_text`` is empty.
        """
        check_needle(old_text, "replace")
        replacement = clean_text(new_text)
        return self._change_first(path, old_text, lambda text, at, end: text[:at] + replacement + text[end:])

    def update(self, path: str, fn: Callable[[str | None], str | None]) -> bool:
        """Read-modify-write one file under the lock; True when it was written.

        ``fn`` gets the current text (``None`` when the file does not exist) and
        returns the new text, or ``None`` to leave the file as it is. The lock is
        held from the read to the write, so concurrent updaters never lose each
        other's changes. Invalid UTF-8 in the old text reaches ``fn`` as U+FFFD.

        Example:
            .. code-block:: python

                store.update("counter.md", lambda old: str(int(old or "0") + 1))
        """
        with self._locked():
            rel = self._writable(path)
            old, crlf = self._load(rel, errors="replace") if self.exists(rel) else (None, False)
            new = fn(old)
            if new is None or new == old:
                return False
            self._save(rel, clean_text(new), crlf)
            return True

    def delete(self, path: str, text: str) -> bool:
        """Remove the first exact occurrence of ``text``; False when absent or no file.

        When ``text`` is whole lines, its line goes with it; a run of three or
        more newlines left at the cut becomes one blank line.

        Raises:
            MemoryInputError: when ``text`` is empty.
        """
        check_needle(text, "delete")
        return self._change_first(path, text, cut)

    def replace_lines(self, path: str, start_line: int, end_line: int, new_text: str) -> str:
        """Replace lines ``start_line..end_line`` (1-based, inclusive) by ``new_text``; returns the old lines.

        Addresses lines by number, so a line holding bytes that are not UTF-8 (shown as U+FFFD and so
        never matched by ``old_text``) can still be corrected or removed. ``new_text=""`` deletes them.

        Raises:
            MemoryPathError: no such file, or the range is outside it.
        """
        with self._locked():
            rel = self._writable(path)
            data, old = replaced_lines(self.read_bytes(rel), start_line, end_line, new_text, rel)
            self._save_bytes(rel, data)
            return old

    def _change_first(self, path: str, needle: str, change: Callable[[str, int, int], str]) -> bool:
        """Rewrite the file around the first occurrence of ``needle``, under the lock."""
        wanted = clean_text(needle)
        with self._locked():
            rel = self._writable(path)
            if not self.exists(rel):
                return False
            content, crlf = self._load(rel, errors="surrogateescape")
            new = replace_first(content, wanted, change, rel)
            if new is None:
                return False
            self._save(rel, new, crlf)
            return True

    def sweep_temp_files(self, max_age_s: float = 3600.0) -> int:
        """Delete temp files of atomic writes older than ``max_age_s``; returns how many.

        A writer killed between creating its temp file and the rename leaves
        ``.<name>.<random>.tmp`` behind. It is never read as memory, but it
        would pile up; a live writer's temp file is seconds old, never an hour.
        """
        return sweep_temp_files(self.root, max_age_s)

    def remove(self, path: str) -> bool:
        """Delete a memory file under the write lock; False when it does not exist."""
        with self._locked():
            return remove_beneath(self.root, self.relpath(path))

    def job_lock(self, name: str) -> LockFile:
        """A lock file ``name`` in the folder, taken without waiting (dream's ``.dream.lock``)."""
        return LockFile(self.root / name)

    def keep_version(self, name: str, data: bytes, stamp: str, keep: int) -> Path:
        """Keep ``data`` as ``.history/<name>-<stamp>.md``; the newest ``keep`` of ``name`` stay."""
        return save_version(self.root, name, data, stamp, keep)

    def locked(self) -> contextlib.AbstractContextManager[None]:
        """The store's cross-process write lock, for a read-check-write cycle of your own.

        It is re-entrant within a thread, so store writes inside it are fine.
        """
        return self._locked()

    # -- internals ------------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        try:
            with self._lock:
                yield
        except Timeout as exc:
            raise MemoryStoreError(
                f"Timed out after {_LOCK_TIMEOUT_S:.0f}s waiting for the memory lock {exc.lock_file!r}; "
                "another process is writing, or remove a stale lock file"
            ) from exc

    def _writable(self, path: str) -> str:
        """The checked relative path of a file to write; a folder in its place is refused."""
        rel = self.relpath(path)
        if self.resolve(rel).is_dir():
            raise is_a_folder(rel)
        return rel

    def _load(self, path: str, *, errors: str) -> tuple[str, bool]:
        """The file's text with CRLF as LF, and whether it used CRLF throughout."""
        return decode_lf(self.read_bytes(path), errors)

    def _save(self, rel: str, text: str, crlf: bool) -> None:
        """Atomically replace the file with ``text``, keeping its permission bits."""
        self._save_bytes(rel, encode_lf(text, crlf))

    def _save_bytes(self, rel: str, data: bytes) -> None:
        try:
            replace_beneath(self.root, rel, data, default_mode=0o666 & ~current_umask())
        except OSError as exc:
            raise MemoryStoreError(
                f"Could not write memory file {rel!r} ({exc.strerror or exc}); "
                "the previous content is unchanged"
            ) from exc
