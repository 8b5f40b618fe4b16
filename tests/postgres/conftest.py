"""A fresh tenant per test on the run's one PostgreSQL server (``pg_url``, in ``tests/conftest.py``).

Tests share the server and stay independent by each using its own tenant.
"""

from __future__ import annotations

import inspect
import itertools
import os
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

from langchain_md_memory import MarkdownMemory

pytest.importorskip("pgserver", reason="the PostgreSQL tests need the pgserver package")


_tenants = itertools.count()


@pytest.fixture
def tenant() -> str:
    """A tenant no other test uses."""
    return f"t{os.getpid()}-{next(_tenants)}-{uuid.uuid4().hex[:6]}"


MemoryFactory = Callable[..., MarkdownMemory]


@pytest.fixture
def pg_memory_factory(pg_url: str, tenant: str) -> Iterator[MemoryFactory]:
    """Opens memories on this test's tenant (or another one given); closes them all at the end."""
    opened: list[MarkdownMemory] = []

    def open_memory(*, tenant_name: str | None = None, embeddings: Any = "none",
                    **kwargs: Any) -> MarkdownMemory:
        mem = MarkdownMemory.from_postgres(pg_url, tenant=tenant_name or tenant, embeddings=embeddings,
                                           **kwargs)
        opened.append(mem)
        return mem

    yield open_memory
    for mem in opened:
        mem.close()


def create_schema_at(url: str, version: int) -> None:
    """Make the package's tables in the database at ``url`` as a release at schema ``version`` left them."""
    from langchain_md_memory.postgres.schema import MIGRATIONS

    with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute("CREATE TABLE md_memory_schema ("
                     "version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())")
        for done, migration in enumerate(MIGRATIONS[:version], 1):
            conn.execute(migration)
            conn.execute("INSERT INTO md_memory_schema(version) VALUES (%s)", (done,))


@pytest.fixture
def pg_memory(pg_memory_factory: MemoryFactory) -> MarkdownMemory:
    """A keyword-only memory on this test's tenant."""
    return pg_memory_factory()


# Repeated tests of what only a folder has: the file watcher, archives, a path outside the folder.
# On PostgreSQL each raises a clear error instead (test_backend.py checks that).
FOLDER_FEATURES = {
    "test_astart_watching_and_astop_watching",
    "test_aexport_archive_and_aimport_archive_round_trip",
    "test_update_refuses_non_markdown_and_escaping_files",  # looks for a file beside the folder
}


# What a test body says when it reads, plants or checks files on disk, or patches the folder store
# (the adapter tests' helpers ns_file and hidden_file give paths in the folder).
FOLDER_WORDS = ("memory_dir", "ns_file(", "hidden_file(", "symlink", "MarkdownStore", "failing_writes_to(")


def _needs_folder(item: pytest.Item) -> bool:
    if "memory_dir" in getattr(item, "fixturenames", ()) or item.name.split("[")[0] in FOLDER_FEATURES:
        return True
    function = getattr(item, "function", None)
    try:
        source = inspect.getsource(function) if function is not None else ""
    except (OSError, TypeError):
        return False
    return any(word in source for word in FOLDER_WORDS)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Repeated tests that need a folder (files on disk, the watcher, archives) stay with SQLite."""
    here = os.path.dirname(__file__)
    folder_only = [item for item in items if str(item.path).startswith(here)
                   and item.path.name.endswith("_postgres.py") and _needs_folder(item)]
    if folder_only:
        config.hook.pytest_deselected(items=folder_only)
        items[:] = [item for item in items if item not in folder_only]
