"""``examples/agent.py`` runs offline as a script and really searches and writes the memory."""

from __future__ import annotations

import os
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

from langchain_md_memory.features.flush import FLUSH_HEADING
from langchain_md_memory.files.facts import strip_annotations
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

    assert strip_annotations((folder / "MEMORY.md").read_text()).endswith(
        "- Keeps 10% of the portfolio in cash as a safety buffer.\n")
    assert "<!-- src: via=memory_update thread=demo " in (folder / "MEMORY.md").read_text()
    assert strip_annotations((folder / daily_file_name()).read_text()) == (
        f"{FLUSH_HEADING}\n- College fund goal: 80k USD saved by 2030 for the daughter's tuition.\n")
    assert (folder / "index.sqlite").exists()


def test_example_agent_seeds_an_empty_folder_with_the_sample_memory(tmp_path):
    folder = tmp_path / "fresh"
    result = run("--dir", str(folder))
    assert result.returncode == 0, result.stderr
    assert (folder / "goals.md").read_text() == (ROOT / "examples" / "memory" / "goals.md").read_text()
    assert "recall: injected" in result.stdout


def snapshot(folder: Path) -> dict[str, tuple[int, int, bytes]]:
    """Every file under ``folder`` (an index built there by an earlier search included)."""
    return {p.relative_to(folder).as_posix(): (p.stat().st_size, p.stat().st_mtime_ns, p.read_bytes())
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_example_agent_runs_without_arguments_on_a_temporary_copy():
    sample = ROOT / "examples" / "memory"
    before = snapshot(sample)
    result = run()
    assert result.returncode == 0, result.stderr
    first_line = result.stdout.splitlines()[0]
    assert first_line.startswith("memory folder: ")
    assert snapshot(sample) == before  # nothing in the sample folder was written, created or removed
    assert not Path(first_line.removeprefix("memory folder: ")).exists()  # the copy is cleaned up


def test_example_agent_seeds_only_the_markdown_of_a_sample_that_holds_an_index(tmp_path):
    sample = tmp_path / "sample"
    shutil.copytree(ROOT / "examples" / "memory", sample)
    (sample / "index.sqlite").write_bytes(b"an index built in place")
    (sample / "index.sqlite-wal").write_bytes(b"")
    (sample / ".md-memory.lock").write_bytes(b"")
    seed = runpy.run_path(str(SCRIPT), run_name="example_agent")["seed"]
    seed(tmp_path / "copy", sample)
    copied = sorted(p.name for p in (tmp_path / "copy").iterdir())
    assert copied == sorted(p.name for p in sample.glob("*.md"))
