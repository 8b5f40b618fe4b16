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
from collections.abc import Iterable, Iterator
from pathlib import Path

from filelock import FileLock, Timeout

from ..errors import MemoryStoreError
from .atomic import current_umask
from .base import Change, DocumentStore
from .gitignore import write_gitignore
from .history import save_version
from .locks import LockFile
from .paths import is_managed_file, is_memory_file, resolve_alias, resolve_memory_path
from .safe_open import is_regular_beneath, read_stamped_beneath, remove_beneath, replace_beneath
from .scan import folder_stamps, scan_folder, sweep_temp_files
from .tree import is_a_folder

__all__ = ["LOCK_FILE", "MarkdownStore"]

logger = logging.getLogger(__name__)

LOCK_FILE = ".md-memory.lock"
"""Hidden file in the memory directory that serialises every read-modify-write."""

_LOCK_TIMEOUT_S = 60.0


class MarkdownStore(DocumentStore):
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

    # -- paths and stamps -----------------------------------------------------------

    def resolve(self, path: str) -> Path:
        """Absolute path of ``path`` (aliases allowed) inside the root; the one guard."""
        return resolve_memory_path(self.root, self.relpath(path))

    def exists(self, path: str) -> bool:
        """True when ``path`` names an existing regular file.

        Not the base's ``stat(path) is not None``: a special file would then read as absent, and
        a write would replace it.

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

    def scan(self, *, include_unindexed: bool = False, folders: dict[str, int] | None = None,
             refused: dict[str, str] | None = None) -> dict[str, tuple[int, int]]:
        """Every managed file with its ``(mtime_ns, size)``, from one directory walk.

        Only symlinks pay for the full guard (``realpath``): a regular file met
        while walking the real tree under root is inside it by construction.
        Hidden entries, the index, temp files, non-Markdown files and symlinks
        leading outside the root are skipped; unreadable entries never raise.
        ``include_unindexed`` adds the hidden ``.<name>.unindexed.md`` files
        (memory that search must not see, but an archive must keep).
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

    # -- reading and writing bytes ----------------------------------------------------

    def read_stamped(self, path: str, *, max_bytes: int) -> tuple[tuple[int, int], bytes | None] | None:
        """``((mtime_ns, size), bytes)`` of the file through one guarded open; ``None`` when it is absent.

        The stamp belongs to the very version read. Over ``max_bytes`` the bytes are ``None``.
        Only a regular file is read, never through a symlink swapped in after the guard.

        Raises:
            MemoryPathError: when the path is refused or is not a regular file.
            MemoryStoreError: when it cannot be read.
        """
        return read_stamped_beneath(self.root, resolve_alias(path), max_bytes=max_bytes)

    def rewrite(self, path: str, change: Change) -> bool:
        """Replace the file by ``change`` of its bytes under the folder's lock; True when it was written.

        The new bytes go to a hidden temp file swapped in with ``os.replace`` (the file keeps its
        permission bits; its folders are created as needed), so a crash or a full disk never
        leaves half a file. ``change`` runs once.

        Raises:
            MemoryPathError: a refused path, a folder or a special file in its place.
            MemoryStoreError: the lock was not had within a minute, or the file could not be written
                (the previous content is unchanged).
        """
        with self._locked():
            rel = self._writable(path)
            if isinstance(change, bytes):
                new: bytes | None = change
            else:
                new = change(self.read_bytes(rel) if self.exists(rel) else None)
            if new is None:
                return False
            try:
                replace_beneath(self.root, rel, new, default_mode=0o666 & ~current_umask())
            except OSError as exc:
                raise MemoryStoreError(
                    f"Could not write memory file {rel!r} ({exc.strerror or exc}); "
                    "the previous content is unchanged"
                ) from exc
            return True

    def remove(self, path: str) -> bool:
        """Delete a memory file under the write lock; False when it does not exist."""
        with self._locked():
            return remove_beneath(self.root, self.relpath(path))

    def sweep_temp_files(self, max_age_s: float = 3600.0) -> int:
        """Delete temp files of atomic writes older than ``max_age_s``; returns how many.

        A writer killed between creating its temp file and the rename leaves
        ``.<name>.<random>.tmp`` behind. It is never read as memory, but it
        would pile up; a live writer's temp file is seconds old, never an hour.
        """
        return sweep_temp_files(self.root, max_age_s)

    # -- locks and versions -----------------------------------------------------------

    def locked(self) -> contextlib.AbstractContextManager[None]:
        """The store's cross-process write lock, for a read-check-write cycle of your own.

        It is re-entrant within a thread, so store writes inside it are fine.
        """
        return self._locked()

    def job_lock(self, name: str) -> LockFile:
        """A lock file ``name`` in the folder, taken without waiting (dream's ``.dream.lock``)."""
        return LockFile(self.root / name)

    def keep_version(self, name: str, data: bytes, stamp: str, keep: int) -> Path:
        """Keep ``data`` as ``.history/<name>-<stamp>.md``; the newest ``keep`` of ``name`` stay."""
        return save_version(self.root, name, data, stamp, keep)

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
