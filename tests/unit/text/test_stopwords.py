from langchain_md_memory.text.stopwords import content_terms, is_stop_term


def test_english_function_words_are_stop_terms_and_content_words_are_not():
    assert all(is_stop_term(w) for w in ["the", "what", "did", "my", "about"])
    assert not any(is_stop_term(w) for w in ["nvda", "retirement", "name", "like", "4012"])


def test_a_chinese_bigram_is_a_stop_term_only_when_both_characters_are_function_characters():
    assert is_stop_term("我们") and is_stop_term("什么") and is_stop_term("的")
    assert not is_stop_term("仓位")
    assert not is_stop_term("目的")  # 的 at the end of a content word keeps the word


def test_content_terms_keep_order_and_fall_back_to_every_term():
    assert content_terms(["my", "bond", "the", "ladder"]) == ["bond", "ladder"]
    assert content_terms(["what", "is", "it"]) == ["what", "is", "it"]
    assert content_terms([]) == []


def test_present_time_adverbs_are_stop_terms_so_a_note_of_the_current_fact_covers_the_question():
    assert content_terms(["who", "insures", "the", "car", "now"]) == ["insures", "car"]
    assert content_terms(["currently", "gym"]) == ["gym"]
    assert is_stop_term("现在") and is_stop_term("目前")
    assert not is_stop_term("现金")  # a bigram sharing a character keeps its meaning


def test_chinese_question_words_are_stop_terms_as_their_english_words_are():
    assert all(is_stop_term(w) for w in ["how", "much", "where", "which"])
    assert all(is_stop_term(w) for w in ["多少", "哪里", "哪个", "如何"])
    assert not any(is_stop_term(w) for w in ["多数", "里程", "少年"])  # a shared character keeps its word
