"""``python -m bench.postgres`` runs end to end on a tiny memory against the run's server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def test_the_postgres_bench_runs_on_one_small_tenant(pg_url: str, tmp_path: Path) -> None:
    from bench.postgres import main

    out = tmp_path / "pg.json"
    assert main(["--postgres", pg_url, "--tenants", "1", "--chunks", "60", "--queries", "3",
                 "--processes", "1", "--seconds", "0.3", "--workdir", str(tmp_path), "--json", str(out)]) == 0
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["tenants"] == 1
