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

from ..config import MemoryConfig, TemporalDecayConfig
from ..errors import MemoryInputError
from ..files.facts import parse_provenance, provenance_day
from ..types import ChunkRecord, MemorySearchResult
from .decay import age_days, decay_multiplier, known_day, newer_statements_first
from .focus import Focus, speaker
from .fusion import resolve_fusion
from .merge import Candidate, candidate_hit, candidate_key, fused_candidates, kept_by_min_score
from .mmr import Similarity, cosine_similarity_fn, mmr_rerank
from .periods import Period
from .relevance import CONFIDENT_RELEVANCE, Coverage, Label, Translations, calibration, labeller
from .weighting import weight_multiplier

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


_Scored = tuple[Candidate, int, float, float, float]
"""A candidate the min-score cut kept: ``(candidate, its place among the merged, score, weight, decay)``."""


class _Labels:
    """Each merged candidate's ``(relevance, confident)`` by its place, worked out when first asked:
    the pool's hits need it, the candidates ranked below them only for an explicit ``min_score`` or
    a dated statement that may move older ones (a label reads the whole text of its hit)."""

    def __init__(self, merged: Sequence[Candidate], label: Label) -> None:
        self._merged, self._label = merged, label
        self._known: dict[int, tuple[float, bool]] = {}

    def __call__(self, place: int) -> tuple[float, bool]:
        known = self._known.get(place)
        if known is None:
            candidate = self._merged[place]
            known = self._known[place] = self._label(candidate[0].text, candidate[1], candidate[2])
        return known


def _hit(entry: _Scored, labels: _Labels, relevance_rank: int = 0) -> MemorySearchResult:
    candidate, place, score, weight, decay = entry
    relevance, confident = labels(place)
    return candidate_hit(candidate, score=score, weight=weight, decay=decay, relevance=relevance,
                         confident=confident, relevance_rank=relevance_rank)


def _scored(candidates: Sequence[Candidate], config: MemoryConfig, now: dt.datetime,
            access_counts: Mapping[str, int] | None, period: Period | None,
            question: str) -> list[tuple[float, float, float]]:
    """Each candidate's ``(score, weight, decay)``: what :func:`~.weighting.apply_source_weights`,
    :func:`~.focus.apply_question_focus` and :func:`~.decay.apply_temporal_decay` make of its hit."""
    sw = config.source_weights
    weights = {"evergreen": sw.evergreen, "daily": sw.daily, "session": sw.session}
    counts = access_counts or {}
    said = ([speaker(candidate[0].text) for candidate in candidates]
            if question and config.speaker_weight != 1.0 else None)
    focus = Focus.asked(question, said or (), question_weight=config.question_weight, period=period,
                        period_weight=config.period_weight, speaker_weight=config.speaker_weight)
    decay = config.temporal_decay
    multipliers: dict[float, float] = {}  # by age: daily logs share their day's
    out = []
    for n, candidate in enumerate(candidates):
        record, score, weight, decayed = candidate[0], candidate[4], 1.0, 1.0
        # Each factor applied as reweighted() applies it: only when it is not 1.0, in the stages' order.
        factor = weight_multiplier(record.file_kind, weights, counts.get(record.id, 0), config.access_weight)
        if factor != 1.0:
            score, weight = score * factor, weight * factor
        factor = focus.factor(record.text, said[n] if said is not None else None,
                              _day(record) if focus.dated else None)
        if factor != 1.0:
            score, weight = score * factor, weight * factor
        age = age_days(record.file_kind, record.updated_at, record.path, now) if decay.enabled else None
        if age is not None:
            multiplier = multipliers.get(age)
            if multiplier is None:
                multiplier = multipliers[age] = decay_multiplier(age, decay.half_life_days, decay.floor)
            score, decayed = score * multiplier, decayed * multiplier
        out.append((score, weight, decayed))
    return out


