"""The state file keeps the package's bookkeeping beside the Markdown, out of the index."""

from __future__ import annotations

from pathlib import Path

from langchain_md_memory.files.paths import STATE_FILE, is_archived_file, is_managed_file
from langchain_md_memory.files.state import StateFile
from langchain_md_memory.files.store import MarkdownStore


def test_values_survive_a_new_state_object(tmp_path: Path) -> None:
    store = MarkdownStore(tmp_path)
    StateFile(store).set("dream_last_run", 12.5)
    StateFile(store).set("dream_processed", {"sessions/a.md": [1, 2]})
    again = StateFile(store)
    assert again.get("dream_last_run") == 12.5
    assert again.get("dream_processed") == {"sessions/a.md": [1, 2]}
    assert again.get("missing", "default") == "default"
    assert (tmp_path / STATE_FILE).is_file()


def test_a_damaged_state_file_reads_as_empty_and_is_rewritten(tmp_path: Path) -> None:
    store = MarkdownStore(tmp_path)
    (tmp_path / STATE_FILE).parent.mkdir()
    (tmp_path / STATE_FILE).write_text("{not json", encoding="utf-8")
    state = StateFile(store)
    assert state.get("dream_last_run") is None
    state.set("dream_last_run", 1.0)
    assert StateFile(store).get("dream_last_run") == 1.0


def test_the_state_file_is_archived_but_never_indexed(tmp_path: Path) -> None:
    store = MarkdownStore(tmp_path)
    StateFile(store).set("k", "v")
    assert not is_managed_file(STATE_FILE) and is_archived_file(STATE_FILE)
    assert store.list_files(include_unindexed=True) == []
