"""A symlink-safe open beneath the memory folder: read, replace and remove, never through a symlink.

The path guard (:func:`~langchain_md_memory.files.paths.resolve_memory_path`)
resolves a path once; a folder swapped for a symlink after that check must not
redirect the read or the write. So every step is taken from an open directory
descriptor with ``O_NOFOLLOW``: a symlink met on the way is refused, not
followed. Only regular files are opened: a FIFO, socket or device is refused
at once, never waited on (``O_NONBLOCK``).

Example:
    .. code-block:: python

        stamp, data = read_stamped_beneath(Path("memory"), "MEMORY.md", max_bytes=10_000_000)
        replace_beneath(Path("memory"), "MEMORY.md", data + b"- new fact\\n", default_mode=0o644)
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path

from ..errors import MemoryPathError, MemoryStoreError
from .atomic import atomic_output
from .paths import normalize_relpath, resolve_memory_path
from .tree import is_a_folder, not_a_folder

__all__ = ["is_regular_beneath", "read_stamped_beneath", "remove_beneath", "replace_beneath"]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
# Walking by descriptors needs dir_fd support (POSIX); elsewhere the resolved path is opened directly.
_BY_DESCRIPTOR = os.open in os.supports_dir_fd and os.stat in os.supports_dir_fd


def _parts(root: Path, rel: str) -> tuple[Path, list[str]]:
    """The real root and the path's components below it, after the guard."""
    base = Path(os.path.realpath(root))
    target = resolve_memory_path(base, rel)
    return base, list(target.relative_to(base).parts)


