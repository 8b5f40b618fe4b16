"""Plain data passed between layers: chunks, indexed chunk rows, search hits, progress events, writes."""

from __future__ import annotations

import datetime as dt
import operator
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Literal

__all__ = [
    "Chunk",
    "ChunkRecord",
    "FileKind",
    "MemorySearchResult",
    "ProgressCallback",
    "ProgressEvent",
    "ProgressPhase",
    "Remembered",
    "Source",
    "iso_time",
]


def iso_time(timestamp: float | None) -> str | None:
    """A Unix time as local ISO 8601 with its UTC offset (``2026-12-03T08:15:02+01:00``), how every
    surface (``status()``, the CLI, JSON) shows a moment."""
    if timestamp is None:
        return None
    return dt.datetime.fromtimestamp(timestamp, dt.UTC).astimezone().isoformat(timespec="seconds")


FileKind = Literal["evergreen", "daily", "session"]
Source = Literal["vector", "keyword", "both"]
ProgressPhase = Literal["index", "embed", "verify", "export", "import", "dream"]


@dataclass(frozen=True, slots=True)
class ProgressEvent:
    """How far a long operation has got: ``done`` of ``total`` ``unit`` in ``phase``.

    Phases: ``index`` (files read and chunked by a sync or rebuild), ``embed``
    (chunks given vectors, from the model or the cache), ``verify`` (files
    compared with the index), ``export`` / ``import`` (archive members),
    ``dream`` (steps of a consolidation). Within one phase of one operation
    ``done`` never decreases, and the last event has ``done == total``.

    Example:
        .. code-block:: python

            def show(event: ProgressEvent) -> None:
                print(f"{event.phase}: {event.done}/{event.total} {event.unit}")

            mem.sync(progress=show)
    """

    phase: ProgressPhase
    done: int
    total: int
    unit: str = "files"

    @property
    def fraction(self) -> float:
        """``done / total`` in [0, 1] (1.0 when there is nothing to do)."""
        return 1.0 if self.total <= 0 else min(1.0, self.done / self.total)


ProgressCallback = Callable[[ProgressEvent], None]
"""Receives :class:`ProgressEvent` s on the thread doing the work; the library never prints."""


@dataclass(frozen=True, slots=True)
class Chunk:
    """A piece of one Markdown file, as the chunker cut it.

    ``start_line`` / ``end_line`` are 1-based and inclusive; ``heading`` is the
    heading path in effect at the chunk (``"# A > ## B"``, ``""`` for none);
    ``context`` the neighbouring lines a short chunk is embedded with (``""`` for
    a chunk long enough to mean something alone).
    """

    text: str
    start_line: int
    end_line: int
    heading: str
    hash: str
    context: str = ""


@dataclass(frozen=True, slots=True)
class ChunkRecord:
    """A chunk as stored in the index, with its identity and provenance.

    ``updated_at`` is the Unix time the chunk was (re)indexed.
    """

    id: str
    path: str
    start_line: int
    end_line: int
    heading: str
    text: str
    hash: str
    file_kind: FileKind
    updated_at: float


