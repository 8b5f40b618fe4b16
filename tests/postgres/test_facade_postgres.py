"""The facade's behavioural tests (keyword search, async twins), run again on a PostgreSQL memory.

Tests that take ``memory_dir`` (they write files behind the memory's back or delete its index
file) are about a folder and are left out (see ``conftest.py``); their PostgreSQL counterparts
(another host writes, the index is derived from the documents) are in ``test_backend.py``.
"""

from __future__ import annotations

import pytest

from langchain_md_memory import MarkdownMemory
from tests.integration import test_async_twins, test_memory_keyword
from tests.integration.test_async_twins import *  # noqa: F403
from tests.integration.test_memory_keyword import *  # noqa: F403

# Checks of the class, not of a memory: they ran once already.
CLASS_CHECKS = {
    "test_every_public_sync_method_has_an_async_twin_with_the_same_parameters",
    "test_the_sync_twin_is_also_reachable_as_async",
}
for _module in (test_async_twins, test_memory_keyword):
    for _name in dir(_module):
        if _name in CLASS_CHECKS and _name in globals():
            del globals()[_name]


@pytest.fixture
def kw_memory(pg_memory: MarkdownMemory) -> MarkdownMemory:
    return pg_memory
