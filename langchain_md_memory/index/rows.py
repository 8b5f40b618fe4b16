"""What the index stores per file and per chunk, as plain data, and the stored form of a vector.

Both backends write these rows; a vector is stored (and cached) as the BLOB :func:`to_blob` makes.

Example:
    .. code-block:: python

        from langchain_md_memory.index.rows import FileState

        state = FileState("MEMORY.md", mtime_ns=1, size=10, hash="ab")
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from ..files.sections import PastFact
from ..text import script_group
from ..types import ChunkRecord, FileKind

__all__ = [
    "ChunkRow", "FileState", "PastRow", "chunk_record", "chunk_values", "from_blob", "past_fact",
    "past_values", "to_blob",
]


@dataclass(frozen=True, slots=True)
class FileState:
    """What the index last saw of one Markdown file."""

    path: str
    mtime_ns: int
    size: int
    hash: str


@dataclass(frozen=True, slots=True)
class ChunkRow:
    """A chunk to be written: its record, the hash of what it embeds as, its keyword terms, its
    vector if known, and the neighbouring lines a short chunk is embedded with."""

    record: ChunkRecord
    embed_hash: str
    terms: str
    vector: np.ndarray | None = None
    context: str = ""

    @property
    def n_terms(self) -> int:
        """How many keyword terms the chunk has (its BM25 length)."""
        # Terms are single words joined by one space (``index_terms``): counting the spaces counts them.
        return self.terms.count(" ") + 1 if self.terms else 0

    @property
    def script(self) -> int:
        """The script group of what the chunk is embedded as (heading, text and context): the
        group its vector is measured in (see :mod:`langchain_md_memory.index.scoring`). A short
        English bullet embedded with the Chinese lines around it reads as Chinese to the model."""
        return script_group("\n".join((self.record.heading, self.record.text, self.context)))


@dataclass(frozen=True, slots=True)
class PastRow:
    """A struck History line to be written: the fact, and the hash its statement is embedded under.

    Struck lines are never chunks (ordinary search must not find them); the index keeps them apart
    so that an as-of search reads the facts valid on its day, with their vectors, without reading
    the files or calling the model.
    """

    fact: PastFact
    embed_hash: str


def past_values(row: PastRow) -> tuple[object, ...]:
    """One ``past_facts`` row: path, line, text, statement, since, until, embed_hash."""
    fact = row.fact
    return (fact.path, fact.line, fact.text, fact.statement, fact.since.isoformat() if fact.since else None,
            fact.until.isoformat(), row.embed_hash)


def past_fact(row: Sequence[Any]) -> PastFact:
    """The fact of a row read as ``path, line, text, statement, since, until`` (ISO days or dates)."""
    since, until = row[4], row[5]
    return PastFact(str(row[0]), int(row[1]), str(row[2]), str(row[3]),
                    None if since is None else _day(since), _day(until))


def _day(value: object) -> dt.date:
    return value if isinstance(value, dt.date) else dt.date.fromisoformat(str(value))


def chunk_record(row: sqlite3.Row | tuple[Any, ...], shared: dict[str, str] | None = None) -> ChunkRecord:
    """The record of a ``SELECT CHUNK_COLUMNS`` row; ``shared``: one string per path and kind across the
    records read with it (a file's chunks share them), for records held in bulk."""
    path, kind = (row[2], row[8]) if shared is None else (shared.setdefault(row[2], row[2]),
                                                           shared.setdefault(row[8], row[8]))
    return ChunkRecord(
        id=row[1],
        path=path,
        start_line=row[3],
        end_line=row[4],
        heading=row[5],
        text=row[6],
        hash=row[7],
        file_kind=cast(FileKind, kind),
        updated_at=row[9],
    )


def chunk_values(rowid: int, row: ChunkRow, script: int) -> tuple[object, ...]:
    """One ``chunks`` row, in the column order of ``MemoryIndex.replace_file``'s INSERT."""
    rec = row.record
    return (rowid, rec.id, rec.path, rec.start_line, rec.end_line, rec.heading, rec.text, rec.hash,
            row.embed_hash, row.context, script, rec.file_kind, rec.updated_at, row.n_terms,
            row.vector is not None)


def to_blob(vector: np.ndarray) -> bytes:
    """A vector as the float32 BLOB the index stores (SQLite ``BLOB``, PostgreSQL ``bytea``)."""
    return np.asarray(vector, dtype=np.float32).tobytes()


def from_blob(blob: bytes) -> np.ndarray:
    """A stored float32 BLOB as a (read-only) numpy vector."""
    return np.frombuffer(blob, dtype=np.float32)
