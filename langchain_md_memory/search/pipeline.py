"""A search as a list of named steps, in the order they run: the one place that order is written.

1. **recall**: the question's candidates from the two paths, vector and keyword (:class:`Recall`),
   read by the :class:`~.searcher.Searcher` from its index and every memory searched with it
   (:func:`~.retrieve.retrieve`). Everything below is computed from it, without I/O.
2. **expire** (:func:`expire`): facts past their ``expires:`` day leave the candidates (:mod:`.expiry`).
3. **fuse** (:func:`fuse`): one candidate a chunk, the two paths' scores fused into one
   (:mod:`.merge`, :mod:`.fusion`); each labelled with its relevance (:mod:`.relevance`).
4. **cut** (:func:`cut`): an explicit ``min_score`` drops the weaker candidates.
5. **weigh** (:func:`weigh`): source weights and access counts (:mod:`.weighting`), and how well
   each fits what the question asks (:mod:`.question_fit`).
6. **decay** (:func:`decay`): recent logs count more, a newer written statement goes before older
   ones (:mod:`.decay`); the candidates ranked.
7. **MMR** (:func:`mmr`): the first ``mmr.pool_multiplier × k`` reordered so near-duplicates do not
   crowd the top (:mod:`.mmr`).
8. **top k** (:func:`top_k`): the first ``k``.
9. **restated order** (:func:`restated_order`): a hit restating a superseded fact goes below the hit
   holding its replacement (:mod:`.superseded`).
10. **as-of** (:func:`as_of`): for a day in the past, the facts that held then first (:mod:`.asof`).

:func:`run` is steps 2 to 10; :func:`rank` is steps 3 to 8 (what recall found, ranked). The few reads
a step needs besides recall are the searcher's, handed in as data: access counts (step 5), the facts
valid on an as-of day (step 10), and the function reading the facts struck in the files step 9 names.

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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from ..config import MemoryConfig, MMRConfig, RankingConfig, TemporalDecayConfig
from ..errors import MemoryInputError
from ..files.facts import parse_provenance, provenance_day
from ..types import ChunkRecord, MemorySearchResult
from .asof import AsOf, answer_as_of
from .decay import age_days, decay_multiplier, known_day, newer_statements_first
from .expiry import holds_expiry, live_candidates
from .fusion import resolve_fusion
from .merge import Candidate, candidate_hit, candidate_key, fused_candidates, kept_by_min_score
from .mmr import Similarity, cosine_similarity_fn, mmr_rerank
from .periods import Period
from .question_fit import QuestionFit, speaker
from .relevance import CONFIDENT_RELEVANCE, Coverage, Label, Translations, calibration, labeller
from .superseded import restated_below_successors, successor_paths
from .weighting import weight_multiplier

__all__ = [
    "FUNNEL_STAGES", "Fused", "Labels", "RankedResults", "Ranking", "Recall", "Scored", "StruckFacts",
    "as_of", "cut", "decay", "expire", "fuse", "mmr", "rank", "restated_order", "run", "top_k", "weigh",
]

logger = logging.getLogger(__name__)

FUNNEL_STAGES = ("vector", "keyword", "merged", "min_score", "decay", "mmr_pool", "top_k")
"""Keys of :attr:`RankedResults.funnel` of :func:`rank`, in pipeline order (:func:`run` adds ``expired``
and ``restated``)."""


@dataclass(frozen=True, slots=True)
class Recall:
    """What the two recall paths returned for one query.

    ``vector`` scores are cosine similarities clipped to [0, 1]; ``keyword``
    scores are BM25 normalised into (0, 1]. ``vectors`` optionally maps chunk
    id to its embedding, for cosine similarity in MMR. ``degraded`` says why
    the vector path is missing when it failed (``None`` when it ran).
    ``terms`` are the query's keyword terms, ``term_weights`` their idf in the
    memory and ``background`` the mean and spread of the query's cosine to the
    memory's notes: what relevance is measured with (a
    :class:`~langchain_md_memory.index.scoring.HitsBackground` names the hits it does not measure).
    ``translations`` maps query terms to the terms of their translations the memory holds, when
    keyword recall also searched with those (its hits are in ``keyword``, at ``CROSSED_WEIGHT`` of
    their score).
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

    ``funnel`` has the keys of :data:`FUNNEL_STAGES`, in that order (a search's then ``expired`` and
    ``restated``, :func:`run`). ``as_of`` is the day an as-of
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


