"""Stage 4: MMR diversity, Jaccard over CJK-aware tokens, embedding cosine."""

from __future__ import annotations

import numpy as np
import pytest

from langchain_md_memory.search.mmr import cosine_similarity_fn, jaccard, jaccard_similarity_fn, mmr_rerank
from langchain_md_memory.text import token_set
from langchain_md_memory.types import MemorySearchResult
from tests.support.hits import make_hit

RETIRE_1 = "我想退休时有200万存款，用于养老。"
RETIRE_2 = "我想在退休时有200万存款，用于养老。"
RETIRE_3 = "退休时我想有200万存款，用于养老。"
POSITION = "单只个股不超过总仓位的百分之五。"
WEATHER = "今天天气不错。"


def hit(chunk_id: str, score: float, text: str = "") -> MemorySearchResult:
    return make_hit(chunk_id, score, path=f"{chunk_id}.md", text=text or chunk_id)


def pool() -> list[MemorySearchResult]:
    return [
        hit("dup1", 0.90, RETIRE_1),
        hit("dup2", 0.88, RETIRE_2),
        hit("dup3", 0.86, RETIRE_3),
        hit("distinct", 0.80, POSITION),
        hit("noise", 0.30, WEATHER),
    ]


def ids(hits: list[MemorySearchResult]) -> list[str]:
    return [h.chunk_id for h in hits]


def test_jaccard_counts_shared_tokens_over_union() -> None:
    assert jaccard(frozenset({"a", "b"}), frozenset({"b", "c"})) == pytest.approx(1 / 3)
    assert jaccard(frozenset({"a"}), frozenset({"a"})) == 1.0
    assert jaccard(frozenset({"a"}), frozenset({"b"})) == 0.0


def test_jaccard_of_two_empty_sets_is_zero_not_one() -> None:
    assert jaccard(frozenset(), frozenset()) == 0.0
    assert jaccard(frozenset(), frozenset({"x"})) == 0.0


def test_different_chinese_texts_do_not_look_identical() -> None:
    # An ASCII-only tokenizer yields empty sets here, making every Chinese chunk a "duplicate".
    a, b = token_set(RETIRE_1), token_set(POSITION)
    assert a and b
    assert jaccard(a, b) == 0.0
    near = jaccard(token_set(RETIRE_1), token_set(RETIRE_2))
    assert 0.5 < near < 1.0
    assert near == pytest.approx(10 / 13)


def test_mmr_lifts_distinct_chunk_into_top_two() -> None:
    out = mmr_rerank(pool(), lambda_=0.7)
    assert ids(out)[:2] == ["dup1", "distinct"]
    assert sorted(ids(out)) == sorted(ids(pool()))


def test_a_limit_picks_the_same_first_hits_and_leaves_the_rest_in_order() -> None:
    full = ids(mmr_rerank(pool(), lambda_=0.7))
    for limit in range(len(pool()) + 1):
        out = ids(mmr_rerank(pool(), lambda_=0.7, limit=limit))
        assert out[:limit] == full[:limit]
        assert out[limit:] == [i for i in ids(pool()) if i not in out[:limit]]


def test_mmr_keeps_scores_unchanged() -> None:
    out = mmr_rerank(pool(), lambda_=0.7)
    assert {h.chunk_id: h.score for h in out} == {h.chunk_id: h.score for h in pool()}


def test_lambda_one_keeps_relevance_order() -> None:
    assert ids(mmr_rerank(pool(), lambda_=1.0)) == ["dup1", "dup2", "dup3", "distinct", "noise"]


def test_single_hit_and_empty_pool_come_back_unchanged() -> None:
    single = [hit("a", 0.4)]
    assert mmr_rerank(single, lambda_=0.5) == single
    assert mmr_rerank([], lambda_=0.5) == []


def test_lambda_outside_unit_interval_is_refused() -> None:
    with pytest.raises(ValueError, match="lambda"):
        mmr_rerank(pool(), lambda_=1.5)


def test_equal_mmr_scores_go_to_higher_relevance() -> None:
    hits = [hit("a", 1.0), hit("c", 0.5), hit("b", 0.75), hit("d", 0.0)]
    sims = {frozenset({"b", "a"}): 0.25}

    def similarity(i: int, j: int) -> float:
        return sims.get(frozenset({hits[i].chunk_id, hits[j].chunk_id}), 0.0)

    # After "a": b = 0.5·0.75 − 0.5·0.25 = 0.25 and c = 0.5·0.5 − 0 = 0.25, an exact tie.
    assert ids(mmr_rerank(hits, lambda_=0.5, similarity=similarity))[:2] == ["a", "b"]


