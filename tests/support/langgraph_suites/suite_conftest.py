"""The conftest put beside LangGraph's store tests: their stores become ours, nothing else changes.

``tests/integration/test_langgraph_store_suites.py`` copies this file as ``tests/conftest.py`` into
the extracted sdist of ``langgraph-checkpoint``, ``-sqlite`` or ``-postgres``. Before each test,
the names their fixtures and tests build stores with (``InMemoryStore``, ``SqliteStore``,
``AsyncSqliteStore``, ``PostgresStore``, ``AsyncPostgresStore``) are swapped in the test's module
for stand-ins that open a ``MarkdownBaseStore`` (the async ones an ``AsyncMarkdownBaseStore``) over a
fresh memory folder, embedded by the ``index`` config's ``embed`` and its ``fields``, with the
``ttl`` config given. The PostgreSQL fixtures' admin connection (it creates a database per test)
becomes a no-op: ours needs no database. Their test bodies and assertions run as written.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from collections.abc import AsyncIterator, Iterator
from typing import Any, ClassVar

import pytest

from langchain_md_memory import MarkdownMemory
from langchain_md_memory.integrations.basestore import AsyncMarkdownBaseStore, MarkdownBaseStore

_MEMORIES: list[MarkdownMemory] = []


def _memory(index: dict[str, Any] | None) -> tuple[MarkdownMemory, dict[str, Any] | None]:
    folder = tempfile.mkdtemp(prefix="memory-", dir=os.environ.get("MD_SUITE_TMP"))
    embed = index.get("embed") if index else None
    mem = MarkdownMemory(folder, embeddings=embed if embed is not None else "none")
    _MEMORIES.append(mem)
    # SqliteStore's index config names the paths "text_fields"; the other stores, and ours, "fields".
    fields = (index.get("fields") or index.get("text_fields")) if index else None
    return mem, None if fields is None else {"fields": fields}


class OurStore(MarkdownBaseStore):
    """The store, with the schema calls of LangGraph's database stores (nothing to set up)."""

    MIGRATIONS: ClassVar[list[str]] = []

    def setup(self) -> None:
        pass

    def _cursor(self) -> _NoDatabase:  # the PostgreSQL vector fixture drops its migrations table
        return _NoDatabase()


class OurAsyncStore(AsyncMarkdownBaseStore):
    """The async store, with the schema calls of LangGraph's async database stores."""

    MIGRATIONS: ClassVar[list[str]] = []

    async def setup(self) -> None:
        pass

    def _cursor(self) -> _NoDatabase:
        return _NoDatabase()


class SyncStandIn(OurStore):
    """``InMemoryStore(...)``, ``SqliteStore.from_conn_string(...)``, ``PostgresStore.from_conn_string()``."""

    def __init__(self, *_: Any, index: dict[str, Any] | None = None, ttl: Any = None, **__: Any) -> None:
        mem, fields = _memory(index)
        super().__init__(mem, ttl=ttl, index=fields)

    @classmethod
    @contextlib.contextmanager
    def from_conn_string(cls, *args: Any, **kwargs: Any) -> Iterator[SyncStandIn]:
        store = cls(*args, **kwargs)
        try:
            yield store
        finally:
            store.stop_ttl_sweeper(timeout=5)


class AsyncStandIn(OurAsyncStore):
    """``AsyncSqliteStore.from_conn_string(...)``, ``AsyncPostgresStore.from_conn_string(...)``."""

    def __init__(self, *_: Any, index: dict[str, Any] | None = None, ttl: Any = None, **__: Any) -> None:
        mem, fields = _memory(index)
        super().__init__(mem, ttl=ttl, index=fields)

    @classmethod
    @contextlib.asynccontextmanager
    async def from_conn_string(cls, *args: Any, **kwargs: Any) -> AsyncIterator[AsyncStandIn]:
        store = cls(*args, **kwargs)
        try:
            yield store
        finally:
            await store.stop_ttl_sweeper(timeout=5)


class _NoDatabase:
    """The PostgreSQL fixtures' connections (``CREATE DATABASE``, ``DROP TABLE store_migrations``): no-ops.

    Sync and async alike: ``with Connection.connect(...)``, ``async with await AsyncConnection.connect(...)``.
    """

    @classmethod
    def connect(cls, *_: Any, **__: Any) -> _NoDatabase:
        return cls()

    def __await__(self) -> Any:
        yield from ()
        return self

    def __enter__(self) -> _NoDatabase:
        return self

    def __exit__(self, *_: object) -> None:
        pass

    async def __aenter__(self) -> _NoDatabase:
        return self

    async def __aexit__(self, *_: object) -> None:
        pass

    def execute(self, *_: Any, **__: Any) -> _NoDatabase:
        return self


_STAND_INS: dict[str, Any] = {
    "InMemoryStore": SyncStandIn,
    "SqliteStore": SyncStandIn,
    "PostgresStore": SyncStandIn,
    "AsyncSqliteStore": AsyncStandIn,
    "AsyncPostgresStore": AsyncStandIn,
}


@pytest.fixture(autouse=True)
def our_stores(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Swap the store classes in the test's module (autouse: before its own store fixtures run)."""
    module = request.module
    for name, stand_in in _STAND_INS.items():
        if hasattr(module, name):
            monkeypatch.setattr(module, name, stand_in)
    if hasattr(module, "DEFAULT_URI"):  # the PostgreSQL suite
        for name in ("Connection", "AsyncConnection"):
            if hasattr(module, name):
                monkeypatch.setattr(module, name, _NoDatabase)
    yield
    while _MEMORIES:
        _MEMORIES.pop().close()


# What the PostgreSQL suite imports from its own conftest (the names only: no server is reached).
DEFAULT_URI = "postgres://unused/postgres"
DEFAULT_POSTGRES_URI = "postgres://unused/"
VECTOR_TYPES = ["vector"]
with contextlib.suppress(ImportError):  # the PostgreSQL suite's helper; the others bring their own
    from tests.embed_test_utils import CharacterEmbeddings  # noqa: F401


@pytest.fixture
def fake_embeddings() -> Any:
    from tests.embed_test_utils import CharacterEmbeddings as Embeddings

    return Embeddings(dims=500)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Leave out the tests that are not applicable; expect the listed differences to fail (strictly).

    Both come from the driving test as JSON in ``MD_SUITE_NOT_APPLICABLE`` and ``MD_SUITE_DIFFERENCES``:
    ``{node id pattern: reason}``, where ``*`` in a pattern stands for any text.
    """
    skip = json.loads(os.environ.get("MD_SUITE_NOT_APPLICABLE", "{}"))
    differ = json.loads(os.environ.get("MD_SUITE_DIFFERENCES", "{}"))
    kept, left_out = [], []
    for item in items:
        if any(_matches(item.nodeid, pattern) for pattern in skip):
            left_out.append(item)
            continue
        reasons = [reason for pattern, reason in differ.items() if _matches(item.nodeid, pattern)]
        if reasons:
            item.add_marker(pytest.mark.xfail(reason=reasons[0], strict=True))
        kept.append(item)
    if left_out:
        config.hook.pytest_deselected(items=left_out)
    items[:] = kept


def _matches(nodeid: str, pattern: str) -> bool:
    return re.fullmatch(".*".join(map(re.escape, pattern.split("*"))), nodeid) is not None