def _pool(scored: Sequence[_Scored], labels: _Labels, decay: TemporalDecayConfig, size: int
          ) -> tuple[list[MemorySearchResult], float]:
    """The first ``size`` hits ranked after decay, with their ``relevance_rank``, and the last one's score."""
    if decay.enabled and decay.newer_first < 1.0 and any(
            _written(entry[0]) and labels(entry[1])[0] >= CONFIDENT_RELEVANCE for entry in scored):
        # A written statement may move older ones: what apply_temporal_decay does, on every hit.
        decayed = newer_statements_first([_hit(entry, labels) for entry in scored], decay.newer_first,
                                         CONFIDENT_RELEVANCE)
        pool = [hit.revised(relevance_rank=position) for position, hit in enumerate(decayed[:size], start=1)]
        return pool, decayed[-1].score if decayed else 0.0
    ranked = sorted(scored, key=lambda entry: candidate_key(entry[0], entry[2]))
    pool = [_hit(entry, labels, position) for position, entry in enumerate(ranked[:size], start=1)]
    return pool, ranked[-1][2] if ranked else 0.0


def _written(candidate: Candidate) -> bool:
    """Whether the hit holds a line written on a known day: one that, answering the query,
    :func:`~.decay.newer_statements_first` may move older hits for."""
    return provenance_day(parse_provenance(candidate[0].text)) is not None


def _day(record: ChunkRecord) -> dt.date | None:
    return known_day(parse_provenance(record.text), record.path, record.file_kind, record.updated_at)


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

    The result is that of the stage functions composed (:func:`~.merge.merge_candidates`,
    :func:`~.relevance.annotate_relevance`, :func:`~.relevance.relevant` or
    :func:`~.merge.filter_min_score`, :func:`~.weighting.apply_source_weights`,
    :func:`~.focus.apply_question_focus`, :func:`~.decay.apply_temporal_decay`, then the pool and
    :func:`~.mmr.mmr_rerank`), worked out on the merged candidates' numbers: a hit is made only for
    those in the pool (for every candidate when a newer statement may move older ones). No stage's
    factor depends on a score, and the order is sorted on a key unique to each chunk, so the scores
    and the order are those of re-sorting after each stage.

    Raises:
        ValueError: if ``max_results`` is smaller than 1.
    """
    k = config.max_results if max_results is None else max_results
    if k < 1:
        raise MemoryInputError(f"max_results must be at least 1, got {k}")
    when = now if now is not None else dt.datetime.now()
    fusion = resolve_fusion(config.fusion, config.rrf_k)
    coverage = Coverage(recall.terms, recall.term_weights, recall.translations)  # shared by both stages
    merged = fused_candidates(
        recall.vector,
        recall.keyword,
        vector_weight=config.vector_weight,
        text_weight=config.text_weight,
        fusion=fusion.combine,
        calibrate=(calibration(recall.terms, recall.background, recall.term_weights, recall.keyword,
                               recall.translations, coverage)
                   if fusion.calibrated else None),
    )
    labels = _Labels(merged, labeller(recall.terms, recall.background, coverage,
                                      keyword_only=all(candidate[1] is None for candidate in merged)))
    if fusion.cuts_merged:  # the seed: min_score cuts the merged score
        kept = kept_by_min_score([candidate[4] for candidate in merged], config.min_score or 0.0)
    elif config.min_score is None:
        kept = list(range(len(merged)))
    else:
        kept = [i for i in range(len(merged)) if labels(i)[0] >= config.min_score]
    numbers = _scored([merged[i] for i in kept], config, when, access_counts, period, question)
    scored = [(merged[i], i, *final) for i, final in zip(kept, numbers, strict=True)]
    pool, lowest = _pool(scored, labels, config.temporal_decay, config.mmr.pool_multiplier * k)
    reranked = pool
    if config.mmr.enabled and config.mmr.lambda_ < 1.0 and len(pool) > 1:
        similarity = _pool_similarity(pool, recall.vectors, config.mmr.similarity)
        reranked = mmr_rerank(pool, lambda_=config.mmr.lambda_, similarity=similarity,
                              duplicate_threshold=config.mmr.duplicate_threshold,
                              # the weakest candidate recall found, so the pool's last is not 0
                              # (the lowest merged score, merge's last, or the ranking's last)
                              relevance_floor=min(min(c[4] for c in merged), lowest), limit=k)
    top = reranked[:k]

    counts = (len(recall.vector), len(recall.keyword), len(merged), len(kept), len(kept), len(pool), len(top))
    funnel = dict(zip(FUNNEL_STAGES, counts, strict=True))
    logger.debug("search funnel %s (degraded: %s)", funnel, recall.degraded)
    return RankedResults(hits=top, funnel=funnel, degraded=recall.degraded)