StruckFacts = Callable[[set[str]], Mapping[str, Sequence[tuple[str, dt.date]]]]
"""Reads the facts struck (``## History``) in each of these files that has some, with the day each was
superseded (:func:`~langchain_md_memory.files.sections.superseded_statements`)."""


def _nothing_struck(paths: set[str]) -> Mapping[str, Sequence[tuple[str, dt.date]]]:
    return {}


def run(
    recall: Recall,
    config: MemoryConfig,
    *,
    question: str,
    today: dt.date,
    max_results: int | None = None,
    period: Period | None = None,
    asked: AsOf | None = None,
    access_counts: Mapping[str, int] | None = None,
    struck_facts: StruckFacts = _nothing_struck,
    now: dt.datetime | None = None,
) -> RankedResults:
    """Steps 2 to 10 over what recall (step 1) found for ``question``: the search's answer.

    ``today`` is the day facts expire by; ``period`` the one the question names (see
    :func:`~.periods.named_period`); ``asked`` an as-of search's day and the facts valid then;
    ``struck_facts`` reads the facts struck in the files step 9 asks for. The funnel has
    :func:`rank`'s counts, then ``expired`` and ``restated``; the others as in :func:`rank`.
    """
    k = config.max_results if max_results is None else max_results
    live, expired = expire(recall, today)  # 2
    # 3 to 8. A strict as-of search keeps only the lines written by its day: it ranks twice as many.
    ranked = rank(live, config, max_results=2 * k if asked is not None and asked.strict else k, now=now,
                  access_counts=access_counts, period=period, question=question)
    hits, restated = restated_order(ranked.hits, struck_facts, config.ranking.temporal_decay.newer_first)  # 9
    ranked = RankedResults(hits, {**ranked.funnel, "expired": expired, "restated": restated}, ranked.degraded)
    return as_of(ranked, asked, k) if asked is not None else ranked  # 10


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
    """Steps 3 to 8 over ``recall``: the top ``max_results`` hits.

    ``max_results`` defaults to ``config.max_results``; ``now`` (default: the
    local time) is the reference for temporal decay; ``access_counts`` maps
    chunk id to how often it was returned before (used when
    ``config.ranking.access_weight > 0``); ``period`` the one the question names (see
    :func:`~.periods.named_period`; hits dated outside it weigh less, :mod:`.question_fit`); ``question``
    the query as asked (a speaker it names weighs the lines of others less, :mod:`.question_fit`). Each
    hit's ``score`` is final (merged × weight × decay); MMR only reorders, and ``relevance_rank`` is the
    hit's 1-based rank before MMR.

    The result is that of the stage functions composed (:func:`~.merge.merge_candidates`,
    :func:`~.relevance.annotate_relevance`, :func:`~.relevance.relevant` or
    :func:`~.merge.filter_min_score`, :func:`~.weighting.apply_source_weights`,
    :func:`~.question_fit.apply_question_fit`, :func:`~.decay.apply_temporal_decay`, then the pool and
    :func:`~.mmr.mmr_rerank`), worked out on the merged candidates' numbers: a hit is made only for
    those in the pool (for every candidate when a newer statement may move older ones). No stage's
    factor depends on a score, and the order is sorted on a key unique to each chunk, so the scores
    and the order are those of re-sorting after each stage.

    Raises:
        MemoryInputError: if ``max_results`` is smaller than 1.
    """
    k = config.max_results if max_results is None else max_results
    if k < 1:
        raise MemoryInputError(f"max_results must be at least 1, got {k}")
    when = now if now is not None else dt.datetime.now()
    settings = config.ranking
    fused = fuse(recall, settings)  # 3
    kept = cut(fused, settings.min_score)  # 4
    weighed = weigh(fused, kept, settings, access_counts=access_counts, period=period, question=question)  # 5
    ranking = decay(fused, weighed, settings.temporal_decay, when)  # 6
    pool, reranked = mmr(ranking, settings.mmr, recall.vectors, k)  # 7
    top = top_k(reranked, k)  # 8

    counts = (len(recall.vector), len(recall.keyword), len(fused.candidates), len(kept), len(kept), len(pool),
              len(top))
    funnel = dict(zip(FUNNEL_STAGES, counts, strict=True))
    logger.debug("search funnel %s (degraded: %s)", funnel, recall.degraded)
    return RankedResults(hits=top, funnel=funnel, degraded=recall.degraded)


