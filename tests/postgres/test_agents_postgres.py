"""The create_agent middleware, flush and session logs on a PostgreSQL memory.

The same test bodies as their folder runs; those that look at files on disk are left out (see
``conftest.py``). The graph nodes' tests, which bring a ``mem`` fixture of their own, are in
``test_nodes_postgres.py``.
"""

from __future__ import annotations

import pytest

from langchain_md_memory import MarkdownMemory
from tests.integration.test_middleware_agent import *  # noqa: F403
from tests.integration.test_sessions_search import *  # noqa: F403
from tests.unit.features.test_flush import *  # noqa: F403


@pytest.fixture
def kw_memory(pg_memory: MarkdownMemory) -> MarkdownMemory:
    return pg_memory
