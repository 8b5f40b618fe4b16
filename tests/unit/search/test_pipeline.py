"""rank(): the five stages composed, funnel counts, overrides, degradation."""

from __future__ import annotations

import datetime as dt
import math

import numpy as np
import pytest

from langchain_md_memory.config import SEED_RANKING, MemoryConfig
from langchain_md_memory.files.paths import file_kind
from langchain_md_memory.search import FUNNEL_STAGES, Recall, rank
from langchain_md_memory.types import ChunkRecord
from tests.support.hits import make_record

NOW = dt.datetime(2026, 3, 31, 0, 0, 0)
# The seed's merge (raw weighted sum, min_score on it): these tests check its formulas number by number.
SEED = MemoryConfig(**SEED_RANKING)


def record(chunk_id: str, path: str = "MEMORY.md", text: str = "", updated_at: float = 0.0) -> ChunkRecord:
    return make_record(chunk_id, path, end_line=4, text=text or None, file_kind=file_kind(path),
                       updated_at=updated_at)


def known_recall() -> Recall:
    a, b, c, d, e = (record(x) for x in "abcde")
    return Recall(
        vector=[(a, 0.9), (b, 0.5), (c, 0.1), (d, 0.05)],
        keyword=[(a, 0.8), (e, 0.9), (b, 0.2)],
    )


def test_funnel_counts_each_stage_on_known_input() -> None:
    # Merged: a=.87, b=.41, e=.27, c=.07, d=.035 -> min_score 0.1 keeps 3; pool 2×2 = 4 -> 3; top 2.
    ranked = rank(known_recall(), SEED.merged(max_results=2), now=NOW)
    assert list(ranked.funnel) == list(FUNNEL_STAGES)
    assert ranked.funnel == {
        "vector": 4,
        "keyword": 3,
        "merged": 5,
        "min_score": 3,
        "decay": 3,
        "mmr_pool": 3,
        "top_k": 2,
    }
    assert [h.chunk_id for h in ranked.hits] == ["a", "b"]
    assert ranked.hits[0].score == pytest.approx(0.7 * 0.9 + 0.3 * 0.8)
    assert ranked.hits[0].source == "both"
    assert ranked.degraded is None


def test_pool_is_pool_multiplier_times_k() -> None:
    recall = Recall(vector=[(record(f"c{i}"), 0.9 - i * 0.05) for i in range(10)], keyword=[])
    cfg = MemoryConfig(max_results=2, mmr={"pool_multiplier": 3})
    ranked = rank(recall, cfg, now=NOW)
    assert (ranked.funnel["min_score"], ranked.funnel["mmr_pool"], ranked.funnel["top_k"]) == (10, 6, 2)


def test_max_results_override_beats_config() -> None:
    recall = Recall(vector=[(record(f"c{i}"), 0.9 - i * 0.05) for i in range(10)], keyword=[])
    ranked = rank(recall, MemoryConfig(max_results=6), max_results=1, now=NOW)
    assert len(ranked.hits) == 1
    assert ranked.funnel["mmr_pool"] == 2
    assert ranked.hits[0].chunk_id == "c0"


def test_max_results_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="max_results"):
        rank(known_recall(), MemoryConfig(), max_results=0)


def test_degraded_reason_propagates_with_keyword_only_scores() -> None:
    recall = Recall(vector=[], keyword=[(record("k"), 0.42)], degraded="embeddings timed out")
    ranked = rank(recall, SEED, now=NOW)
    assert ranked.degraded == "embeddings timed out"
    assert ranked.hits[0].score == 0.42
    assert ranked.funnel["vector"] == 0


def test_empty_recall_gives_empty_results() -> None:
    ranked = rank(Recall(vector=[], keyword=[]), MemoryConfig(), now=NOW)
    assert ranked.hits == []
    assert set(ranked.funnel.values()) == {0}


def test_final_score_is_merged_times_weight_times_decay() -> None:
    ten_days = (NOW - dt.timedelta(days=10)).timestamp()
    s = record("s", path="sessions/chat.md", updated_at=ten_days)
    cfg = SEED.merged(source_weights={"session": 0.5}, temporal_decay={"half_life_days": 10})
    (h,) = rank(Recall(vector=[(s, 0.8)], keyword=[]), cfg, now=NOW).hits
    assert (h.merged_score, h.weight) == (0.8, 0.5)
    assert h.decay == pytest.approx(0.5)
    assert h.score == pytest.approx(0.8 * 0.5 * 0.5)


def test_decay_disabled_leaves_old_daily_at_full_score() -> None:
    old = record("old", path="2025-01-01.md")
    cfg = SEED.merged(temporal_decay={"enabled": False})
    (h,) = rank(Recall(vector=[(old, 0.6)], keyword=[]), cfg, now=NOW).hits
    assert (h.score, h.decay) == (0.6, 1.0)


