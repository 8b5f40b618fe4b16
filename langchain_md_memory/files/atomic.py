"""Atomic file output: a file is replaced whole or not at all.

Example:
    .. code-block:: python

        from pathlib import Path
        from langchain_md_memory.files.atomic import atomic_output

        with atomic_output(Path("memory/MEMORY.md")) as handle:
            handle.write(b"# Memory\n")
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

__all__ = ["atomic_output", "current_umask"]


def current_umask() -> int:
    """The process umask, read without changing it (``os.umask`` would race other threads)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


@contextlib.contextmanager
def atomic_output(target: Path, *, mode: int | None = None) -> Iterator[BinaryIO]:
    """Write ``target`` all at once: a hidden temp file beside it, fsync, rename, fsync the folder.

    Readers see the old file or the new one, never a part. On any error the
    temp file is removed and ``target`` is untouched; the error propagates.

    """
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp_name, mode)
        os.replace(tmp_name, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise
    _fsync_dir(target.parent)


def _fsync_dir(directory: Path) -> None:
    # Makes the rename itself durable; some platforms cannot open directories.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
