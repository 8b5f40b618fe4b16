"""As-of search through the public API: what the memory held on a day, from the History it keeps."""

from __future__ import annotations

import asyncio
import datetime as dt
import io
import json
from pathlib import Path

import pytest

from langchain_md_memory import MarkdownMemory, create_memory_tools
from langchain_md_memory.cli.main import main

CHANGED = dt.date(2025, 4, 1)  # the day the rent changed
OLD = "Rent €1,650 for the Arroios flat"
NEW = "Rent €1,720 for the Arroios flat"


@pytest.fixture
def mem(tmp_path: Path):
    with MarkdownMemory(tmp_path / "memory", embeddings="none") as memory:
        memory.append(f"- {OLD} <!-- src: via=test 2024-06-01 -->\n- Knee physio on Mondays\n- Tea: sencha")
        assert memory.supersede(OLD, NEW, today=CHANGED)
        yield memory


def _texts(hits) -> list[str]:
    return [hit.text for hit in hits]


def test_fact_superseded_on_a_day_is_returned_as_of_before_it_and_not_after(mem):
    before = mem.search("What was my rent?", as_of=CHANGED - dt.timedelta(days=1))
    assert OLD in before[0].text and "~~" in before[0].text
    assert (before[0].valid_from, before[0].valid_until) == ("2024-06-01", CHANGED.isoformat())
    for day in (CHANGED, CHANGED + dt.timedelta(days=30)):
        after = mem.search("What was my rent?", as_of=day)
        assert not any(OLD in text for text in _texts(after))
        assert any(NEW in text for text in _texts(after))


def test_fact_not_yet_written_on_the_day_is_not_returned(mem):
    hits = mem.search("What was my rent?", as_of=dt.date(2024, 5, 1))  # before its provenance day
    assert not any(OLD in text for text in _texts(hits))


def test_line_written_after_the_day_is_left_out_of_an_as_of_answer(mem):
    mem.append("- Gym: Holmes Place <!-- src: via=test 2025-06-01 -->", file="notes/gym.md")
    assert any("Holmes" in t for t in _texts(mem.search("Which gym?")))
    assert not any("Holmes" in t for t in _texts(mem.search("Which gym?", as_of=dt.date(2025, 5, 1))))
    now = mem.search("Which gym?", as_of=dt.date(2025, 7, 1))
    assert now[0].valid_from == "2025-06-01" and now[0].valid_until is None


def test_present_tense_question_never_returns_a_struck_line(mem):
    for question in ("What is my rent?", "rent Arroios flat 1,650", "How much is the rent now?"):
        hits = mem.search(question)
        assert hits and not any("~~" in text or "superseded" in text for text in _texts(hits))
        assert all(hit.valid_until is None for hit in hits)
    assert mem.search_detailed("What is my rent?").as_of is None


def test_a_date_in_the_question_is_the_as_of_day_in_english_and_chinese(mem):
    for question in ("What was my rent in March 2025?", "What was my rent in 2025-03?",
                     "2025年3月的 rent 是多少？"):
        ranked = mem.search_detailed(question)
        assert ranked.as_of == dt.date(2025, 3, 31), question
        assert OLD in ranked.hits[0].text, question
    later = mem.search_detailed("What was my rent in May 2025?")
    assert later.as_of == dt.date(2025, 5, 31)
    assert not any(OLD in text for text in _texts(later.hits))


def test_relative_dates_read_from_today(tmp_path):
    today = dt.date.today()
    last_month_end = today.replace(day=1) - dt.timedelta(days=1)
    with MarkdownMemory(tmp_path / "m", embeddings="none") as memory:
        memory.append("- Bike: a Brompton <!-- src: via=test 2020-01-01 -->")
        assert memory.supersede("Bike: a Brompton", "Bike: a Cannondale", today=today.replace(day=1))
        for question in ("Which bike did I ride last month?", "上个月我骑什么 bike？"):
            ranked = memory.search_detailed(question)
            assert ranked.as_of == last_month_end, question
            assert "Brompton" in ranked.hits[0].text, question
        year_ago = memory.search_detailed(f"去年{last_month_end.month}月的 bike")
        assert year_ago.as_of == last_month_end.replace(year=last_month_end.year - 1)


def test_asearch_and_retriever_take_as_of(mem):
    hits = asyncio.run(mem.asearch("What was my rent?", as_of=dt.date(2025, 3, 1)))
    assert OLD in hits[0].text
    docs = mem.as_retriever(search_kwargs={"as_of": "2025-03-01"}).invoke("What was my rent?")
    assert OLD in docs[0].page_content and docs[0].metadata["valid_until"] == "2025-04-01"
    assert json.dumps(hits[0].to_dict())  # JSON-ready, intervals included
    with pytest.raises(ValueError, match="YYYY-MM-DD"):
        mem.as_retriever(search_kwargs={"as_of": "March"})