@contextlib.contextmanager
def _folder(base: Path, folders: list[str], *, create: bool, rel: str) -> Iterator[int]:
    """A descriptor of ``base/folders``, each step opened with ``O_NOFOLLOW`` (created when asked)."""
    fd = os.open(base, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    try:
        for name in folders:
            try:
                step = os.open(name, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, dir_fd=fd)
                step = os.open(name, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=fd)
            except OSError as exc:
                raise not_a_folder(rel, name) from exc
            os.close(fd)
            fd = step
        yield fd
    finally:
        os.close(fd)


def _refuse_special(mode: int, rel: str) -> None:
    if stat.S_ISDIR(mode):
        raise is_a_folder(rel)
    if not stat.S_ISREG(mode):
        raise MemoryPathError(f"{rel!r} is not a regular file (a FIFO, socket or device): refused")


def _open_lexical(root: Path, parts: list[str]) -> int:
    """``root/parts`` opened step by step with ``O_NOFOLLOW``: no symlink is met, so it is inside root.

    Raises OSError (ELOOP, ENOTDIR) when a step is a symlink: the caller then takes the full guard.
    """
    fd = os.open(root, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    try:
        for name in parts[:-1]:
            step = os.open(name, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=fd)
            os.close(fd)
            fd = step
        return os.open(parts[-1], os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC, dir_fd=fd)
    finally:
        os.close(fd)


def _open_guarded(root: Path, rel: str) -> int:
    """A read descriptor of ``root/rel`` after the path guard (symlinks inside root are followed once)."""
    if _BY_DESCRIPTOR:
        # Most files have no symlink on their way: open them lexically, a guard in itself.
        with contextlib.suppress(OSError):
            return _open_lexical(root, normalize_relpath(rel).split("/"))
    base, parts = _parts(root, rel)
    if _BY_DESCRIPTOR:
        with _folder(base, parts[:-1], create=False, rel=rel) as folder:
            return os.open(parts[-1], os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC, dir_fd=folder)
    return os.open(base.joinpath(*parts), os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC)


def _open_regular(root: Path, rel: str) -> tuple[int, os.stat_result]:
    """A read descriptor of ``root/rel`` and its ``fstat``.

    Raises:
        MemoryPathError: missing, a directory, a special file, or reached through a symlink swapped in.
    """
    try:
        fd = _open_guarded(root, rel)
    except FileNotFoundError as exc:
        raise MemoryPathError(f"Memory file {rel!r} does not exist") from exc
    except IsADirectoryError as exc:
        raise is_a_folder(rel) from exc
    except MemoryPathError:
        raise
    except OSError as exc:
        if exc.errno in (errno.ENXIO, errno.EOPNOTSUPP):  # a socket or a device without a reader
            raise MemoryPathError(
                f"{rel!r} is not a regular file (a FIFO, socket or device): refused"
            ) from exc
        if exc.errno == errno.ELOOP:
            raise MemoryPathError(f"{rel!r} became a symlink after the path check: refused") from exc
        raise MemoryPathError(f"Cannot open {rel!r}: {exc.strerror or exc}") from exc
    try:
        info = os.fstat(fd)
        _refuse_special(info.st_mode, rel)
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def _read_fd(fd: int, rel: str) -> bytes:
    with os.fdopen(fd, "rb") as handle:
        try:
            return handle.read()
        except OSError as exc:
            raise MemoryStoreError(f"Cannot read {rel!r}: {exc.strerror or exc}") from exc


def read_stamped_beneath(root: Path, rel: str, *,
                         max_bytes: int) -> tuple[tuple[int, int], bytes | None] | None:
    """``((mtime_ns, size), bytes)`` of the regular file ``root/rel``, read through one open descriptor.

    The stamp is the ``fstat`` of the very file read; ``None`` when the file does not exist. Over
    ``max_bytes`` the bytes are ``None`` (nothing is read).

    Raises:
        MemoryPathError: a directory, a special file, or reached through a symlink swapped in.
        MemoryStoreError: unreadable.
    """
    try:
        fd, info = _open_regular(root, rel)
    except MemoryPathError as exc:
        if isinstance(exc.__cause__, FileNotFoundError):
            return None
        raise
    stamp = (info.st_mtime_ns, info.st_size)
    if info.st_size > max_bytes:
        os.close(fd)
        return stamp, None
    return stamp, _read_fd(fd, rel)


def is_regular_beneath(root: Path, rel: str) -> bool:
    """True when ``root/rel`` exists and is a regular file; a special file or a folder is refused."""
    base, parts = _parts(root, rel)
    try:
        if _BY_DESCRIPTOR:
            with _folder(base, parts[:-1], create=False, rel=rel) as folder:
                info = os.stat(parts[-1], dir_fd=folder, follow_symlinks=False)
        else:
            info = os.lstat(base.joinpath(*parts))
    except FileNotFoundError:
        return False
    except (NotADirectoryError, MemoryPathError):
        return False
    if stat.S_ISLNK(info.st_mode):  # a symlink the guard resolved inside root: check what it names
        return is_regular_beneath(base, os.path.relpath(os.path.realpath(base.joinpath(*parts)), base))
    _refuse_special(info.st_mode, rel)
    return True


def replace_beneath(root: Path, rel: str, data: bytes, *, default_mode: int) -> None:
    """Replace ``root/rel`` with ``data`` at once: a temp file beside it, fsync, rename, fsync the folder.

    Folders are created as needed, none followed through a symlink. The file keeps its permission
    bits (``default_mode`` for a new one). An existing special file is refused, never replaced.
    """
    base, parts = _parts(root, rel)
    if not _BY_DESCRIPTOR:
        _replace_by_path(base.joinpath(*parts), data, default_mode=default_mode, rel=rel)
        return
    with _folder(base, parts[:-1], create=True, rel=rel) as folder:
        name = parts[-1]
        try:
            info = os.stat(name, dir_fd=folder, follow_symlinks=False)
        except FileNotFoundError:
            mode = default_mode
        else:
            if not stat.S_ISLNK(info.st_mode):
                _refuse_special(info.st_mode, rel)
            mode = stat.S_IMODE(info.st_mode)
        temp = f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"  # the pid lets a sweep tell dead writers
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, mode, dir_fd=folder)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fchmod(handle.fileno(), mode)  # the create mode was cut by the umask
                os.fsync(handle.fileno())
            os.replace(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=folder)
            raise
        with contextlib.suppress(OSError):
            os.fsync(folder)


def remove_beneath(root: Path, rel: str) -> bool:
    """Delete ``root/rel`` (never through a symlink swapped in); False when it does not exist."""
    base, parts = _parts(root, rel)
    try:
        if _BY_DESCRIPTOR:
            with _folder(base, parts[:-1], create=False, rel=rel) as folder:
                os.unlink(parts[-1], dir_fd=folder)
        else:
            os.unlink(base.joinpath(*parts))
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise MemoryStoreError(f"Cannot delete {rel!r}: {exc.strerror or exc}") from exc
    return True


def _replace_by_path(target: Path, data: bytes, *, default_mode: int, rel: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(os.lstat(target).st_mode)
        _refuse_special(os.lstat(target).st_mode, rel)
    except FileNotFoundError:
        mode = default_mode
    with atomic_output(target, mode=mode) as handle:
        handle.write(data)
