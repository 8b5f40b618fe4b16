"""Move a memory between machines: a ``.tar.gz`` of its Markdown, and a guarded import.

The Markdown is the recoverable data; the index is derived, so the archive holds
the memory's ``.md`` files only (the managed ones and the hidden
``.<name>.unindexed.md`` files of items kept out of search): no index, lock,
temp, other hidden or non-Markdown files, no symlinks, nothing outside the
memory folder. Members are normalised
(owner 0, mode 0644, regular files) and the gzip header carries no timestamp,
so a round trip preserves every byte and equal memories give equal archives.

An import trusts nothing in the archive: every member is checked before a
single byte is written (names, types, sizes, counts) and the files are
extracted into a temp folder beside the target, so a refused or unreadable
archive leaves the disk as it was. Into an absent or empty target the tree then
moves in with one rename; into an existing memory (``overwrite=True``) each
file is replaced atomically under the memory's write lock.

Example:
    .. code-block:: python

        from langchain_md_memory import MarkdownMemory

        with MarkdownMemory("memory", embeddings="none") as mem:
            archive = mem.export_archive("backup/memory.tar.gz")
        restored = MarkdownMemory.import_archive(archive, "restored-memory", embeddings="none")
"""

from __future__ import annotations

import gzip
import io
import logging
import lzma
import os
import shutil
import stat
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ..files.atomic import atomic_output, current_umask
from ..files.gitignore import write_gitignore
from ..files.paths import STATE_FILE, is_memory_file, resolve_memory_path
from ..files.store import MarkdownStore
from ..types import ProgressCallback, ProgressEvent
from .unpacking import ArchiveError, checked_members, prescan, verify_staging

if TYPE_CHECKING:
    from ..memory import MarkdownMemory

__all__ = ["ARCHIVE_NAME", "ArchiveError", "ArchiveTargetNotEmptyError", "export_archive", "import_archive"]

logger = logging.getLogger(__name__)

ARCHIVE_NAME = "memory.tar.gz"
"""File name used when ``export_archive`` is given a folder."""

DEFAULT_MAX_BYTES = 256 * 1024 * 1024
DEFAULT_MAX_FILES = 20_000
DEFAULT_MAX_MEMBER_BYTES = 32 * 1024 * 1024

_FILE_MODE = 0o644


class ArchiveTargetNotEmptyError(ArchiveError):
    """The import target already holds memory files and ``overwrite`` was not given."""

    def __init__(self, target: Path, existing: list[str], how: str = "overwrite=True") -> None:
        self.target = target
        self.existing = existing
        super().__init__(f"{str(target)!r} already holds {len(existing)} memory file(s) (e.g. "
                         f"{existing[0]!r}); import with {how} to replace same-named files")


def export_archive(mem: MarkdownMemory, path: str | os.PathLike[str],
                   progress: ProgressCallback | None = None) -> Path:
    """Write the memory's Markdown files to a ``.tar.gz`` at ``path``; returns its absolute path.

    ``path`` may be an existing folder, which then receives ``memory.tar.gz``.
    The archive is written to a temp file and renamed into place. ``progress``
    receives ``export`` events (files written).

    Example:
        .. code-block:: python

            archive = export_archive(mem, tmp_path)
            assert archive.name == "memory.tar.gz"
    """
    target = Path(path).expanduser()
    if target.is_dir():
        target = target / ARCHIVE_NAME
    target = target.resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    files = list(_exportable(mem))
    # mtime=0: the gzip header would otherwise make two exports of the same memory differ.
    with (atomic_output(target) as raw,
          gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz,
          tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar):
        for done, (rel, data, mtime) in enumerate(files, 1):
            tar.addfile(_member(rel, len(data), mtime), io.BytesIO(data))
            if progress is not None:
                progress(ProgressEvent("export", done, len(files)))
    logger.info("exported %d files to %s", len(files), target)
    return target


