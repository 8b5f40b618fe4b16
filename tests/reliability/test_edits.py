"""Edits that used to give wrong answers: now refused with a reason, or done exactly.

Before: an old_text occurring several times silently edited the first; deleting "\\n" glued two
facts onto one line; a line with invalid UTF-8 reached the model as U+FFFD and could never be
edited or deleted; an append converted a mixed file's CRLF lines; a zero-width character in a
query missed the fact; a lone-surrogate store key was called "a control character".
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from langchain_md_memory import MarkdownMemory, create_memory_tools


@pytest.fixture
def mem(memory_dir: Path):
    with MarkdownMemory(memory_dir, embeddings="none") as memory:
        yield memory


def _update(mem: MarkdownMemory, **args: object) -> str:
    return str(next(t for t in create_memory_tools(mem) if t.name == "memory_update").invoke(args))


def test_ambiguous_old_text_is_refused_with_the_count_through_the_tool(mem: MarkdownMemory) -> None:
    mem.write("MEMORY.md", "## Goals\n- target: 60\n## Risk\n- target: 60\n")
    reply = _update(mem, action="edit", old_text="target: 60", content="target: 62")
    assert "occurs 2 times" in reply and "more of the text" in reply
    assert mem.get("MEMORY.md") == "## Goals\n- target: 60\n## Risk\n- target: 60\n"


def test_deleting_a_bare_newline_is_refused(mem: MarkdownMemory) -> None:
    mem.write("MEMORY.md", "- fact one\n- fact two\n")
    assert "only whitespace" in _update(mem, action="delete", old_text="\n")
    assert mem.get("MEMORY.md") == "- fact one\n- fact two\n"


def test_a_line_with_invalid_bytes_is_fixed_by_line_number_through_the_tool(mem: MarkdownMemory) -> None:
    (mem.memory_dir / "MEMORY.md").write_bytes(b"- good\n- broken \xff\xfe\n")
    shown = mem.get("MEMORY.md", 2, 2)
    assert "\ufffd" in shown
    assert "was not found" in _update(mem, action="edit", old_text=shown.strip(), content="- repaired")
    assert "Replaced lines 2-2" in _update(mem, action="edit", start_line=2, content="- repaired")
    assert (mem.memory_dir / "MEMORY.md").read_bytes() == b"- good\n- repaired\n"
    assert "Deleted lines 1-1" in _update(mem, action="delete", start_line=1, end_line=1)
    assert mem.get("MEMORY.md") == "- repaired\n"


def test_append_keeps_a_mixed_files_crlf_lines(mem: MarkdownMemory) -> None:
    (mem.memory_dir / "MEMORY.md").write_bytes(b"- a\r\n- b\n- c\r\n")
    mem.append("- d")
    assert (mem.memory_dir / "MEMORY.md").read_bytes() == b"- a\r\n- b\n- c\r\n- d\r\n"


_LINES = st.lists(st.sampled_from([b"- a\n", b"- Caf\xe9\r\n", b"\xff\xfe broken\n", b"\r\n", b"- b\r\n"]),
                  max_size=5)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=_LINES, last=st.sampled_from([b"", b"- no break at the end", b"\xe9t\xe9"]), data=st.data())
def test_insert_lines_keeps_every_byte_around_the_new_ones(mem: MarkdownMemory, lines: list[bytes],
                                                          last: bytes, data: st.DataObject) -> None:
    file = mem.memory_dir / "notes.md"
    file.write_bytes(b"".join(lines) + last)
    whole = [*lines, last] if last else lines
    after = data.draw(st.integers(0, len(whole)))
    mem.insert_lines("notes.md", after, "- new one\n- new two")
    result = file.read_bytes()
    before, rest = b"".join(whole[:after]), b"".join(whole[after:])
    assert result.startswith(before) and result.endswith(rest)
    middle = result[len(before):len(result) - len(rest)]
    eol = b"\r\n" if b"- new one\r\n" in middle else b"\n"
    assert middle.removeprefix(eol if before and not before.endswith(b"\n") else b"") == (
        b"- new one" + eol + b"- new two" + eol)


@pytest.mark.parametrize("query", ["retire\u200bment age", "ｒｅｔｉｒｅｍｅｎｔ age", "retire\u00adment"])
def test_zero_width_and_fullwidth_queries_find_the_fact(mem: MarkdownMemory, query: str) -> None:
    mem.append("- Retirement age: 60")
    hits = mem.search(query)
    assert hits and "Retirement age: 60" in hits[0].text


def test_a_fact_written_with_a_zero_width_space_is_found_by_plain_words(mem: MarkdownMemory) -> None:
    mem.append("- Emergency\u200bfund: six months")
    assert "six months" in mem.search("emergencyfund")[0].text


def test_a_lone_surrogate_store_key_is_named_as_such(mem: MarkdownMemory) -> None:
    store = mem.as_store()
    with pytest.raises(ValueError, match="lone surrogate"):
        store.put(("users",), "bad\ud800key", {"content": "x"})
