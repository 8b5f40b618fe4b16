"""``md-memory init`` starts a memory a pip user can search at once, and the CLI's errors keep their hints."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from langchain_md_memory.cli import main
from langchain_md_memory.files.starter import example_memory


@pytest.fixture(autouse=True)
def no_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MD_MEMORY_DIR", "LANGCHAIN_MD_MEMORY_DIR", "MD_MEMORY_POSTGRES_URL", "MD_MEMORY_POSTGRES",
                 "MD_MEMORY_TENANT",
                 "LANGCHAIN_MD_MEMORY_DREAM_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE"):
        monkeypatch.delenv(name, raising=False)


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def one_line_error(code: int, err: str) -> str:
    assert code == 2 and err.startswith("md-memory: error: ") and err.count("\n") == 1, err
    assert "[redacted" not in err and "[REDACTED]" not in err
    return err


def test_init_example_then_search_finds_the_position_rule(tmp_path: Path) -> None:
    demo = tmp_path / "demo"
    code, out, err = run("--dir", str(demo), "init", "--example")
    assert code == 0, err
    assert "created the example memory" in out and f"md-memory --dir {demo} search" in out
    code, out, err = run("--dir", str(demo), "--embeddings", "none", "--json", "search", "单只个股 仓位上限")
    assert code == 0, err
    assert json.loads(out)["results"][0]["path"] == "MEMORY.md"


def test_init_json_lists_the_files_written(tmp_path: Path) -> None:
    code, out, err = run("--dir", str(tmp_path / "m"), "--json", "init")
    assert code == 0, err
    assert json.loads(out) == {"memory_dir": str((tmp_path / "m").resolve()),
                               "written": [".gitignore", "MEMORY.md"]}


@pytest.mark.parametrize("example", [[], ["--example"]])
def test_a_second_init_is_refused_naming_memory_md_and_changes_nothing(tmp_path: Path,
                                                                     example: list[str]) -> None:
    demo = tmp_path / "demo"
    assert run("--dir", str(demo), "init", "--example")[0] == 0
    (demo / "MEMORY.md").write_text("- mine now\n", encoding="utf-8")
    code, out, err = run("--dir", str(demo), "init", *example)
    one_line_error(code, err)
    assert "already holds a memory (MEMORY.md, " in err and out == ""
    assert (demo / "MEMORY.md").read_text(encoding="utf-8") == "- mine now\n"
    assert sorted(p.name for p in demo.iterdir()) == sorted(
        [".gitignore", *(i.name for i in example_memory().iterdir() if i.name.endswith(".md"))])


def test_init_needs_a_folder_not_postgres(tmp_path: Path) -> None:
    err = one_line_error(*run("--postgres", "postgresql://nowhere/x", "--tenant", "t", "init")[::2])
    assert "init needs a folder memory; with --postgres" in err


# Every CLI error message that names an option or a way to pass a value, and the words it must keep.
def test_without_a_key_openai_embeddings_say_how_to_pass_it_unredacted(tmp_path: Path) -> None:
    run("--dir", str(tmp_path), "init")
    err = one_line_error(*run("--dir", str(tmp_path), "--embeddings", "openai", "search", "x")[::2])
    assert "set OPENAI_API_KEY in the environment, or use --embeddings local" in err


def test_a_real_key_in_an_error_is_still_redacted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from langchain_md_memory.cli import commands

    def leaky(*args: object, **kwargs: object) -> None:
        raise RuntimeError("401 for api_key=sk-abcdefghijklmnopqrstuvwx; pass api_key=... instead")

    run("--dir", str(tmp_path), "init")
    monkeypatch.setattr(commands.MarkdownMemory, "search_detailed", leaky)
    code, _, err = run("--dir", str(tmp_path), "--embeddings", "none", "search", "x")
    assert code == 2
    assert "sk-abcdefghij" not in err and "api_key=[redacted: api key]; pass api_key=... instead" in err


def test_a_missing_folder_names_dir_and_init(tmp_path: Path) -> None:
    err = one_line_error(*run("--dir", str(tmp_path / "none"), "search", "x")[::2])
    assert "pass --dir or set $MD_MEMORY_DIR" in err and f"md-memory --dir {tmp_path / 'none'} init" in err
    err = one_line_error(*run("--dir", str(tmp_path / "none"), "index")[::2])
    assert "index --create" in err


def test_postgres_without_a_tenant_names_tenant() -> None:
    err = one_line_error(*run("--postgres", "postgresql://nowhere/x", "search", "x")[::2])
    assert "--postgres needs --tenant NAME (or $MD_MEMORY_TENANT)" in err


def test_watch_on_postgres_names_postgres() -> None:
    err = one_line_error(*run("--postgres", "postgresql://nowhere/x", "--tenant", "t", "watch")[::2])
    assert "watch needs a folder memory; with --postgres (or $MD_MEMORY_POSTGRES_URL)" in err


def test_a_zero_k_names_k(tmp_path: Path) -> None:
    run("--dir", str(tmp_path), "init")
    err = one_line_error(*run("--dir", str(tmp_path), "search", "x", "-k", "0")[::2])
    assert "-k must be at least 1, got 0" in err


def test_a_negative_debounce_names_debounce_ms(tmp_path: Path) -> None:
    run("--dir", str(tmp_path), "init")
    err = one_line_error(*run("--dir", str(tmp_path), "--embeddings", "none", "watch",
                              "--debounce-ms", "-1")[::2])
    assert "--debounce-ms must be 0 or more, got -1" in err


def test_dream_without_a_model_names_model(tmp_path: Path) -> None:
    run("--dir", str(tmp_path), "init")
    err = one_line_error(*run("--dir", str(tmp_path), "--embeddings", "none", "dream")[::2])
    assert "dream needs --model (e.g. openai:gpt-4o-mini) or $LANGCHAIN_MD_MEMORY_DREAM_MODEL" in err


def test_import_into_a_memory_names_overwrite(tmp_path: Path) -> None:
    run("--dir", str(tmp_path / "m"), "init", "--example")
    archive = tmp_path / "m.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tmp_path / "m" / "MEMORY.md", arcname="MEMORY.md")
    err = one_line_error(*run("--dir", str(tmp_path / "m"), "--embeddings", "none", "import",
                              str(archive))[::2])
    assert "import with --overwrite to replace same-named files" in err


def test_migrate_into_a_memory_names_overwrite(tmp_path: Path) -> None:
    run("--dir", str(tmp_path / "a"), "init", "--example")
    run("--dir", str(tmp_path / "b"), "init")
    err = one_line_error(*run("--dir", str(tmp_path / "a"), "--embeddings", "none", "migrate", "--to",
                              str(tmp_path / "b"))[::2])
    assert "(--overwrite) to replace its documents" in err


def test_a_usage_error_names_the_option_and_help(tmp_path: Path) -> None:
    err = one_line_error(*run("--dir", str(tmp_path), "search", "x", "-k", "two")[::2])
    assert "argument -k: invalid int value: 'two'" in err and "(see md-memory search --help)" in err