def expire(recall: Recall, today: dt.date) -> tuple[Recall, int]:
    """Step 2: ``recall`` without the facts expired by ``today`` (:mod:`.expiry`), and how many candidates
    it dropped; ``recall`` itself when no candidate has an expiry."""
    if not (holds_expiry(recall.vector) or holds_expiry(recall.keyword)):
        return recall, 0
    vector, keyword = live_candidates(recall.vector, today), live_candidates(recall.keyword, today)
    gone = len(recall.vector) + len(recall.keyword) - len(vector) - len(keyword)
    return replace(recall, vector=vector, keyword=keyword), gone


class Labels:
    """Each fused candidate's ``(relevance, confident)`` by its place, worked out when first asked:
    the pool's hits need it, the candidates ranked below them only for an explicit ``min_score`` or
    a dated statement that may move older ones (a label reads the whole text of its hit)."""

    def __init__(self, candidates: Sequence[Candidate], label: Label) -> None:
        self._candidates, self._label = candidates, label
        self._known: dict[int, tuple[float, bool]] = {}

    def __call__(self, place: int) -> tuple[float, bool]:
        known = self._known.get(place)
        if known is None:
            candidate = self._candidates[place]
            known = self._known[place] = self._label(candidate.record.id, candidate.record.text,
                                                     candidate.vector_score, candidate.keyword_score)
        return known


@dataclass(frozen=True, slots=True)
class Fused:
    """Step 3's result: one candidate a chunk, in the order recall first returned them, and their labels.

    ``cuts_merged``: the fusion's ``min_score`` cuts the merged score (as the specification's does), not
    the relevance.
    """

    candidates: list[Candidate]
    labels: Labels
    cuts_merged: bool


def fuse(recall: Recall, config: RankingConfig) -> Fused:
    """Step 3: the candidates of both paths merged by chunk, scored by ``config.fusion`` (of calibrated
    evidence for the default, :func:`~.relevance.calibration`), and labelled
    (:func:`~.relevance.labeller`)."""
    fusion = resolve_fusion(config.fusion, config.rrf_k)
    coverage = Coverage(recall.terms, recall.term_weights, recall.translations)  # shared by both
    candidates = fused_candidates(
        recall.vector,
        recall.keyword,
        vector_weight=config.vector_weight,
        text_weight=config.text_weight,
        fusion=fusion.combine,
        calibrate=(calibration(recall.terms, recall.background, recall.term_weights, recall.keyword,
                               recall.translations, coverage)
                   if fusion.calibrated else None),
    )
    keyword_only = all(candidate.vector_score is None for candidate in candidates)
    label = labeller(recall.terms, recall.background, coverage, keyword_only=keyword_only)
    return Fused(candidates, Labels(candidates, label), fusion.cuts_merged)


def cut(fused: Fused, min_score: float | None) -> list[int]:
    """Step 4: the places (in ``fused.candidates``) of the candidates an explicit ``min_score`` keeps.

    It cuts the relevance (:mod:`.relevance`); nothing by default. The specification's fusion cuts the merged
    score, by 0 when ``min_score`` is ``None``.
    """
    if fused.cuts_merged:
        return kept_by_min_score([candidate.merged_score for candidate in fused.candidates], min_score or 0.0)
    if min_score is None:
        return list(range(len(fused.candidates)))
    return [place for place in range(len(fused.candidates)) if fused.labels(place)[0] >= min_score]