def test_old_daily_ranks_under_same_text_from_today() -> None:
    old, new = (
        record("old", path="2026-03-01.md", text="同一件事"),
        record("new", path="2026-03-31.md", text="同一件事"),
    )
    ranked = rank(
        Recall(vector=[(old, 0.8), (new, 0.8)], keyword=[]), SEED.merged(mmr={"enabled": False}), now=NOW
    )
    assert [h.chunk_id for h in ranked.hits] == ["new", "old"]
    assert ranked.hits[1].decay == pytest.approx(0.5)


def near_duplicates() -> Recall:
    texts = {
        "dup1": ("我想退休时有200万存款，用于养老。", 0.90),
        "dup2": ("我想在退休时有200万存款，用于养老。", 0.88),
        "dup3": ("退休时我想有200万存款，用于养老。", 0.86),
        "distinct": ("单只个股不超过总仓位的百分之五。", 0.80),
        "noise": ("今天天气不错。", 0.30),
    }
    return Recall(vector=[(record(k, text=t), s) for k, (t, s) in texts.items()], keyword=[])


def test_mmr_on_brings_distinct_chunk_into_top_two_and_records_relevance_rank() -> None:
    ranked = rank(near_duplicates(), SEED.merged(max_results=2, mmr={"pool_multiplier": 3}), now=NOW)
    assert [h.chunk_id for h in ranked.hits] == ["dup1", "distinct"]
    assert [h.relevance_rank for h in ranked.hits] == [1, 4]
    assert [h.score for h in ranked.hits] == [0.90, 0.80]


@pytest.mark.parametrize("mmr", [{"enabled": False}, {"lambda": 1.0}])
def test_mmr_off_or_lambda_one_keeps_duplicates_on_top(mmr: dict[str, object]) -> None:
    cfg = MemoryConfig(max_results=2, mmr={"pool_multiplier": 3, **mmr})
    ranked = rank(near_duplicates(), cfg, now=NOW)
    assert [h.chunk_id for h in ranked.hits] == ["dup1", "dup2"]
    assert [h.relevance_rank for h in ranked.hits] == [1, 2]


def cosine_recall(with_all_vectors: bool) -> Recall:
    # Texts are all distinct (Jaccard 0) but a and a2 are near-identical embeddings.
    recs = [
        record("a", text="alpha"),
        record("a2", text="beta"),
        record("b", text="gamma"),
        record("n", text="delta"),
    ]
    scores = [0.9, 0.85, 0.8, 0.1]
    vectors = {
        "a": np.array([1.0, 0.0, 0.0]),
        "a2": np.array([0.99, 0.1, 0.0]),
        "b": np.array([0.0, 1.0, 0.0]),
        "n": np.array([0.0, 0.0, 1.0]),
    }
    if not with_all_vectors:
        del vectors["b"]
    return Recall(vector=list(zip(recs, scores, strict=True)), keyword=[], vectors=vectors)


@pytest.mark.parametrize("mode", ["auto", "cosine"])
def test_mmr_uses_embedding_cosine_when_every_pool_vector_exists(mode: str) -> None:
    cfg = MemoryConfig(max_results=2, mmr={"similarity": mode})
    assert [h.chunk_id for h in rank(cosine_recall(True), cfg, now=NOW).hits] == ["a", "b"]


@pytest.mark.parametrize("mode", ["auto", "cosine", "jaccard"])
def test_mmr_falls_back_to_jaccard_without_all_vectors(mode: str) -> None:
    cfg = MemoryConfig(max_results=2, mmr={"similarity": mode})
    assert [h.chunk_id for h in rank(cosine_recall(False), cfg, now=NOW).hits] == ["a", "a2"]


def test_jaccard_mode_ignores_vectors() -> None:
    cfg = MemoryConfig(max_results=2, mmr={"similarity": "jaccard"})
    assert [h.chunk_id for h in rank(cosine_recall(True), cfg, now=NOW).hits] == ["a", "a2"]


def test_access_counts_reach_the_weighting_stage() -> None:
    recall = Recall(vector=[(record("fresh"), 0.60), (record("popular"), 0.55)], keyword=[])
    cfg = SEED.merged(access_weight=0.1, mmr={"enabled": False})
    ranked = rank(recall, cfg, now=NOW, access_counts={"popular": 9})
    assert [h.chunk_id for h in ranked.hits] == ["popular", "fresh"]
    assert ranked.hits[0].score == pytest.approx(0.55 * (1 + 0.1 * math.log1p(9)))


def test_rank_is_deterministic_across_calls() -> None:
    first = rank(near_duplicates(), MemoryConfig(), now=NOW)
    second = rank(near_duplicates(), MemoryConfig(), now=NOW)
    assert first == second
