"""How the bench scores keyword recall against exhaustive BM25."""

from __future__ import annotations

from bench.keyword_baselines import agreement


def test_agreement_is_the_share_of_the_exhaustive_top_k_found() -> None:
    assert agreement({1, 2, 3}, {1, 2, 4, 5}) == 0.5
    assert agreement({1, 2}, {1, 2}) == 1.0


def test_a_query_nothing_matches_agrees_only_when_nothing_is_returned() -> None:
    assert agreement(set(), set()) == 1.0
    assert agreement({7}, set()) == 0.0
