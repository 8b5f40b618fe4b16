"""Memory hygiene through the tools: no secrets kept, no duplicates, superseded facts stay history."""

from __future__ import annotations

from pathlib import Path

import pytest

from langchain_md_memory import MarkdownMemory, create_memory_tools
from langchain_md_memory.files.paths import daily_file_name

API_KEY = "sk-proj-Zq8xW3vL0pR7tY2uI9oK4mN6"
CARD = "4111 1111 1111 1111"


@pytest.fixture
def mem(tmp_path: Path):
    with MarkdownMemory(tmp_path / "memory", embeddings="none") as memory:
        yield memory


def _every_byte(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


def test_api_key_and_card_number_in_memory_update_never_reach_disk(mem):
    _, _, update = create_memory_tools(mem)
    out = update.invoke({"content": f"- OpenAI key is {API_KEY}; pays with card {CARD}"})
    mem.sync()
    assert "redacted" in out
    data = _every_byte(mem.memory_dir)  # Markdown, index.sqlite and its WAL
    assert (mem.memory_dir / "index.sqlite").exists()
    assert API_KEY.encode() not in data and API_KEY[8:].encode() not in data
    assert CARD.encode() not in data and CARD.replace(" ", "").encode() not in data
    text = mem.get("MEMORY.md")
    assert "[redacted: api key]" in text and "[redacted: card number]" in text
    assert "pays with card" in text  # the rest of the fact stays


def test_redaction_switched_off_keeps_raw_notes(tmp_path):
    with MarkdownMemory(tmp_path / "m", embeddings="none", config={"redact_writes": False}) as raw:
        create_memory_tools(raw)[2].invoke({"content": f"- key {API_KEY}"})
        assert API_KEY in raw.get("MEMORY.md")


def test_edit_and_direct_append_are_redacted_too(mem):
    mem.append("- Wi-Fi: home network")
    assert mem.edit("home network", "home network, password=hunter22")
    mem.append("- DB at postgres://app:s3cretpw@db.local/prod")
    text = mem.get("MEMORY.md")
    assert "hunter22" not in text and "s3cretpw" not in text
    assert "password=[redacted: password]" in text
    assert "postgres://app:[redacted: password]@db.local/prod" in text


def test_same_preference_appended_three_times_is_one_line(mem):
    _, _, update = create_memory_tools(mem)
    first = update.invoke({"content": "- Prefers meetings after 10am"})
    second = update.invoke({"content": "- prefers  meetings after 10am."})
    third = update.invoke({"content": "* Prefers meetings after 10AM"})
    assert first == "Appended to MEMORY.md."
    for out in (second, third):
        assert out.startswith("Nothing written: already remembered")
        assert "MEMORY.md#L1" in out
    lines = [line for line in mem.get("MEMORY.md").splitlines() if "meetings" in line.lower()]
    assert len(lines) == 1


def test_a_changed_number_is_not_a_duplicate(mem):
    _, _, update = create_memory_tools(mem)
    update.invoke({"content": "- The user plans to retire at age 65 and move to the coast with family"})
    out = update.invoke({"content": "- The user plans to retire at age 67 and move to the coast with family"})
    assert out == "Appended to MEMORY.md."


def test_dedup_across_memory_files_when_asked(tmp_path):
    with MarkdownMemory(tmp_path / "m", embeddings="none", config={"dedup": "memory"}) as memory:
        memory.append("- Allergic to peanuts", file="health.md")
        out = create_memory_tools(memory)[2].invoke({"content": "- allergic to peanuts", "file": "daily"})
        assert "health.md#L1" in out
        assert not memory.exists(daily_file_name())


def test_superseded_retirement_age_never_outranks_the_new_one(mem):
    _, get, update = create_memory_tools(mem)
    update.invoke({"content": "- Retirement age: 65"})
    update.invoke({"content": "- Favourite cuisine: Sichuan"})
    out = update.invoke({"action": "supersede", "old_text": "Retirement age: 65",
                         "content": "- Retirement age: 67"})
    assert out.startswith("Superseded in MEMORY.md")
    text = get.invoke({"path": "MEMORY.md"})
    assert "## History" in text
    assert "- ~~Retirement age: 65~~ (superseded " in text  # still readable, with its date
    hits = mem.search("retirement age 65")
    assert hits and "67" in hits[0].text
    assert all("65" not in hit.text for hit in hits)


def test_supersede_of_unknown_text_asks_to_read_first(mem):
    _, _, update = create_memory_tools(mem)
    update.invoke({"content": "- Retirement age: 65"})
    out = update.invoke({"action": "supersede", "old_text": "Retirement age: 60", "content": "- Age 67"})
    assert out.startswith("Error: old_text was not found") and "memory_get" in out
