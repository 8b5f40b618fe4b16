"""The facade in keyword-only mode: real Markdown files, a real SQLite index."""

import datetime as dt
import os
import time

import pytest

from langchain_md_memory import MarkdownMemory, MemorySearchResult
from langchain_md_memory.errors import MemoryIndexError

PREFS = "## 用户偏好\n- 风险偏好保守;单只个股不超过总仓位 5%\n\n## Goals\n- Retire at 60 with 2M invested\n"


def _bump_mtime(path):
    # Make sure a rewrite within the same mtime tick is still seen as a change.
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))


def test_chinese_substring_is_found_in_keyword_only_mode(kw_memory):
    kw_memory.append(PREFS)
    hits = kw_memory.search("仓位")
    assert hits, "仓位 must match inside 单只个股不超过总仓位"
    top = hits[0]
    assert isinstance(top, MemorySearchResult)
    assert "单只个股不超过总仓位 5%" in top.text
    assert top.path == "MEMORY.md"
    assert top.retrieved_by == "keyword"
    assert top.vector_score is None
    assert top.score == top.keyword_score == 1.0
    assert top.file_kind == "evergreen" and top.decay == 1.0


def test_append_then_search_finds_the_new_text_without_an_explicit_sync(kw_memory):
    kw_memory.search("anything")
    kw_memory.append("- Bond ladder: revisit in January")
    assert [h.text for h in kw_memory.search("bond ladder")] == ["- Bond ladder: revisit in January"]


def test_another_form_of_an_english_word_finds_the_note(kw_memory):
    kw_memory.append("- Went painting with the kids on Saturday")
    kw_memory.append("- Paint the hallway before the lease ends", file="home.md")
    hits = kw_memory.search("Which paintings did the kids make?", max_results=2)
    assert [h.path for h in hits] == ["MEMORY.md", "home.md"]  # "kid" and "paint" vs "paint" alone
    assert hits[0].text == "- Went painting with the kids on Saturday"
    assert kw_memory.search("Saturdays")[0].path == "MEMORY.md"


def test_a_colon_in_a_file_name_is_an_ordinary_character(kw_memory):
    kw_memory.append("- Kayak trip to Lofoten", file="a:b.md")
    kw_memory.append("- Lease ends in May", file="C:/home.md")
    assert [h.path for h in kw_memory.search("Lofoten")] == ["a:b.md"]
    assert [h.path for h in kw_memory.search("lease")] == ["C:/home.md"]
    assert kw_memory.get("a:b.md") == "- Kayak trip to Lofoten\n"
    assert sorted(kw_memory.list_files()) == ["C:/home.md", "a:b.md"]
    assert kw_memory.status()["skipped_files"] == {}


def test_hit_line_numbers_point_at_the_text(kw_memory):
    kw_memory.append(PREFS)
    hit = kw_memory.search("retire")[0]
    assert kw_memory.get(hit.path, hit.start_line, hit.end_line).rstrip("\n") == hit.text
    assert (hit.start_line, hit.end_line) == (4, 5)


def test_daily_alias_writes_todays_file_and_it_is_a_daily_hit(kw_memory, memory_dir):
    kw_memory.append("- Sold half of the NVDA position", file="daily")
    today = dt.date.today().isoformat() + ".md"
    assert (memory_dir / today).exists()
    hit = kw_memory.search("NVDA")[0]
    assert hit.path == today and hit.file_kind == "daily"
    assert 0.99 < hit.decay <= 1.0


def test_deleting_the_index_files_gives_the_same_results_after_rebuild(memory_dir):
    (memory_dir / "MEMORY.md").write_text(PREFS, encoding="utf-8")
    (memory_dir / "goals.md").write_text("# Goals\n\nHouse down payment in 2028\n", encoding="utf-8")
    with MarkdownMemory(memory_dir, embeddings="none") as mem:
        before = [(h.path, h.start_line, h.text, round(h.score, 9)) for h in mem.search("仓位 house")]
    assert before
    for name in os.listdir(memory_dir):
        if name.startswith("index.sqlite"):
            os.unlink(memory_dir / name)
    with MarkdownMemory(memory_dir, embeddings="none") as mem:
        after = [(h.path, h.start_line, h.text, round(h.score, 9)) for h in mem.search("仓位 house")]
    assert after == before


def test_corrupt_index_file_is_rebuilt_and_search_answers(memory_dir):
    (memory_dir / "MEMORY.md").write_text(PREFS, encoding="utf-8")
    with MarkdownMemory(memory_dir, embeddings="none") as mem:
        mem.sync()
    index = memory_dir / "index.sqlite"
    for name in ("index.sqlite-wal", "index.sqlite-shm"):
        if (memory_dir / name).exists():
            os.unlink(memory_dir / name)
    index.write_bytes(b"\x00garbage" * 4096)
    with MarkdownMemory(memory_dir, embeddings="none") as mem:
        assert "仓位" in mem.search("仓位")[0].text


def test_external_edit_is_found_after_sync(kw_memory, memory_dir):
    kw_memory.append(PREFS)
    kw_memory.sync()
    path = memory_dir / "goals.md"
    path.write_text("# Goals\n\nEmergency fund: six months of expenses\n", encoding="utf-8")
    stats = kw_memory.sync()
    assert stats.files_changed == 1
    assert "Emergency fund" in kw_memory.search("emergency fund")[0].text


