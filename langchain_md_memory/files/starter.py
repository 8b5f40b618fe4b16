"""Starting a memory folder: empty, or filled with the example memory shipped inside the package.

A new folder gets the ``.gitignore`` that keeps the index out of git (see :mod:`.gitignore`) and an
empty ``MEMORY.md``; ``example=True`` copies the bundled example instead (a few finance notes in
Chinese and English: ``MEMORY.md``, a topic file and two daily logs). A folder that already holds a
memory is refused, naming what is there, so nothing anyone wrote is overwritten.

Example:
    .. code-block:: python

        from langchain_md_memory.files.starter import init_memory

        assert "MEMORY.md" in init_memory(tmp_path / "demo", example=True)
"""

from __future__ import annotations

import importlib.resources
import os
from importlib.resources.abc import Traversable
from pathlib import Path

from ..errors import MemoryInputError
from .gitignore import write_gitignore
from .paths import INDEX_FILE, STATE_FILE, is_memory_file

__all__ = ["MemoryFolderInUseError", "example_memory", "init_memory", "memory_contents"]

_EXAMPLE = ("examples", "memory")
_SHOWN = 3
"""How many of the files already there an error names."""


class MemoryFolderInUseError(MemoryInputError):
    """``init`` was pointed at a folder that already holds a memory."""

    def __init__(self, folder: Path, existing: list[str]) -> None:
        self.folder = folder
        self.existing = existing
        named = ", ".join(existing[:_SHOWN]) + (f" and {len(existing) - _SHOWN} more"
                                                if len(existing) > _SHOWN else "")
        super().__init__(f"{str(folder)!r} already holds a memory ({named}); init starts one only in a "
                         "new or empty folder: pick another folder, or search this one as it is")


def example_memory() -> Traversable:
    """The folder of the example memory inside the installed package (its ``*.md`` files)."""
    return importlib.resources.files("langchain_md_memory").joinpath(*_EXAMPLE)


def memory_contents(folder: Path) -> list[str]:
    """What in ``folder`` makes it a memory: its Markdown files, the index, the state file; sorted,
    ``MEMORY.md`` first. Hidden folders (``.git``) are not looked into."""
    if not folder.is_dir():
        return []
    found: list[str] = []
    for dirpath, dirnames, names in os.walk(folder):
        dirnames[:] = [d for d in dirnames if not d.startswith((".", "~", "#"))]
        base = Path(dirpath).relative_to(folder)
        found += [(base / n).as_posix() for n in names if is_memory_file((base / n).as_posix())]
    found += [name for name in (INDEX_FILE, STATE_FILE) if (folder / name).exists()]
    return sorted(found, key=lambda name: (name != "MEMORY.md", name))


def init_memory(folder: str | os.PathLike[str], *, example: bool = False) -> list[str]:
    """Create a memory in ``folder`` (made if missing) and return the files written, sorted.

    Writes the folder's ``.gitignore`` (unless one is there) and ``MEMORY.md``: empty, or with
    ``example=True`` the bundled example memory's files. Raises :class:`MemoryFolderInUseError`
    when the folder already holds a memory, and :class:`MemoryInputError` when it is a file.
    """
    target = Path(folder).expanduser()
    if target.exists() and not target.is_dir():
        raise MemoryInputError(f"{str(target)!r} is a file, not a folder")
    existing = memory_contents(target)
    if existing:
        raise MemoryFolderInUseError(target, existing)
    target.mkdir(parents=True, exist_ok=True)
    files: dict[str, bytes] = {"MEMORY.md": b""}
    if example:
        files = {item.name: item.read_bytes() for item in example_memory().iterdir()
                 if item.is_file() and is_memory_file(item.name)}
    written = [".gitignore"] if write_gitignore(target) else []
    for name, data in sorted(files.items()):
        # O_EXCL: a file that appeared since the check above is never overwritten.
        fd = os.open(target / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        written.append(name)
    return sorted(written)
