"""``examples/agent.py`` runs offline as a script and really searches and writes the memory."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from langchain_md_memory.features.flush import FLUSH_HEADING
from langchain_md_memory.files.paths import daily_file_name

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "agent.py"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          timeout=60, cwd=ROOT, env=env, check=False)


def test_example_agent_searches_updates_and_flushes_the_memory(tmp_path):
    folder = tmp_path / "memory"
    shutil.copytree(ROOT / "examples" / "memory", folder)
    result = run("--dir", str(folder))
    assert result.returncode == 0, result.stderr
    out = result.stdout

    assert "agent -> memory_search({'query': 'single stock position limit'})" in out
    assert "| - Position limit: no single stock above 5% of the total portfolio." in out
    assert "memory_update returned:\n    | Appended to MEMORY.md." in out
    assert out.index("flush: saved durable facts") < out.index("compact: summarised") < out.index("reinject:")
    assert f"search 'college fund 2030' -> {daily_file_name()}#L1-L2" in out

    assert (folder / "MEMORY.md").read_text().endswith(
        "- Keeps 10% of the portfolio in cash as a safety buffer.\n")
    assert (folder / daily_file_name()).read_text() == (
        f"{FLUSH_HEADING}\n- College fund goal: 80k USD saved by 2030 for the daughter's tuition.\n")
    assert (folder / "index.sqlite").exists()


def test_example_agent_seeds_an_empty_folder_with_the_sample_memory(tmp_path):
    folder = tmp_path / "fresh"
    result = run("--dir", str(folder))
    assert result.returncode == 0, result.stderr
    assert (folder / "goals.md").read_text() == (ROOT / "examples" / "memory" / "goals.md").read_text()
    assert "recall: injected" in result.stdout


def test_example_agent_runs_without_arguments_on_a_temporary_copy():
    before = (ROOT / "examples" / "memory" / "MEMORY.md").read_text()
    result = run()
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("memory folder: ")
    assert (ROOT / "examples" / "memory" / "MEMORY.md").read_text() == before  # the sample is untouched
    assert not (ROOT / "examples" / "memory" / "index.sqlite").exists()
