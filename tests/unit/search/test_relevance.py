import pytest

from langchain_md_memory.search.relevance import (
    Z_FULL,
    Z_NONE,
    annotate_relevance,
    keyword_coverage,
    vector_evidence,
)
from tests.support.hits import make_hit


def test_keyword_coverage_is_the_share_of_content_terms_present() -> None:
    assert keyword_coverage(["bond", "ladder"], "Built a bond ladder") == 1.0
    assert keyword_coverage(["bond", "ladder"], "Bond funds only") == pytest.approx(0.75)  # 1/2 of 2/3
    assert keyword_coverage(["bond", "ladder", "tax"], "Bond funds only") == pytest.approx(0.5)
    assert keyword_coverage(["仓位", "上限"], "单只个股仓位上限 5%") == 1.0
    assert keyword_coverage([], "anything") == 0.0


def test_keyword_coverage_weighs_each_term_by_its_rarity() -> None:
    weights = {"anna": 1.0, "shoe": 3.0, "bakeri": 3.0}
    assert keyword_coverage(["anna", "shoe"], "Anna likes tea", weights) == pytest.approx(0.375)
    assert keyword_coverage(["anna", "bakeri"], "Anna runs a bakery", weights) == 1.0
    assert keyword_coverage(["anna", "shoe"], "new shoes", weights) == 1.0  # 3 of 4 > 2/3
    # A long query: its four heaviest terms make the whole.
    many = ["a1", "a2", "a3", "a4", "a5", "a6"]
    assert keyword_coverage(many, "a5 a6", dict.fromkeys(many, 1.0)) == pytest.approx(0.75)
    # Terms without a weight (beyond the ones keyword recall reads) count for nothing.
    assert keyword_coverage(many, "a5 a6", dict.fromkeys(many[:4], 1.0)) == 0.0
    assert keyword_coverage(many, "a1 a6", dict.fromkeys(many[:4], 1.0)) == pytest.approx(0.375)


def test_vector_evidence_measures_the_cosine_against_the_memory_background() -> None:
    background = (0.78, 0.02)  # e5: every note sits near 0.78 for this query
    assert vector_evidence(0.78, background) == 0.0  # an average note is no evidence
    assert vector_evidence(0.78 + Z_NONE * 0.02, background) == pytest.approx(0.0)
    assert vector_evidence(0.78 + Z_FULL * 0.02, background) == pytest.approx(1.0)
    middle = 0.78 + (Z_NONE + Z_FULL) / 2 * 0.02
    assert vector_evidence(middle, background) == pytest.approx(0.5)
    # The same raw cosine is strong evidence in a memory whose notes are far from the query.
    assert vector_evidence(0.60 + (Z_FULL + 1) * 0.03, (0.60, 0.03)) == 1.0
    assert vector_evidence(None, background) == 0.0
    assert vector_evidence(0.7, None) == 0.7  # a handful of notes: no background, the raw cosine


def test_annotate_relevance_takes_the_stronger_signal() -> None:
    hits = [make_hit("a", 0.9, text="bond ladder", vector_score=0.78, keyword_score=1.0),
            make_hit("b", 0.5, text="cash buffer", vector_score=0.78 + 6 * 0.02, keyword_score=None)]
    a, b = annotate_relevance(hits, ["bond", "ladder"], (0.78, 0.02))
    assert a.relevance == 1.0  # every query term, an average cosine
    assert b.relevance == 1.0  # no query term, a cosine far above the background


def test_a_cosine_the_background_does_not_measure_is_no_evidence_for_the_label() -> None:
    from langchain_md_memory.index.scoring import HitsBackground

    cosine = 0.78 + 6 * 0.02  # far above the background: full vector evidence when measured
    hits = [make_hit("en", 0.9, text="cash buffer", vector_score=cosine, keyword_score=None),
            make_hit("zh", 0.8, text="现金储备", vector_score=cosine, keyword_score=None),
            make_hit("kw", 0.7, text="bond ladder", vector_score=cosine, keyword_score=1.0)]
    # A memory of a handful of notes has no background: its raw cosines are no evidence either.
    assert [(h.relevance, h.confident) for h in annotate_relevance(hits, ["bond", "ladder"], None)] == [
        (0.0, False), (0.0, False), (1.0, True)]
    # Both hits are measured: both are evidence.
    en, zh, kw = annotate_relevance(hits, ["bond", "ladder"], HitsBackground((0.78, 0.02)))
    assert en.confident and zh.confident and kw.confident
    # The Chinese hit's script group is too small for a background: only the keyword evidence counts.
    en, zh, kw = annotate_relevance(hits, ["bond", "ladder"], HitsBackground((0.78, 0.02), ["zh", "kw"]))
    assert en.relevance == 1.0 and en.confident
    assert zh.relevance == 0.0 and not zh.confident
    assert kw.relevance == 1.0 and kw.confident  # it holds the query's words
    assert HitsBackground((0.78, 0.02), ["zh"]) == (0.78, 0.02)  # the background, with a note on it


