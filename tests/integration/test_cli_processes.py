"""md-memory as a real process: a reader that stops early, Ctrl-C mid-embedding, the progress bar.

The slow model comes from :mod:`tests.support.slow_cli` (the real CLI plus ``--embeddings slow``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from langchain_md_memory import MarkdownMemory
from tests.support.slow_cli import VOCABULARY

ROOT = Path(__file__).resolve().parents[2]
MD_MEMORY = shutil.which("md-memory", path=str(Path(sys.executable).parent))


def write_memory(folder: Path, files: int = 30, sections: int = 8) -> None:
    """``files × sections`` chunks of about 300 words each (one chunk per ``##`` section)."""
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(files):
        parts = [f"# Topic {i}"]
        for j in range(sections):
            words = " ".join(f"{VOCABULARY[(i + j + k) % len(VOCABULARY)]} fact {i}-{j}-{k}"
                             for k in range(60))
            parts.append(f"## Section {j}\n\n{words}")
        (folder / f"topic-{i:02d}.md").write_text("\n\n".join(parts) + "\n", encoding="utf-8")


def slow_cli(*args: str, env: dict[str, str] | None = None, **kwargs: object) -> subprocess.Popen[str]:
    environment = {**os.environ, **(env or {})}
    environment.pop("OPENAI_API_KEY", None)
    return subprocess.Popen(  # type: ignore[call-overload, no-any-return]
        [sys.executable, "-m", "tests.support.slow_cli", *args], cwd=ROOT, env=environment, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        # A shell that ignores SIGINT (a background job) passes that on; the CLI must see Ctrl-C.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL), **kwargs)


def counts(folder: Path) -> tuple[int, int]:
    """(chunks, chunks with a vector) as the index holds them, without syncing."""
    with MarkdownMemory(folder, embeddings="none") as mem:
        info = mem.status()
    return info["chunks"], info["embedded"]


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_ctrl_c_mid_embedding_stops_cleanly_and_the_next_run_finishes(tmp_path: Path) -> None:
    folder, log = tmp_path / "memory", tmp_path / "batches.log"
    write_memory(folder)
    proc = slow_cli("--dir", str(folder), "--embeddings", "slow", "index",
                    env={"SLOW_EMBED_SECONDS": "0.01", "SLOW_EMBED_LOG": str(log)})
    deadline = time.monotonic() + 120
    while not (log.exists() and len(log.read_text().splitlines()) >= 2):  # two batches embedded
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)

    assert proc.returncode == 130
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("md-memory: interrupted"), err
    assert "Traceback" not in err
    chunks, embedded = counts(folder)
    assert 0 < embedded < chunks  # the finished batches are kept

    again = slow_cli("--dir", str(folder), "--embeddings", "slow", "--json", "index")
    out, err = again.communicate(timeout=120)
    assert again.returncode == 0, err
    assert json.loads(out)["embedded"] == chunks - embedded  # it resumed: only the rest was embedded
    assert counts(folder) == (chunks, chunks)


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("in_process", [True, False], ids=["model-in-process", "model-on-a-thread"])
def test_ctrl_c_mid_embedding_stops_within_a_second_or_two(tmp_path: Path, in_process: bool) -> None:
    # Half a second a text: a whole batch of 32 in one model call would take 16 s to finish.
    folder, log = tmp_path / "memory", tmp_path / "batches.log"
    write_memory(folder, files=10, sections=8)
    proc = slow_cli("--dir", str(folder), "--embeddings", "slow", "index",
                    env={"SLOW_EMBED_SECONDS": "0.5", "SLOW_EMBED_LOG": str(log),
                         "SLOW_EMBED_IN_PROCESS": "1" if in_process else "0"})
    deadline = time.monotonic() + 60
    while not (log.exists() and log.read_text()):  # a first call embedded: the work is under way
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.02)
    time.sleep(0.3)  # into the next call
    proc.send_signal(signal.SIGINT)
    sent = time.monotonic()
    _, err = proc.communicate(timeout=60)
    took = time.monotonic() - sent

    assert proc.returncode == 130 and err.startswith("md-memory: interrupted"), err
    assert took < 3.0, f"{took:.1f} s after Ctrl-C"
    chunks, embedded = counts(folder)
    assert 0 < embedded < chunks  # what was embedded is kept


def test_progress_is_shown_when_asked_and_json_alone_stays_quiet(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    write_memory(folder, files=10, sections=4)
    proc = slow_cli("--dir", str(folder), "--embeddings", "slow", "index", "--progress")
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    lines = err.splitlines()
    assert lines and all(line.startswith("embedding [") for line in lines), err
    assert lines[-1].split()[2] == "40/40"

    (folder / "topic-00.md").write_text("# Changed\n\nbond ladder\n", encoding="utf-8")
    proc = slow_cli("--dir", str(folder), "--embeddings", "slow", "--json", "index")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and err == ""
    assert json.loads(out)["files_changed"] == 1


@pytest.mark.parametrize("argv", [["search", "bond fact", "-k", "50", "--json"], ["get", "big.md"]])
def test_a_reader_that_stops_early_gets_no_traceback(tmp_path: Path, argv: list[str]) -> None:
    folder = tmp_path / "memory"
    write_memory(folder, files=10, sections=8)
    (folder / "big.md").write_text("- a long line of the big file\n" * 40_000, encoding="utf-8")
    assert MD_MEMORY is not None
    proc = subprocess.Popen([MD_MEMORY, "--dir", str(folder), "--embeddings", "none", *argv],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    assert len(proc.stdout.read(1)) == 1  # like `| head -c1`
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=120) in (0, 141)
    assert err == ""


def test_version_from_the_console_script() -> None:
    assert MD_MEMORY is not None
    done = subprocess.run([MD_MEMORY, "--version"], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0
    assert done.stdout.startswith("md-memory ") and done.stdout.split()[1][0].isdigit()


def loaded_after(call: str, modules: tuple[str, ...]) -> list[str]:
    """Which of ``modules`` a fresh interpreter has imported after running ``call``."""
    code = (f"import sys\nfrom langchain_md_memory.cli import main\ntry:\n    {call}\nexcept SystemExit:\n"
            f"    pass\nprint(sorted(m for m in {modules!r} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1].replace("'", '"'))  # type: ignore[no-any-return]


def test_help_loads_no_langchain_numpy_or_openai() -> None:
    heavy = ("langchain_core", "numpy", "openai", "pydantic", "langgraph")
    assert loaded_after("main(['--help'])", heavy) == []


def test_a_keyword_search_loads_no_langchain_or_openai(tmp_path: Path) -> None:
    write_memory(tmp_path / "memory", files=2, sections=2)
    search = f"main(['--dir', {str(tmp_path / 'memory')!r}, '--embeddings', 'none', 'search', 'bond'])"
    assert loaded_after(search, ("langchain_core", "openai", "langgraph", "langsmith")) == []
