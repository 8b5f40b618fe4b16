"""Approving what the agent writes, on a PostgreSQL memory: the same test bodies as the folder's."""

from __future__ import annotations

import pytest

from langchain_md_memory import MarkdownMemory
from tests.integration.test_write_approval import *  # noqa: F403


@pytest.fixture
def kw_memory(pg_memory: MarkdownMemory) -> MarkdownMemory:
    return pg_memory
