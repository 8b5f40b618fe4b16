"""LangGraph's own store test suites, from the registry's sdists, run against MarkdownBaseStore.

At test time pip downloads the pinned sdists of ``langgraph-checkpoint`` (``InMemoryStore``'s tests),
``langgraph-checkpoint-sqlite`` (``SqliteStore``'s, its async store's and its TTL suite) and
``langgraph-checkpoint-postgres`` (``PostgresStore``'s, sync and async); their store tests are
extracted to a temporary folder (nothing of theirs is kept in this repository), with
``tests/support/langgraph_suites/suite_conftest.py`` as their ``conftest.py``: it swaps their store
classes for ours and leaves every test body as written. Each suite runs in its own pytest process.

A test is *not applicable* when it checks another backend's own machinery (SQL helpers, connection
modes, pgvector options, mocked batch internals) or reaches into its database; those are left out,
each pattern with its reason. A *difference* is a behaviour of theirs that ours does not share: each
is listed with its reason (README, "Deploy with the LangGraph server") and expected to fail, strictly,
so one that starts passing shows here. Everything else must pass.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

SUPPORT = Path(__file__).parents[1] / "support" / "langgraph_suites"

PINS = {
    "langgraph-checkpoint": "4.3.2",
    "langgraph-checkpoint-sqlite": "3.1.2",
    "langgraph-checkpoint-postgres": "3.2.0",
}

CONNECTION_MODES = "another connection mode of the same database store: ours opens a folder"
COSINE = "a pgvector storage or distance option: our score is the cosine similarity"
DIFFERENT_LABEL = ("a namespace label is a folder name: a control character (here a trailing newline) "
                   "cannot be one on every system, so such a label is refused with InvalidNamespaceError")


@dataclass(frozen=True)
class Suite:
    """One package's store tests: the files to run, what is left out and what is expected to differ."""

    package: str
    files: tuple[str, ...]
    expected: dict[str, int]
    """The outcome counts: passed, xfailed (the differences), deselected (not applicable)."""
    not_applicable: dict[str, str] = field(default_factory=dict)
    differences: dict[str, str] = field(default_factory=dict)


SUITES = (
    Suite("langgraph-checkpoint", ("test_store.py",), {"passed": 117}),
    Suite(
        "langgraph-checkpoint-sqlite", ("test_store.py", "test_async_store.py", "test_ttl.py"),
        {"passed": 82, "xfailed": 3, "deselected": 68},
        not_applicable={
            "*[file]": CONNECTION_MODES,
            "*[file-*": CONNECTION_MODES,
            "tests/test_store.py::test_vector_store_initialization":
                "SqliteStore's own attribute names (store.embeddings, index_config['text_fields'])",
            "tests/test_async_store.py::test_no_running_loop*":
                "AsyncSqliteStore refuses sync calls on the event loop's thread; ours, as InMemoryStore, "
                "serves both",
            "tests/test_store.py::test_nonnull_migrations": "SqliteStore's SQL migrations",
            "tests/test_store.py::test_escape_glob_literal": "SqliteStore's SQL helper",
            "tests/test_store.py::test_namespace_match_pattern": "SqliteStore's SQL helper",
            "tests/test_store.py::test_list_namespaces_prefix_uses_indexable_condition":
                "SqliteStore's SQL query plan",
            "*TestSqliteStore::*": "SqliteStore's SQL internals",
        },
        differences={
            "tests/test_store.py::test_namespace_labels_with_trailing_newline*": DIFFERENT_LABEL,
            "tests/test_store.py::test_sql_injection_vulnerability*":
                "SqliteStore raises ValueError for a filter key it cannot put in a JSON path; ours, as "
                "InMemoryStore and PostgresStore, reads any key and matches nothing",
            "tests/test_store.py::test_filter_keys_with_hyphens_and_digits*":
                "SqliteStore reads a dotted filter key ('user.access-level') as a nested path; ours, as "
                "InMemoryStore and PostgresStore, matches the top-level key of that name",
        },
    ),
    Suite(
        "langgraph-checkpoint-postgres", ("test_store.py", "test_async_store.py"),
        {"passed": 89, "xfailed": 1, "deselected": 170},
        not_applicable={
            "*[pipe*": CONNECTION_MODES,
            "*[pool*": CONNECTION_MODES,
            "*-pipe]": CONNECTION_MODES,
            "*-pool]": CONNECTION_MODES,
            "*halfvec*": COSINE,
            "*inner_product*": COSINE,
            "*-l2]": COSINE,
            "tests/test_async_store.py::test_abatch_uses_single_pool_checkout": "psycopg pool checkouts",
            "tests/test_async_store.py::test_no_running_loop*":
                "AsyncPostgresStore refuses sync calls on the event loop's thread; ours serves both",
            "tests/test_store.py::test_omit_expired_*":
                "backdates rows in PostgreSQL with SQL (expired items are always omitted by ours: "
                "tests/integration/test_langgraph_store_ttl.py)",
            "tests/test_async_store.py::test_omit_expired_*":
                "backdates rows in PostgreSQL with SQL (expired items are always omitted by ours: "
                "tests/integration/test_langgraph_store_ttl.py)",
            "tests/test_store.py::test_escape_like_literal*": "PostgresStore's SQL helper",
            "tests/test_store.py::test_namespace_match_pattern*": "PostgresStore's SQL helper",
        },
        differences={
            "tests/test_store.py::test_namespace_labels_with_trailing_newline*": DIFFERENT_LABEL,
        },
    ),
)


