"""rank() gives what its public stages give composed one after another, hit for hit and field for field.

rank() works on the merged candidates' numbers and makes hits only for its pool; this checks it
against the stages as documented (merge, relevance labels, the min-score cut, source weights, the
question's focus, decay with newer statements first, the pool, MMR) over random recalls holding
what moves each stage: dated logs, sessions, written provenance, questions, speakers and dates.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from langchain_md_memory.config import MemoryConfig
from langchain_md_memory.files.paths import file_kind
from langchain_md_memory.search import (
    Recall,
    apply_source_weights,
    apply_temporal_decay,
    cosine_similarity_fn,
    filter_min_score,
    merge_candidates,
    mmr_rerank,
    rank,
)
from langchain_md_memory.search.fusion import resolve_fusion, weighted_fusion
from langchain_md_memory.search.periods import Period
from langchain_md_memory.search.pipeline import FUNNEL_STAGES, RankedResults
from langchain_md_memory.search.question_fit import apply_question_fit
from langchain_md_memory.search.relevance import (
    CONFIDENT_RELEVANCE,
    Coverage,
    annotate_relevance,
    calibration,
    relevant,
)
from langchain_md_memory.types import ChunkRecord, MemorySearchResult

NOW = dt.datetime(2026, 3, 31, 9, 30)
PATHS = ["MEMORY.md", "goals.md", "2026-03-31.md", "2026-03-20.md", "2026-01-15.md", "2025-12-01.md",
         "sessions/s1.md", "sessions/s2.md"]
WORDS = ["retire", "rent", "risk", "goal", "painting", "lake", "仓位", "股票", "rotation", "biweekly"]
SPEAKERS = ["", "Ann (2:05 pm on 3 March, 2026): ", "Bob: ", "Ann: "]
TAILS = ["", "?", " on 12 March 2026", " <!-- src: thread=a 2026-03-25 -->",
         " <!-- src: thread=b 2026-01-02 -->", "\n<!-- src: msg=c 2026-03-30 -->?"]
QUESTIONS = ["", "What did Ann paint?", "retire risk", "What did Ann and Bob say?", "rent in March 2026"]
PERIODS = [None, Period(start=dt.date(2026, 3, 1), end=dt.date(2026, 3, 31)), Period(month=1)]
VARIANTS: dict[str, dict[str, Any]] = {
    "default": {},
    "raw_cut": {"ranking": {"fusion": "weighted_raw", "min_score": 0.3}},
    "minmax": {"ranking": {"fusion": "minmax"}},
    "rrf": {"ranking": {"fusion": "rrf", "rrf_k": 5}},
    "cut": {"ranking": {"min_score": 0.2}},
    "weights": {"ranking": {"source_weights": {"daily": 0.8, "session": 0.5, "evergreen": 1.2},
                            "access_weight": 0.3}},
    "newer": {"ranking": {"temporal_decay": {"newer_first": 0.3, "floor": 0.0, "half_life_days": 10}}},
    "no_newer": {"ranking": {"temporal_decay": {"newer_first": 1.0}}},
    "no_decay": {"ranking": {"temporal_decay": {"enabled": False}}},
    "no_mmr": {"ranking": {"mmr": {"enabled": False}}},
    "cosine": {"ranking": {"mmr": {"similarity": "auto", "duplicate_threshold": 0.0, "lambda": 0.4}}},
    "pool": {"ranking": {"mmr": {"pool_multiplier": 4, "duplicate_threshold": 0.1, "lambda": 0.3}}},
    "focus": {"ranking": {"question_weight": 0.3, "period_weight": 0.2, "speaker_weight": 0.1}},
}
CONFIGS = [MemoryConfig().merged(**variant) for variant in VARIANTS.values()]
CONFIGS.append(MemoryConfig(ranking={"fusion": weighted_fusion}))  # a function: no calibration


def staged_rank(recall: Recall, config: MemoryConfig, *, max_results: int, now: dt.datetime,
                access_counts: Mapping[str, int] | None, period: Period | None,
                question: str) -> RankedResults:
    """rank() as the stages it composes, each making and re-sorting every hit."""
    k = max_results
    ranking = config.ranking
    fusion = resolve_fusion(ranking.fusion, ranking.rrf_k)
    coverage = Coverage(recall.terms, recall.term_weights, recall.translations)
    merged = merge_candidates(
        recall.vector, recall.keyword, vector_weight=ranking.vector_weight, text_weight=ranking.text_weight,
        fusion=fusion.combine,
        calibrate=(calibration(recall.terms, recall.background, recall.term_weights, recall.keyword,
                               recall.translations, coverage) if fusion.calibrated else None))
    merged = annotate_relevance(merged, recall.terms, recall.background, recall.term_weights,
                                recall.translations, coverage)
    if fusion.cuts_merged:
        filtered = filter_min_score(merged, ranking.min_score or 0.0)
    else:
        filtered = relevant(merged, ranking.min_score)
    sw = ranking.source_weights
    weighted = apply_source_weights(
        filtered, weights={"evergreen": sw.evergreen, "daily": sw.daily, "session": sw.session},
        access_counts=access_counts, access_weight=ranking.access_weight)
    focused = apply_question_fit(weighted, period=period, question_weight=ranking.question_weight,
                                 period_weight=ranking.period_weight, question=question,
                                 speaker_weight=ranking.speaker_weight)
    decay = ranking.temporal_decay
    decayed = apply_temporal_decay(focused, half_life_days=decay.half_life_days, now=now,
                                   enabled=decay.enabled, floor=decay.floor, newer_first=decay.newer_first,
                                   newer_relevance=CONFIDENT_RELEVANCE)
    size = ranking.mmr.pool_multiplier * k
    pool = [hit.revised(relevance_rank=n) for n, hit in enumerate(decayed[:size], start=1)]
    reranked = pool
    if ranking.mmr.enabled and ranking.mmr.lambda_ < 1.0 and len(pool) > 1:
        similarity = None
        if ranking.mmr.similarity != "jaccard":
            similarity = cosine_similarity_fn([recall.vectors.get(hit.chunk_id) for hit in pool])
        reranked = mmr_rerank(pool, lambda_=ranking.mmr.lambda_, similarity=similarity,
                              duplicate_threshold=ranking.mmr.duplicate_threshold,
                              relevance_floor=min(merged[-1].score, decayed[-1].score), limit=k)
    top = reranked[:k]
    stages = (recall.vector, recall.keyword, merged, filtered, decayed, pool, top)
    funnel = {name: len(items) for name, items in zip(FUNNEL_STAGES, stages, strict=True)}
    return RankedResults(hits=top, funnel=funnel, degraded=recall.degraded)


def exactly(hit: MemorySearchResult) -> tuple[str, ...]:
    """Every field, its type included: 0.0 and -0.0, 1 and 1.0 and True differ."""
    return tuple(f"{type(value).__name__}:{value!r}"
                 for value in (getattr(hit, f.name) for f in dataclasses.fields(hit)))


scores = st.sampled_from([0.0, 0.2, 0.5, 0.5, 0.8, 1.0]) | st.floats(0.0, 1.0, allow_nan=False)


@st.composite
def recalls(draw: st.DrawFn) -> Recall:
    records = []
    for i in range(draw(st.integers(0, 16))):
        path = draw(st.sampled_from(PATHS))
        words = " ".join(draw(st.lists(st.sampled_from(WORDS), max_size=6)))
        text = draw(st.sampled_from(SPEAKERS)) + words + draw(st.sampled_from(TAILS))
        kind = file_kind(path)
        updated = NOW.timestamp() - draw(st.floats(-2, 90)) * 86_400 if kind == "session" else 0.0
        line = draw(st.integers(1, 9))
        records.append(ChunkRecord(f"c{i}", path, line, 10, "", text, str(i), kind, updated))
    vector = [(draw(st.sampled_from(records)), draw(scores)) for _ in range(draw(st.integers(0, 12)))] \
        if records else []
    keyword = [(draw(st.sampled_from(records)), draw(scores)) for _ in range(draw(st.integers(0, 12)))] \
        if records else []
    terms = draw(st.lists(st.sampled_from(WORDS), max_size=4, unique=True))
    weights = {term: draw(st.floats(0.1, 5.0)) for term in terms}
    background = draw(st.none() | st.tuples(st.floats(0.0, 0.8), st.floats(0.0, 0.2)))
    rng = np.random.default_rng(len(records))
    vectors = {r.id: rng.normal(size=4) for r in records if draw(st.booleans()) or len(records) % 2}
    return Recall(vector=vector, keyword=keyword, vectors=vectors, terms=terms, background=background,
                  term_weights=weights, translations={"risk": [("风险",)]} if "risk" in terms else {})


@settings(max_examples=400, deadline=None)
@given(recalls(), st.sampled_from(CONFIGS), st.integers(1, 8), st.sampled_from(QUESTIONS),
       st.sampled_from(PERIODS), st.booleans())
def test_rank_is_its_stages_composed(recall: Recall, config: MemoryConfig, k: int, question: str,
                                     period: Period | None, counted: bool) -> None:
    counts = {r.id: n % 4 for n, (r, _) in enumerate(recall.vector)} if counted else None
    args: dict[str, Any] = {"max_results": k, "now": NOW, "access_counts": counts, "period": period,
                            "question": question}
    fast, staged = rank(recall, config, **args), staged_rank(recall, config, **args)
    assert [exactly(hit) for hit in fast.hits] == [exactly(hit) for hit in staged.hits]
    assert fast.funnel == staged.funnel
    assert fast.degraded == staged.degraded
