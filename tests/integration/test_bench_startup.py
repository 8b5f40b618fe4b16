"""`python -m bench.startup` runs and reports every command against the baseline (no timing asserted)."""

from __future__ import annotations

import pytest

from bench.startup import main, measure

pytestmark = pytest.mark.slow


def test_startup_bench_reports_each_command_against_python_c_pass(capsys: pytest.CaptureFixture[str]) -> None:
    results = measure(runs=1)
    assert set(results) == {
        "python -c pass", 'python -c "import langchain_md_memory"', "md-memory --help",
        "md-memory search (--embeddings none)", "md-memory search, English (--embeddings none)",
        "md-memory search, English (--embeddings none --no-cross-language)",
    }
    assert results["python -c pass"]["ratio"] == 1.0
    assert all(r["median_s"] > 0 and r["ratio"] > 0 for r in results.values())
    assert main(["--runs", "1"]) == 0
    assert "| md-memory --help |" in capsys.readouterr().out
