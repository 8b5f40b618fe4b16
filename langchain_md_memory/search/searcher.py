"""A memory's search, in one place: the reads around the pure :mod:`~.pipeline`.

:class:`Searcher` does the search's I/O and leaves every ranking decision to
:func:`~.pipeline.run`: it syncs the index first (a failed sync is reported, not hidden), embeds the
query, recalls from its index (recovering an index that fails mid-use) and from each other memory
searched with it (their paths under a prefix), reads what the steps need besides (access counts, the
facts valid on an as-of day, the facts struck in the files the restated order asks for), labels each
hit with the memory it came from, and records what it returned.

Example:
    .. code-block:: python

        ranked = searcher.search("single stock limit", max_results=3, config=MemoryConfig())
        print(ranked.funnel, [hit.citation for hit in ranked.hits])
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..config import MemoryConfig, RankingConfig
from ..embeddings import EmbeddingClient
from ..errors import (
    IndexBusyError,
    IndexDamagedError,
    MemoryIndexError,
    MemoryInputError,
    MemoryStoreError,
    check_query_size,
)
from ..files.base import DocumentStore
from ..files.sections import superseded_statements
from ..index.scoring import NO_SUCH_TERM
from ..sync.embedding import cosines, embed_cached
from ..sync.indexer import Indexer, index_identity
from ..text.redaction import scrub
from ..types import ChunkRecord, MemorySearchResult, ProgressCallback
from .asof import AsOf, asked_period, informative_terms
from .pipeline import RankedResults, Recall, run
from .retrieve import QueryVector, query_vector, retrieve, started_query_vector

__all__ = ["Searcher", "Source", "combined", "prefixed"]

logger = logging.getLogger(__name__)



@dataclass(frozen=True, slots=True)
class Source:
    """Another memory searched together with this one: its hits' paths and ids start with ``prefix``."""

    prefix: str
    scope: str
    searcher: Searcher


