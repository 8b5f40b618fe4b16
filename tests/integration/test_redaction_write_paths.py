"""Secrets stay out of every file of a memory, whatever write path brought them (issue 39).

Each shape of ``tests/support/secret_shapes.py`` (fake values) is written with ``append`` and
searched for: the value is in no file under the memory folder (Markdown, index, state) and in no
hit. The other write paths are checked with one shape each.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from langchain_md_memory import MarkdownMemory
from langchain_md_memory.errors import MemoryInputError
from langchain_md_memory.files.store import MarkdownStore
from langchain_md_memory.files.transfer import pull, push
from tests.support.secret_shapes import SECRET_SHAPES

TOKEN = "glpat-FakeFake0123456789abcd"


def assert_nowhere(memory_dir: Path, value: str) -> None:
    """``value`` is in no file under ``memory_dir`` (any file, any depth, as bytes)."""
    needle = value.encode("utf-8")
    for path in memory_dir.rglob("*"):
        if path.is_file():
            assert needle not in path.read_bytes(), f"{value!r} found in {path.relative_to(memory_dir)}"


@pytest.mark.parametrize(("name", "text", "value"), SECRET_SHAPES, ids=[s[0] for s in SECRET_SHAPES])
def test_an_appended_secret_is_in_no_file_and_no_hit(kw_memory: MarkdownMemory, memory_dir: Path,
                                                     name: str, text: str, value: str) -> None:
    kw_memory.append(f"- rotation note for the billing service\n{text}")
    hits = kw_memory.search("rotation note billing service")
    assert hits, "the note is still found"
    assert all(value not in hit.text for hit in hits)
    assert "[redacted: " in kw_memory.get("MEMORY.md")
    kw_memory.close()  # the index's WAL checkpointed into the file
    assert_nowhere(memory_dir, value)


def test_write_edit_replace_lines_and_supersede_redact(kw_memory: MarkdownMemory, memory_dir: Path) -> None:
    kw_memory.write("ops.md", f"- gitlab for ops {TOKEN}\n- on-call Dana\n")
    kw_memory.edit("on-call Dana", f"on-call Dana, her key {TOKEN}", file="ops.md")
    kw_memory.replace_lines("ops.md", 1, 1, f"- gitlab for ops (rotated) {TOKEN}")
    kw_memory.append("- deploy token is in the vault")
    assert kw_memory.supersede("deploy token is in the vault", f"- deploy token {TOKEN}",
                               source=f"chat {TOKEN}")
    kw_memory.close()
    assert_nowhere(memory_dir, TOKEN)


def test_remember_redacts_its_source_and_heading(kw_memory: MarkdownMemory, memory_dir: Path) -> None:
    done = kw_memory.remember("- Prefers the bond ladder", source=f"slack export {TOKEN}",
                              heading=f"## From {TOKEN}")
    assert done.written == 1
    text = kw_memory.get("MEMORY.md")
    assert "Prefers the bond ladder" in text and "[redacted: gitlab token]" in text
    kw_memory.remember("- Retirement at 60", section=f"Plans {TOKEN}")
    kw_memory.close()
    assert_nowhere(memory_dir, TOKEN)


def test_a_store_field_name_shaped_like_a_secret_is_redacted(kw_memory: MarkdownMemory,
                                                              memory_dir: Path) -> None:
    store = kw_memory.as_store()
    store.put(("users", "alice"), "tokens", {"content": "gitlab access", TOKEN: True, "note": f"key {TOKEN}"})
    item = store.get(("users", "alice"), "tokens")
    assert item is not None and item.value["content"] == "gitlab access"
    assert TOKEN not in str(item.value)
    kw_memory.close()
    assert_nowhere(memory_dir, TOKEN)


def test_a_store_key_shaped_like_a_secret_is_refused_and_not_echoed(kw_memory: MarkdownMemory,
                                                                    memory_dir: Path) -> None:
    store = kw_memory.as_store()
    with pytest.raises(MemoryInputError, match="holds a secret") as caught:
        store.put(("users", "alice"), TOKEN, {"content": "x"})
    assert TOKEN not in str(caught.value)
    kw_memory.close()
    assert_nowhere(memory_dir, TOKEN)


def test_a_pushed_secret_is_redacted_on_the_store_and_in_the_folder(tmp_path: Path) -> None:
    server = MarkdownStore(tmp_path / "server")
    server.write("MEMORY.md", "- Prefers tea\n")
    copy = tmp_path / "copy"
    pull(server, copy, origin="s")
    (copy / "MEMORY.md").write_text(f"- Prefers tea\n- ci token {TOKEN}\n", encoding="utf-8")
    report = push(copy, server, origin="s")
    assert report.written == ["MEMORY.md"]
    assert_nowhere(tmp_path / "server", TOKEN)
    assert_nowhere(copy, TOKEN)
    assert push(copy, server, origin="s").changed == 0  # the folder matches what was pushed


def test_a_transcript_and_a_flush_keep_no_secret(kw_memory: MarkdownMemory, memory_dir: Path) -> None:
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.messages import AIMessage, HumanMessage

    from langchain_md_memory.features.flush import run_memory_flush
    from langchain_md_memory.features.transcripts import write_session_log

    messages = [HumanMessage(f"my gitlab token is {TOKEN}, remember I prefer tea"), AIMessage("Noted.")]
    write_session_log(kw_memory, messages, "t1", day=dt.date(2026, 12, 1))
    model = FakeListChatModel(responses=[f"- Prefers tea\n- GitLab token {TOKEN}"])
    run_memory_flush(kw_memory, model, messages)
    kw_memory.close()
    assert_nowhere(memory_dir, TOKEN)
