"""The memory tool's path mapping: ``/memories`` paths in, memory paths out, nothing outside ever."""

from __future__ import annotations

from urllib.parse import unquote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from langchain_md_memory.errors import MemoryPathError
from langchain_md_memory.integrations.claude_memory import ClaudeMemoryCommands

_PART = st.sampled_from(["memories", "..", ".", "%2e%2e", "%2E%2e%2f", "%252e%252e%252f", "a", "b.md",
                         "x%2fy", "\\", "", "~", "etc"])


@pytest.fixture
def commands(kw_memory):
    return ClaudeMemoryCommands(kw_memory)


@pytest.mark.parametrize(("path", "rel"), [("/memories", ""), ("/memories/", ""), ("/memories/a.md", "a.md"),
                                           ("/memories//notes/./b.md", "notes/b.md")])
def test_memories_paths_map_to_the_memory_root(commands, path, rel):
    assert commands.relpath(path) == rel


def test_a_subfolder_can_stand_for_memories(kw_memory):
    assert ClaudeMemoryCommands(kw_memory, folder="claude").relpath("/memories/a.md") == "claude/a.md"


# The memory is only asked whether paths exist: one memory serves every example.
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(_PART, min_size=1, max_size=6))
def test_every_accepted_path_stays_under_memories_in_every_decoding(kw_memory, parts: list[str]) -> None:
    path = "/" + "/".join(parts)
    commands = ClaudeMemoryCommands(kw_memory)
    try:
        rel = commands.relpath(path)
    except MemoryPathError:
        return
    for form in (path, unquote(path), unquote(unquote(path))):
        assert form == "/memories" or form.startswith("/memories/")
        assert ".." not in form.split("/") and "\\" not in form
    assert not rel.startswith("/") and ".." not in rel.split("/")
