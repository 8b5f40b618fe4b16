"""Exceptions raised by langchain-md-memory.

Every error derives from :class:`MemoryStoreError` (not the builtin
``MemoryError``), and its message says what was wrong and what to do.
Errors about a value a caller passed are also ``ValueError`` s, so code that
catches ``ValueError`` keeps working. Nobody needs to match message text:
the type says what happened.

Example:
    .. code-block:: python

        from langchain_md_memory import MarkdownMemory, MemoryStoreError

        try:
            MarkdownMemory("memory", embeddings="none").append("   ")
        except MemoryStoreError as exc:  # MemoryInputError: content is empty
            print(exc)
"""

from __future__ import annotations

__all__ = [
    "BackendConnectionError",
    "BackendSchemaError",
    "EmbeddingError",
    "IndexBusyError",
    "IndexDamagedError",
    "MemoryIndexError",
    "MemoryInputError",
    "MemoryPathError",
    "MemoryStoreError",
    "MissingApiKeyError",
    "check_write_size",
]


class MemoryStoreError(Exception):
    """Base class of every error this package raises."""


class MemoryInputError(MemoryStoreError, ValueError):
    """An argument was refused: empty text, a bad option, a value out of range."""


class MemoryPathError(MemoryInputError):
    """A path was refused: it would leave the memory directory or is malformed."""


class MemoryIndexError(MemoryStoreError):
    """The index could not be opened, read or written."""


class IndexBusyError(MemoryIndexError):
    """Another process holds the index (locked, busy) or it cannot be opened for writing.

    Not damage: the index file must be left alone and asked again later.
    """


class IndexDamagedError(MemoryIndexError):
    """The index is corrupt, truncated, foreign or missing tables: rebuild it from the Markdown."""


class BackendConnectionError(MemoryIndexError):
    """The database behind the memory cannot be reached, or refused the credentials.

    The message names the server (never the password) and what to check.
    """


class BackendSchemaError(MemoryIndexError):
    """The database cannot hold this memory as it is: pgvector missing, or a schema from a newer package.

    The message says what to run or install.
    """


class EmbeddingError(MemoryStoreError):
    """The embedding provider failed, timed out or returned unusable vectors."""


class MissingApiKeyError(EmbeddingError):
    """An embedding model that needs an API key was asked for without one.

    ``spec`` is the model asked for (``"openai"``), ``variable`` the environment variable the key is
    read from, ``how`` the other way to give it (a Python caller's ``api_key=...``; the CLI names its own).
    """

    def __init__(self, spec: str, variable: str, how: str = "pass api_key=...") -> None:
        self.spec = spec
        self.variable = variable
        super().__init__(f"embeddings={spec!r} needs an API key: set {variable} or {how}")


def check_write_size(size: int, max_write_bytes: int) -> None:
    """Refuse a write of ``size`` bytes over ``max_write_bytes``: one message on every write path.

    Raises:
        MemoryInputError: ``size`` is over the cap.
    """
    if size > max_write_bytes:
        raise MemoryInputError(
            f"content is {size} bytes, over max_write_bytes={max_write_bytes}: "
            "write a shorter summary of what to remember"
        )


def check_query_size(query: str, max_query_chars: int) -> None:
    """Refuse a query over ``max_query_chars`` characters with a message that says what to search instead.

    Raises:
        MemoryInputError: ``query`` is over the limit.
    """
    if len(query) > max_query_chars:
        raise MemoryInputError(
            f"query is {len(query)} characters, over max_query_chars={max_query_chars}: "
            "search with the question or the few sentences that matter, not a whole document"
        )
