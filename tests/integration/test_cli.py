"""The md-memory CLI: in-process for most cases, one real subprocess per entry point."""

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from langchain_md_memory.cli import main
from langchain_md_memory.embeddings import EmbeddingClient, providers
from tests.support.embeddings import AxisEmbeddings
from tests.support.hits import HIT_FIELDS

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "memory"


@pytest.fixture
def example_dir(tmp_path):
    target = tmp_path / "memory"
    shutil.copytree(EXAMPLES, target, ignore=shutil.ignore_patterns("index.sqlite*"))
    return target


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_search_prints_a_table_with_the_matching_rule(example_dir):
    code, out, _ = run("--dir", str(example_dir), "--embeddings", "none", "search", "单只个股 仓位")
    assert code == 0
    assert out.splitlines()[0].split()[:3] == ["#", "score", "vector"]
    assert "MEMORY.md#L" in out
    assert "单只个股不超过总仓位" in out


def test_search_json_has_results_with_all_score_fields(example_dir):
    code, out, _ = run(
        "--dir", str(example_dir), "--embeddings", "none", "search", "position limit", "--json", "-k", "2"
    )
    assert code == 0
    data = json.loads(out)
    assert 1 <= len(data["results"]) <= 2
    first = data["results"][0]
    for key in ("text", *HIT_FIELDS):
        assert key in first
    assert data["funnel"]["keyword"] >= len(data["results"])


UNANSWERED = "仓位 volcano eruption lava"  # one common word of the memory, three it never mentions


def test_search_says_first_when_no_match_is_strong_and_labels_each_hit(example_dir):
    code, out, _ = run("--dir", str(example_dir), "--embeddings", "none", "search", UNANSWERED)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "No strong match in memory; closest notes:"
    assert lines[1].split()[5] == "conf"
    assert lines[2].split()[5] == "no"
    code, out, _ = run("--dir", str(example_dir), "--embeddings", "none", "search", "单只个股 仓位上限")
    assert out.splitlines()[0].split()[5] == "conf" and out.splitlines()[1].split()[5] == "yes"


def test_search_json_says_whether_any_hit_is_confident(example_dir):
    _, out, _ = run("--dir", str(example_dir), "--embeddings", "none", "search", UNANSWERED, "--json")
    weak = json.loads(out)
    _, out, _ = run("--dir", str(example_dir), "--embeddings", "none", "search", "单只个股 仓位上限",
                    "--json")
    strong = json.loads(out)
    assert weak["results"] and weak["confident"] is False
    assert not any(hit["confident"] for hit in weak["results"])
    assert strong["confident"] is True and strong["results"][0]["confident"] is True


def test_add_then_get_round_trips_through_the_file(example_dir):
    code, out, _ = run(
        "--dir", str(example_dir), "--embeddings", "none", "add", "- Bought TLT for the bond ladder"
    )
    assert code == 0 and "MEMORY.md" in out
    lines = (example_dir / "MEMORY.md").read_text(encoding="utf-8").splitlines()
    n = len(lines)
    code, out, _ = run("--dir", str(example_dir), "get", "MEMORY.md", "--from", str(n), "--to", str(n))
    assert code == 0 and out == "- Bought TLT for the bond ladder\n"


def test_add_daily_writes_todays_log(example_dir):
    code, out, _ = run("--dir", str(example_dir), "--embeddings", "none", "add", "--daily", "- note")
    assert code == 0
    assert (example_dir / out.split()[-1]).read_text(encoding="utf-8").endswith("- note\n")


def test_index_and_status_report_counts(example_dir):
    code, out, _ = run("--dir", str(example_dir), "--embeddings", "none", "index")
    assert code == 0 and out.startswith("files 4, changed 4")
    code, out, _ = run("--dir", str(example_dir), "--embeddings", "none", "status", "--json")
    info = json.loads(out)
    assert info["files"] == 4 and info["chunks"] > 4 and info["provider"] is None


