"""Recall: the one place a search reads the index, turning a query into the two candidate pools.

Everything after this (merge, min-score, decay, MMR, top-K) is a pure function
of the :class:`~langchain_md_memory.search.pipeline.Recall` returned here.

Example:
    .. code-block:: python

        vector, degraded = query_vector(embedder, "retirement age", None)
        recall = retrieve(index, "retirement age", 24, config, vector, degraded)
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

import numpy as np

from ..config import MemoryConfig
from ..index.keyword import MAX_QUERY_TERMS
from ..secrets import scrub
from ..text import query_terms
from ..types import ChunkRecord
from .pipeline import Recall

__all__ = ["CandidateSource", "QueryEmbedder", "query_vector", "retrieve"]

logger = logging.getLogger(__name__)


class QueryEmbedder(Protocol):
    """What recall needs from an embedding client."""

    def embed_query(self, text: str) -> np.ndarray:
        """One unit vector for a query."""
        ...


class CandidateSource(Protocol):
    """What recall needs from an index: the two candidate pools and stored vectors."""

    def keyword_search(self, query: str, limit: int) -> list[tuple[ChunkRecord, float]]:
        """Keyword candidates, best first."""
        ...

    def vector_search(self, query: np.ndarray, limit: int) -> list[tuple[ChunkRecord, float]]:
        """Vector candidates, best first."""
        ...

    def term_idf(self, terms: list[str]) -> dict[str, float]:
        """Each query term's BM25 idf over the indexed chunks."""
        ...

    def vectors_for(self, ids: list[str]) -> dict[str, np.ndarray]:
        """Stored unit vectors of chunks by id."""
        ...

    def vector_background(self, query: np.ndarray) -> tuple[float, float] | None:
        """Mean and standard deviation of the query's cosine to the stored vectors."""
        ...


def query_vector(embedder: QueryEmbedder | None, query: str,
                 embedding_error: str | None) -> tuple[Any, str | None]:
    """The query's embedding, or ``None`` and why the search runs on keywords only.

    Never raises: an outage or a timeout leaves the keyword path to answer alone.
    """
    if embedder is None or not query.strip():
        return None, None
    if embedding_error is not None:
        return None, f"embeddings unavailable ({embedding_error}); keyword results only"
    try:
        return embedder.embed_query(query), None
    except Exception as exc:  # outage, timeout: answer from keywords
        reason = scrub(f"{type(exc).__name__}: {exc}")
        logger.warning("query embedding failed, answering from keywords: %s", reason)
        return None, f"vector search failed ({reason}); keyword results only"


def retrieve(index: CandidateSource, query: str, pool: int, config: MemoryConfig, vector: Any,
             degraded: str | None) -> Recall:
    """Up to ``pool`` candidates from each path, and stored vectors when MMR compares by cosine."""
    keyword = index.keyword_search(query, pool)
    found: list[tuple[ChunkRecord, float]] = []
    if vector is not None:
        try:
            found = index.vector_search(vector, pool)
        except Exception as exc:  # e.g. a dimension change: answer from keywords
            reason = scrub(f"{type(exc).__name__}: {exc}")
            logger.warning("vector recall failed, answering from keywords: %s", reason)
            degraded = f"vector search failed ({reason}); keyword results only"
    ids = [r.id for r, _ in found] + [r.id for r, _ in keyword]
    wants_vectors = config.mmr.enabled and config.mmr.similarity != "jaccard"
    vectors = index.vectors_for(ids) if found and wants_vectors else {}
    background = index.vector_background(vector) if found else None
    terms = query_terms(query)
    weights = index.term_idf(terms[:MAX_QUERY_TERMS]) if terms else {}  # the terms keyword recall read
    return Recall(found, keyword, vectors, degraded, terms, background, weights)