def test_tool_as_of_gives_the_past_and_a_bad_date_a_clear_error(mem):
    search = create_memory_tools(mem)[0]
    out = search.invoke({"query": "What was my rent?", "as_of": "2025-03-01"})
    assert out.startswith("As of 2025-03-01 (asked)")
    assert OLD in out and "valid until 2025-04-01" in out
    bad = search.invoke({"query": "What was my rent?", "as_of": "last spring"})
    assert bad.startswith("Error: as_of='last spring' is not a date") and "YYYY-MM-DD" in bad
    assert OLD not in search.invoke({"query": "What is my rent?"})


def test_cli_as_of_prints_the_day_and_refuses_a_bad_date(mem):
    mem.close()
    out, err = io.StringIO(), io.StringIO()
    code = main(["--dir", str(mem.memory_dir), "--embeddings", "none", "search", "What was my rent?",
                 "--as-of", "2025-03-01", "--json"], out=out, err=err)
    assert code == 0, err.getvalue()
    result = json.loads(out.getvalue())
    assert result["as_of"] == "2025-03-01" and OLD in result["results"][0]["text"]
    assert result["results"][0]["valid_until"] == "2025-04-01"
    out, err = io.StringIO(), io.StringIO()
    args = ["--dir", str(mem.memory_dir), "--embeddings", "none", "search", "rent", "--as-of", "2025-3-1"]
    code = main(args, out=out, err=err)
    assert code != 0 and "YYYY-MM-DD" in err.getvalue()


def test_an_as_of_answer_shows_only_what_was_written_by_the_day(mem):
    hits = mem.search("What was my rent?", as_of=dt.date(2025, 3, 15))
    assert OLD in hits[0].text
    assert not any(NEW in text for text in _texts(hits))  # written on 2025-04-01, after the day
    physio = next(hit for hit in hits if "Knee physio" in hit.text)  # its undated lines held then
    assert "Tea: sencha" in physio.text and physio.valid_from is None


VOCAB = ["rent", "gym", "tea", "flat", "physio"]


def test_struck_lines_are_embedded_when_indexed_never_during_a_search(tmp_path: Path):
    from tests.support.embeddings import AxisEmbeddings

    model = AxisEmbeddings(VOCAB)
    history = "\n".join(f"- ~~Rent {n} for the flat~~ (superseded 2025-0{1 + n % 9}-01) "
                        f"<!-- src: via=test 2024-0{1 + n % 9}-01 -->" for n in range(300))
    with MarkdownMemory(tmp_path / "memory", embeddings=model) as memory:
        memory.write("MEMORY.md", f"- Rent 1,720 for the flat\n- Gym on Mondays\n\n## History\n{history}\n")
        stats = memory.sync()
        assert stats.embedded == stats.chunks_added + 300  # each struck statement once, at index time
        calls = model.calls
        hits = memory.search("rent for the flat", as_of=dt.date(2024, 9, 15))
        assert model.calls == calls  # the query embeds through embed_query; no document was embedded
        assert hits[0].valid_until is not None and hits[0].valid_until > "2024-09-15"
        assert all(hit.valid_from is None or hit.valid_from <= "2024-09-15" for hit in hits)


def test_an_edited_or_removed_file_takes_its_struck_lines_with_it(mem):
    assert OLD in mem.search("What was my rent?", as_of=dt.date(2025, 3, 1))[0].text
    text = mem.get("MEMORY.md")
    mem.write("MEMORY.md", text[: text.index("## History")])
    assert not any(OLD in t for t in _texts(mem.search("What was my rent?", as_of=dt.date(2025, 3, 1))))
    mem.write("notes.md", text)
    assert OLD in mem.search("What was my rent?", as_of=dt.date(2025, 3, 1))[0].text
    mem.delete_file("notes.md")
    assert not any(OLD in t for t in _texts(mem.search("What was my rent?", as_of=dt.date(2025, 3, 1))))


def test_an_index_from_before_struck_lines_were_kept_gains_them_on_open(mem):
    import sqlite3

    path = mem.memory_dir / "index.sqlite"
    mem.close()
    with sqlite3.connect(path) as conn:  # the index as the package before it wrote it: schema 4
        conn.execute("DROP TABLE past_facts")
        conn.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    with MarkdownMemory(mem.memory_dir, embeddings="none") as again:
        assert OLD in again.search("What was my rent?", as_of=dt.date(2025, 3, 1))[0].text
