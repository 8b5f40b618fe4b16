"""The suite's PostgreSQL server (``pg_server`` in ``tests/conftest.py``) beside other pytest runs.

Each test reads one run of a small pytest session of its own (its own server, its own temporary root,
as another user's run on the machine would have): a first test keeps a transaction open while a second
pytest run, started as any plain ``pytest`` is, sets up its temporary folder; then the server must still
write a checkpoint and answer. A second test stops the server; the tests after it must not each fail on
a refused connection: the run ends at once, with the server's log.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]

SCENARIO = '''
import os
import signal
import subprocess
import sys

import psycopg

OTHER = "def test_other(tmp_path):\\n    assert tmp_path.is_dir()\\n"


def test_a_server_answers_after_another_pytest_run_beside_it(pg_url, tmp_path):
    other = tmp_path / "other" / "test_other.py"
    other.parent.mkdir()
    other.write_text(OTHER)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE beside (n integer)")
        with conn.transaction():
            conn.execute("INSERT INTO beside VALUES (1)")
            ran = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(other)],
                                 cwd=other.parent, capture_output=True, text=True, timeout=60)
            assert ran.returncode == 0, ran.stdout + ran.stderr
        conn.execute("CHECKPOINT")  # writes pg_control, as the server does every few minutes
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT count(*) FROM beside").fetchone() == (1,)


def test_b_the_server_stops(pg_server):
    os.kill(pg_server.get_pid(), signal.SIGQUIT)  # an immediate shutdown, as a PANIC ends in
    pg_server.get_postmaster_info().process.wait(30)


def test_c_wants_the_server(pg_url):
    raise AssertionError("ran on a server that had stopped")


def test_d_wants_the_server(pg_url):
    raise AssertionError("ran after the run should have ended")
'''


@pytest.fixture(scope="module")
def beside(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The output of the scenario's pytest run, the tests' fixtures loaded from ``tests/conftest.py``."""
    folder = tmp_path_factory.mktemp("beside")
    (folder / "temp").mkdir()
    (folder / "test_scenario.py").write_text(SCENARIO, encoding="utf-8")
    # Both runs put their temporary folders under this root, as two runs of one user share theirs.
    env = {**os.environ, "PYTEST_DEBUG_TEMPROOT": str(folder / "temp")}
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(folder),
         "-p", "tests.conftest", "-p", "no:cacheprovider", "-v", str(folder / "test_scenario.py")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=100,
    )
    return f"exit code {ran.returncode}\n{ran.stdout}{ran.stderr}"


def test_the_server_outlives_another_pytest_run_beside_it(beside: str) -> None:
    assert "test_a_server_answers_after_another_pytest_run_beside_it PASSED" in beside, beside


def test_a_server_that_stops_ends_the_run_at_once_with_its_log(beside: str) -> None:
    assert "test_b_the_server_stops PASSED" in beside, beside
    assert beside.startswith("exit code 1\n"), beside
    assert "the PostgreSQL server of the tests" in beside and "died; the end of its log:" in beside
    assert "received immediate shutdown request" in beside  # a line of the server's own log
    # The test that found it stopped ran no further, and none after it ran at all.
    assert "FAILED" not in beside and "ERROR" not in beside and "2 passed in" in beside, beside
    assert "test_d_wants_the_server" not in beside, beside
