"""The five search stages composed: merge → min-score → weights → decay → MMR → top-K.

:func:`rank` is pure: it takes what the two recall paths returned (a
:class:`Recall`) and a :class:`~langchain_md_memory.config.MemoryConfig`, and
returns the final hits plus how many candidates survived each stage.

Example:
    .. code-block:: python

        from langchain_md_memory.config import MemoryConfig
        from langchain_md_memory.search import Recall, rank
        from langchain_md_memory.types import ChunkRecord

        record = ChunkRecord("c1", "MEMORY.md", 1, 3, "", "风险偏好：稳健", "h", "evergreen", 0.0)
        ranked = rank(Recall(vector=[], keyword=[(record, 0.8)]), MemoryConfig())
        assert ranked.hits[0].score == 0.8  # keyword-only: weight 1, evergreen: no decay
        assert ranked.funnel["top_k"] == 1
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..config import MemoryConfig
from ..errors import MemoryInputError
from ..types import ChunkRecord, MemorySearchResult
from .decay import apply_temporal_decay
from .focus import apply_question_focus
from .fusion import resolve_fusion
from .merge import filter_min_score, merge_candidates
from .mmr import Similarity, cosine_similarity_fn, mmr_rerank
from .periods import Period
from .relevance import CONFIDENT_RELEVANCE, Coverage, Translations, annotate_relevance, calibration, relevant
from .weighting import apply_source_weights

__all__ = ["FUNNEL_STAGES", "RankedResults", "Recall", "rank"]

logger = logging.getLogger(__name__)

FUNNEL_STAGES = ("vector", "keyword", "merged", "min_score", "decay", "mmr_pool", "top_k")
"""Keys of :attr:`RankedResults.funnel`, in pipeline order."""


@dataclass(frozen=True, slots=True)
class Recall:
    """What the two recall paths returned for one query.

    ``vector`` scores are cosine similarities clipped to [0, 1]; ``keyword``
    scores are BM25 normalised into (0, 1]. ``vectors`` optionally maps chunk
    id to its embedding, for cosine similarity in MMR. ``degraded`` says why
    the vector path is missing when it failed (``None`` when it ran).
    ``terms`` are the query's keyword terms, ``term_weights`` their idf in the
    memory and ``background`` the mean and spread of the query's cosine to the
    memory's notes: what relevance is measured with. ``translations`` maps query terms
    to the terms of their translations the memory holds, when keyword recall also
    searched with those (its hits are in ``keyword``, at ``CROSSED_WEIGHT`` of their score).
    """

    vector: Sequence[tuple[ChunkRecord, float]]
    keyword: Sequence[tuple[ChunkRecord, float]]
    vectors: Mapping[str, np.ndarray] = field(default_factory=dict)
    degraded: str | None = None
    terms: Sequence[str] = ()
    background: tuple[float, float] | None = None
    term_weights: Mapping[str, float] = field(default_factory=dict)
    translations: Translations = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RankedResults:
    """The final hits, the candidate count after each stage, and any degradation.

    ``funnel`` has the keys of :data:`FUNNEL_STAGES`, in that order. ``as_of`` is the day an as-of
    search answered for (given by the caller or read from the question), ``None`` for the present.
    """

    hits: list[MemorySearchResult]
    funnel: dict[str, int]
    degraded: str | None
    as_of: dt.date | None = None

    @property
    def confident(self) -> bool:
        """True when some hit is labelled ``confident``: the memory holds an answer, not only near misses."""
        return any(hit.confident for hit in self.hits)


def _pool_similarity(
    pool: Sequence[MemorySearchResult], vectors: Mapping[str, np.ndarray], mode: str
) -> Similarity | None:
    """Cosine when asked (or ``auto``) and every pool hit has a vector; else ``None`` (Jaccard)."""
    if mode == "jaccard":
        return None
    similarity = cosine_similarity_fn([vectors.get(hit.chunk_id) for hit in pool])
    if similarity is None and mode == "cosine":
        logger.info("MMR similarity 'cosine' requested but vectors are missing; using Jaccard")
    return similarity


def rank(
    recall: Recall,
    config: MemoryConfig,
    *,
    max_results: int | None = None,
    now: dt.datetime | None = None,
    access_counts: Mapping[str, int] | None = None,
    period: Period | None = None,
    question: str = "",
) -> RankedResults:
    """Run stages 1–5 over ``recall`` and return the top ``max_results`` hits.

    ``max_results`` defaults to ``config.max_results``; ``now`` (default: the
    local time) is the reference for temporal decay; ``access_counts`` maps
    chunk id to how often it was returned before (used when
    ``config.access_weight > 0``); ``period`` the one the question names (see
    :func:`~.periods.named_period`; hits dated outside it weigh less, :mod:`.focus`); ``question``
    the query as asked (a speaker it names weighs the lines of others less, :mod:`.focus`). Each hit's
    ``score`` is final (merged × weight × decay); MMR only reorders, and ``relevance_rank`` is the
    hit's 1-based rank before MMR.

    Raises:
        ValueError: if ``max_results`` is smaller than 1.
    """
    k = config.max_results if max_results is None else max_results
    if k < 1:
        raise MemoryInputError(f"max_results must be at least 1, got {k}")
    when = now if now is not None else dt.datetime.now()
    fusion = resolve_fusion(config.fusion, config.rrf_k)
    coverage = Coverage(recall.terms, recall.term_weights, recall.translations)  # shared by both stages
    merged = merge_candidates(
        recall.vector,
        recall.keyword,
        vector_weight=config.vector_weight,
        text_weight=config.text_weight,
        fusion=fusion.combine,
        calibrate=(calibration(recall.terms, recall.background, recall.term_weights, recall.keyword,
                               recall.translations, coverage)
                   if fusion.calibrated else None),
    )
    merged = annotate_relevance(merged, recall.terms, recall.background, recall.term_weights,
                                recall.translations, coverage)
    if fusion.cuts_merged:  # the seed: min_score cuts the merged score
        filtered = filter_min_score(merged, config.min_score or 0.0)
    else:
        filtered = relevant(merged, config.min_score)
    sw = config.source_weights
    weighted = apply_source_weights(
        filtered,
        weights={"evergreen": sw.evergreen, "daily": sw.daily, "session": sw.session},
        access_counts=access_counts,
        access_weight=config.access_weight,
    )
    focused = apply_question_focus(
        weighted,
        period=period,
        question_weight=config.question_weight,
        period_weight=config.period_weight,
        question=question,
        speaker_weight=config.speaker_weight,
    )
    # Called even when disabled: it re-sorts after the weights changed scores.
    decayed = apply_temporal_decay(
        focused,
        half_life_days=config.temporal_decay.half_life_days,
        now=when,
        enabled=config.temporal_decay.enabled,
        floor=config.temporal_decay.floor,
        newer_first=config.temporal_decay.newer_first,
        newer_relevance=CONFIDENT_RELEVANCE,  # the bar of a hit that answers the query
    )
    pool = [
        hit.revised(relevance_rank=position)
        for position, hit in enumerate(decayed[: config.mmr.pool_multiplier * k], start=1)
    ]
    reranked = pool
    if config.mmr.enabled and config.mmr.lambda_ < 1.0 and len(pool) > 1:
        similarity = _pool_similarity(pool, recall.vectors, config.mmr.similarity)
        reranked = mmr_rerank(pool, lambda_=config.mmr.lambda_, similarity=similarity,
                              duplicate_threshold=config.mmr.duplicate_threshold,
                              # the weakest candidate recall found, so the pool's last is not 0
                              relevance_floor=min(merged[-1].score, decayed[-1].score), limit=k)
    top = reranked[:k]

    stages = (recall.vector, recall.keyword, merged, filtered, decayed, pool, top)
    funnel = {name: len(items) for name, items in zip(FUNNEL_STAGES, stages, strict=True)}
    logger.debug("search funnel %s (degraded: %s)", funnel, recall.degraded)
    return RankedResults(hits=top, funnel=funnel, degraded=recall.degraded)
