"""The LangGraph nodes (session context, recall, post-compaction, flush) on a PostgreSQL memory."""

from __future__ import annotations

import pytest

from langchain_md_memory import MarkdownMemory
from tests.integration.test_nodes_graph import *  # noqa: F403


@pytest.fixture
def kw_memory(pg_memory: MarkdownMemory) -> MarkdownMemory:
    return pg_memory
