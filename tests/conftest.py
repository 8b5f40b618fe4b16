"""Shared fixtures: a fresh memory folder and a keyword-only memory over it."""

from __future__ import annotations

import pytest
from hypothesis import settings

from langchain_md_memory import MarkdownMemory

# Property tests draw the same examples on every run, so a run's result depends on the code alone;
# `pytest --hypothesis-profile explore` searches afresh (and saves what it finds to .hypothesis/).
settings.register_profile("repeatable", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile("repeatable")


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
