"""rank() and run(): the steps composed, funnel counts, overrides, degradation; and each step alone."""

from __future__ import annotations

import datetime as dt
import math

import numpy as np
import pytest

from langchain_md_memory.config import SEED_RANKING, MemoryConfig
from langchain_md_memory.files.paths import file_kind
from langchain_md_memory.files.sections import PastFact
from langchain_md_memory.search import FUNNEL_STAGES, Recall, rank
from langchain_md_memory.search.asof import AsOf
from langchain_md_memory.search.pipeline import (
    RankedResults,
    as_of,
    cut,
    decay,
    expire,
    fuse,
    mmr,
    restated_order,
    run,
    top_k,
    weigh,
)
from langchain_md_memory.types import ChunkRecord, MemorySearchResult
from tests.support.hits import make_hit, make_record

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
    assert ranked.funnel == {"vector": 4, "keyword": 3, "merged": 5, "min_score": 3, "decay": 3,
                             "mmr_pool": 3, "top_k": 2}
    assert [h.chunk_id for h in ranked.hits] == ["a", "b"]
    assert ranked.hits[0].score == pytest.approx(0.7 * 0.9 + 0.3 * 0.8)
    assert ranked.hits[0].retrieved_by == "both"
    assert ranked.degraded is None


def test_pool_is_pool_multiplier_times_k() -> None:
    recall = Recall(vector=[(record(f"c{i}"), 0.9 - i * 0.05) for i in range(10)], keyword=[])
    cfg = MemoryConfig(max_results=2, ranking={"mmr": {"pool_multiplier": 3}})
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
    cfg = SEED.merged(ranking={"source_weights": {"session": 0.5}, "temporal_decay": {"half_life_days": 10}})
    (h,) = rank(Recall(vector=[(s, 0.8)], keyword=[]), cfg, now=NOW).hits
    assert (h.merged_score, h.weight) == (0.8, 0.5)
    assert h.decay == pytest.approx(0.5)
    assert h.score == pytest.approx(0.8 * 0.5 * 0.5)


def test_decay_disabled_leaves_old_daily_at_full_score() -> None:
    old = record("old", path="2025-01-01.md")
    cfg = SEED.merged(ranking={"temporal_decay": {"enabled": False}})
    (h,) = rank(Recall(vector=[(old, 0.6)], keyword=[]), cfg, now=NOW).hits
    assert (h.score, h.decay) == (0.6, 1.0)