def test_external_edit_is_found_by_search_without_sync(kw_memory, memory_dir):
    kw_memory.append(PREFS)
    kw_memory.search("retire")
    (memory_dir / "MEMORY.md").write_text(
        PREFS + "\n- Tax-loss harvesting every December\n", encoding="utf-8"
    )
    _bump_mtime(memory_dir / "MEMORY.md")
    assert "harvesting" in kw_memory.search("harvesting")[0].text


def test_edited_paragraph_old_wording_is_no_longer_found(kw_memory):
    kw_memory.append("- Target retirement age: 65")
    assert kw_memory.search("65")
    assert kw_memory.edit("age: 65", "age: 60") is True
    assert kw_memory.search("65") == []
    assert "60" in kw_memory.search("retirement age")[0].text


def test_edit_and_delete_of_absent_text_return_false_and_change_nothing(kw_memory, memory_dir):
    kw_memory.append("- keep me")
    before = (memory_dir / "MEMORY.md").read_bytes()
    assert kw_memory.edit("not there", "x") is False
    assert kw_memory.delete_text("not there") is False
    assert (memory_dir / "MEMORY.md").read_bytes() == before


def test_deleted_file_is_gone_from_search(kw_memory, memory_dir):
    (memory_dir / "topic.md").write_text("Quarterly rebalancing rule\n", encoding="utf-8")
    assert kw_memory.search("rebalancing")
    (memory_dir / "topic.md").unlink()
    stats = kw_memory.sync()
    assert stats.files_removed == 1 and stats.chunks_removed == 1
    assert kw_memory.search("rebalancing") == []


def test_sync_rereads_only_changed_files(kw_memory, memory_dir):
    for i in range(5):
        (memory_dir / f"t{i}.md").write_text(f"topic {i} note\n", encoding="utf-8")
    first = kw_memory.sync()
    assert (first.files, first.files_changed, first.chunks_added) == (5, 5, 5)
    assert kw_memory.sync().files_changed == 0
    (memory_dir / "t3.md").write_text("topic 3 changed note\n", encoding="utf-8")
    _bump_mtime(memory_dir / "t3.md")
    again = kw_memory.sync()
    assert (again.files_changed, again.chunks_added, again.chunks_removed) == (1, 1, 1)


def test_touch_without_content_change_rechunks_nothing(kw_memory, memory_dir):
    (memory_dir / "a.md").write_text("same content\n", encoding="utf-8")
    kw_memory.sync()
    _bump_mtime(memory_dir / "a.md")
    assert kw_memory.sync().files_changed == 0


def test_non_utf8_file_does_not_crash_sync_and_its_text_is_searchable(kw_memory, memory_dir):
    (memory_dir / "legacy.md").write_bytes(b"caf\xe9 latte budget\n\xff\xfe broken bytes\n")
    stats = kw_memory.sync()
    assert stats.files_changed == 1
    assert "budget" in kw_memory.search("budget")[0].text


def test_index_and_sidecars_are_not_indexed(kw_memory, memory_dir):
    kw_memory.append("- something")
    kw_memory.sync()
    assert set(kw_memory.index.file_states()) == {"MEMORY.md"}


def test_session_context_skips_a_section_over_budget_and_still_tries_later_ones(kw_memory):
    kw_memory.append("word " * 400)  # about 570 tokens
    kw_memory.append("- short daily note", file="daily")
    ctx = kw_memory.load_session_context(max_tokens=100)
    assert "short daily note" in ctx
    assert "word word" not in ctx
    full = kw_memory.load_session_context(max_tokens=5000)
    assert full.index("word word") < full.index("short daily note")


def test_status_reports_files_and_chunks(kw_memory):
    kw_memory.append(PREFS)
    kw_memory.sync()
    info = kw_memory.status()
    assert info["files"] == 1 and info["chunks"] >= 1
    assert info["embedded"] == 0 and info["provider"] is None
    assert dt.datetime.fromisoformat(info["last_sync"]).timestamp() <= time.time()


def test_rebuild_swaps_in_a_complete_index(kw_memory, memory_dir):
    kw_memory.append(PREFS)
    before = [h.text for h in kw_memory.search("仓位")]
    stats = kw_memory.rebuild()
    assert stats.files == 1
    assert [h.text for h in kw_memory.search("仓位")] == before
    assert not [p for p in os.listdir(memory_dir) if "rebuild" in p]


async def test_asearch_matches_search(kw_memory):
    kw_memory.append(PREFS)
    assert [h.chunk_id for h in await kw_memory.asearch("仓位")] == [
        h.chunk_id for h in kw_memory.search("仓位")
    ]


def test_a_closed_memory_refuses_to_search_and_does_not_reopen_its_index(memory_dir):
    mem = MarkdownMemory(memory_dir, embeddings="none")
    mem.append("- note")
    mem.close()
    assert mem.closed
    with pytest.raises(MemoryIndexError, match="closed"):
        mem.search("note")
    with pytest.raises(MemoryIndexError, match="closed"):
        mem.sync()
    assert mem.get("MEMORY.md") == "- note\n"  # the Markdown stays readable
