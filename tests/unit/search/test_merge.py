"""Stage 1 (weighted merge) and stage 2 (min-score cut)."""

from __future__ import annotations

import math

import pytest

from langchain_md_memory.search.merge import effective_weights, filter_min_score, merge_candidates
from langchain_md_memory.types import ChunkRecord, MemorySearchResult
from tests.support.hits import make_hit, make_record


def record(chunk_id: str, path: str = "MEMORY.md", start: int = 1, text: str = "text") -> ChunkRecord:
    return make_record(chunk_id, path, start_line=start, end_line=start + 2, heading="# H", text=text,
                       hash="h" + chunk_id, updated_at=1_700_000_000.0)


def hit(score: float, path: str = "MEMORY.md", start: int = 1, chunk_id: str = "c") -> MemorySearchResult:
    return make_hit(chunk_id, score, path=path, start_line=start, text="t")


def test_both_paths_score_is_seventy_thirty_sum() -> None:
    a = record("a")
    hits = merge_candidates([(a, 0.8)], [(a, 0.5)], vector_weight=0.7, text_weight=0.3)
    assert len(hits) == 1
    assert hits[0].score == pytest.approx(0.7 * 0.8 + 0.3 * 0.5)
    assert hits[0].merged_score == hits[0].score
    assert (hits[0].vector_score, hits[0].keyword_score, hits[0].retrieved_by) == (0.8, 0.5, "both")


def test_chunk_found_by_one_path_counts_zero_for_the_other() -> None:
    a, b = record("a"), record("b", start=10)
    hits = {
        h.chunk_id: h for h in merge_candidates([(a, 0.9)], [(b, 0.6)], vector_weight=0.7, text_weight=0.3)
    }
    assert hits["a"].score == pytest.approx(0.63)
    assert hits["a"].keyword_score is None and hits["a"].retrieved_by == "vector"
    assert hits["b"].score == pytest.approx(0.18)
    assert hits["b"].vector_score is None and hits["b"].retrieved_by == "keyword"


def test_keyword_only_recall_gives_keyword_weight_one() -> None:
    hits = merge_candidates([], [(record("a"), 0.42)], vector_weight=0.7, text_weight=0.3)
    assert hits[0].score == 0.42
    assert hits[0].vector_score is None


def test_vector_only_recall_gives_vector_weight_one() -> None:
    hits = merge_candidates([(record("a"), 0.37)], [], vector_weight=0.7, text_weight=0.3)
    assert hits[0].score == 0.37
    assert hits[0].retrieved_by == "vector"


def test_custom_weights_are_renormalised() -> None:
    assert effective_weights(True, True, 1.0, 1.0) == (0.5, 0.5)
    assert effective_weights(True, True, 3.0, 1.0) == (0.75, 0.25)
    a = record("a")
    hits = merge_candidates([(a, 0.8)], [(a, 0.4)], vector_weight=1.0, text_weight=1.0)
    assert hits[0].score == pytest.approx(0.6)


def test_effective_weights_give_everything_to_the_only_path() -> None:
    assert effective_weights(True, False, 0.7, 0.3) == (1.0, 0.0)
    assert effective_weights(False, True, 0.7, 0.3) == (0.0, 1.0)


def test_effective_weights_refuse_zero_sum() -> None:
    with pytest.raises(ValueError, match="positive sum"):
        effective_weights(True, True, 0.0, 0.0)


def test_merge_copies_record_fields() -> None:
    rec = record("abc", path="notes/goals.md", start=7, text="退休目标 200 万")
    h = merge_candidates([(rec, 0.5)], [], vector_weight=0.7, text_weight=0.3)[0]
    assert (h.path, h.start_line, h.end_line, h.text, h.heading) == (
        "notes/goals.md",
        7,
        9,
        "退休目标 200 万",
        "# H",
    )
    assert (h.chunk_id, h.file_kind, h.updated_at) == ("abc", "evergreen", 1_700_000_000.0)
    assert (h.decay, h.weight, h.relevance_rank) == (1.0, 1.0, 0)


def test_duplicate_ids_in_one_path_keep_the_best_score() -> None:
    a = record("a")
    hits = merge_candidates([(a, 0.2), (a, 0.6)], [], vector_weight=0.7, text_weight=0.3)
    assert len(hits) == 1 and hits[0].score == 0.6


def test_nan_recall_score_counts_as_zero() -> None:
    hits = merge_candidates([(record("a"), math.nan)], [], vector_weight=0.7, text_weight=0.3)
    assert hits[0].score == 0.0


def test_full_scores_on_both_paths_do_not_exceed_one() -> None:
    a = record("a")
    hits = merge_candidates([(a, 1.0)], [(a, 1.0)], vector_weight=1.0, text_weight=2.0)
    assert hits[0].score <= 1.0
    assert hits[0].score == pytest.approx(1.0)


def test_min_score_drops_below_and_keeps_equal() -> None:
    kept = filter_min_score(
        [hit(0.09, chunk_id="low"), hit(0.1, chunk_id="edge"), hit(0.5, chunk_id="hi")], 0.1
    )
    assert [h.chunk_id for h in kept] == ["hi", "edge"]


def test_min_score_keeps_weighted_sum_equal_to_threshold_despite_float_noise() -> None:
    a = record("a")
    # 0.7 * (1/7) + 0.3 * 0 is 0.09999999999999999 in binary floating point.
    merged = merge_candidates([(a, 1 / 7)], [(record("b"), 1.0)], vector_weight=0.7, text_weight=0.3)
    assert [h.chunk_id for h in filter_min_score(merged, 0.1)] == ["b", "a"]


def test_min_score_sorts_descending_with_deterministic_ties() -> None:
    hits = [
        hit(0.5, path="b.md", start=1, chunk_id="x"),
        hit(0.5, path="a.md", start=9, chunk_id="y"),
        hit(0.5, path="a.md", start=2, chunk_id="z"),
        hit(0.5, path="a.md", start=2, chunk_id="w"),
        hit(0.7, path="z.md", start=1, chunk_id="top"),
    ]
    expected = ["top", "w", "z", "y", "x"]
    assert [h.chunk_id for h in filter_min_score(hits, 0.1)] == expected
    assert [h.chunk_id for h in filter_min_score(list(reversed(hits)), 0.1)] == expected


def test_min_score_zero_keeps_zero_scores() -> None:
    assert len(filter_min_score([hit(0.0)], 0.0)) == 1