@pytest.fixture
def counted(monkeypatch):
    """``--embeddings local`` answered by a stand-in that counts every call (the bundled model's place)."""
    emb = AxisEmbeddings(["fact", "note"], model="counted")
    monkeypatch.setattr(providers, "_local_client",
                        lambda opts: EmbeddingClient(emb, provider="local", model="counted", **opts))
    return emb


def _forty_notes(tmp_path):
    folder = tmp_path / "memory"
    folder.mkdir()
    for i in range(40):
        (folder / f"note{i:02}.md").write_text(f"# Note {i}\n\n- fact {i}: kept for the status check\n")
    return folder


def test_status_on_a_memory_never_indexed_reports_the_work_left_and_does_none_of_it(tmp_path, counted):
    folder = _forty_notes(tmp_path)
    code, out, _ = run("--dir", str(folder), "--embeddings", "local", "status", "--json")
    info = json.loads(out)
    assert code == 0
    assert (info["files"], info["files_to_index"], info["dirty"]) == (40, 40, True)
    assert (info["chunks"], info["embedded"], info["last_sync"]) == (0, 0, None)
    assert counted.calls == counted.queries == 0  # nothing embedded, the model not even asked its size
    code, out, _ = run("--dir", str(folder), "--embeddings", "local", "status")
    assert "40 file(s) to index" in out.splitlines()[-1] and "md-memory index" in out.splitlines()[-1]
    assert run("--dir", str(folder), "--embeddings", "local", "index")[0] == 0
    assert counted.texts_embedded == 40
    code, out, _ = run("--dir", str(folder), "--embeddings", "local", "status", "--json")
    info = json.loads(out)
    assert (info["files_to_index"], info["chunks"], info["embedded"], info["dirty"]) == (0, 40, 40, False)
    assert info["last_sync"] is not None  # the index run's, read back by another process


def test_status_of_an_interrupted_index_shows_the_chunks_waiting_and_leaves_them(tmp_path, counted):
    folder = _forty_notes(tmp_path)
    counted.fail = ConnectionError("connection reset by peer")  # the index run loses its model
    assert run("--dir", str(folder), "--embeddings", "local", "--json", "index")[0] == 0
    counted.fail = None
    calls = (counted.calls, counted.queries)
    code, out, _ = run("--dir", str(folder), "--embeddings", "local", "status", "--json")
    info = json.loads(out)
    assert code == 0 and (info["files_to_index"], info["chunks"], info["embedded"]) == (0, 40, 0)
    assert info["waiting_for_embeddings"] == 40
    assert (counted.calls, counted.queries) == calls  # checking it did not finish it


def test_status_shows_how_much_of_each_file_fits_and_suggests_dream_when_memory_md_is_over(tmp_path):
    folder = tmp_path / "memory"
    folder.mkdir()
    (folder / "MEMORY.md").write_text("".join(f"- Rule {i}: in case {i} always do the thing agreed for {i}\n"
                                              for i in range(1, 401)), encoding="utf-8")
    code, out, _ = run("--dir", str(folder), "--embeddings", "none", "status")
    assert code == 0
    line = next(x for x in out.splitlines() if x.startswith("session_context"))
    assert " of 400 lines (" in line and "MEMORY.md: " in line
    assert "over the 2000-token session-context budget" in out and "md-memory dream" in out
    code, out, _ = run("--dir", str(folder), "--embeddings", "none", "status", "--json")
    info = json.loads(out)
    assert info["session_context_tokens"] == 2000 and "md-memory dream" in info["advice"]
    (folder / "MEMORY.md").write_text("- one rule\n", encoding="utf-8")
    code, out, _ = run("--dir", str(folder), "--embeddings", "none", "status", "--json")
    info = json.loads(out)
    assert info["session_context"] == {"MEMORY.md": "1 of 1 lines (7 tokens)"} and info["advice"] is None


@pytest.mark.parametrize(
    "argv",
    [
        ["get", "../etc/passwd"],
        ["get", "/etc/passwd"],
        ["get", "missing.md"],
        ["get", "MEMORY.md", "--from", "0"],
        ["add", "--file", "notes.txt", "x"],
        ["add", "   "],
    ],
)
def test_bad_input_gives_a_one_line_error_and_exit_2(example_dir, argv):
    code, _out, err = run("--dir", str(example_dir), "--embeddings", "none", *argv)
    assert code == 2
    assert err.startswith("md-memory: error: ")
    assert err.count("\n") == 1


