"""LangGraph's own store cases on a PostgreSQL memory's store, side by side with InMemoryStore."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from tests.integration.test_langgraph_store_cases import *  # noqa: F403
from tests.integration.test_langgraph_store_cases import DIMS
from tests.postgres.conftest import MemoryFactory
from tests.support.character_embeddings import CharacterEmbeddings


@pytest.fixture(params=["InMemoryStore", "MarkdownBaseStore"])
def store(request: pytest.FixtureRequest, pg_memory_factory: MemoryFactory) -> Iterator[BaseStore]:
    if request.param == "InMemoryStore":
        yield InMemoryStore(index={"dims": DIMS, "embed": CharacterEmbeddings(dims=DIMS)})
        return
    yield pg_memory_factory(embeddings=CharacterEmbeddings(dims=DIMS)).as_store()
