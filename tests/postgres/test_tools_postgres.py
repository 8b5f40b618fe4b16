"""The three memory tools' behavioural tests, run again on a PostgreSQL memory (same bodies, same asserts)."""

from __future__ import annotations

import pytest

from langchain_md_memory import MarkdownMemory
from tests.unit.integrations.test_tools import *  # noqa: F403


@pytest.fixture
def kw_memory(pg_memory: MarkdownMemory) -> MarkdownMemory:
    return pg_memory
