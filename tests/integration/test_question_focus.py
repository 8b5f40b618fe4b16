"""Through MarkdownMemory: an answer ranks above a question that only asks, a named period above others."""

from __future__ import annotations

from pathlib import Path

from langchain_md_memory import MarkdownMemory


def test_the_reply_ranks_above_the_stored_question_that_shares_the_words(memory_dir: Path) -> None:
    (memory_dir / "chat").mkdir()
    (memory_dir / "chat" / "t1.md").write_text("Ana: What is your favourite dish from the cooking show?\n")
    (memory_dir / "chat" / "t2.md").write_text(
        "Nate: My favourite dish from the cooking show is the coconut ice cream, dairy-free.\n")
    with MarkdownMemory(memory_dir, embeddings="none") as mem:
        hits = mem.search("favourite dish from the cooking show")
    with MarkdownMemory(memory_dir, embeddings="none", config={"ranking": {"question_weight": 1.0}}) as mem:
        unweighted = mem.search("favourite dish from the cooking show")
    assert unweighted[0].path == "chat/t1.md"  # the question holds every word of the query
    assert hits[0].path == "chat/t2.md"
    assert hits[1].weight == 0.8


def test_a_log_of_the_month_the_question_names_ranks_first(memory_dir: Path) -> None:
    (memory_dir / "2025-03-14.md").write_text("- Paid the plumber 180 EUR for the boiler.\n")
    (memory_dir / "2025-06-14.md").write_text("- Paid the plumber 240 EUR for the boiler and the sink.\n")
    with MarkdownMemory(memory_dir, embeddings="none") as mem:
        march = mem.search("how much did I pay the plumber in March 2025?")
        june = mem.search("how much did I pay the plumber in June 2025?")
        undated = mem.search("how much did I pay the plumber?")
    assert march[0].path == "2025-03-14.md" and march[1].weight == 0.5
    assert june[0].path == "2025-06-14.md"
    assert all(hit.weight == 1.0 for hit in undated)


def test_a_chinese_question_names_its_month_too(memory_dir: Path) -> None:
    (memory_dir / "2025-03-02.md").write_text("- 交了三月的房租，一千六百五十欧。\n")
    (memory_dir / "2025-07-02.md").write_text("- 交了七月的房租，一千六百五十欧，房东说明年要涨。\n")
    with MarkdownMemory(memory_dir, embeddings="none") as mem:
        hits = mem.search("2025年3月交了多少房租")
    assert hits[0].path == "2025-03-02.md"


def test_the_named_speakers_own_line_ranks_above_another_speaker_echoing_the_words(memory_dir: Path) -> None:
    (memory_dir / "chat").mkdir()
    (memory_dir / "chat" / "t1.md").write_text(
        "Caroline (1:56 pm on 8 May, 2023): Melanie, your sunrise painting of the lake is amazing!\n")
    (memory_dir / "chat" / "t2.md").write_text(
        "Melanie (1:56 pm on 8 May, 2023): Thanks! I painted that lake sunrise last year, a fine morning.\n")
    (memory_dir / "notes.md").write_text("- Painting classes: Tuesdays.\n")
    question = "When did Melanie paint the lake sunrise?"
    with MarkdownMemory(memory_dir, embeddings="none") as mem:
        hits = mem.search(question)
    with MarkdownMemory(memory_dir, embeddings="none", config={"ranking": {"speaker_weight": 1.0}}) as mem:
        unweighted = mem.search(question)
    assert unweighted[0].path == "chat/t1.md"  # Caroline's line is the shorter, it names Melanie too
    assert hits[0].path == "chat/t2.md"
    caroline = next(hit for hit in hits if hit.path == "chat/t1.md")
    assert caroline.weight == 0.7
    assert next(hit for hit in hits if hit.path == "notes.md").weight == 1.0  # no speaker: left alone
