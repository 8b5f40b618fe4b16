import pytest

from langchain_md_memory.errors import MemoryInputError
from langchain_md_memory.search.fusion import (
    minmax,
    minmax_fusion,
    resolve_fusion,
    rrf_fusion,
    weighted_fusion,
)


def test_minmax_maps_the_pool_onto_the_unit_interval_and_a_flat_pool_onto_one() -> None:
    assert minmax([("a", 0.83), ("b", 0.80), ("c", 0.77)]) == pytest.approx({"a": 1.0, "b": 0.5, "c": 0.0})
    assert minmax([("a", 0.4), ("b", 0.4)]) == {"a": 1.0, "b": 1.0}
    assert minmax([]) == {}


def test_minmax_fusion_puts_compressed_cosines_on_the_keyword_scale() -> None:
    # Raw cosines of one model crowd together: summed raw, the keyword path decides everything;
    # normalised, the vector path's own order counts as much as the keyword path's.
    vector = [("a", 0.83), ("b", 0.80)]
    keyword = [("b", 1.0), ("a", 0.9)]
    raw = weighted_fusion(vector, keyword, 0.5, 0.5)
    assert raw["b"] > raw["a"]
    assert minmax_fusion(vector, keyword, 0.5, 0.5) == pytest.approx({"a": 0.5, "b": 0.5})
    assert minmax_fusion(vector, keyword, 0.7, 0.3)["a"] == pytest.approx(0.7)


def test_weighted_is_the_seed_sum_and_never_overshoots_its_inputs() -> None:
    fused = weighted_fusion([("a", 0.8)], [("a", 0.5), ("b", 0.4)], 0.7, 0.3)
    assert fused["a"] == pytest.approx(0.7 * 0.8 + 0.3 * 0.5)
    assert fused["b"] == pytest.approx(0.3 * 0.4)
    same = weighted_fusion([("a", 0.1 + 0.2)], [("a", 0.1 + 0.2)], 0.7, 0.3)
    assert same["a"] <= 0.1 + 0.2


def test_rrf_scores_by_rank_and_first_on_both_paths_is_one() -> None:
    fused = rrf_fusion([("a", 0.9), ("b", 0.1)], [("a", 7.0), ("c", 3.0)], 0.5, 0.5, k=60)
    assert fused["a"] == pytest.approx(1.0)
    assert fused["b"] == pytest.approx(0.5 * 61 / 62)
    assert fused["b"] == pytest.approx(fused["c"])  # second on one path each: a tie, whatever the raw scores
    with pytest.raises(MemoryInputError, match="rrf_k"):
        rrf_fusion([], [], 0.5, 0.5, k=0)


def test_resolve_fusion_by_name_with_k_or_a_custom_function() -> None:
    assert resolve_fusion("weighted", 60).combine is weighted_fusion
    assert resolve_fusion("weighted", 60).calibrated
    assert resolve_fusion("weighted_raw", 60).cuts_merged
    assert resolve_fusion("minmax", 60).combine is minmax_fusion
    rrf5 = resolve_fusion("rrf", 5).combine
    assert rrf5([("a", 1.0), ("b", 0.5)], [], 1.0, 0.0)["b"] == pytest.approx(6 / 7)

    def mine(vector, keyword, wv, wt):  # type: ignore[no-untyped-def]
        return {chunk_id: 1.0 for chunk_id, _ in keyword}

    assert resolve_fusion(mine, 60).combine is mine
    with pytest.raises(MemoryInputError, match="unknown fusion"):
        resolve_fusion("borda", 60)
