"""Putting memory files on disk the way tests need them: written by hand, dated, or edited unseen.

Example:
    .. code-block:: python

        write_files(memory_dir, {"MEMORY.md": "# Profile\\n\\nRisk: conservative.\\n"})
        write_dated(mem, "sessions/2026-07-10-a.md", "# Session\\n", time.time() - 3 * 86400)
        edit_keeping_size_and_mtime(memory_dir / "MEMORY.md", "conservative", "aggressive!!")
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from langchain_md_memory import MarkdownMemory


def write_files(folder: Path, files: Mapping[str, str]) -> None:
    """Write each ``relative path → text`` as UTF-8, as a user editing the folder would (no index update)."""
    for rel, text in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def write_dated(mem: MarkdownMemory, rel: str, text: str, mtime: float) -> str:
    """Write ``rel`` through the memory, then set its modification time to ``mtime``; returns ``rel``."""
    mem.write(rel, text)
    os.utime(mem.memory_dir / rel, (mtime, mtime))
    return rel


def edit_keeping_size_and_mtime(path: Path, old: str, new: str) -> None:
    """Replace ``old`` by ``new`` (same length) in ``path`` and put its mtime back.

    Size and mtime then match what the index recorded, so only a content check
    (``verify``) can see the edit: an edit within one mtime tick, or a tool that
    restores timestamps.
    """
    assert len(old.encode()) == len(new.encode()), "the edit must keep the file's size"
    st = path.stat()
    path.write_text(path.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
