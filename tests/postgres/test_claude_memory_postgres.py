"""Claude's memory tool on a PostgreSQL tenant: the same runs as on a folder.

The test bodies are the folder runs' (``tests/integration/test_claude_memory_agent.py``); those that
look at files on disk stay with the folder (see ``conftest.py``).
"""

from __future__ import annotations

import pytest

from langchain_md_memory import MarkdownMemory
from tests.integration.test_claude_memory_agent import *  # noqa: F403


@pytest.fixture
def kw_memory(pg_memory: MarkdownMemory) -> MarkdownMemory:
    return pg_memory