@pytest.fixture(scope="module")
def sdists(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The pinned sdists, downloaded from the package registry now."""
    folder = tmp_path_factory.mktemp("sdists")
    pins = [f"{name}=={version}" for name, version in PINS.items()]
    done = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
         "--dest", str(folder), *pins],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, f"pip download {pins} failed:\n{done.stderr[-3000:]}"
    found = {}
    for name, version in PINS.items():
        archive = folder / f"{name.replace('-', '_')}-{version}.tar.gz"
        assert archive.exists(), sorted(p.name for p in folder.iterdir())
        found[name] = archive
    return found


def extract(archive: Path, suite: Suite, into: Path) -> Path:
    """The suite's store tests and what they import (their helpers, the package's source) under ``into``."""
    root = into / suite.package
    with tarfile.open(archive) as tar:
        top = tar.getmembers()[0].name.split("/")[0]
        wanted = [f"{top}/tests/{name}" for name in ("__init__.py", "embed_test_utils.py", *suite.files)]
        members = [m for m in tar.getmembers()
                   if m.name in wanted or (m.name.startswith(f"{top}/langgraph/") and m.isfile())]
        tar.extractall(into, members=members, filter="data")
    shutil.move(into / top, root)
    shutil.copy(SUPPORT / "suite_conftest.py", root / "tests" / "conftest.py")
    (root / "pytest.ini").write_text(
        "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
        "markers =\n    flaky: LangGraph's retry marker\n", encoding="utf-8")
    return root


def start_suite(root: Path, suite: Suite) -> subprocess.Popen[str]:
    """Start the suite in its own pytest process (the three run side by side: most of their time is sleep)."""
    memories = root / "memories"
    memories.mkdir()
    env = {**os.environ, "PYTHONPATH": str(root), "MD_SUITE_TMP": str(memories),
           "MD_SUITE_NOT_APPLICABLE": json.dumps(suite.not_applicable),
           "MD_SUITE_DIFFERENCES": json.dumps(suite.differences)}
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--timeout=120",
         *(f"tests/{name}" for name in suite.files)],
        cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )


def outcome_counts(output: str) -> dict[str, int]:
    """``{"passed": 82, "deselected": 68, "xfailed": 3}`` from pytest's closing line."""
    closing = [line for line in output.splitlines()
               if " in " in line and ("passed" in line or "failed" in line)]
    assert closing, output[-3000:]
    counts: dict[str, int] = {}
    for part in closing[-1].strip("= ").split(" in ")[0].split(", "):
        number, _, outcome = part.strip().partition(" ")
        if not outcome.startswith("warning"):
            counts[outcome] = int(number)
    return counts


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_langgraph_store_suites_pass_against_our_store(sdists: dict[str, Path], tmp_path: Path) -> None:
    running = [(suite, start_suite(extract(sdists[suite.package], suite, tmp_path), suite))
               for suite in SUITES]
    outputs = [(suite, proc.communicate(timeout=540)[0]) for suite, proc in running]
    counts = {suite.package: outcome_counts(output) for suite, output in outputs}
    print(counts)
    for suite, output in outputs:
        assert counts[suite.package] == suite.expected, f"{suite.package}: {counts}\n{output[-8000:]}"
