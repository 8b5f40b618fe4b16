"""What a data set gives the harness: memory folders to build, and the questions asked of each.

Gold is located by file and line range, never by chunk id, so a change in
chunking cannot break it: a hit finds a gold reference when it comes from the
same file and its lines overlap the reference's lines (a reference without
lines is the whole file).

Example:
    .. code-block:: python

        ref = GoldRef("MEMORY.md", 4, 4)
        assert ref.found_by("MEMORY.md", 1, 10) and not ref.found_by("MEMORY.md", 5, 9)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["GoldRef", "MemorySet", "Query", "write_tree"]


@dataclass(frozen=True, slots=True)
class GoldRef:
    """A place in memory that answers a question: a path, and optionally its 1-based line span."""

    path: str
    start_line: int | None = None
    end_line: int | None = None

    def found_by(self, path: str, start_line: int, end_line: int) -> bool:
        """True when a hit from ``path`` spanning ``start_line..end_line`` covers (part of) this reference."""
        if path != self.path:
            return False
        if self.start_line is None or self.end_line is None:
            return True
        return start_line <= self.end_line and self.start_line <= end_line


@dataclass(frozen=True, slots=True)
class Query:
    """One question: its gold groups (all must be found for R@k = 1; any alternative of a group will do).

    An empty ``gold`` means the answer is not in memory.
    """

    qid: str
    text: str
    category: str
    gold: tuple[tuple[GoldRef, ...], ...]
    split: str = ""


@dataclass
class MemorySet:
    """One memory folder and the questions asked of it; ``documents`` maps relative path → Markdown."""

    name: str
    documents: dict[str, str]
    queries: list[Query]
    split: str = ""
    info: dict[str, object] = field(default_factory=dict)


def write_tree(root: Path, documents: Mapping[str, str]) -> int:
    """Make ``root`` hold exactly ``documents`` (plus the index); returns how many files were written.

    Unchanged files are left alone (same mtime), so a kept work folder reuses
    its index; Markdown not in ``documents`` is removed.
    """
    root.mkdir(parents=True, exist_ok=True)
    written = 0
    for rel, text in documents.items():
        path = root / rel
        data = text.encode("utf-8")
        if path.is_file() and path.read_bytes() == data:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        written += 1
    wanted = {Path(rel).as_posix() for rel in documents}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            full = Path(dirpath) / name
            rel = full.relative_to(root).as_posix()
            if name.endswith(".md") and not rel.startswith(".") and rel not in wanted:
                full.unlink()
    return written
