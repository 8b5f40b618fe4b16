"""Shared fixtures: a fresh memory folder and a keyword-only memory over it."""

from __future__ import annotations

import pytest

from langchain_md_memory import MarkdownMemory


@pytest.fixture
def memory_dir(tmp_path):
    path = tmp_path / "memory"
    path.mkdir()
    return path


@pytest.fixture
def kw_memory(memory_dir):
    mem = MarkdownMemory(memory_dir, embeddings="none")
    yield mem
    mem.close()
