"""The retriever's behavioural tests (and LangChain's standard retriever suite) on a PostgreSQL memory.

The same notes are written through the memory instead of into a folder; every assertion is the
SQLite run's, vector scores included (pgvector computes the same cosines).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from langchain_md_memory import MarkdownMemory
from tests.integration import test_retriever as integration
from tests.integration.test_retriever import *  # noqa: F403
from tests.postgres.conftest import MemoryFactory
from tests.support.embeddings import AxisEmbeddings
from tests.unit.integrations import test_retriever as unit
from tests.unit.integrations.test_retriever import *  # noqa: F403

SMALL_CHUNKS = {"chunking": {"chunk_tokens": 16, "chunk_overlap_tokens": 0}}


def _with_notes(factory: MemoryFactory, files: dict[str, str], **kwargs: object) -> MarkdownMemory:
    memory = factory(config=SMALL_CHUNKS, **kwargs)
    for path, text in files.items():
        memory.write(path, text)
    return memory


@pytest.fixture
def mem(pg_memory_factory: MemoryFactory, request: pytest.FixtureRequest) -> MarkdownMemory:
    # The integration module's tests embed with axis vectors; the unit module's are keyword-only.
    if request.node.module.__name__ == __name__ and request.function.__name__ in _INTEGRATION_TESTS:
        return _with_notes(pg_memory_factory, {"MEMORY.md": integration.NOTES},
                           embeddings=AxisEmbeddings(["bond", "cash", "retire"]))
    return _with_notes(pg_memory_factory, {"MEMORY.md": unit.NOTES, "goals.md": unit.GOALS})


@pytest.fixture
def ladders(pg_memory_factory: MemoryFactory) -> MarkdownMemory:
    return _with_notes(pg_memory_factory, {"MEMORY.md": unit.LADDERS})


_INTEGRATION_TESTS = {name for name in dir(integration) if name.startswith("test_")}


class TestMarkdownMemoryRetrieverStandardOnPostgres(integration.TestMarkdownMemoryRetrieverStandard):
    @pytest.fixture(autouse=True)
    def _memory(self, pg_memory_factory: MemoryFactory) -> Iterator[None]:  # type: ignore[override]
        self.mem = _with_notes(pg_memory_factory, {"MEMORY.md": integration.NOTES},
                               embeddings=AxisEmbeddings(["bond", "cash", "retire"]))
        yield


del TestMarkdownMemoryRetrieverStandard  # noqa: F821  # the SQLite class, collected in its own module
