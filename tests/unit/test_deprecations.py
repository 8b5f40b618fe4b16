"""Every name of an earlier release keeps working until 0.4, with a warning naming its successor.

Top-level names that moved to their audience's module, the facade's renamed and private attributes,
and the flat ``MemoryConfig`` keywords (``tests/unit/test_config.py`` covers each of those); the
migration table in CHANGELOG.md lists every one.
"""

from __future__ import annotations

import asyncio
import importlib
import re
from pathlib import Path

import pytest

import langchain_md_memory
from langchain_md_memory import MarkdownMemory
from langchain_md_memory.config import MOVED as MOVED_SETTINGS
from langchain_md_memory.memory import _MOVED as MOVED_ATTRIBUTES

CHANGELOG = (Path(__file__).resolve().parents[2] / "CHANGELOG.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(("name", "home"), sorted(langchain_md_memory.MOVED.items()))
def test_a_name_that_left_the_top_level_still_imports_and_names_its_home(name: str, home: str) -> None:
    with pytest.warns(DeprecationWarning, match=rf"langchain_md_memory\.{name} is deprecated here: "
                                                rf"import it from {re.escape(home)}"):
        old = getattr(langchain_md_memory, name)
    assert old is getattr(importlib.import_module(home), name)


def test_from_import_of_a_moved_name_warns_too() -> None:
    with pytest.warns(DeprecationWarning, match="langchain_md_memory.langgraph"):
        from langchain_md_memory import create_session_context_node
    from langchain_md_memory.langgraph import create_session_context_node as new

    assert create_session_context_node is new


def test_the_top_level_lists_only_what_a_first_user_constructs() -> None:
    assert len(langchain_md_memory.__all__) <= 15
    assert not set(langchain_md_memory.__all__) & set(langchain_md_memory.MOVED)
    namespace: dict[str, object] = {}
    exec("from langchain_md_memory import *", namespace)  # no warning, no extra needed
    assert set(langchain_md_memory.__all__) <= set(namespace)


def test_an_unknown_top_level_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'create_memory_tool'"):
        langchain_md_memory.create_memory_tool  # noqa: B018


def test_the_renamed_facade_methods_still_work_and_warn(kw_memory: MarkdownMemory) -> None:
    kw_memory.append("- likes tea\n- likes coffee")
    kw_memory.write("notes.md", "- a note\n")
    with pytest.warns(DeprecationWarning, match=r"MarkdownMemory\.delete is deprecated: use delete_text"):
        assert kw_memory.delete("- likes tea\n") is True
    with pytest.warns(DeprecationWarning, match=r"MarkdownMemory\.adelete is deprecated: use adelete_text"):
        assert asyncio.run(kw_memory.adelete("- likes coffee")) is True
    with pytest.warns(DeprecationWarning, match=r"MarkdownMemory\.remove is deprecated: use delete_file"):
        assert kw_memory.remove("notes.md") is True
    kw_memory.write("notes.md", "- a note\n")
    with pytest.warns(DeprecationWarning, match=r"MarkdownMemory\.aremove is deprecated: use adelete_file"):
        assert asyncio.run(kw_memory.aremove("notes.md")) is True
    assert kw_memory.list_files() == ["MEMORY.md"]
    assert "tea" not in kw_memory.get("MEMORY.md") and "coffee" not in kw_memory.get("MEMORY.md")


@pytest.mark.parametrize("name", ["documents", "indexer", "searcher", "watcher", "joined", "index_fallback",
                                  "mark_changed"])
def test_the_facades_former_owners_are_private_and_still_reachable_with_a_warning(
        kw_memory: MarkdownMemory, name: str) -> None:
    with pytest.warns(DeprecationWarning, match=rf"MarkdownMemory\.{name} is deprecated: use "):
        getattr(kw_memory, name)
    assert name not in dir(kw_memory)


def test_an_unknown_facade_attribute_is_an_attribute_error(kw_memory: MarkdownMemory) -> None:
    with pytest.raises(AttributeError, match="no attribute 'serch'"):
        kw_memory.serch  # type: ignore[attr-defined]  # noqa: B018


@pytest.mark.parametrize("old", [*langchain_md_memory.MOVED, *MOVED_ATTRIBUTES, *MOVED_SETTINGS])
def test_the_changelog_migration_table_names_every_deprecated_name(old: str) -> None:
    table = CHANGELOG[CHANGELOG.index("### Migration"):]
    first_cells = re.findall(r"^\| ([^|]*) \|", table, re.M)
    assert any(re.search(rf"`[^`]*\b{re.escape(old)}\b[^`]*`", cell) for cell in first_cells), old
