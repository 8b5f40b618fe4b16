"""Which files a memory manages, what kind each is, and the one path guard.

Every read or write of a memory file goes through :func:`resolve_memory_path`,
which refuses anything that could leave the memory directory.
"""

from __future__ import annotations

import datetime as dt
import functools
import os
import re
from pathlib import Path, PurePosixPath

from ..errors import MemoryPathError
from ..types import FileKind

__all__ = [
    "INDEX_FILE",
    "LONG_TERM_FILE",
    "SESSIONS_DIR",
    "check_relpath",
    "daily_date",
    "daily_file_name",
    "file_kind",
    "is_managed_file",
    "normalize_relpath",
    "resolve_alias",
    "resolve_memory_path",
]

LONG_TERM_FILE = "MEMORY.md"
SESSIONS_DIR = "sessions"
INDEX_FILE = "index.sqlite"

_DAILY_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})\.md$")
# Temp files of atomic writes and editor swap files never count as memory.
_IGNORED_PREFIXES = (".", "~", "#")


def daily_file_name(day: dt.date | None = None) -> str:
    """``YYYY-MM-DD.md`` for ``day`` (default: today, local time)."""
    return f"{(day or dt.date.today()).isoformat()}.md"


def resolve_alias(file: str, today: dt.date | None = None) -> str:
    """Map ``long_term`` → ``MEMORY.md`` and ``daily`` → today's file; others pass."""
    if file == "long_term":
        return LONG_TERM_FILE
    if file == "daily":
        return daily_file_name(today)
    return file


@functools.lru_cache(maxsize=8192)
def daily_date(relpath: str) -> dt.date | None:
    """The date of a daily log from its name (``2026-07-14.md``), else ``None``."""
    # Kept per path: ranking asks about every hit at several stages of every search.
    folder, _, name = relpath.rpartition("/")
    match = _DAILY_RE.match(name)
    if match is None or folder.rpartition("/")[2] == SESSIONS_DIR:
        return None
    try:
        return dt.date(int(match[1]), int(match[2]), int(match[3]))
    except ValueError:
        return None


def file_kind(relpath: str) -> FileKind:
    """``session`` under ``sessions/``, ``daily`` for dated files, else ``evergreen``."""
    if SESSIONS_DIR in relpath.split("/")[:-1]:
        return "session"
    if daily_date(relpath) is not None:
        return "daily"
    return "evergreen"


def is_managed_file(relpath: str) -> bool:
    """True for Markdown memory files: ``*.md`` not hidden, not a temp file."""
    posix = PurePosixPath(relpath)
    if posix.suffix.lower() != ".md":
        return False
    return not any(part.startswith(_IGNORED_PREFIXES) for part in posix.parts)


_UNINDEXED_RE = re.compile(r"^\.[^./][^/]*\.unindexed\.md$")


def is_unindexed_file(relpath: str) -> bool:
    """True for ``.<name>.unindexed.md``: Markdown a person owns that search must not see.

    The LangGraph store keeps items put with ``index=False`` there. Being
    hidden keeps them out of the index; archives still carry them.
    """
    posix = PurePosixPath(relpath)
    if not _UNINDEXED_RE.match(posix.name):
        return False
    return not any(part.startswith(_IGNORED_PREFIXES) for part in posix.parts[:-1])


def is_memory_file(relpath: str) -> bool:
    """Any Markdown file the memory owns: managed (indexed) or unindexed."""
    return is_managed_file(relpath) or is_unindexed_file(relpath)


def normalize_relpath(path: str) -> str:
    """Validate a user-given relative path and return it in POSIX form.

    A memory path is the same in a folder and in a database: ``/``-separated names, any character
    but NUL and ``\\`` (a colon included: ``u:42/store.md`` is a folder ``u:42``).

    Raises:
        MemoryPathError: for empty paths, NUL bytes, backslashes, absolute
            paths or any ``..`` component.
    """
    if not isinstance(path, str) or not path.strip():
        raise MemoryPathError("Path is empty: give a file inside the memory directory, e.g. 'MEMORY.md'")
    if "\x00" in path:
        raise MemoryPathError(f"Path contains a NUL byte: {path!r}")
    if "\\" in path:
        raise MemoryPathError(f"Path uses a backslash; use '/' separators: {path!r}")
    if path.startswith(("/", "~")):
        raise MemoryPathError(f"Path must be relative to the memory directory, got absolute path {path!r}")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise MemoryPathError(f"Path is outside the memory directory ('..' is not allowed): {path!r}")
    if not parts:
        raise MemoryPathError(f"Path names no file: {path!r}")
    return "/".join(parts)


def check_relpath(path: str, *, max_path_depth: int, max_name_bytes: int) -> str:
    """``path`` with aliases resolved, as a normalised POSIX relative path within the limits.

    The one path check of every document store (a folder's, a database's).

    Raises:
        MemoryPathError: malformed, or deeper than ``max_path_depth`` folders, or a name over
            ``max_name_bytes`` bytes.
    """
    rel = normalize_relpath(resolve_alias(path))
    parts = rel.split("/")
    if len(parts) - 1 > max_path_depth:
        raise MemoryPathError(
            f"Path is {len(parts) - 1} folders deep, over max_path_depth={max_path_depth}: {rel[:80]!r}..."
        )
    for name in parts:
        if len(name.encode("utf-8", "surrogatepass")) > max_name_bytes:
            raise MemoryPathError(
                f"Name {name[:40]!r}... is over max_name_bytes={max_name_bytes} bytes: use a shorter name"
            )
    return rel


_WINDOWS = os.name == "nt"


def resolve_memory_path(root: Path, path: str) -> Path:
    """Return the absolute path of ``path`` inside ``root``, or raise.

    Symlinks are resolved: one that points outside ``root`` is refused. On Windows a ``:`` is
    refused too: there it names a drive (``C:x.md`` leaves ``root``) or a hidden stream of a file.

    Raises:
        MemoryPathError: when the path is malformed or escapes ``root``.
    """
    rel = normalize_relpath(path)
    if _WINDOWS and ":" in rel:
        raise MemoryPathError(f"Path holds ':', which a Windows file name cannot: {path!r}")
    base = Path(os.path.realpath(root))
    target = Path(os.path.realpath(base / rel))
    if target != base and base not in target.parents:
        raise MemoryPathError(f"Path is outside the memory directory (via a symlink): {path!r}")
    return target


STATE_DIR = ".md-memory"
"""Hidden folder for the package's durable state inside a memory folder (never indexed)."""

HISTORY_DIR = ".history"
"""Hidden folder keeping previous versions of ``MEMORY.md`` as ``MEMORY-<UTC time>.md`` (never indexed)."""

OWNED_HIDDEN_DIRS = frozenset({STATE_DIR, HISTORY_DIR})
"""Hidden folders the package writes into; a sweep of interrupted writes looks inside them too."""

STATE_FILE = f"{STATE_DIR}/state.json"
"""The state file (dream's bookkeeping), relative to the memory folder; archives carry it."""


def is_archived_file(relpath: str) -> bool:
    """What an archive carries: the memory's Markdown and its state file."""
    return is_memory_file(relpath) or relpath == STATE_FILE
