"""A folder memory's parts: its Markdown files, the index file beside them and the state file.

The folder twin of :func:`langchain_md_memory.postgres.open_backend`: both give a
:class:`~..base.Backend` that a memory is built from.

Example:
    .. code-block:: python

        parts = open_folder("memory", MemoryConfig())
        print(parts.location, parts.store.list_files())
"""

from __future__ import annotations

import os

from ...config import MemoryConfig
from ...files.paths import INDEX_FILE
from ...files.state import StateFile
from ...files.store import MarkdownStore
from ..base import Backend
from .handle import IndexHandle

__all__ = ["open_folder"]


def open_folder(memory_dir: str | os.PathLike[str], config: MemoryConfig, *,
                recursive: bool = True) -> Backend:
    """The parts of the memory in ``memory_dir`` (created if missing), what interrupted writes left swept."""
    folder = MarkdownStore(memory_dir, recursive=recursive, max_path_depth=config.limits.max_path_depth,
                           max_name_bytes=config.limits.max_name_bytes)
    folder.sweep_temp_files()
    handle = IndexHandle(folder.root / INDEX_FILE, vector_dtype=config.index.vector_dtype)
    return Backend(folder, handle, StateFile(folder), str(folder.root), folder_error="")
