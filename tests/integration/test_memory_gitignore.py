"""In a git repository, a new memory's folder shows only its Markdown in ``git status``."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from langchain_md_memory import MarkdownMemory
from langchain_md_memory.files.gitignore import GITIGNORE_TEXT
from tests.support.repos import git_repo

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

ROOT = Path(__file__).resolve().parents[2]
DREAMED = "# Profile\n\n- Retire at 55\n"


def untracked(repo: Path) -> set[str]:
    out = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=all"],
                         capture_output=True, text=True, check=True).stdout
    return {line[3:] for line in out.splitlines()}


def test_index_locks_and_temp_files_stay_out_of_git_status(tmp_path):
    repo = git_repo(tmp_path / "repo")
    folder = repo / "memory"
    with MarkdownMemory(folder, embeddings="none") as mem:
        mem.append("- Retire at 55")
        mem.write("sessions/2026-07-01-a.md", "# Session\n\nTalked about retiring.\n")
        mem.search("retire")
        mem.rebuild()
        result = mem.dream(FakeListChatModel(responses=[DREAMED]), min_sessions=1, min_interval=0,
                           recency_guard=0)
        assert result.ok, result.reason
    # What an interrupted rebuild and an interrupted write leave behind.
    (folder / "index.sqlite.rebuild-4242").write_bytes(b"")
    (folder / ".MEMORY.md.4242.x1y2.tmp").write_bytes(b"")
    on_disk = {p.relative_to(repo).as_posix() for p in folder.rglob("*") if p.is_file()}
    assert {"memory/index.sqlite", "memory/.md-memory.lock", "memory/.dream.lock"} <= on_disk

    shown = untracked(repo)
    assert "memory/.gitignore" in shown and "memory/MEMORY.md" in shown
    assert "memory/.md-memory/state.json" in shown  # durable bookkeeping is committed with the memory
    assert all(p.endswith(".md") or p in {"memory/.gitignore", "memory/.md-memory/state.json"}
               for p in shown), shown


def test_the_example_memory_ships_the_same_gitignore():
    assert (ROOT / "examples" / "memory" / ".gitignore").read_text(encoding="utf-8") == GITIGNORE_TEXT