def test_the_default_cuts_nothing_and_an_explicit_min_score_cuts_each_hit() -> None:
    from langchain_md_memory.search.relevance import CONFIDENT_RELEVANCE, relevant

    strong = make_hit("strong", 0.9, vector_score=0.9, relevance=CONFIDENT_RELEVANCE + 0.1)
    weak = make_hit("weak", 0.5, vector_score=0.8, relevance=0.1)
    assert relevant([strong, weak], None) == [strong, weak]
    assert relevant([weak], None) == [weak]  # a weak stored match is shown, never withheld
    assert relevant([strong, weak], 0.3) == [strong]
    assert relevant([weak], 0.3) == []


def test_a_hit_is_labelled_confident_from_its_relevance_with_vectors() -> None:
    from langchain_md_memory.search.relevance import CONFIDENT_RELEVANCE

    background = (0.78, 0.02)
    strong_cosine = 0.78 + 6 * 0.02
    hits = [make_hit("far", 0.9, text="cash buffer", vector_score=strong_cosine, keyword_score=None),
            make_hit("near", 0.5, text="cash buffer", vector_score=0.79, keyword_score=None)]
    far, near = annotate_relevance(hits, ["bond", "ladder"], background)
    assert far.relevance >= CONFIDENT_RELEVANCE and far.confident
    assert near.relevance < CONFIDENT_RELEVANCE and not near.confident


def test_a_keyword_only_hit_is_confident_when_it_covers_the_query_not_for_being_the_best_match() -> None:
    weights = {"shoe": 3.0, "anna": 1.0}
    hits = [make_hit("name-only", 0.9, text="Anna likes tea", vector_score=None, keyword_score=1.0),
            make_hit("both", 0.5, text="Anna's shoe size is 38", vector_score=None, keyword_score=0.6)]
    name_only, both = annotate_relevance(hits, ["shoe", "anna"], None, weights)
    assert name_only.relevance >= 0.5  # the best BM25 match, whatever it matched
    assert not name_only.confident  # but it holds only the common term
    assert both.confident


def test_bm25_evidence_counts_in_full_only_against_a_best_match_that_covers_the_query() -> None:
    from langchain_md_memory.search.relevance import best_coverage, keyword_evidence

    weights = {"toma": 0.5, "automobil": 3.0}
    terms = ["toma", "automobil"]
    # Nothing holds "automobile": the best keyword match holds only the common name.
    best = best_coverage(terms, [("Tomás bakes bread", 1.0), ("Tomás and Ana", 0.6)], weights)
    assert best == pytest.approx(0.5 / (3.5 * 2 / 3))
    assert keyword_evidence(terms, "Tomás bakes bread", 1.0, weights, best) == pytest.approx(best)
    # A best match holding the rare term keeps BM25 evidence at full strength.
    assert best_coverage(terms, [("Tomás's automobile", 1.0)], weights) == 1.0
    assert keyword_evidence(terms, "Tomás's automobile", 1.0, weights, 1.0) == 1.0
    assert best_coverage([], [("anything", 1.0)]) == 1.0
    assert best_coverage(terms, [], weights) == 1.0


def test_a_keyword_match_on_a_common_word_no_longer_outranks_a_semantic_answer() -> None:
    from langchain_md_memory.config import MemoryConfig
    from langchain_md_memory.search import Recall, rank
    from tests.support.hits import make_record

    name_only = make_record("name", "memory/2026-03-01.md", text="- Tomás bakes bread on Sundays")
    answer = make_record("car", "MEMORY.md", text="- Car lease ends in May")
    recall = Recall(
        vector=[(answer, 0.78 + 3 * 0.02), (name_only, 0.78)],  # 3 deviations: half the vector evidence
        keyword=[(name_only, 1.0)],  # the best (and only) keyword match: the name, not the car
        terms=["toma", "automobil"], background=(0.78, 0.02), term_weights={"toma": 0.5, "automobil": 3.0},
    )
    hits = rank(recall, MemoryConfig(ranking={"temporal_decay": {"enabled": False}})).hits
    assert [h.chunk_id for h in hits] == ["car", "name"]
    assert hits[0].score == pytest.approx(0.25)  # 0.5 x vector evidence 0.5
    # Relative to the best hit alone, the name note's BM25 counted as full evidence: 0.5 x 0.61 = 0.30.
    assert hits[1].score == pytest.approx(0.5 * (0.5 + 0.5) * 0.5 / (3.5 * 2 / 3))


def test_a_term_held_through_a_translation_counts_less_and_no_more_than_the_translation_is_rare() -> None:
    from langchain_md_memory.search.relevance import CROSSED_WEIGHT

    terms = ["dad", "pressur"]
    translations = {"dad": [("爸爸",)], "pressur": [("血压",)]}
    note = "爸爸：65岁，有高血压"
    # Both English words are absent from the memory (the heaviest weight); their translations are not.
    weights = {"dad": 4.0, "pressur": 4.0, "爸爸": 4.0, "血压": 2.0}
    whole = (4.0 + 4.0) * 2 / 3
    assert keyword_coverage(terms, note, weights) == 0.0
    assert keyword_coverage(terms, note, weights, translations) == pytest.approx(
        CROSSED_WEIGHT * (4.0 + 2.0) / whole)  # 血压 is commoner: it says less than "pressure" would
    assert keyword_coverage(terms, "dad has high blood pressure", weights, translations) == 1.0
    assert keyword_coverage(terms, "妈妈", weights, translations) == 0.0