@dataclass(frozen=True, slots=True)
class Scored:
    """The kept candidates' numbers after a step, one list a number: the ``n``-th kept candidate is
    ``candidates[kept[n]]`` of :class:`Fused`; ``score[n]`` its score so far, ``weight[n]`` and
    ``decay[n]`` the multipliers it was given (recorded in its hit)."""

    kept: list[int]
    score: list[float]
    weight: list[float]
    decay: list[float]


def weigh(fused: Fused, kept: list[int], config: RankingConfig, *, access_counts: Mapping[str, int] | None,
          period: Period | None, question: str) -> Scored:
    """Step 5: each kept candidate's merged score times its source weight and access boost
    (:func:`~.weighting.weight_multiplier`) and its fit to ``question`` (:class:`~.question_fit.QuestionFit`),
    both recorded in its ``weight``."""
    sw = config.source_weights
    weights = {"evergreen": sw.evergreen, "daily": sw.daily, "session": sw.session}
    counts = access_counts or {}
    candidates = fused.candidates
    said = ([speaker(candidates[place].record.text) for place in kept]
            if question and config.speaker_weight != 1.0 else None)
    fit = QuestionFit.asked(question, said or (), question_weight=config.question_weight, period=period,
                            period_weight=config.period_weight, speaker_weight=config.speaker_weight)
    scores, weighed = [], []
    for n, place in enumerate(kept):
        candidate = candidates[place]
        record, score, weight = candidate.record, candidate.merged_score, 1.0
        # Each factor applied as reweighted() applies it: only when it is not 1.0, in the stages' order.
        factor = weight_multiplier(record.file_kind, weights, counts.get(record.id, 0), config.access_weight)
        if factor != 1.0:
            score, weight = score * factor, weight * factor
        factor = fit.factor(record.text, said[n] if said is not None else None,
                            _day(record) if fit.dated else None)
        if factor != 1.0:
            score, weight = score * factor, weight * factor
        scores.append(score)
        weighed.append(weight)
    return Scored(kept, scores, weighed, [1.0] * len(kept))


@dataclass(frozen=True, slots=True)
class Ranking:
    """Step 6's result: the kept candidates, best first. A hit is made only for those shown
    (:meth:`head`): ``order`` lists their positions in ``scored``; when a newer statement moved older
    ones, ``hits`` holds every hit instead, in order."""

    fused: Fused
    scored: Scored
    order: Sequence[int] = ()
    hits: list[MemorySearchResult] | None = None

    def head(self, size: int) -> list[MemorySearchResult]:
        """The first ``size`` hits, each with its 1-based ``relevance_rank``."""
        if self.hits is not None:
            return [hit.revised(relevance_rank=rank) for rank, hit in enumerate(self.hits[:size], start=1)]
        return [_hit(self.fused, self.scored, n, rank) for rank, n in enumerate(self.order[:size], start=1)]

    @property
    def lowest(self) -> float:
        """The last one's score (0.0 when none is left)."""
        if self.hits is not None:
            return self.hits[-1].score if self.hits else 0.0
        return self.scored.score[self.order[-1]] if self.order else 0.0


def decay(fused: Fused, weighed: Scored, config: TemporalDecayConfig, now: dt.datetime) -> Ranking:
    """Step 6: each dated candidate's score times its decay (:func:`~.decay.decay_multiplier` of its
    age on ``now``), recorded in its ``decay``; then ranked, a written statement answering the query
    before older dated hits of comparable score (:func:`~.decay.newer_statements_first`)."""
    candidates = fused.candidates
    scores, decays = weighed.score, weighed.decay
    if config.enabled:
        multipliers: dict[float, float] = {}  # by age: daily logs share their day's
        scores, decays = [], []
        for place, score in zip(weighed.kept, weighed.score, strict=True):
            record, decayed = candidates[place].record, 1.0
            age = age_days(record.file_kind, record.updated_at, record.path, now)
            if age is not None:
                multiplier = multipliers.get(age)
                if multiplier is None:
                    multiplier = multipliers[age] = decay_multiplier(age, config.half_life_days, config.floor)
                score, decayed = score * multiplier, decayed * multiplier
            scores.append(score)
            decays.append(decayed)
    scored = Scored(weighed.kept, scores, weighed.weight, decays)
    if config.enabled and config.newer_first < 1.0 and any(
            _written(candidates[place]) and fused.labels(place)[0] >= CONFIDENT_RELEVANCE
            for place in scored.kept):
        # A written statement may move older ones: what apply_temporal_decay does, on every hit.
        hits = [_hit(fused, scored, n) for n in range(len(scored.kept))]
        return Ranking(fused, scored, hits=newer_statements_first(hits, config.newer_first,
                                                                   CONFIDENT_RELEVANCE))
    kept = scored.kept
    return Ranking(fused, scored, sorted(range(len(kept)),
                                         key=lambda n: candidate_key(candidates[kept[n]], scores[n])))


