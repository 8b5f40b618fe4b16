"""Properties of the search stages over random recall lists (hypothesis)."""

from __future__ import annotations

import datetime as dt
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from langchain_md_memory.config import MemoryConfig
from langchain_md_memory.files.paths import file_kind
from langchain_md_memory.search import Recall, filter_min_score, merge_candidates, mmr_rerank, rank
from langchain_md_memory.types import ChunkRecord

NOW = dt.datetime(2026, 3, 31, 9, 30)
NOW_TS = NOW.timestamp()

PATHS = ["MEMORY.md", "goals.md", "2026-03-31.md", "2026-01-15.md", "2027-01-01.md", "sessions/s1.md"]
WORDS = ["退休", "仓位", "股票", "risk", "goal", "养老金", "dark", "mode", "", "百分之五"]

unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


@st.composite
def records(draw: st.DrawFn) -> list[ChunkRecord]:
    n = draw(st.integers(min_value=0, max_value=14))
    out = []
    for i in range(n):
        path = draw(st.sampled_from(PATHS))
        text = " ".join(draw(st.lists(st.sampled_from(WORDS), max_size=5)))
        out.append(
            ChunkRecord(
                id=f"c{i}",
                path=path,
                start_line=draw(st.integers(1, 50)),
                end_line=60,
                heading="",
                text=text,
                hash=str(i),
                file_kind=file_kind(path),
                updated_at=NOW_TS - draw(st.floats(min_value=-86_400, max_value=90 * 86_400)),
            )
        )
    return out


@st.composite
def recalls(draw: st.DrawFn) -> Recall:
    recs = draw(records())
    vector = [(r, draw(unit)) for r in recs if draw(st.booleans())]
    keyword = [(r, draw(st.floats(min_value=1e-6, max_value=1.0))) for r in recs if draw(st.booleans())]
    return Recall(vector=vector, keyword=keyword)


configs = st.builds(
    lambda k, min_score, vw, tw, decay, mmr, lam, sim, fusion: MemoryConfig(
        max_results=k, ranking={"fusion": fusion, "min_score": min_score, "vector_weight": vw,
                                "text_weight": tw, "temporal_decay": {"enabled": decay, "half_life_days": 7},
                                "mmr": {"enabled": mmr, "lambda": lam, "similarity": sim}}),
    st.integers(1, 8),
    st.sampled_from([0.0, 0.1, 0.3]),
    st.floats(0.1, 5.0),
    st.floats(0.1, 5.0),
    st.booleans(),
    st.booleans(),
    st.sampled_from([0.0, 0.3, 0.7, 1.0]),
    st.sampled_from(["auto", "jaccard"]),
    st.sampled_from(["weighted", "weighted_raw", "rrf"]),
)


@settings(max_examples=150, deadline=None)
@given(recalls(), configs)
def test_scores_are_finite_and_within_unit_interval(recall: Recall, config: MemoryConfig) -> None:
    for hit in rank(recall, config, now=NOW).hits:
        assert math.isfinite(hit.score)
        assert 0.0 <= hit.score <= 1.0
        assert 0.0 <= hit.merged_score <= 1.0
        assert 0.0 < hit.decay <= 1.0
        assert hit.weight == 1.0
        assert math.isclose(hit.score, hit.merged_score * hit.decay, rel_tol=1e-12, abs_tol=1e-15)


@settings(max_examples=150, deadline=None)
@given(recalls(), configs)
def test_output_is_a_subset_of_input_without_repeats(recall: Recall, config: MemoryConfig) -> None:
    ranked = rank(recall, config, now=NOW)
    ids = [h.chunk_id for h in ranked.hits]
    recalled = {r.id for r, _ in recall.vector} | {r.id for r, _ in recall.keyword}
    assert len(ids) == len(set(ids))
    assert set(ids) <= recalled
    assert len(ids) <= config.max_results
    if config.ranking.fusion == "weighted_raw":  # the specification cuts the merged score
        assert all(h.score >= config.ranking.min_score * h.decay - 1e-9 for h in ranked.hits)
    else:  # the others cut the absolute relevance
        assert all(h.relevance >= config.ranking.min_score for h in ranked.hits)
    funnel = list(ranked.funnel.values())
    assert funnel[2:] == sorted(funnel[2:], reverse=True)  # the funnel only narrows after merge


@settings(max_examples=100, deadline=None)
@given(recalls(), configs)
def test_rank_is_deterministic(recall: Recall, config: MemoryConfig) -> None:
    assert rank(recall, config, now=NOW) == rank(recall, config, now=NOW)


@settings(max_examples=100, deadline=None)
@given(recalls())
def test_mmr_returns_a_permutation_of_its_pool(recall: Recall) -> None:
    pool = filter_min_score(
        merge_candidates(recall.vector, recall.keyword, vector_weight=0.7, text_weight=0.3), 0.0
    )
    for lam in (0.0, 0.5, 1.0):
        out = mmr_rerank(pool, lambda_=lam)
        assert sorted(out, key=lambda h: h.chunk_id) == sorted(pool, key=lambda h: h.chunk_id)
        if pool:
            assert out[0] == pool[0]  # the most relevant hit is always picked first