class Searcher:
    """Search over one memory's index (and its :attr:`sources`); see the module docstring."""

    def __init__(self, indexer: Indexer, embedder: EmbeddingClient | None, store: DocumentStore,
                 location: str) -> None:
        self.indexer = indexer
        self.embedder = embedder
        self.store = store
        self.location = location
        self.sources: list[Source] = []
        """Other memories ranked together with this one (a project memory's global memory)."""
        self.sync_error: str | None = None
        """Why the last sync before a search failed (the search then read the index as it was)."""

    def search(self, query: str, *, max_results: int | None, config: MemoryConfig, as_of: Any = None,
               progress: ProgressCallback | None = None) -> RankedResults:
        """The top ``max_results`` (default ``config.max_results``) hits with the funnel and any note.

        ``progress`` receives the events of the sync run first, if one runs."""
        k = max_results if max_results is not None else config.max_results
        if k < 1:
            raise MemoryInputError(f"max_results must be at least 1, got {k}")
        check_query_size(query, config.limits.max_query_chars)
        today = dt.date.today()
        period, day, strict = asked_period(query, as_of, today)
        # First: a sync that finds the embedder failing makes the query keyword-only.
        self.ensure_synced(progress)
        pending = self.start_query_vector(query)  # computed while keyword recall reads the index
        ranking = config.ranking
        recall = self.recall(query, ranking.candidate_multiplier * k, ranking, pending)  # step 1
        # What the steps read besides: access counts (step 5), the facts valid on an as-of day (step 10),
        # and, through _struck_facts, the facts struck in the files the restated order names (step 9).
        ids = [r.id for r, _ in recall.vector] + [r.id for r, _ in recall.keyword]
        counts = self.access_counts(ids) if config.ranking.access_weight > 0 and ids else None
        asked = self._as_of(day, strict, query, pending()[0]) if day is not None else None
        ranked = run(recall, config, question=query, today=today, max_results=k, period=period, asked=asked,
                     access_counts=counts, struck_facts=self._struck_facts)
        note = ranked.degraded
        if self.sync_error is not None:
            lag = f"the index could not be updated ({self.sync_error}); recent changes may be missing"
            note = "; ".join(filter(None, [note, lag]))
        if waiting := self.indexer.embedding_backlog:
            behind = (f"{waiting} chunk(s) are not embedded yet (embedding goes on in the background): "
                      "the search found those by keywords only")
            note = "; ".join(filter(None, [note, behind]))
        ranked = RankedResults(self._scoped(ranked.hits), ranked.funnel, note, ranked.as_of)
        if config.ranking.access_weight > 0:
            self.record_access([h.chunk_id for h in ranked.hits])
        self.indexer.freshness.start_pending()  # a periodic walk found due: after this search, not during
        return ranked

    def query_vector(self, query: str) -> tuple[Any, str | None]:
        """The query's embedding, or ``None`` with why (no embedder, or it failed)."""
        return query_vector(self.embedder, query, self.indexer.embedding_error)

    def start_query_vector(self, query: str) -> QueryVector:
        """:meth:`query_vector` begun on a worker thread; the function returned waits for it."""
        return started_query_vector(self.embedder, query, self.indexer.embedding_error)

    def similarity(self, query: str, texts: Sequence[str]) -> list[float] | None:
        """Cosine similarity of ``query`` to each text (vectors cached in the index); ``None``: no vectors."""
        vector, _ = self.query_vector(query)
        if vector is None or self.embedder is None:
            return None
        return cosines(self.indexer.index, self.embedder, index_identity(self.embedder), vector, texts)

    def recall(self, query: str, pool: int, config: RankingConfig, vector: QueryVector) -> Recall:
        """Both candidate pools of this memory and its sources, for one ranking over all of them.

        ``vector`` waits for the query's embedding (:meth:`start_query_vector`)."""
        recall = self._own_recall(query, pool, config, vector)
        for source in self.sources:
            other = source.searcher
            other.ensure_synced()
            theirs = vector if other.embedder is self.embedder else other.start_query_vector(query)
            recall = combined(recall, prefixed(other.recall(query, pool, config, theirs), source.prefix))
        return recall

    def _own_recall(self, query: str, pool: int, config: RankingConfig, vector: QueryVector) -> Recall:
        """An index that fails mid-use is recovered and asked again."""
        used = self.indexer.index
        try:
            return retrieve(used, query, pool, config, vector)
        except MemoryIndexError as error:
            with self.indexer.handle.lock:  # a rebuild in progress holds it until the new index is in
                swapped = self.indexer.index is not used
            if not swapped:  # swapped: another thread rebuilt it under this search; just ask again
                if not isinstance(error, IndexBusyError | IndexDamagedError):
                    raise
                self.indexer.recover(error, used)
            return retrieve(self.indexer.index, query, pool, config, vector)

    def ensure_synced(self, progress: ProgressCallback | None = None) -> None:
        """Sync when the Markdown changed; a failure leaves the index as it is and says so."""
        try:
            self.indexer.sync_if_needed(progress)
        except MemoryIndexError as exc:
            # e.g. a full disk: the Markdown is safe, the index lags; the next sync catches up.
            self.sync_error = scrub(exc).replace(self.location + os.sep, "")
            self.indexer.mark_dirty()
            logger.warning("sync failed, searching the index as it is: %s", self.sync_error)
        else:
            self.sync_error = None

    def access_counts(self, ids: list[str]) -> dict[str, int]:
        """How often each chunk was returned before (ids of sources carry their prefix)."""
        counts: dict[str, int] = {}
        for prefix, searcher, own in self._split(ids):
            found = searcher.indexer.index.access_counts(own) if own else {}
            counts.update({prefix + i: n for i, n in found.items()})
        return counts

    def record_access(self, ids: list[str]) -> None:
        """Count one more return of each chunk, in the memory it came from."""
        for _, searcher, own in self._split(ids):
            if own:
                searcher.indexer.index.record_access(own)

    def _split(self, ids: Iterable[str]) -> list[tuple[str, Searcher, list[str]]]:
        ids = list(ids)
        parts = [(s.prefix, s.searcher, [i[len(s.prefix):] for i in ids if i.startswith(s.prefix)])
                 for s in self.sources]
        own = [i for i in ids if not any(i.startswith(s.prefix) for s in self.sources)]
        return [("", self, own), *parts]

    def _scoped(self, hits: list[MemorySearchResult]) -> list[MemorySearchResult]:
        """Hits with ``scope`` set from the source their path came from (this memory's: ``project``)."""
        if not self.sources:
            return hits
        scoped = []
        for hit in hits:
            scope = next((s.scope for s in self.sources if hit.path.startswith(s.prefix)), "project")
            scoped.append(hit if hit.scope == scope else hit.revised(scope=scope))
        return scoped

    def _as_of(self, day: dt.date, strict: bool, query: str, vector: Any) -> AsOf:
        """The struck facts of this memory valid on ``day``, with what scores them against ``query``:
        their vectors (those not cached yet embedded now, in one call) when the query has ``vector``,
        else the idf of its informative terms."""
        index = self.indexer.index
        found = index.past_facts_on(day)
        if not found:
            return AsOf(day, strict)
        facts = [fact for fact, _ in found]
        if vector is not None and self.embedder is not None:
            missing = [fact.statement for fact, stored in found if stored is None]
            fresh = iter(embed_cached(index, self.embedder, index_identity(self.embedder), missing) if missing
                         else ())
            vectors = [next(fresh) if stored is None else stored for _, stored in found]
            return AsOf(day, strict, facts, vectors=vectors, query_vector=vector)
        terms = informative_terms(query)
        idf = index.term_idf([*terms, NO_SUCH_TERM]) if terms else {}
        return AsOf(day, strict, facts, terms=terms, idf=idf, absent_idf=idf.get(NO_SUCH_TERM, math.inf))

    def _read(self, path: str) -> str:
        for source in self.sources:
            if path.startswith(source.prefix):
                return source.searcher._read(path[len(source.prefix):])
        return self.store.read_bytes(path).decode("utf-8", errors="replace")

    def _struck_facts(self, paths: Iterable[str]) -> dict[str, list[tuple[str, dt.date]]]:
        """The facts struck (``## History``) in each of ``paths`` that has some; one read a file."""
        found = {}
        for path in paths:
            try:
                text = self._read(path)
            except (MemoryStoreError, OSError) as exc:  # gone meanwhile: the order stays as ranked
                logger.debug("cannot read %s for its superseded facts: %s", path, exc)
                continue
            if struck := superseded_statements(text):
                found[path] = struck
        return found


def prefixed(recall: Recall, prefix: str) -> Recall:
    """``recall`` of another memory with ids and paths under ``prefix``."""
    def moved(record: ChunkRecord) -> ChunkRecord:
        return replace(record, id=prefix + record.id, path=prefix + record.path)

    return replace(recall, vector=[(moved(r), s) for r, s in recall.vector],
                   keyword=[(moved(r), s) for r, s in recall.keyword],
                   vectors={prefix + k: v for k, v in recall.vectors.items()})


def combined(own: Recall, other: Recall) -> Recall:
    """One recall over both memories, so a single ranking orders their hits.

    Keyword scores are normalised per index (each memory's best match is 1).
    """
    degraded = "; ".join(dict.fromkeys(d for d in (own.degraded, other.degraded) if d)) or None
    return replace(own, vector=[*own.vector, *other.vector], keyword=[*own.keyword, *other.keyword],
                   vectors={**own.vectors, **other.vectors}, degraded=degraded)
