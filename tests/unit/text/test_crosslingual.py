"""CC-CEDICT both ways: which words of a question get translations, and which translations."""

from __future__ import annotations

import pytest

from langchain_md_memory.text import crosslingual
from langchain_md_memory.text.crosslingual import Dictionary, bundled_dictionary

LINES = [
    "# CC-CEDICT",
    "爸爸 爸爸 [ba4 ba5] /(coll.) father; dad/CL:個|个[ge4],位[wei4]/",
    "妹妹 妹妹 [mei4 mei5] /younger sister/",
    "生日 生日 [sheng1 ri4] /birthday/CL:個|个[ge4]/",
    "房租 房租 [fang2 zu1] /rent for a room or house/",
    "什麼 什么 [shen2 me5] /what?/",
    "維生素 维生素 [wei2 sheng1 su4] /vitamin/",
    "血 血 [xue4] /blood/",
    "not an entry",
]


def test_english_words_go_to_the_headwords_that_gloss_them() -> None:
    cedict = Dictionary(LINES)
    assert cedict.translations("When is my dad's birthday?") == {"dad": ["爸爸"], "birthday": ["生日"]}
    # A two-word gloss names its head word: a younger sister is a sister.
    assert cedict.translations("where does my sister work") == {"sister": ["妹妹"]}
    assert cedict.translations("how much vitamins") == {"vitamins": ["维生素"]}
    # One-character headwords are too ambiguous to search with; stop words are not translated.
    assert cedict.translations("my blood") == {}


def test_a_plural_also_finds_the_headwords_of_its_singular() -> None:
    cedict = Dictionary([*LINES, "期權 期权 [qi1 quan2] /option (finance)/",
                         "指數期權 指数期权 [zhi3 shu4 qi1 quan2] /index options/",
                         "政策 政策 [zheng4 ce4] /policy/", "盒子 盒子 [he2 zi5] /box/",
                         "電影 电影 [dian4 ying3] /movie/", "新聞 新闻 [xin1 wen2] /news/",
                         "新人 新人 [xin1 ren2] /new/"])
    # "options" glosses 指数期权 alone; the singular's 期权 is what a note about options holds.
    assert cedict.translations("stock options") == {"options": ["指数期权", "期权"]}
    assert cedict.translations("policies and boxes") == {"policies": ["政策"], "boxes": ["盒子"]}
    assert cedict.translations("movies") == {"movies": ["电影"]}  # movie, not movy
    # A singular must be the same term to the index: "news" is not the plural of "new".
    assert cedict.translations("news") == {"news": ["新闻"]}


def test_chinese_words_are_found_longest_first_and_go_to_their_glosses() -> None:
    cedict = Dictionary(LINES)
    assert cedict.translations("维生素D每天补多少") == {"维生素": ["vitamin"]}
    assert cedict.translations("爸爸的生日是哪天") == {"爸爸": ["father; dad"], "生日": ["birthday"]}
    assert cedict.translations("现在每个月房租多少") == {"房租": ["rent for a room or house"]}
    assert cedict.translations("什么") == {}  # function characters only


def test_the_bundled_dictionary_is_cc_cedict() -> None:
    cedict = bundled_dictionary()
    assert cedict is not None and bundled_dictionary() is cedict  # read once
    assert "爸爸" in cedict.translations("dad")["dad"]
    assert "allergic" in " ".join(cedict.translations("过敏")["过敏"])


def test_a_gloss_names_its_thing_with_one_or_two_words() -> None:
    from langchain_md_memory.text.crosslingual import gloss_heads

    assert gloss_heads("father; dad") == [["father"], ["dad"]]
    assert gloss_heads("younger sister") == [["younger", "sister"]]
    assert gloss_heads("rent for a room or house") == [["rent"]]  # the words before the modifier
    assert gloss_heads("to take care of one's health") == [["take", "care"]]
    assert gloss_heads("how much?") == []  # a question, not a name
    cedict = Dictionary(LINES)
    assert cedict.translations("what is the rent") == {"rent": ["房租"]}


def test_seams_are_the_bigrams_straddling_two_words_of_a_chinese_question() -> None:
    cedict = Dictionary([*LINES, "現在 现在 [xian4 zai4] /now/", "多少 多少 [duo1 shao5] /how many/",
                         "教育 教育 [jiao4 yu4] /education/"])
    # 我 + 现在 + 房租 + 是 + 多少: each pair across a boundary, none beside a lone content character.
    assert cedict.seams("我现在房租是多少？") == {"我现": False, "在房": False, "租是": False, "是多": False}
    # 教育 + 金: 金 stands alone, and 教育金 may be a word the dictionary lacks.
    assert cedict.seams("孩子的教育金") == {"的教": False, "育金": True}
    assert cedict.seams("what is the rent") == {}


TRICKY = [
    *LINES,
    "股票 股票 [gu3 piao4] /share; stock (CL:支[zhi1])/",
    "爹地 爹地 [die1 di4] /(loanword) Daddy/Dad/",  # capitalised glosses
    "牛市 牛市 [niu2 shi4] /bull market/",
    "熊市 熊市 [xiong2 shi4] /bear market/",
    "市場 市场 [shi4 chang3] /marketplace; market (also in abstract)/",  # "market" inside "marketplace"
    "限額 限额 [xian4 e2] /limit; quota/(a)limit(b)/",  # an aside inside a word
    "仓 仓 [cang1] /barn/",
    "倉位 仓位 [cang1 wei4] /(finance) position/",
    "倉位 仓位 [cang1 wei4] /see 倉位/variant of position/",  # a second entry, non-meanings
]


def test_one_english_word_finds_what_the_whole_reverse_index_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(crosslingual, "_SCANS_BEFORE_INDEX", 10_000)  # every word scanned
    cedict = Dictionary(TRICKY)
    full = Dictionary(TRICKY).en_zh
    assert full["market"] == ("牛市", "熊市", "市场") and full["dad"] == ("爸爸", "爹地")
    for word in [*full, "marketplace", "aliment", "quota", "xyz", "barn"]:
        assert cedict.headwords(word) == full.get(word, ()), word
    assert cedict._en_zh is None


def test_a_process_that_looked_up_many_words_answers_from_the_whole_reverse_index(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(crosslingual, "_SCANS_BEFORE_INDEX", 3)
    cedict = Dictionary(TRICKY)
    full = Dictionary(TRICKY).en_zh
    words = ["market", "dad", "quota", "limit", "xyz", "position", "barn"]
    assert [cedict.headwords(w) for w in words[:3]] == [full.get(w, ()) for w in words[:3]]
    assert cedict._en_zh is None  # three words scanned
    assert [cedict.headwords(w) for w in words[3:]] == [full.get(w, ()) for w in words[3:]]
    assert cedict._en_zh == full  # the fourth built the index
    assert cedict._gloss_text is None  # and let the scanned text go


def test_english_lookups_on_cc_cedict_match_the_reverse_index_without_building_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import random

    from langchain_md_memory.text.crosslingual import _load

    monkeypatch.setattr(crosslingual, "_SCANS_BEFORE_INDEX", 10_000)
    cedict = _load.__wrapped__()  # a copy of its own, not the process's shared dictionary
    assert cedict is not None
    assert "dad" in cedict.translations("when is my dad's birthday")
    assert cedict._en_zh is None  # the query above did not build the whole index
    other = _load.__wrapped__()
    assert other is not None
    full = other.en_zh
    words = [*random.Random(40).sample(sorted(full), 150), "position", "limit", "stock", "rent", "dad"]
    assert [cedict.headwords(w) for w in words] == [full[w] for w in words]
