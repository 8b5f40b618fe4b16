from langchain_md_memory.text import estimate_tokens, index_terms, match_expression, query_terms, token_set
from langchain_md_memory.text.tokens import marked_terms
from tests.support.reference_chunking import reference_stem


def test_chinese_word_inside_a_longer_run_is_an_index_term():
    terms = index_terms("单只个股不超过总仓位 5%").split()
    assert "仓位" in terms
    assert "个股" in terms
    assert "5" in terms


def test_single_cjk_characters_are_indexed_for_one_character_queries():
    assert "仓" in index_terms("总仓位").split()
    assert query_terms("仓") == ["仓"]


def test_query_terms_are_bigrams_and_lowercased_words_without_duplicates():
    assert query_terms("仓位 Risk risk") == ["仓位", "risk"]
    assert query_terms("英伟达") == ["英伟", "伟达"]


def test_mixed_script_word_splits_at_the_script_boundary():
    assert query_terms("NVDA仓位") == ["nvda", "仓位"]


def test_match_expression_quotes_every_term_and_keeps_operators_as_text():
    assert match_expression(query_terms('x AND b NEAR(c) "e" g* f:h')) == (
        '"x" OR "b" OR "near" OR "c" OR "e" OR "g" OR "f" OR "h"'
    )


def test_query_terms_drop_stop_words_but_never_all_of_them():
    assert query_terms("What did I decide about the NVDA position?") == ["decid", "nvda", "posit"]
    assert query_terms("what is it") == ["what", "is", "it"]
    assert query_terms("我们的仓位上限是多少") == ["的仓", "仓位", "位上", "上限", "限是", "是多"]


def test_english_words_are_stemmed_alike_in_notes_queries_and_token_sets():
    assert index_terms("Went painting; two paintings sold") == "went paint two paint sold"
    assert query_terms("Which flights did I book?") == ["flight", "book"]
    assert token_set("Flights booked") == {"flight", "book"}
    # Numbers, words with digits, non-English scripts and folded accents keep their form.
    assert index_terms("ERR_4012 v2s Café 仓位") == "err 4012 v2s cafe 仓 位 仓位"


def test_stop_words_are_dropped_before_stemming():
    # "does" and "has" are stop words; their stems ("doe", "ha") would not be.
    assert query_terms("Does she has painted?") == ["paint"]
    assert query_terms("running runs") == ["run"]  # one term once stemmed


def test_match_expression_of_punctuation_only_is_empty():
    assert match_expression(query_terms('"*:()-^')) == ""
    assert match_expression(query_terms("")) == ""


def test_token_sets_of_different_chinese_texts_are_not_equal():
    a = token_set("风险偏好保守")
    b = token_set("退休目标年龄六十")
    assert a and b and not (a & b)


def test_estimate_tokens_counts_cjk_characters_one_each():
    assert estimate_tokens("仓位规则") == 4
    assert estimate_tokens("a" * 35) == 10


def test_the_ascii_fast_path_gives_the_terms_of_the_general_path():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from langchain_md_memory.text import tokens as text

    @settings(max_examples=300, deadline=None)
    @given(st.text(alphabet=st.characters(max_codepoint=127), max_size=200))
    def same(sample: str) -> None:
        # The general path's words, folded as _fold folds ASCII: lower case.
        general = [word.lower() for word, _run in text._TOKEN_RE.findall(sample) if word]
        assert index_terms(sample).split() == [reference_stem(word) for word in general]
        kept = text.content_terms(list(dict.fromkeys(general)))
        assert query_terms(sample) == list(dict.fromkeys(map(reference_stem, kept)))

    same()


def test_a_kept_token_set_is_the_one_tokenizing_gives(monkeypatch) -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from langchain_md_memory.text import forget_token_sets, keep_token_sets
    from langchain_md_memory.text import tokens as text

    # Any text: words, CJK runs, compatibility characters NFKC expands (ﷺ holds spaces), whitespace.
    alphabet = st.one_of(st.characters(), st.sampled_from(list(" \t\n\u3000ﷺ㈱ﬁ仓位退休éÅ")))

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.text(alphabet=alphabet, max_size=60), max_size=5))
    def same(samples: list[str]) -> None:
        keep_token_sets(samples)
        for sample in samples:
            token_set.cache_clear()
            assert token_set(sample) == text._token_set(sample)
        forget_token_sets(samples)
        assert not set(samples) & set(text._KEPT)

    same()
    monkeypatch.setattr(text, "_KEPT_MAX", 3)
    keep_token_sets(["a b", "c d"])
    keep_token_sets(["e", "f", "g h"])  # would hold five: those kept before are forgotten
    assert set(text._KEPT) == {"e", "f", "g h"}
    token_set.cache_clear()
    assert token_set("c d") == {"c", "d"}  # forgotten, tokenized again
    forget_token_sets(["e", "f", "g h"])


def test_heading_level_reads_atx_headings_only() -> None:
    from langchain_md_memory.text import heading_level

    assert [heading_level(x) for x in ("# A", "  ### B", "######", "####### seven", "#tag", "- # no")] == [
        1, 3, 6, 0, 0, 0]


def test_marked_terms_marks_the_words_and_cjk_terms_the_keyword_search_matched():
    text = "- 单只个股不超过总仓位 5%; position limits apply"
    pieces = marked_terms(text, "单只个股 仓位上限 limit")
    assert "".join(piece for piece, _ in pieces) == text
    assert [piece for piece, hot in pieces if hot] == ["单只个股", "仓位", "limits"]  # stem and bigrams


def test_marked_terms_leaves_text_without_a_query_term_unmarked():
    assert marked_terms("Retire at 60", "bond ladder") == [("Retire at 60", False)]
    assert marked_terms("", "bond") == []
