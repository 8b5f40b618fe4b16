"""CC-CEDICT both ways: which words of a question get translations, and which translations."""

from __future__ import annotations

from langchain_md_memory.crosslingual import Dictionary, bundled_dictionary

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
    from langchain_md_memory.crosslingual import gloss_heads

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
