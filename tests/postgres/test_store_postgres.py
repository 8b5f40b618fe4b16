"""The LangGraph BaseStore adapter's behavioural tests on a PostgreSQL memory.

Namespaces are folders of paths (``users/alice/store.md``) in the tenant's documents; tests that
look at or plant files on disk are about a folder memory and are left out (see ``conftest.py``).
"""

from __future__ import annotations

import pytest

from langchain_md_memory import MarkdownMemory
from tests.integration.test_langgraph_store import *  # noqa: F403


@pytest.fixture
def kw_memory(pg_memory: MarkdownMemory) -> MarkdownMemory:
    return pg_memory