def mmr(ranking: Ranking, config: MMRConfig, vectors: Mapping[str, np.ndarray], k: int
        ) -> tuple[list[MemorySearchResult], list[MemorySearchResult]]:
    """Step 7: the pool, the first ``config.pool_multiplier × k`` of the ranking, and the pool reordered
    by maximal marginal relevance (:func:`~.mmr.mmr_rerank`; the pool as it is when MMR is off)."""
    pool = ranking.head(config.pool_multiplier * k)
    if not (config.enabled and config.lambda_ < 1.0 and len(pool) > 1):
        return pool, pool
    similarity = _pool_similarity(pool, vectors, config.similarity)
    # The weakest candidate recall found, so the pool's last is not 0 (the lowest merged score, merge's
    # last, or the ranking's last).
    floor = min(min(candidate.merged_score for candidate in ranking.fused.candidates), ranking.lowest)
    return pool, mmr_rerank(pool, lambda_=config.lambda_, similarity=similarity,
                            duplicate_threshold=config.duplicate_threshold, relevance_floor=floor, limit=k)


def top_k(hits: list[MemorySearchResult], k: int) -> list[MemorySearchResult]:
    """Step 8: the first ``k`` hits."""
    return hits[:k]


def restated_order(hits: list[MemorySearchResult], struck_facts: StruckFacts, newer_first: float
                   ) -> tuple[list[MemorySearchResult], int]:
    """Step 9: a dated hit restating a fact superseded in the file of a hit below it goes below that
    hit (:func:`~.superseded.restated_below_successors`), and how many hits changed place.

    ``struck_facts`` is asked only for the files whose struck facts could move a hit
    (:func:`~.superseded.successor_paths`). Off, as newer statements first, when ``newer_first`` is 1.
    """
    if not newer_first < 1.0:
        return hits, 0
    moved = restated_below_successors(hits, struck_facts(successor_paths(hits)))
    return moved, sum(a.chunk_id != b.chunk_id for a, b in zip(moved, hits, strict=True))


def as_of(ranked: RankedResults, asked: AsOf, k: int) -> RankedResults:
    """Step 10: ``ranked`` answered as of ``asked.day``, at most ``k`` hits: the struck facts that held
    then and are near enough the question first (:func:`~.asof.answer_as_of`)."""
    hits = answer_as_of(ranked.hits, asked, k)
    return RankedResults(hits, {**ranked.funnel, "top_k": len(hits)}, ranked.degraded, asked.day)


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


def _hit(fused: Fused, scored: Scored, n: int, relevance_rank: int = 0) -> MemorySearchResult:
    """The hit of the ``n``-th kept candidate, with its numbers and label."""
    place = scored.kept[n]
    relevance, confident = fused.labels(place)
    return candidate_hit(fused.candidates[place], score=scored.score[n], weight=scored.weight[n],
                         decay=scored.decay[n], relevance=relevance, confident=confident,
                         relevance_rank=relevance_rank)


def _written(candidate: Candidate) -> bool:
    """Whether the hit holds a line written on a known day: one that, answering the query,
    :func:`~.decay.newer_statements_first` may move older hits for."""
    return provenance_day(parse_provenance(candidate.record.text)) is not None


def _day(record: ChunkRecord) -> dt.date | None:
    return known_day(parse_provenance(record.text), record.path, record.file_kind, record.updated_at)
