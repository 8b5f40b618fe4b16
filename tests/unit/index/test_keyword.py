"""Keyword scoring: a positive idf, BM25's pull of term frequency and length."""

from __future__ import annotations

import math

import pytest

from langchain_md_memory.index.keyword import LastTermIdf, bm25_score, lucene_idf

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


def test_a_kept_idf_can_be_peeked_and_is_then_taken_once() -> None:
    kept = LastTermIdf()
    kept.keep(["bond", "ladder"], {"bond": 1.0, "ladder": 2.0})
    assert kept.peek(["bond"]) is None  # the idf of other terms
    assert kept.peek(["bond", "ladder"]) == {"bond": 1.0, "ladder": 2.0}
    assert kept.take(["bond", "ladder"]) == {"bond": 1.0, "ladder": 2.0}  # peeking left it there
    assert kept.take(["bond", "ladder"]) is None and kept.peek(["bond", "ladder"]) is None
