"""Questions in one language find notes written in the other, through the public search."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from langchain_md_memory import MarkdownMemory
from langchain_md_memory.text import query_terms

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "memory"
NOTES = {
    "family.md": "# 家人\n\n## 爸爸妈妈（成都）\n- 爸爸：65岁，有高血压，每天吃氨氯地平。\n"
                 "- 妈妈：62岁，喜欢跳广场舞。\n",
    "health.md": "# Health\n\n- Allergic to penicillin (hives as a child).\n- Runs three times a week.\n",
    "work.md": "# Work\n\n- Team: Risk Platform; manager Priya.\n- On call every third week.\n",
}


@pytest.fixture
def bilingual(memory_dir: Path) -> Path:
    for name, text in NOTES.items():
        (memory_dir / name).write_text(text, encoding="utf-8")
    return memory_dir


def test_an_english_question_finds_the_chinese_note(bilingual: Path) -> None:
    with MarkdownMemory(bilingual, embeddings="none") as mem:
        hits = mem.search("what does my dad take for his blood pressure?")
    assert hits[0].path == "family.md"
    assert hits[0].relevance > 0


def test_a_chinese_question_finds_the_english_note(bilingual: Path) -> None:
    with MarkdownMemory(bilingual, embeddings="none") as mem:
        hits = mem.search("我对什么过敏？")
    assert hits[0].path == "health.md"


@pytest.mark.parametrize("question", ["options", "stock options", "option"])
def test_an_english_plural_finds_the_chinese_note_as_its_singular_does(tmp_path: Path, question: str) -> None:
    example = tmp_path / "memory"
    shutil.copytree(EXAMPLES, example, ignore=shutil.ignore_patterns(".md-memory"))
    with MarkdownMemory(example, embeddings="none") as mem:
        hits = mem.search(question)
    assert hits and "不碰杠杆 ETF 和期权" in hits[0].text  # 期权: options


def test_a_question_in_the_notes_language_keeps_its_own_ranking(bilingual: Path) -> None:
    with MarkdownMemory(bilingual, embeddings="none") as mem:
        assert mem.search("妈妈喜欢什么")[0].text.endswith("喜欢跳广场舞。")
        assert "Priya" in mem.search("who is my manager")[0].text


def _searched_queries(mem: MarkdownMemory, monkeypatch: pytest.MonkeyPatch) -> list[list[list[str]]]:
    """The term lists each keyword read of ``mem``'s index answers, as the reads happen."""
    searched: list[list[list[str]]] = []
    real = mem.index.keyword_search

    def counting(queries: list[list[str]], limit: int):  # type: ignore[no-untyped-def]
        searched.append([list(terms) for terms in queries])
        return real(queries, limit)

    monkeypatch.setattr(mem.index, "keyword_search", counting)
    return searched