def test_full_ties_keep_original_order() -> None:
    hits = [hit("z", 0.5, "alpha"), hit("y", 0.5, "beta"), hit("x", 0.5, "gamma")]
    assert ids(mmr_rerank(hits, lambda_=0.7)) == ["z", "y", "x"]
    assert ids(mmr_rerank(list(reversed(hits)), lambda_=0.7)) == ["x", "y", "z"]


def test_identical_texts_are_pushed_apart_by_equal_scores() -> None:
    hits = [hit("a", 0.5, "same words here"), hit("b", 0.5, "same words here"), hit("c", 0.5, "other thing")]
    assert ids(mmr_rerank(hits, lambda_=0.7)) == ["a", "c", "b"]


def test_jaccard_similarity_fn_compares_positions() -> None:
    sim = jaccard_similarity_fn([RETIRE_1, RETIRE_2, POSITION])
    assert sim(0, 1) == pytest.approx(10 / 13)
    assert sim(0, 2) == 0.0


def test_cosine_fn_needs_every_vector() -> None:
    assert cosine_similarity_fn([np.array([1.0, 0.0]), None]) is None
    assert cosine_similarity_fn([]) is None


def test_cosine_fn_refuses_mixed_dimensions() -> None:
    assert cosine_similarity_fn([np.array([1.0, 0.0]), np.array([1.0, 0.0, 0.0])]) is None


def test_cosine_fn_normalises_and_clips_negative_to_zero() -> None:
    sim = cosine_similarity_fn(
        [np.array([2.0, 0.0]), np.array([1.0, 1.0]), np.array([-1.0, 0.0]), np.zeros(2)]
    )
    assert sim is not None
    assert sim(0, 1) == pytest.approx(2**-0.5)
    assert sim(0, 0) == pytest.approx(1.0)
    assert sim(0, 2) == 0.0
    assert sim(3, 0) == 0.0


def test_mmr_with_cosine_similarity_separates_embedding_duplicates() -> None:
    hits = [hit("a", 0.9), hit("a2", 0.85), hit("b", 0.8), hit("n", 0.1)]
    vectors = [
        np.array([1.0, 0.0, 0.0]),
        np.array([0.99, 0.1, 0.0]),
        np.array([0.0, 1.0, 0.0]),
        np.array([0.0, 0.0, 1.0]),
    ]
    out = mmr_rerank(hits, lambda_=0.7, similarity=cosine_similarity_fn(vectors))
    assert ids(out)[:2] == ["a", "b"]


def test_a_duplicate_threshold_demotes_only_near_duplicates() -> None:
    # Two notes on one topic share some words; only the rewording of the top note is a repeat.
    topic = [
        hit("top", 0.90, "Retire at sixty with two million invested."),
        hit("repeat", 0.89, "Retire at sixty with two million invested, all of it."),
        hit("related", 0.88, "Retire early: the pension starts at sixty."),
        hit("weak", 0.10, "Cash buffer of six months."),
    ]
    kept = mmr_rerank(topic, lambda_=0.7, duplicate_threshold=0.5, relevance_floor=0.0)
    assert ids(kept)[:2] == ["top", "related"]  # the repeat, not the related note, makes room
    plain = mmr_rerank(topic, lambda_=0.7, relevance_floor=0.0)
    assert ids(plain)[:2] == ["top", "related"]
    # The related note is never pushed under the weak one for sharing "retire" and "sixty".
    assert ids(kept).index("related") < ids(kept).index("weak")


def test_the_relevance_floor_lets_the_last_hit_of_the_pool_be_picked() -> None:
    dupes = [hit("d1", 0.9, RETIRE_1), hit("d2", 0.9, RETIRE_1), hit("other", 0.6, POSITION)]
    # Min-max over the pool alone gives the last hit relevance 0: it could never beat a duplicate.
    assert ids(mmr_rerank(dupes, lambda_=0.7))[:2] == ["d1", "d2"]
    # Measured from the weakest candidate (below the pool), it keeps its real relevance.
    assert ids(mmr_rerank(dupes, lambda_=0.7, relevance_floor=0.2))[:2] == ["d1", "other"]
