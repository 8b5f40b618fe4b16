"""Walking a memory folder: which Markdown files it holds, and sweeping temp files of killed writers.

Example:
    .. code-block:: python

        from langchain_md_memory.files.paths import is_managed_file
        from langchain_md_memory.files.scan import scan_folder

        found = scan_folder(Path("memory"), is_managed_file, max_depth=16, resolve=store.resolve)
"""

from __future__ import annotations

import functools
import logging
import os
import stat as stat_module
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from ..errors import MemoryPathError
from .locks import pid_alive
from .paths import OWNED_HIDDEN_DIRS, is_memory_file, normalize_relpath

__all__ = ["folder_stamps", "scan_folder", "sweep_temp_files"]

logger = logging.getLogger(__name__)


def scan_folder(root: Path, wanted: Callable[[str], bool], *, max_depth: int,
                resolve: Callable[[str], Path], folders: dict[str, int] | None = None,
                refused: dict[str, str] | None = None) -> dict[str, tuple[int, int]]:
    """Every wanted regular file under ``root`` with its ``(mtime_ns, size)``, from one walk.

    Hidden entries are skipped (but for the unindexed store files when ``wanted`` is
    ``is_memory_file``), folders deeper than ``max_depth`` are not entered, and only
    symlinks pay for the full guard (``resolve``): a regular file met while walking
    the real tree under root is inside it by construction. ``folders``, when given,
    receives each folder walked (``""``, ``"memory/"``, ...) with its ``mtime_ns``,
    taken before it is listed (see :func:`folder_stamps`). ``refused``, when given,
    receives each wanted file the path guard refuses, with why: a name no memory path may
    have (``a\\b.md``), a symlink leading outside ``root``.
    """
    found: dict[str, tuple[int, int]] = {}
    _scan_dir(str(root), "", found, wanted, max_depth, resolve, folders, refused)
    return found


def folder_stamps(root: Path, folders: Iterable[str]) -> dict[str, int]:
    """``mtime_ns`` of each folder (relative, ``""`` for ``root``) that still exists.

    A folder's mtime moves whenever an entry is created, removed or renamed in it, so
    every write of this package (a temp file renamed into place) and every file added
    or deleted shows here; an edit made in place (``>>``, some editors) does not.
    """
    stamps: dict[str, int] = {}
    for rel in folders:
        try:
            stamps[rel] = os.stat(os.path.join(root, rel) if rel else root).st_mtime_ns
        except OSError:
            continue
    return stamps


@functools.lru_cache(maxsize=1 << 16)
def _verdict(wanted: Callable[[str], bool], rel: str) -> bool | str:
    """True for a wanted file, False for one not wanted, else why the path guard refuses its name."""
    # A memory's names rarely change: a walk decides each path once, then only stats it.
    if not wanted(rel):
        return False
    try:
        normalize_relpath(rel)
    except MemoryPathError as exc:
        return f"{exc}: no memory path can name this file; rename it to index it"
    return True


def _scan_dir(directory: str, base: str, found: dict[str, tuple[int, int]], wanted: Callable[[str], bool],
              max_depth: int, resolve: Callable[[str], Path], folders: dict[str, int] | None,
              refused: dict[str, str] | None) -> None:
    try:
        if folders is not None:  # before listing: a change made while listing moves it past this
            folders[base] = os.stat(directory).st_mtime_ns
        with os.scandir(directory) as listing:
            entries = list(listing)
    except OSError as exc:
        logger.debug("cannot list %s: %s", directory, exc)
        return
    for entry in entries:
        name = entry.name
        rel = base + name
        if name[0] in ".~#" and not (wanted is is_memory_file and wanted(rel)):
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                if rel.count("/") < max_depth:
                    _scan_dir(entry.path, rel + "/", found, wanted, max_depth, resolve, folders, refused)
                continue
            if name[-3:].lower() != ".md":
                continue
            verdict = _verdict(wanted, rel)
            if verdict is not True:
                if verdict and refused is not None:
                    refused[rel] = verdict
                continue
            st = os.stat(resolve(rel)) if entry.is_symlink() else entry.stat(follow_symlinks=False)
        except MemoryPathError as exc:  # a symlink leading outside the memory
            if refused is not None:
                refused[rel] = f"{exc}: the memory reads no file outside its folder; move it in to index it"
            continue
        except OSError:
            logger.debug("skipping %s: unreadable", rel)
            continue
        if stat_module.S_ISREG(st.st_mode):
            found[rel] = (st.st_mtime_ns, st.st_size)


def sweep_temp_files(root: Path, max_age_s: float = 3600.0) -> int:
    """Delete temp files of interrupted writes under ``root``; returns how many.

    ``.<name>.<pid>.<random>.tmp`` of a process that no longer runs goes at once; any other
    temp file once older than ``max_age_s`` (a live writer's is seconds old).
    """
    cutoff = time.time() - max_age_s
    removed = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d in OWNED_HIDDEN_DIRS or not d.startswith((".", "~", "#"))]
        for name in filenames:
            if not (name.startswith(".") and name.endswith(".tmp")):
                continue
            path = os.path.join(dirpath, name)
            pid = _writer_pid(name)
            try:
                if (pid is not None and not pid_alive(pid)) or os.lstat(path).st_mtime < cutoff:
                    os.unlink(path)
                    removed += 1
            except OSError:
                continue
    if removed:
        logger.info("removed %d stale temp files of interrupted writes under %s", removed, root)
    return removed


def _writer_pid(name: str) -> int | None:
    parts = name.split(".")
    return int(parts[-3]) if len(parts) >= 4 and parts[-3].isdigit() else None