def test_translations_the_memory_does_not_hold_cost_no_second_search(memory_dir: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    (memory_dir / "MEMORY.md").write_text("- Prefers tea over coffee.\n- 他喜欢喝茶。\n", "utf-8")
    with MarkdownMemory(memory_dir, embeddings="none") as mem:
        searched = _searched_queries(mem, monkeypatch)
        hits = mem.search("does my father drink coffee?")  # 父亲, 爸爸...: no note holds them
    assert searched == [[query_terms("does my father drink coffee?")]]
    assert "coffee" in hits[0].text


def test_a_question_and_its_translation_are_searched_in_one_keyword_read(
        bilingual: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with MarkdownMemory(bilingual, embeddings="none") as mem:
        searched = _searched_queries(mem, monkeypatch)
        hits = mem.search("what does my dad take for his blood pressure?")
    assert len(searched) == 1 and len(searched[0]) == 2
    assert "爸爸" in searched[0][1]
    assert hits[0].path == "family.md"


def test_an_english_question_over_english_notes_never_reads_the_dictionary(
        memory_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import langchain_md_memory.search.retrieve as retrieve

    (memory_dir / "MEMORY.md").write_text("- Prefers tea over coffee.\n- Rides a bike to work.\n", "utf-8")
    asked: list[int] = []
    monkeypatch.setattr(retrieve, "bundled_dictionary", lambda: asked.append(1))
    with MarkdownMemory(memory_dir, embeddings="none") as mem:
        assert "coffee" in mem.search("does my father drink coffee?")[0].text
        assert not asked  # no Chinese term in the memory: no translation could be found
        mem.append("- 爸爸喜欢喝茶。")
        mem.search("does my father drink tea?")
    assert asked  # now one could


def test_cross_language_keywords_can_be_turned_off(bilingual: Path) -> None:
    with MarkdownMemory(bilingual, embeddings="none", config={"ranking": {"cross_language": False}}) as mem:
        hits = mem.search("what does my dad take for his blood pressure?")
    assert all(hit.path != "family.md" for hit in hits)


def test_a_chinese_question_weighs_the_same_with_its_words_spaced_or_not(memory_dir: Path) -> None:
    # Unspaced, every two characters are a term: 在房 and 租是 straddle two words, no note holds
    # them, and they would weigh as the rarest terms of the question.
    (memory_dir / "home.md").write_text("# 房子\n\n- 房租现在每个月一千七百欧。\n", "utf-8")
    (memory_dir / "family.md").write_text("# 家人\n\n- 妈妈现在喜欢跳广场舞。\n", "utf-8")
    with MarkdownMemory(memory_dir, embeddings="none") as mem:
        spaced, unspaced = mem.search("我 现在 房租 是 多少？"), mem.search("我现在房租是多少？")
    assert spaced[0].path == unspaced[0].path == "home.md"
    assert unspaced[0].relevance == pytest.approx(spaced[0].relevance)


def test_a_chinese_question_word_weighs_nothing_as_the_english_one_does(memory_dir: Path) -> None:
    # "How much is my rent?" asks for "rent" alone; 多少 ("how much") and 哪里 ("where") must not
    # count as words the note lacks either.
    (memory_dir / "home.md").write_text("# 房子\n\n- 房租每个月一千七百欧。\n", "utf-8")
    (memory_dir / "family.md").write_text("# 家人\n\n- 妹妹在杭州一家游戏公司上班。\n", "utf-8")
    with MarkdownMemory(memory_dir, embeddings="none") as mem:
        for asked, bare, where in [("我的房租是多少？", "我的房租？", "home.md"),
                                   ("妹妹在哪里上班？", "妹妹上班？", "family.md")]:
            hit, plain = mem.search(asked)[0], mem.search(bare)[0]
            assert hit.path == plain.path == where
            assert hit.relevance == pytest.approx(plain.relevance)


def test_turned_off_an_english_question_never_reads_the_dictionary(bilingual: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import langchain_md_memory.search.retrieve as retrieve

    asked: list[int] = []
    real = retrieve.bundled_dictionary
    monkeypatch.setattr(retrieve, "bundled_dictionary", lambda: asked.append(1) or real())
    with MarkdownMemory(bilingual, embeddings="none", config={"ranking": {"cross_language": False}}) as mem:
        mem.search("who is my manager?")
        assert asked == []  # no translations asked for, no Chinese to cut into words
        mem.search("妈妈喜欢什么")
    assert asked == [1]  # a Chinese question is cut into words with it


@pytest.mark.parametrize(("flag", "reads"), [(["--no-cross-language"], []), ([], [1]),
                                             (["--cross-language"], [1])])
def test_the_cli_flag_switches_cross_language_keywords(bilingual: Path, monkeypatch: pytest.MonkeyPatch,
                                                       flag: list[str], reads: list[int]) -> None:
    import io

    import langchain_md_memory.search.retrieve as retrieve
    from langchain_md_memory.cli import main

    asked: list[int] = []
    real = retrieve.bundled_dictionary
    monkeypatch.setattr(retrieve, "bundled_dictionary", lambda: asked.append(1) or real())
    out, err = io.StringIO(), io.StringIO()
    code = main(["--dir", str(bilingual), "--embeddings", "none", *flag, "search", "who is my manager?"],
                out=out, err=err)
    assert code == 0, err.getvalue()
    assert asked == reads
