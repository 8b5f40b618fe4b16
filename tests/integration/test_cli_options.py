"""The md-memory command line a newcomer meets: options anywhere, --version, clear one-line errors, JSON."""

from __future__ import annotations

import datetime as dt
import io
import json
import shutil
from pathlib import Path

import pytest

import langchain_md_memory
from langchain_md_memory.cli import build_parser, main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "memory"
COMMANDS = ("search", "get", "add", "index", "status", "verify", "watch", "dream", "export", "import",
            "pull", "push", "migrate")


@pytest.fixture
def example_dir(tmp_path: Path) -> Path:
    target = tmp_path / "memory"
    shutil.copytree(EXAMPLES, target, ignore=shutil.ignore_patterns("index.sqlite*"))
    return target


@pytest.fixture(autouse=True)
def no_dir_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MD_MEMORY_DIR", raising=False)
    monkeypatch.delenv("LANGCHAIN_MD_MEMORY_DIR", raising=False)


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def assert_one_line_error(code: int, err: str) -> None:
    assert code == 2
    assert err.startswith("md-memory: error: ") and err.count("\n") == 1, err


@pytest.mark.parametrize("argv", [
    ["--dir", "{d}", "--embeddings", "none", "--json", "search", "position limit"],
    ["search", "position limit", "--dir", "{d}", "--embeddings", "none", "--json"],
    ["--json", "search", "--embeddings", "none", "position limit", "--dir", "{d}"],
])
def test_global_options_work_before_or_after_the_command(example_dir: Path, argv: list[str]) -> None:
    code, out, err = run(*[a.format(d=example_dir) for a in argv])
    assert code == 0, err
    data = json.loads(out)
    assert data["query"] == "position limit" and data["results"]


def test_an_option_given_before_the_command_is_not_reset_by_it(example_dir: Path) -> None:
    code, out, _ = run("--dir", str(example_dir), "--json", "status", "--embeddings", "none")
    assert code == 0
    assert json.loads(out)["memory_dir"] == str(example_dir.resolve())


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run("--version")
    assert code == 0
    assert out == f"md-memory {langchain_md_memory.__version__}\n"


def test_help_text_is_plain(capsys: pytest.CaptureFixture[str]) -> None:
    texts = [build_parser().format_help()]
    for command in COMMANDS:
        code, out, _ = run(command, "--help")
        assert code == 0
        texts.append(out)
    for text in texts:
        assert "``" not in text and ":class:" not in text, text
    assert "search" in texts[0] and "--version" in texts[0]
    assert "--dir" in texts[1]  # the global options are listed on each command too


@pytest.mark.parametrize("command", [["search", "x"], ["get", "MEMORY.md"], ["status"], ["index"],
                                     ["verify"], ["export", "out.tar.gz"], ["watch"]])
def test_a_missing_memory_folder_is_an_error_and_is_not_created(tmp_path: Path, command: list[str]) -> None:
    missing = tmp_path / "nowhere"
    code, _, err = run("--dir", str(missing), "--embeddings", "none", *command)
    assert_one_line_error(code, err)
    assert "no memory folder at" in err
    assert not missing.exists()


def test_add_and_index_create_start_a_new_memory(tmp_path: Path) -> None:
    code, _, err = run("--dir", str(tmp_path / "a"), "--embeddings", "none", "index", "--create")
    assert code == 0, err
    assert (tmp_path / "a").is_dir() and (tmp_path / "a" / ".gitignore").exists()
    code, _, err = run("--dir", str(tmp_path / "b"), "--embeddings", "none", "add", "- first fact")
    assert code == 0, err
    assert (tmp_path / "b" / "MEMORY.md").read_text(encoding="utf-8") == "- first fact\n"


def test_a_file_in_place_of_the_folder_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    code, _, err = run("--dir", str(tmp_path / "file"), "--embeddings", "none", "status")
    assert_one_line_error(code, err)
    assert "is not a folder" in err