@dataclass(frozen=True, slots=True)
class MemorySearchResult:
    """One search hit, with every number that made its score.

    ``score`` is final. ``vector_score`` / ``keyword_score`` are the raw recall
    scores in [0, 1] (``None`` when that path did not return the chunk; the cosine
    is offset for the chunk's script in a memory of two, see
    :mod:`langchain_md_memory.index.scoring`);
    ``merged_score`` is their weighted sum; ``weight`` the source/access
    multiplier; ``decay`` the temporal multiplier (1.0 for evergreen; above 1.0 for a newer
    statement of a fact raised to the place of an older one, see
    :mod:`langchain_md_memory.search.decay`);
    ``relevance_rank`` the 1-based rank before MMR reordered the hits;
    ``relevance`` the absolute evidence in [0, 1] that an explicit ``min_score`` is
    compared with (see :mod:`langchain_md_memory.search.relevance`); ``confident`` whether that
    evidence says the hit answers the query (``relevance`` at least
    :data:`~langchain_md_memory.search.relevance.CONFIDENT_RELEVANCE`): a label for the reader,
    never a cut;
    ``provenance`` the ``src:`` comments of its lines (``("thread=abc msg=xyz 2026-12-03",)``);
    ``retrieved_by`` the recall path that found it (``"vector"``, ``"keyword"`` or ``"both"``; the
    retriever's ``metadata["retrieved_by"]``, where ``metadata["source"]`` is the file, as in every
    LangChain loader).
    """

    path: str
    start_line: int
    end_line: int
    text: str
    score: float
    vector_score: float | None
    keyword_score: float | None
    retrieved_by: Source
    file_kind: FileKind
    decay: float = 1.0
    merged_score: float = 0.0
    weight: float = 1.0
    relevance_rank: int = 0
    chunk_id: str = ""
    heading: str = ""
    updated_at: float = 0.0
    scope: str = "project"
    relevance: float = 0.0
    provenance: tuple[str, ...] = ()
    """Where the hit's facts came from: the body of each ``<!-- src: ... -->`` comment in its text."""
    confident: bool = False
    valid_from: str | None = None
    """As-of searches: the first day (ISO) the hit's statement held; ``None``: since always, or not asked."""
    valid_until: str | None = None
    """As-of searches: the day (ISO) a struck statement was superseded; ``None``: still holds."""

    def to_dict(self) -> dict[str, Any]:
        """The hit as a plain dict (JSON-ready)."""
        return asdict(self)

    @property
    def source(self) -> Source:
        """Deprecated name of :attr:`retrieved_by` (it works until 0.4)."""
        warnings.warn("MemorySearchResult.source is deprecated: use retrieved_by (the recall path; a "
                      "retriever Document's metadata['source'] is the file) (it works until 0.4)",
                      DeprecationWarning, stacklevel=2)
        return self.retrieved_by

    @property
    def citation(self) -> str:
        """``path#Lstart-Lend``, what a model should cite."""
        return f"{self.path}#L{self.start_line}-L{self.end_line}"

    def revised(self, **changes: Any) -> MemorySearchResult:
        """A copy with ``changes``, built positionally: cheaper than ``dataclasses.replace``."""
        values = list(_HIT_VALUES(self))
        for name, value in changes.items():
            values[_HIT_FIELD[name]] = value
        return MemorySearchResult(*values)


_HIT_FIELD = {f.name: i for i, f in enumerate(fields(MemorySearchResult))}
_HIT_VALUES = operator.attrgetter(*_HIT_FIELD)


SESSION_CONTEXT_ID = "md-memory-session-context"
"""Message id of the SystemMessage holding ``load_session_context()``."""

RECALL_ID = "md-memory-recall"
"""Message id of the SystemMessage holding first-turn recall hits."""

MEMORY_MESSAGE_IDS = frozenset({SESSION_CONTEXT_ID, RECALL_ID})
"""Ids of messages this package injects; left out of flush transcripts."""


@dataclass(frozen=True, slots=True)
class Remembered:
    """What :meth:`~.files.documents.Documents.remember` did.

    ``written`` fact lines went to ``path``; ``duplicates`` are the facts left out because memory
    already states them, each with where (``MEMORY.md#L12``); ``redacted`` counts secrets replaced.
    """

    path: str
    written: int
    duplicates: tuple[tuple[str, str], ...] = ()
    redacted: int = 0

    def prefixed(self, prefix: str) -> Remembered:
        """The same with every path under ``prefix`` (a global memory's writes seen from a project)."""
        if not prefix:
            return self
        return replace(self, path=prefix + self.path,
                       duplicates=tuple((fact, prefix + at) for fact, at in self.duplicates))
