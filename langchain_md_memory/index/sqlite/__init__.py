"""The SQLite backend of the index seam: one file beside the Markdown, rebuilt whenever in doubt.

:class:`MemoryIndex` (:mod:`.index`) implements :class:`~langchain_md_memory.index.base.SearchIndex`
over the modules here: the file and its schema (:mod:`.schema`, :mod:`.migrations`,
:mod:`.connection`), keyword postings kept in memory (:mod:`.postings`), chunk records
(:mod:`.records`), the vector matrix by script group (:mod:`.vectors`, :mod:`.script_groups`),
the embedding cache (:mod:`.cache`) and the health checks ``verify`` asks (:mod:`.health`);
:class:`~.handle.IndexHandle` owns the file and swaps in a rebuilt one.

Example:
    .. code-block:: python

        from langchain_md_memory.index.sqlite import MemoryIndex

        index = MemoryIndex.open("memory/index.sqlite")
        index.close()
"""

from ..rows import ChunkRow, FileState
from .index import MemoryIndex
from .schema import SCHEMA_VERSION

__all__ = ["SCHEMA_VERSION", "ChunkRow", "FileState", "MemoryIndex"]
