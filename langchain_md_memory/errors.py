"""Exceptions raised by langchain-md-memory.

Every error derives from :class:`MemoryStoreError` (not the builtin
``MemoryError``), and its message says what was wrong and what to do.
"""

from __future__ import annotations

__all__ = [
    "EmbeddingError",
    "MemoryIndexError",
    "MemoryPathError",
    "MemoryStoreError",
]


class MemoryStoreError(Exception):
    """Base class of every error this package raises."""


class MemoryPathError(MemoryStoreError, ValueError):
    """A path was refused: it would leave the memory directory or is malformed."""


class MemoryIndexError(MemoryStoreError):
    """The SQLite index could not be opened, read or written."""


class EmbeddingError(MemoryStoreError):
    """The embedding provider failed, timed out or returned unusable vectors."""
