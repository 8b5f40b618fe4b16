"""A memory's paths as a tree: a path that is a file is never a folder of another path.

A folder memory cannot hold ``a.md`` and ``a.md/b.md`` at once; a database backend could, and
a pull, an export or a migration into a folder would then fail half-way. Every backend refuses
the second path with the errors built here, so the text is the same wherever it is met.

Example:
    .. code-block:: python

        from langchain_md_memory.files.tree import ancestors, tree_clash

        assert ancestors("a.md/b.md") == ["a.md"]
        assert tree_clash(["a.md", "a.md/b.md"]) is not None
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import PurePosixPath

from ..errors import MemoryPathError

__all__ = ["ancestors", "is_a_folder", "not_a_folder", "tree_clash"]


def ancestors(rel: str) -> list[str]:
    """The folders above ``rel`` as relative POSIX paths, outermost first: ``a/b/c.md`` → ``a``, ``a/b``."""
    parts = PurePosixPath(rel).parts[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def not_a_folder(rel: str, name: str) -> MemoryPathError:
    """``rel`` needs the folder ``name`` (one component of it), which is a file."""
    return MemoryPathError(
        f"{rel!r} is not reachable inside the memory directory: {name!r} is not a plain folder"
    )


def is_a_folder(rel: str) -> MemoryPathError:
    """``rel`` would be a file, but other files live under it."""
    return MemoryPathError(f"{rel!r} is a directory, not a memory file")


def tree_clash(paths: Iterable[str]) -> MemoryPathError | None:
    """The error a folder gives for the first path of ``paths`` under another one, or ``None``."""
    files = set(paths)
    for rel in sorted(files):
        for folder in ancestors(rel):
            if folder in files:
                return not_a_folder(rel, PurePosixPath(folder).name)
    return None
