"""The k highest scores: every score at or above the k-th, whatever order the scores come in."""

from __future__ import annotations

import numpy as np
import pytest

from langchain_md_memory.index.topk import FLOOR_SAMPLE, at_or_above_kth


def exact(scores: np.ndarray, k: int) -> list[int]:
    kth = np.sort(scores)[::-1][min(k, len(scores)) - 1]
    return [i for i, s in enumerate(scores) if s >= kth]


@pytest.mark.parametrize("order", ["random", "ascending", "descending"])
@pytest.mark.parametrize("k", [1, 24, 96])
def test_a_large_array_gives_the_exact_positions_whatever_its_first_scores(order: str, k: int) -> None:
    rng = np.random.default_rng(3)
    scores = rng.normal(size=5 * FLOOR_SAMPLE)
    if order != "random":  # the first scores are the lowest, or exactly the k highest
        scores = np.sort(scores) if order == "ascending" else np.sort(scores)[::-1].copy()
    assert at_or_above_kth(scores, k).tolist() == exact(scores, k)


def test_scores_tied_with_the_kth_are_all_kept() -> None:
    rng = np.random.default_rng(5)
    scores = np.round(rng.random(5 * FLOOR_SAMPLE), 2)  # a hundred values: many ties
    kept = at_or_above_kth(scores, 24)
    assert kept.tolist() == exact(scores, 24)
    assert len(kept) > 24


def test_k_at_least_the_length_keeps_everything() -> None:
    scores = np.array([0.3, 0.1, 0.2])
    assert at_or_above_kth(scores, 3).tolist() == [0, 1, 2]
    assert at_or_above_kth(scores, 10).tolist() == [0, 1, 2]


def test_nan_among_the_first_scores_still_gives_k_positions() -> None:
    scores = np.random.default_rng(9).random(5 * FLOOR_SAMPLE)
    scores[:30] = np.nan
    assert len(at_or_above_kth(scores, 24)) == 24