def import_archive(
    path: str | os.PathLike[str],
    memory_dir: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_files: int = DEFAULT_MAX_FILES,
    max_member_bytes: int = DEFAULT_MAX_MEMBER_BYTES,
    progress: ProgressCallback | None = None,
) -> list[str]:
    """Unpack a memory archive into ``memory_dir``; returns the imported relative paths.

    Refuses, before writing anything: absolute names, ``..``, NUL or backslash
    in names, symlinks, hard links, devices, FIFOs, sparse files, non-Markdown
    or hidden members, duplicates, a member over ``max_member_bytes``, more than
    ``max_files`` files or ``max_bytes`` in all, and a ``memory_dir`` that
    already holds Markdown files unless ``overwrite`` (then same-named files are
    replaced, others kept). Directory entries are accepted and ignored.
    ``progress`` receives ``import`` events (files unpacked).

    Raises:
        ArchiveError: the archive was refused or unreadable; nothing was written (no folder made).
        ArchiveTargetNotEmptyError: ``memory_dir`` holds memory files and ``overwrite`` is False.

    Example:
        .. code-block:: python

            names = import_archive("memory.tar.gz", "restored")
            assert "MEMORY.md" in names
    """
    if not Path(path).is_file():
        raise ArchiveError(f"No archive file at {str(path)!r}")
    target = Path(memory_dir).expanduser().absolute()
    if target.exists() and not target.is_dir():
        raise ArchiveError(f"Import target {str(target)!r} exists and is not a folder")
    existing = _existing_memory_files(target)
    if existing and not overwrite:
        raise ArchiveTargetNotEmptyError(target, existing)
    made: list[Path] = []
    try:
        prescan(Path(path), max_bytes=max_bytes, max_files=max_files, max_member_bytes=max_member_bytes)
        with tarfile.open(Path(path), mode="r:*") as tar:
            members = checked_members(tar, max_bytes=max_bytes, max_files=max_files,
                                       max_member_bytes=max_member_bytes)
            made = _make_parents(target.parent)
            staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.import.", dir=target.parent))
            try:
                for done, member in enumerate(members.values(), 1):
                    # The "data" filter is a second guard behind our own checks, not the only one.
                    tar.extract(member, staging, filter="data")
                    if progress is not None:
                        progress(ProgressEvent("import", done, len(members)))
                verify_staging(staging, members)
                _move_in(staging, target, sorted(members))
            finally:
                shutil.rmtree(staging, ignore_errors=True)
    except BaseException as exc:
        _remove_empty(made)
        if isinstance(exc, ArchiveError) or not isinstance(exc, Exception):
            raise
        if isinstance(exc, tarfile.ReadError) and "could not be opened" in str(exc):
            # tarfile lists every compression it tried, one per line; say what that means.
            raise ArchiveError(f"Cannot read the archive {str(path)!r}: not a tar archive "
                               "(plain, gzip, bzip2 or xz)") from exc
        if isinstance(exc, tarfile.TarError | EOFError | gzip.BadGzipFile | lzma.LZMAError | ValueError):
            raise ArchiveError(f"Cannot read the archive {str(path)!r}: {exc}") from exc
        if isinstance(exc, OSError):
            raise ArchiveError(f"Import into {str(target)!r} failed ({exc}); nothing was imported") from exc
        raise
    logger.info("imported %d files into %s", len(members), target)
    return sorted(members)


# -- export -------------------------------------------------------------------------


def _exportable(mem: MarkdownMemory) -> Iterator[tuple[str, bytes, int]]:
    """``(relpath, bytes, mtime)`` of each memory file and the state file; symlinks are left out.

    A memory that is not a folder (PostgreSQL) gives its documents; its state stays in its database.
    """
    if not mem.in_folder:
        for rel in mem.list_files(include_unindexed=True):
            stamp = mem.stat(rel)
            yield rel, mem.read_bytes(rel), 0 if stamp is None else stamp[0] // 1_000_000_000
        return
    root = mem.memory_dir
    state = [STATE_FILE] if (root / STATE_FILE).is_file() else []
    for rel in [*mem.list_files(include_unindexed=True), *state]:
        candidate = root / rel
        try:
            inside = [p for p in [candidate, *candidate.parents] if root in p.parents]
            if any(p.is_symlink() for p in inside):
                logger.info("archive: skipping symlink %s", rel)
                continue
            fd = os.open(candidate, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError as exc:
            logger.warning("archive: skipping %s: %s", rel, exc)
            continue
        with os.fdopen(fd, "rb") as handle:
            st = os.fstat(handle.fileno())
            if not stat.S_ISREG(st.st_mode):
                continue
            yield rel, handle.read(), int(st.st_mtime)


def _member(name: str, size: int, mtime: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size = size
    info.mtime = mtime
    info.mode = _FILE_MODE
    info.type = tarfile.REGTYPE
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


# -- import -------------------------------------------------------------------------


def _make_parents(folder: Path) -> list[Path]:
    """Create ``folder`` and its missing parents; returns those created, deepest first."""
    missing = [p for p in [folder, *folder.parents] if not p.exists()]
    folder.mkdir(parents=True, exist_ok=True)
    return missing


def _remove_empty(folders: list[Path]) -> None:
    """Remove folders an import created, deepest first, as long as they are empty."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            return


def _move_in(staging: Path, target: Path, names: list[str]) -> None:
    mode = 0o777 & ~current_umask()
    for dirpath, dirnames, _ in os.walk(staging):
        for d in dirnames:
            os.chmod(Path(dirpath) / d, mode)
    if not target.exists() or (target.is_dir() and not any(target.iterdir())):
        os.chmod(staging, mode)
        if not target.exists():  # a memory folder this import creates, like any other new one
            write_gitignore(staging)
        # One rename moves the whole tree in: the target is either absent/empty or complete.
        os.replace(staging, target)
        return
    store = MarkdownStore(target)
    with store.locked():
        for rel in names:
            dest = resolve_memory_path(target, rel)  # a symlinked subfolder in the target cannot redirect us
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest = resolve_memory_path(target, rel)
            os.replace(staging / rel, dest)


def _existing_memory_files(target: Path) -> list[str]:
    if not target.is_dir():
        return []
    found = []
    for dirpath, dirnames, names in os.walk(target):
        dirnames[:] = [d for d in dirnames if not d.startswith((".", "~", "#"))]
        base = Path(dirpath).relative_to(target)
        found += [(base / n).as_posix() for n in names if is_memory_file((base / n).as_posix())]
    return sorted(found)

