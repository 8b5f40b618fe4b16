"""Shared fixtures: a fresh memory folder and a keyword-only memory over it; a PostgreSQL server."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

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
def pg_server() -> Iterator[Any]:
    """A throwaway PostgreSQL 16 + pgvector server (pgserver), started once for the run.

    It runs over a unix socket (no TCP port, no network) from a folder of its own in the system's
    temporary folder, never inside pytest's: as root, pgserver runs the server as another user, which
    must be able to open every folder above its data, and any other pytest run on the machine makes
    pytest's shared folder (``pytest-of-<user>``) private again, or removes the base folder it was
    given. The folder goes when the session ends. A server that cannot start ends the run at once with
    its log (instead of an error for each test that wanted it).
    """
    pgserver = pytest.importorskip("pgserver", reason="PostgreSQL tests need the pgserver package")
    folder = Path(tempfile.mkdtemp(prefix="md-memory-tests-pg-"))
    server = _started(pgserver, folder)
    try:
        yield server
    finally:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)  # pgserver removes it, unless the server had died


def _started(pgserver: Any, folder: Path) -> Any:
    for _ in range(3):
        try:
            return pgserver.get_server(folder, cleanup_mode="delete")
        except subprocess.TimeoutExpired:
            # pgserver gives `pg_ctl start -w` 10 s; on a loaded machine the server can be up (its log
            # says "ready") before pg_ctl returns. Asking again adopts the running server.
            continue
        except subprocess.CalledProcessError:
            break
    _server_gone(folder, "did not start")


@pytest.fixture
def pg_url(pg_server: Any) -> str:
    """The URL of the run's PostgreSQL server (see ``pg_server``); only tests that ask for it start it.

    The server is checked before each test that asks: one that died ends the run at once with its log,
    where every later test would otherwise fail on a refused connection.
    """
    if not pg_server.get_postmaster_info().process.is_running():
        _server_gone(pg_server.pgdata, "died")
    return str(pg_server.get_uri())


def _server_gone(folder: Path, what: str) -> NoReturn:
    log = folder / "log"
    tail = "".join(log.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)[-30:]) \
        if log.exists() else "(no log)\n"
    pytest.exit(f"the PostgreSQL server of the tests (in {folder}) {what}; the end of its log:\n{tail}",
                returncode=pytest.ExitCode.TESTS_FAILED)
