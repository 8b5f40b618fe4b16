"""Source-aware weights and the access-count boost."""

from __future__ import annotations

import math

import pytest

from langchain_md_memory.search.weighting import apply_source_weights, weight_multiplier
from langchain_md_memory.types import FileKind, MemorySearchResult
from tests.support.hits import make_hit

NEUTRAL = {"evergreen": 1.0, "daily": 1.0, "session": 1.0}


def hit(chunk_id: str, score: float, kind: FileKind = "evergreen") -> MemorySearchResult:
    path = {"evergreen": "MEMORY.md", "daily": "2026-01-02.md", "session": "sessions/s1.md"}[kind]
    return make_hit(chunk_id, score, path=path, end_line=2, file_kind=kind, merged_score=score)


def test_neutral_defaults_leave_hits_identical() -> None:
    hits = [hit("a", 0.9), hit("b", 0.6, "daily"), hit("c", 0.3, "session")]
    out = apply_source_weights(hits, weights=NEUTRAL, access_counts={"a": 5, "c": 2}, access_weight=0.0)
    assert out == hits
    assert [h.score for h in out] == [0.9, 0.6, 0.3]
    assert all(h.weight == 1.0 for h in out)


def test_session_weight_half_halves_session_score() -> None:
    hits = [hit("e", 0.8), hit("s", 0.6, "session")]
    out = {
        h.chunk_id: h
        for h in apply_source_weights(
            hits, weights={**NEUTRAL, "session": 0.5}, access_counts=None, access_weight=0.0
        )
    }
    assert out["s"].score == pytest.approx(0.3)
    assert out["s"].weight == 0.5
    assert out["s"].merged_score == 0.6
    assert out["e"].score == 0.8 and out["e"].weight == 1.0


def test_access_weight_raises_frequently_returned_chunk_above_peer() -> None:
    hits = [hit("fresh", 0.60), hit("popular", 0.55)]
    out = apply_source_weights(hits, weights=NEUTRAL, access_counts={"popular": 9}, access_weight=0.1)
    assert [h.chunk_id for h in out] == ["popular", "fresh"]
    expected = 1 + 0.1 * math.log1p(9)
    assert out[0].weight == pytest.approx(expected)
    assert out[0].score == pytest.approx(0.55 * expected)
    assert out[1].score == 0.60


def test_zero_access_count_gets_no_boost() -> None:
    assert weight_multiplier("evergreen", NEUTRAL, 0, 0.5) == 1.0
    assert weight_multiplier("daily", {"daily": 2.0}, 0, 0.5) == 2.0


def test_unknown_kind_weighs_one_and_negative_counts_clamp() -> None:
    assert weight_multiplier("session", {"daily": 0.1}, -4, 0.3) == 1.0


def test_weighted_hits_are_resorted() -> None:
    hits = [hit("d", 0.9, "daily"), hit("e", 0.5)]
    out = apply_source_weights(
        hits, weights={**NEUTRAL, "daily": 0.25}, access_counts=None, access_weight=0.0
    )
    assert [(h.chunk_id, round(h.score, 6)) for h in out] == [("e", 0.5), ("d", 0.225)]