def test_unknown_embedding_spec_is_a_one_line_error(example_dir):
    code, _, err = run("--dir", str(example_dir), "--embeddings", "bogus", "status")
    assert code == 2 and "bogus" in err


def test_python_dash_m_entry_point_runs_a_search(example_dir):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "langchain_md_memory",
            "--dir",
            str(example_dir),
            "--embeddings",
            "none",
            "search",
            "leveraged ETF",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert any("leveraged" in r["text"].lower() for r in json.loads(proc.stdout)["results"])


def test_console_script_is_installed_and_fails_cleanly_on_bad_input(example_dir):
    exe = shutil.which("md-memory", path=str(Path(sys.executable).parent))
    assert exe is not None
    proc = subprocess.run(
        [exe, "--dir", str(example_dir), "get", "../x.md"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("md-memory: error: ")


def test_add_dash_reads_the_text_from_standard_input(example_dir, monkeypatch):
    before = (example_dir / "MEMORY.md").read_text(encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", io.StringIO("- Likes oolong tea\n- Walks to work\n"))
    code, out, err = run("--dir", str(example_dir), "--embeddings", "none", "add", "-")
    assert (code, out, err) == (0, "appended to MEMORY.md\n", "")
    after = (example_dir / "MEMORY.md").read_text(encoding="utf-8")
    assert after == before + "- Likes oolong tea\n- Walks to work\n"


def test_add_dash_with_nothing_on_standard_input_is_refused(example_dir, monkeypatch):
    before = (example_dir / "MEMORY.md").read_bytes()
    monkeypatch.setattr(sys, "stdin", io.StringIO(" \n"))
    code, out, err = run("--dir", str(example_dir), "--embeddings", "none", "add", "-")
    assert code == 2 and out == ""
    assert err.startswith("md-memory: error: ") and "standard input" in err and err.count("\n") == 1
    assert (example_dir / "MEMORY.md").read_bytes() == before


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_get_past_the_end_says_how_many_lines_the_file_has(example_dir, json_flag):
    lines = len((example_dir / "MEMORY.md").read_text(encoding="utf-8").splitlines())
    code, out, err = run("--dir", str(example_dir), "--embeddings", "none", *json_flag,
                         "get", "MEMORY.md", "--from", "50", "--to", "60")
    assert code == 2 and out == ""
    assert err.startswith(f"md-memory: error: MEMORY.md has {lines} lines") and "--from 50" in err
    assert err.count("\n") == 1
    code, out, _ = run("--dir", str(example_dir), "get", "MEMORY.md", "--from", str(lines), "--to", "60")
    assert code == 0 and len(out.splitlines()) == 1  # a range that runs past the end is cut at it


@pytest.mark.parametrize("spec", ["openai", "openai:text-embedding-3-large"])
def test_openai_without_a_key_names_the_cli_way(example_dir, monkeypatch, spec):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE"):
        monkeypatch.delenv(name, raising=False)
    code, out, err = run("--dir", str(example_dir), "--embeddings", spec, "search", "position limit")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "OPENAI_API_KEY" in err and "--embeddings local" in err and "--embeddings none" in err
    assert "api_key=" not in err


def test_the_progress_bar_draws_the_commands_own_work_not_a_background_job():
    import threading

    from langchain_md_memory.cli.progress import ProgressBar
    from langchain_md_memory.types import ProgressEvent

    stream = io.StringIO()
    bar = ProgressBar(stream, live=False, every_s=0.0)
    behind = threading.Thread(target=bar, args=(ProgressEvent("embed", 5, 10, "chunks"),))
    behind.start()
    behind.join()
    assert stream.getvalue() == ""  # printed over a search's results, it would garble them
    bar(ProgressEvent("embed", 10, 10, "chunks"))
    assert stream.getvalue().startswith("embedding [")
