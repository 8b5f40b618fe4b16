"""The scoring both backends share: a positive idf, BM25's pull of term frequency and length, and the
script groups' backgrounds and offsets."""

from __future__ import annotations

import math

import numpy as np
import pytest

from langchain_md_memory.index.scoring import bm25_score, combine_backgrounds, lucene_idf, offset_top_k

FTS5_CLAMPED_IDF = 1e-6  # what FTS5's bm25() gives a term found in more than half of the chunks


@pytest.mark.parametrize(
    ("n_docs", "doc_freq"), [(1, 1), (2, 2), (10, 6), (10, 10), (1000, 999), (1000, 1000)]
)
def test_idf_stays_positive_for_a_term_in_most_documents(n_docs: int, doc_freq: int) -> None:
    # In a small memory a chunk matching only such a term must still score.
    assert lucene_idf(n_docs, doc_freq) > FTS5_CLAMPED_IDF


def test_idf_is_higher_for_rarer_terms() -> None:
    assert lucene_idf(100, 1) > lucene_idf(100, 10) > lucene_idf(100, 60) > lucene_idf(100, 100)


def test_idf_matches_the_lucene_formula() -> None:
    assert lucene_idf(10, 2) == pytest.approx(math.log(1 + (10 - 2 + 0.5) / (2 + 0.5)))


def test_a_document_without_the_query_terms_scores_zero() -> None:
    idf = {"bond": lucene_idf(10, 2)}
    assert bm25_score(["bond"], ["stock", "ladder"], idf, avg_len=2.0) == 0.0


def test_more_occurrences_of_a_term_score_higher_at_equal_length() -> None:
    idf = {"bond": lucene_idf(10, 3)}
    once = ["bond", "ladder", "cash", "fund"]
    twice = ["bond", "ladder", "bond", "fund"]
    assert bm25_score(["bond"], twice, idf, avg_len=4.0) > bm25_score(["bond"], once, idf, avg_len=4.0)


def test_the_same_match_in_a_shorter_document_scores_higher() -> None:
    idf = {"bond": lucene_idf(10, 3)}
    short = ["bond", "ladder"]
    long = ["bond", "ladder", *["filler"] * 20]
    assert bm25_score(["bond"], short, idf, avg_len=6.0) > bm25_score(["bond"], long, idf, avg_len=6.0)


def test_term_frequency_saturates() -> None:
    # BM25's k1 caps what repetition can add: the tenth occurrence adds less than the second.
    idf = {"bond": 1.0}

    def score(n: int) -> float:
        return bm25_score(["bond"], ["bond"] * n + ["x"] * (20 - n), idf, avg_len=20.0)

    assert score(2) - score(1) > score(10) - score(9) > 0


def test_a_rarer_matched_term_outweighs_a_common_one() -> None:
    idf = {"rare": lucene_idf(100, 2), "common": lucene_idf(100, 90)}
    doc_rare = ["rare", "x", "y"]
    doc_common = ["common", "x", "y"]
    terms = ["rare", "common"]
    assert bm25_score(terms, doc_rare, idf, avg_len=3.0) > bm25_score(terms, doc_common, idf, avg_len=3.0)


def test_the_memory_wide_background_is_the_mean_and_spread_of_every_groups_cosines() -> None:
    rng = np.random.default_rng(3)
    chinese, english = rng.normal(0.4, 0.05, 30), rng.normal(0.2, 0.08, 50)
    measured = [(group, len(c), (float(c.mean()), float(c.std())))
                for group, c in ((1, chinese), (0, english))]
    offsets, background = combine_backgrounds(measured)
    everything = np.concatenate([chinese, english])
    assert background == pytest.approx((everything.mean(), everything.std()))
    # Each group's offset: how far its mean stands from the memory-wide one.
    assert offsets[1] == pytest.approx(chinese.mean() - everything.mean())
    assert offsets[0] == pytest.approx(english.mean() - everything.mean()) and offsets[0] < 0 < offsets[1]


def test_no_vectors_measured_make_no_background() -> None:
    assert combine_backgrounds([]) == ({}, None)


def test_the_hits_of_a_group_without_a_background_are_named_beside_it() -> None:
    from langchain_md_memory.index.scoring import HitsBackground, hits_background, unmeasured_rows
    from tests.support.hits import make_record

    # Group 0 was measured (it has an offset); group 1 was too small to be.
    found = [(10, 0, 0.6), (11, 1, 0.9), (12, 1, 0.7)]
    assert unmeasured_rows(found, {0: 0.0}) == {11, 12}
    assert unmeasured_rows(found, {}) == {10, 11, 12}  # nothing measured
    records = {10: make_record("en"), 11: make_record("zh")}  # row 12 was not among the hits kept
    background = hits_background((0.5, 0.05), {11, 12}, records)
    assert isinstance(background, HitsBackground) and background.unmeasured == {"zh"}
    assert background == (0.5, 0.05)
    assert hits_background(None, {11}, records) is None


def test_a_cosine_ranks_less_its_groups_offset() -> None:
    # The question's own language (group 1) stands 0.1 nearer to it: its 0.6 counts as 0.5.
    found = [(10, 1, 0.6), (11, 1, 0.58), (20, 0, 0.52)]
    assert offset_top_k(found, {1: 0.05, 0: -0.05}, 2, groups=2) == [(20, pytest.approx(0.57)),
                                                                      (10, pytest.approx(0.55))]


def test_offset_scores_stay_within_zero_and_one_and_ties_go_to_the_lower_rowid() -> None:
    found = [(3, 0, 0.99), (2, 0, 0.95), (5, 1, 0.01), (4, 1, 0.05)]
    assert offset_top_k(found, {0: -0.1, 1: 0.1}, 4, groups=2) == [(2, 1.0), (3, 1.0), (4, 0.0), (5, 0.0)]


def test_a_memory_of_one_script_group_ranks_plain_cosines() -> None:
    found = [(1, 0, 0.7), (2, 0, 0.4)]
    assert offset_top_k(found, {0: 1e-17}, 5, groups=1) == [(1, 0.7), (2, 0.4)]