def test_old_daily_ranks_under_same_text_from_today() -> None:
    old, new = (
        record("old", path="2026-03-01.md", text="同一件事"),
        record("new", path="2026-03-31.md", text="同一件事"),
    )
    ranked = rank(
        Recall(vector=[(old, 0.8), (new, 0.8)], keyword=[]), SEED.merged(ranking={"mmr": {"enabled": False}}),
        now=NOW
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
    config = SEED.merged(max_results=2, ranking={"mmr": {"pool_multiplier": 3}})
    ranked = rank(near_duplicates(), config, now=NOW)
    assert [h.chunk_id for h in ranked.hits] == ["dup1", "distinct"]
    assert [h.relevance_rank for h in ranked.hits] == [1, 4]
    assert [h.score for h in ranked.hits] == [0.90, 0.80]


@pytest.mark.parametrize("mmr", [{"enabled": False}, {"lambda": 1.0}])
def test_mmr_off_or_lambda_one_keeps_duplicates_on_top(mmr: dict[str, object]) -> None:
    cfg = MemoryConfig(max_results=2, ranking={"mmr": {"pool_multiplier": 3, **mmr}})
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
    cfg = MemoryConfig(max_results=2, ranking={"mmr": {"similarity": mode}})
    assert [h.chunk_id for h in rank(cosine_recall(True), cfg, now=NOW).hits] == ["a", "b"]


@pytest.mark.parametrize("mode", ["auto", "cosine", "jaccard"])
def test_mmr_falls_back_to_jaccard_without_all_vectors(mode: str) -> None:
    cfg = MemoryConfig(max_results=2, ranking={"mmr": {"similarity": mode}})
    assert [h.chunk_id for h in rank(cosine_recall(False), cfg, now=NOW).hits] == ["a", "a2"]


def test_jaccard_mode_ignores_vectors() -> None:
    cfg = MemoryConfig(max_results=2, ranking={"mmr": {"similarity": "jaccard"}})
    assert [h.chunk_id for h in rank(cosine_recall(True), cfg, now=NOW).hits] == ["a", "a2"]


def test_access_counts_reach_the_weighting_stage() -> None:
    recall = Recall(vector=[(record("fresh"), 0.60), (record("popular"), 0.55)], keyword=[])
    cfg = SEED.merged(ranking={"access_weight": 0.1, "mmr": {"enabled": False}})
    ranked = rank(recall, cfg, now=NOW, access_counts={"popular": 9})
    assert [h.chunk_id for h in ranked.hits] == ["popular", "fresh"]
    assert ranked.hits[0].score == pytest.approx(0.55 * (1 + 0.1 * math.log1p(9)))


def test_rank_is_deterministic_across_calls() -> None:
    first = rank(near_duplicates(), MemoryConfig(), now=NOW)
    second = rank(near_duplicates(), MemoryConfig(), now=NOW)
    assert first == second


# The steps one by one: each a pure function of plain data (run() and rank() compose them).


def test_expire_drops_candidates_whose_every_fact_expired_and_counts_them() -> None:
    gone = record("gone", text="- Parking permit 4411 <!-- expires: 2026-03-01 -->")
    mixed = record("mixed", text="- Desk 12\n- Badge 9 <!-- expires: 2026-03-01 -->")
    live = record("live", text="- Tea: sencha")
    recall = Recall(vector=[(gone, 0.9), (mixed, 0.8)], keyword=[(gone, 1.0), (live, 0.5)])
    kept, expired = expire(recall, NOW.date())
    assert expired == 2
    assert [(r.id, s) for r, s in kept.vector] == [("mixed", 0.8)]
    assert kept.vector[0][0].text == "- Desk 12\n"  # the expired line blanked, the lines still numbered
    assert [r.id for r, _ in kept.keyword] == ["live"]


def test_expire_hands_back_the_same_recall_when_nothing_carries_an_expiry() -> None:
    recall = known_recall()
    assert expire(recall, NOW.date()) == (recall, 0)
    assert expire(recall, NOW.date())[0] is recall


def test_fuse_makes_one_named_candidate_per_chunk_in_recall_order() -> None:
    fused = fuse(known_recall(), SEED.ranking)
    assert [c.record.id for c in fused.candidates] == ["a", "b", "c", "d", "e"]
    a, e = fused.candidates[0], fused.candidates[4]
    assert (a.vector_score, a.keyword_score, a.retrieved_by) == (0.9, 0.8, "both")
    assert a.merged_score == pytest.approx(0.7 * 0.9 + 0.3 * 0.8)
    assert (e.vector_score, e.keyword_score, e.retrieved_by) == (None, 0.9, "keyword")
    with pytest.raises(AttributeError):
        a.merged_score = 1.0  # type: ignore[misc]


def test_cut_keeps_every_candidate_by_default_and_cuts_relevance_or_the_seeds_merged_score() -> None:
    recall = Recall(vector=[], keyword=[(record("full", text="bond ladder"), 1.0),
                                        (record("half", text="bond funds"), 0.5)], terms=("bond", "ladder"))
    assert cut(fuse(recall, MemoryConfig().ranking), None) == [0, 1]
    assert cut(fuse(recall, MemoryConfig().ranking), 0.9) == [0]  # relevance: coverage and BM25 both full
    assert cut(fuse(known_recall(), SEED.ranking), 0.1) == [0, 1, 4]  # a, b, e: merged score at least 0.1


def test_weigh_multiplies_source_weight_and_question_fit_into_score_and_weight() -> None:
    recall = Recall(vector=[(record("s", path="sessions/chat.md", text="Ann: Where did we go?"), 0.8),
                            (record("m", text="- Porto, in May."), 0.6)], keyword=[])
    config = SEED.merged(ranking={"source_weights": {"session": 0.5}, "question_weight": 0.8})
    fused = fuse(recall, config.ranking)
    weighed = weigh(fused, [0, 1], config.ranking, access_counts=None, period=None,
                    question="where did we go?")
    assert weighed.kept == [0, 1]
    assert weighed.weight == pytest.approx([0.5 * 0.8, 1.0])
    assert weighed.score == pytest.approx([0.8 * 0.5 * 0.8, 0.6])
    assert weighed.decay == [1.0, 1.0]


def test_decay_scales_dated_candidates_and_ranks_them_best_first() -> None:
    old, today = record("old", path="2026-03-01.md"), record("today", path="2026-03-31.md")
    recall = Recall(vector=[(old, 0.9), (today, 0.6)], keyword=[])
    fused = fuse(recall, SEED.ranking)
    weighed = weigh(fused, [0, 1], SEED.ranking, access_counts=None, period=None, question="")
    thirty_days = SEED.ranking.temporal_decay.model_copy(update={"half_life_days": 30})
    ranking = decay(fused, weighed, thirty_days, NOW)
    assert ranking.scored.decay == pytest.approx([0.5, 1.0])
    hits = ranking.head(5)
    assert [(h.chunk_id, h.relevance_rank) for h in hits] == [("today", 1), ("old", 2)]
    assert hits[1].score == pytest.approx(0.45) and hits[1].decay == pytest.approx(0.5)
    assert ranking.lowest == pytest.approx(0.45)
    assert len(ranking.head(1)) == 1


def test_mmr_reorders_only_the_pool_and_top_k_takes_the_first_k() -> None:
    config = SEED.merged(max_results=2, ranking={"mmr": {"pool_multiplier": 3}})
    fused = fuse(near_duplicates(), config.ranking)
    kept = cut(fused, config.ranking.min_score)
    ranking = decay(fused, weigh(fused, kept, config.ranking, access_counts=None, period=None, question=""),
                    config.ranking.temporal_decay, NOW)
    pool, reranked = mmr(ranking, config.ranking.mmr, {}, 2)
    assert [h.chunk_id for h in pool] == ["dup1", "dup2", "dup3", "distinct", "noise"]
    assert [h.chunk_id for h in top_k(reranked, 2)] == ["dup1", "distinct"]
    off, same = mmr(ranking, config.ranking.mmr.model_copy(update={"enabled": False}), {}, 2)
    assert same is off


def _restating() -> list[MemorySearchResult]:
    stale = make_hit("stale", 0.9, path="memory/2026-07-01.md", file_kind="daily", relevance=0.7,
                     text="- Keys for the Arroios flat picked up. Rent €1,650, deposit paid.")
    new = make_hit("new", 0.5, path="finance.md", relevance=0.6, provenance=("via=supersede 2026-12-01",),
                   text="## Home\n- Rent €1,720 (Arroios flat) since the March renewal, utilities about "
                        "€140. <!-- src: via=supersede 2026-12-01 -->")
    return [stale, new]


OLD_RENT = ("Rent €1,650 (Arroios flat), utilities about €140.", dt.date(2026, 12, 1))


def test_restated_order_asks_for_the_struck_facts_of_the_files_named_and_counts_the_moves() -> None:
    asked: list[set[str]] = []

    def struck(paths: set[str]) -> dict[str, list[tuple[str, dt.date]]]:
        asked.append(paths)
        return {"finance.md": [OLD_RENT]}

    hits, moved = restated_order(_restating(), struck, 0.8)
    assert [h.chunk_id for h in hits] == ["new", "stale"] and moved == 2
    assert asked == [{"finance.md"}]
    hits, moved = restated_order(_restating(), struck, 1.0)  # off: nothing read, nothing moved
    assert [h.chunk_id for h in hits] == ["stale", "new"] and moved == 0
    assert len(asked) == 1


def test_as_of_puts_the_facts_that_held_then_first_and_records_the_day() -> None:
    day = dt.date(2026, 6, 1)
    fact = PastFact("finance.md", 9, "- ~~Rent €1,650~~ (superseded 2026-12-01)", "Rent €1,650", None,
                    dt.date(2026, 12, 1))
    current = make_hit("now", 0.8, path="finance.md", text="- Rent €1,720", keyword_score=0.8,
                       vector_score=None, retrieved_by="keyword")
    ranked = RankedResults([current], {"top_k": 1, "expired": 0}, None)
    asked = AsOf(day, strict=False, facts=[fact], terms=["rent"], idf={"rent": 2.0}, absent_idf=5.0)
    answered = as_of(ranked, asked, 3)
    assert [h.chunk_id for h in answered.hits] == ["past:finance.md#L9", "now"]
    assert answered.hits[0].valid_until == "2026-12-01" and answered.as_of == day
    assert answered.funnel == {"top_k": 2, "expired": 0}


def test_run_is_expire_rank_restated_order_and_as_of_with_their_counts() -> None:
    gone = record("gone", text="- Old code 1234 <!-- expires: 2026-01-01 -->")
    recall = Recall(vector=[(gone, 0.95), *known_recall().vector], keyword=list(known_recall().keyword))
    ranked = run(recall, SEED.merged(max_results=2), question="", today=NOW.date(), now=NOW)
    assert list(ranked.funnel) == [*FUNNEL_STAGES, "expired", "restated"]
    assert (ranked.funnel["expired"], ranked.funnel["restated"]) == (1, 0)
    assert [h.chunk_id for h in ranked.hits] == ["a", "b"] and ranked.as_of is None
    alone = rank(expire(recall, NOW.date())[0], SEED.merged(max_results=2), now=NOW)
    assert ranked.hits == alone.hits


def test_a_strict_as_of_ranks_twice_as_many_before_keeping_what_was_written_by_its_day() -> None:
    logs = [(record(f"c{i}", path=f"2026-03-{10 + i}.md"), 0.8 + i * 0.01) for i in range(8)]  # newer: better
    config = MemoryConfig(max_results=2, ranking={"mmr": {"enabled": False},
                                                  "temporal_decay": {"enabled": False}})
    asked = AsOf(dt.date(2026, 3, 15), strict=True)
    ranked = run(Recall(vector=logs, keyword=[]), config, question="", today=NOW.date(), asked=asked, now=NOW)
    # The four best (2 × 2) are the logs of 17 to 14 March; those of the 16th and 17th were not written yet.
    assert [h.chunk_id for h in ranked.hits] == ["c5", "c4"]
    assert ranked.funnel["top_k"] == 2 and ranked.as_of == dt.date(2026, 3, 15)
