"""The index seam: what sync and search need from wherever the derived index lives.

Two backends implement :class:`SearchIndex`: :class:`~langchain_md_memory.index.sqlite.MemoryIndex`
(a SQLite file beside the Markdown, the default; :mod:`.sqlite`) and
:class:`~langchain_md_memory.postgres.PostgresIndex` (PostgreSQL with pgvector). The seam is
this protocol, the rows both write (:mod:`.rows`) and the scoring both compute (:mod:`.scoring`);
the search stages stay in Python above it (:mod:`langchain_md_memory.search.retrieve` is the one
place a search reads the index), and the index only supplies the two candidate pools. A recall
returns what it computed with its hits (the keyword idf, the vector background): nothing passes
between calls through the index.

Example:
    .. code-block:: python

        from langchain_md_memory.index.base import SearchIndex
        from langchain_md_memory.index.sqlite import MemoryIndex

        index: SearchIndex = MemoryIndex.open(":memory:")
        assert index.keyword_search([["anything"]], 5).hits == [[]]
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import numpy as np

from ..files.base import DocumentStore, StateStore
from ..files.sections import PastFact
from ..types import ChunkRecord, FileKind
from .rows import ChunkRow, FileState, PastRow
from .scoring import Background

__all__ = [
    "Backend", "HealthChecks", "IndexOwner", "KeywordRecall", "SearchIndex", "VectorCache", "VectorRecall",
]

T = TypeVar("T")


class VectorCache(Protocol):
    """Vectors by content hash and embedding identity."""

    def lookup(self, hashes: Sequence[str], fingerprint: str) -> dict[str, np.ndarray]:
        """Cached vectors for these content hashes under one embedding identity."""
        ...

    def store(self, items: Sequence[tuple[str, np.ndarray]], fingerprint: str) -> None:
        """Remember vectors."""
        ...

    def holds_any(self, fingerprint: str) -> bool:
        """True when some vector is cached under this embedding identity."""
        ...


class HealthChecks(Protocol):
    """What ``verify`` asks an index about its own health (``SearchIndex.health``)."""

    def integrity_problems(self) -> list[str]:
        """What a structural check of the index found; empty when sound."""
        ...

    def chunk_spans(self) -> dict[str, list[tuple[int, int, str]]]:
        """``(start_line, end_line, hash)`` of every stored chunk, by file."""
        ...

    def paths_without_keywords(self) -> list[str]:
        """Files with a chunk that keyword recall cannot find."""
        ...

    def keyword_orphans(self) -> int:
        """Keyword entries whose chunk is gone."""
        ...


@dataclass(frozen=True, slots=True)
class KeywordRecall:
    """What keyword recall found for each term list, and the idf it weighed the first list's terms by.

    ``hits[i]`` holds list ``i``'s candidates as ``(chunk, score in (0, 1])``, best first (scores
    divided by the best hit's); ``idf`` every term of the first list (a term no chunk holds included).
    """

    hits: list[list[tuple[ChunkRecord, float]]]
    idf: dict[str, float]


@dataclass(frozen=True, slots=True)
class VectorRecall:
    """What vector recall found, and the query's background it measured on the way.

    ``hits`` are ``(chunk, score in [0, 1])``, best first; ``background`` the mean and spread of the
    query's cosine to the stored vectors (``None``: too few of them, or a zero query), as a
    :class:`~.scoring.HitsBackground` naming the hits of a script group too small to measure.
    """

    hits: list[tuple[ChunkRecord, float]]
    background: Background | None


class SearchIndex(Protocol):
    """A file's chunks, keyword recall, vector recall, an embedding cache and a little metadata."""

    path: str
    repaired: str | None  # what opening the index found wrong and repaired
    cache: Any  # a VectorCache (an attribute, so implementations may narrow its type)

    def get_meta(self, key: str) -> str | None:
        """A metadata value, or ``None``."""
        ...

    def set_meta(self, key: str, value: str) -> None:
        """Store a metadata value."""
        ...

    def file_states(self) -> dict[str, FileState]:
        """Every file the index knows."""
        ...

    def file_state(self, path: str) -> FileState | None:
        """What the index knows of one file."""
        ...

    def touch_file(self, state: FileState) -> None:
        """Record a new change stamp for a file whose content did not change."""
        ...

    def replace_file(self, state: FileState, kind: FileKind, rows: Sequence[ChunkRow],
                     past: Sequence[PastRow] = ()) -> tuple[int, int]:
        """Replace every chunk and struck History line of one file at once; returns (chunks removed,
        chunks added)."""
        ...

    def remove_file(self, path: str) -> int:
        """Forget a file, its chunks and its struck lines; returns the chunks removed."""
        ...

    def count_chunks(self) -> tuple[int, int]:
        """(chunks, chunks with a vector)."""
        ...

    def chunks_missing_vectors(self, limit: int, *,
                               after_rowid: int = 0) -> list[tuple[int, str, str, str, str]]:
        """Up to ``limit`` chunks without a vector: (row id, embed hash, heading, text, context)."""
        ...

    def set_vectors(self, vectors: Sequence[tuple[int, np.ndarray]]) -> None:
        """Attach vectors to chunks by row id.

        The caller has stored each vector in :attr:`cache` under its chunk's ``embed_hash`` and
        the index's embedding identity, in the same write transaction (as ``embed_missing``
        does): an index may read a chunk's vector from there instead of storing it twice.
        """
        ...

    def clear_vectors(self) -> None:
        """Drop every vector (the embedding identity changed)."""
        ...

    def past_facts_missing_vectors(self) -> list[tuple[str, str]]:
        """``(embed hash, statement)`` of each struck line whose vector :attr:`cache` lacks under the
        index's embedding identity, one per hash."""
        ...

    def past_facts_on(self, day: dt.date) -> list[tuple[PastFact, np.ndarray | None]]:
        """The struck lines that held on ``day``, each with its cached vector (``None``: none yet)."""
        ...

    def keyword_search(self, queries: Sequence[Sequence[str]], limit: int) -> KeywordRecall:
        """The BM25 keyword candidates of each term list (a question's and its translation's), up to ``limit``
        each, answered together, with the idf of the first list's terms."""
        ...

    def holds_script(self, script: int) -> bool:
        """False only when no indexed term is in ``script`` (``text.SCRIPT_CJK`` or ``SCRIPT_OTHER``)."""
        ...

    def keyword_scores(self, terms: Sequence[str], ids: Sequence[str],
                       idf: Mapping[str, float] | None = None) -> dict[str, float]:
        """The BM25 keyword recall ranks by (not divided by its best) of each of these chunks that holds
        one of ``terms``; the others are absent. ``idf``: the terms' idf as :meth:`keyword_search` returned
        it in this search, for a backend that would otherwise count them again (``None``: counted)."""
        ...

    def term_idf(self, terms: Sequence[str]) -> dict[str, float]:
        """Each query term's BM25 idf over the indexed chunks (a term no chunk holds gets the highest)."""
        ...

    def vector_search(self, query: np.ndarray, limit: int) -> VectorRecall:
        """Up to ``limit`` vector candidates, best first, with the query's background."""
        ...

    def vectors_for(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored unit vectors by chunk id."""
        ...

    def snapshot(self) -> contextlib.AbstractContextManager[None]:
        """Several reads (a search's) that see one state of the index; a backend whose statements each
        read their own snapshot returns a null context."""
        ...

    def record_access(self, ids: Sequence[str]) -> None:
        """Count that these chunks were returned."""
        ...

    def access_counts(self, ids: Sequence[str]) -> dict[str, int]:
        """How often each chunk was returned."""
        ...

    @property
    def health(self) -> HealthChecks:
        """What ``verify`` asks the index about its own health."""
        ...

    def after_sync(self) -> None:
        """A sync finished: build what is cheaper built in bulk than kept up row by row."""
        ...

    def writing(self) -> contextlib.AbstractContextManager[Any]:
        """One write transaction spanning several reads and writes."""
        ...

    def close(self) -> None:
        """Release the index."""
        ...


class IndexOwner(Protocol):
    """Holds the index in use (see :class:`~langchain_md_memory.index.sqlite.handle.IndexHandle`).

    Readers take :attr:`index` afresh for each use, so a swap reaches them all at once.
    """

    path: str
    fallback: str | None  # why the index is not where it should be, or None
    lock: Any  # a re-entrant lock held while the index is swapped

    @property
    def index(self) -> SearchIndex:
        """The index in use now."""
        ...

    @property
    def in_memory(self) -> bool:
        """True when the index lives in memory only."""
        ...

    def fall_back(self, reason: str) -> SearchIndex:
        """Answer from a new in-memory index from now on; returns it."""
        ...

    def rebuild(self, build: Callable[[IndexOwner], T]) -> T:
        """Rebuild the index the way this backend does; returns what ``build`` returned.

        ``build`` fills, from the Markdown, the index of the owner it is given: a new one beside the
        current index, put in place once ``build`` returns (a SQLite file, swapped in atomically), or
        this very owner, whose index is rebuilt in place (PostgreSQL: each file's rows replaced).
        Readers never see it empty: they keep the old index, or each file's old rows, until the new is in.
        """
        ...

    def close(self) -> None:
        """Release the index."""
        ...


@dataclass(frozen=True, slots=True)
class Backend:
    """A memory's parts: its document store, index owner and durable state.

    ``location`` names it in status and messages (never a password); ``folder_error`` is empty for
    a folder memory, else the message of the error raised by what needs a folder (watching, importing
    an archive).
    """

    store: DocumentStore
    index: IndexOwner
    state: StateStore
    location: str
    folder_error: str
