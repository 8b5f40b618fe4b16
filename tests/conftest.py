"""Shared fixtures: a fresh memory folder and a keyword-only memory over it; a PostgreSQL server."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest
from hypothesis import settings

from langchain_md_memory import MarkdownMemory

# Property tests draw the same examples on every run, so a run's result depends on the code alone;
# `pytest --hypothesis-profile explore` searches afresh (and saves what it finds to .hypothesis/).
settings.register_profile("repeatable", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile("repeatable")


@pytest.fixture
def memory_dir(tmp_path):
    path = tmp_path / "memory"
    path.mkdir()
    return path


@pytest.fixture
def kw_memory(memory_dir):
    mem = MarkdownMemory(memory_dir, embeddings="none")
    yield mem
    mem.close()


@pytest.fixture(scope="session")
def pg_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a throwaway PostgreSQL 16 + pgvector server, started once for the run (pgserver).

    It runs from a temporary folder over a unix socket (no TCP port, no network) and stops when the
    session ends; only tests that ask for it start it.
    """
    pgserver = pytest.importorskip("pgserver", reason="PostgreSQL tests need the pgserver package")
    folder = tmp_path_factory.mktemp("pg")
    for attempt in range(3):
        try:
            server = pgserver.get_server(folder, cleanup_mode="stop")
            break
        except subprocess.TimeoutExpired:
            # pgserver gives `pg_ctl start -w` 10 s; on a loaded machine the server can be up (its log
            # says "ready") before pg_ctl returns. Asking again adopts the running server.
            if attempt == 2:
                raise
    try:
        yield server.get_uri()
    finally:
        server.cleanup()