def test_the_folder_can_come_from_md_memory_dir(example_dir: Path, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MD_MEMORY_DIR", str(example_dir))
    monkeypatch.chdir(tmp_path)  # no ./memory here
    code, out, err = run("--embeddings", "none", "--json", "search", "position limit")
    assert code == 0, err
    assert json.loads(out)["results"][0]["path"] == "MEMORY.md"
    code, _, err = run("--dir", str(tmp_path / "other"), "--embeddings", "none", "status")
    assert "other" in err  # --dir wins over the environment


def test_the_older_variable_still_names_the_folder(example_dir: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANGCHAIN_MD_MEMORY_DIR", str(example_dir))
    code, _, err = run("--embeddings", "none", "search", "position limit")
    assert code == 0, err


@pytest.mark.parametrize("query", ["", "   ", "\t\n"])
def test_an_empty_query_is_an_error(example_dir: Path, query: str) -> None:
    code, _, err = run("--dir", str(example_dir), "--embeddings", "none", "search", query)
    assert_one_line_error(code, err)
    assert "query is empty" in err


@pytest.mark.parametrize("argv", [[], ["frobnicate"], ["search"], ["get", "a", "b", "c"],
                                  ["search", "x", "-k", "ten"]])
def test_usage_errors_are_one_line(example_dir: Path, argv: list[str]) -> None:
    code, _, err = run("--dir", str(example_dir), *argv)
    assert_one_line_error(code, err)


def test_search_json_has_citations_and_iso_times(example_dir: Path) -> None:
    code, out, _ = run("--dir", str(example_dir), "--embeddings", "none", "--json", "search", "limit")
    assert code == 0
    for hit in json.loads(out)["results"]:
        assert hit["citation"] == f"{hit['path']}#L{hit['start_line']}-L{hit['end_line']}"
        assert dt.datetime.fromisoformat(hit["updated_at"]).tzinfo is not None


def test_status_json_times_are_iso_8601(example_dir: Path) -> None:
    assert run("--dir", str(example_dir), "--embeddings", "none", "index")[0] == 0
    code, out, _ = run("--dir", str(example_dir), "--embeddings", "none", "status", "--json")
    assert code == 0
    synced = dt.datetime.fromisoformat(json.loads(out)["last_sync"])
    assert synced.tzinfo is not None
    assert abs((dt.datetime.now(dt.UTC) - synced).total_seconds()) < 3600


def test_every_command_speaks_json(example_dir: Path, tmp_path: Path) -> None:
    base = ["--dir", str(example_dir), "--embeddings", "none", "--json"]
    code, out, _ = run(*base, "add", "- Rebalance yearly")
    assert code == 0 and json.loads(out) == {"path": "MEMORY.md"}
    code, out, _ = run(*base, "get", "MEMORY.md", "--from", "1", "--to", "1")
    assert code == 0 and json.loads(out)["text"].startswith("#")
    code, out, _ = run(*base, "index", "--force")
    assert code == 0 and json.loads(out)["files"] == 4
    code, out, _ = run(*base, "verify")
    assert code == 0 and json.loads(out)["ok"] is True
    code, out, _ = run(*base, "export", str(tmp_path / "m.tar.gz"))
    assert code == 0 and json.loads(out)["archive"] == str(tmp_path / "m.tar.gz")


def test_a_non_utf8_file_is_indexed_and_the_cli_says_so(example_dir: Path) -> None:
    (example_dir / "legacy.md").write_bytes("# Notes\n\nbond ladder caf\xe9\n".encode("latin-1"))
    code, out, err = run("--dir", str(example_dir), "--embeddings", "none", "search", "bond ladder")
    assert code == 0
    assert "legacy.md#L" in out
    assert err.startswith("md-memory: warning: legacy.md is not valid UTF-8")
    code, out, _ = run("--dir", str(example_dir), "--embeddings", "none", "status", "--json")
    assert "not valid UTF-8" in json.loads(out)["file_warnings"]["legacy.md"]


def test_import_into_a_memory_names_the_cli_flag(example_dir: Path, tmp_path: Path) -> None:
    archive = tmp_path / "m.tar.gz"
    assert run("--dir", str(example_dir), "--embeddings", "none", "export", str(archive))[0] == 0
    code, _, err = run("--dir", str(example_dir), "--embeddings", "none", "import", str(archive))
    assert_one_line_error(code, err)
    assert "--overwrite" in err and "overwrite=True" not in err
    code, _, err = run("--dir", str(example_dir), "--embeddings", "none", "import", str(archive),
                       "--overwrite")
    assert code == 0, err


def test_a_bad_archive_gets_its_whole_message_and_leaves_nothing(tmp_path: Path) -> None:
    import gzip

    archive = tmp_path / "notes.tar.gz"
    archive.write_bytes(gzip.compress(b"not a tar archive\n"))
    target = tmp_path / "new" / "memory"
    code, _, err = run("--dir", str(target), "--embeddings", "none", "import", str(archive))
    assert_one_line_error(code, err)
    assert err.rstrip().endswith("not a tar archive (plain, gzip, bzip2 or xz)")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.tar.gz"]  # no folder, no index


def test_a_bad_embeddings_spec_fails_an_import_before_anything_is_written(example_dir: Path,
                                                                         tmp_path: Path) -> None:
    archive = tmp_path / "m.tar.gz"
    assert run("--dir", str(example_dir), "--embeddings", "none", "export", str(archive))[0] == 0
    code, _, err = run("--dir", str(tmp_path / "restored"), "--embeddings", "bogus", "import", str(archive))
    assert_one_line_error(code, err)
    assert not (tmp_path / "restored").exists()


def test_a_closed_output_pipe_is_silent(example_dir: Path) -> None:
    class ClosedPipe(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    err = io.StringIO()
    code = main(["--dir", str(example_dir), "--embeddings", "none", "search", "position"], out=ClosedPipe(),
                err=err)
    assert code == 141
    assert err.getvalue() == ""


def test_an_unexpected_failure_is_one_line_too(example_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from langchain_md_memory.cli import commands

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("something\nunexpected")

    monkeypatch.setattr(commands.MarkdownMemory, "search_detailed", broken)
    code, _, err = run("--dir", str(example_dir), "--embeddings", "none", "search", "x")
    assert_one_line_error(code, err)
    assert err == "md-memory: error: something unexpected\n"
