"""`python -m bench --quick` runs end to end and reports what it promises (no timing asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def quick_result(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("bench") / "quick.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--json", str(out), "--workdir", str(out.parent)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "| chunks" in done.stdout  # the table is printed before the JSON
    return json.loads(out.read_text(encoding="utf-8"))


@pytest.mark.timeout(600)
def test_quick_bench_builds_both_sizes_through_the_facade(quick_result):
    sizes = quick_result["sizes"]
    assert quick_result["mode"] == "quick"
    assert [s["chunks"] for s in sizes] == [1_000, 12_000]
    for s in sizes:
        assert s["indexed_chunks"] == s["chunks"] == s["embedded_chunks"]
        assert s["build_texts_embedded"] == s["chunks"]
        assert s["index_disk_mb"] > 0 and s["chunks_per_s"] > 0


@pytest.mark.timeout(600)
def test_quick_bench_edit_reembeds_one_chunk_and_forced_resync_none(quick_result):
    for s in quick_result["sizes"]:
        assert s["edit_sync"]["files_changed"] == 1
        assert 1 <= s["edit_sync"]["texts_embedded"] <= 3
        assert s["forced_sync"]["texts_embedded"] == 0
        assert s["forced_sync"]["from_cache"] == s["chunks"]
    targets = quick_result["targets"]
    assert targets["edit_reembeds_at_most_3"]["met"] is True
    assert targets["forced_resync_embeds_0"]["met"] is True


@pytest.mark.timeout(600)
def test_quick_bench_reports_every_search_path_and_baseline(quick_result):
    for s in quick_result["sizes"]:
        keyword = ("keyword_index", "keyword_before", "keyword_exhaustive")
        for path in (*keyword, "vector_index", "vector_with_embed", "hybrid"):
            stats = s["search"][path]
            assert stats["n"] == quick_result["queries"]
            assert 0 < stats["p50_ms"] <= stats["p95_ms"]
        assert s["search"]["stat_check_default"]["p50_ms"] > 0
        baselines = s["baselines"]
        assert baselines["a_spec_scan"]["n"] == quick_result["spec_queries"]
        assert baselines["b_numpy"]["n"] == quick_result["queries"]
        assert "p50_ms" in baselines["c_sqlite_vec"] or "skipped" in baselines["c_sqlite_vec"]
        assert set(s["ratios"]) >= {"a_over_hybrid", "hybrid_over_b", "vector_index_over_b", "c_over_b"}
        assert s["ratios"]["a_over_hybrid"] > 0


@pytest.mark.timeout(600)
def test_quick_bench_searches_the_same_vectors_as_the_baselines(quick_result):
    for s in quick_result["sizes"]:
        # Same vectors, exact search both ways: the top 24 agree up to float ties.
        assert s["baselines"]["b_numpy"]["agreement_with_ours"] >= 0.95
        assert s["baselines"]["a_spec_scan"]["agreement_with_ours"] >= 0.95
        # Keyword recall is the exhaustive BM25 top 24 (the recall before it was not, at scale).
        assert s["search"]["keyword_index"]["agreement_with_exhaustive"] >= 0.95


@pytest.mark.timeout(600)
def test_quick_bench_measures_memory_after_open_in_a_fresh_process(quick_result):
    for s in quick_result["sizes"]:
        probe = s["probe"]
        assert "error" not in probe, probe
        assert probe["rss_after_first_search_mb"] >= probe["rss_after_open_mb"] > 0
    assert quick_result["machine"]["nproc"] >= 1
