"""md-memory pull / push / migrate: a person's edits go back only when nobody changed the files since."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest

from langchain_md_memory.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "memory"


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def markdown(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*.md"))
            if not any(part.startswith(".") for part in p.relative_to(folder).parts[:-1])}


@pytest.fixture
def memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("MD_MEMORY_DIR", raising=False)
    target = tmp_path / "memory"
    shutil.copytree(EXAMPLES, target, ignore=shutil.ignore_patterns("index.sqlite*"))
    return target


def test_pull_edit_push_then_search_finds_the_edit(memory: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    code, out, err = run("--dir", str(memory), "--embeddings", "none", "pull", str(copy))
    assert code == 0, err
    assert markdown(copy) == markdown(memory) and "md-memory push" in out

    with (copy / "MEMORY.md").open("a", encoding="utf-8") as f:
        f.write("- Keeps a paper copy of the will at the notary in Porto\n")
    code, out, err = run("--dir", str(memory), "--embeddings", "none", "--json", "push", str(copy))
    assert code == 0, err
    assert json.loads(out) == {"folder": str(copy), "written": ["MEMORY.md"], "removed": []}
    code, out, _ = run("--dir", str(memory), "--embeddings", "none", "--json", "search", "notary Porto")
    assert json.loads(out)["results"][0]["path"] == "MEMORY.md"


def test_push_after_a_concurrent_edit_is_one_line_error_naming_the_file(memory: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    assert run("--dir", str(memory), "--embeddings", "none", "pull", str(copy))[0] == 0
    (copy / "MEMORY.md").write_text("- the person's rewrite\n", encoding="utf-8")
    assert run("--dir", str(memory), "--embeddings", "none", "add", "- the agent's new fact")[0] == 0
    before = markdown(memory)

    code, _, err = run("--dir", str(memory), "--embeddings", "none", "push", str(copy))
    assert code == 2 and err.count("\n") == 1
    assert "Push refused" in err and "MEMORY.md" in err
    assert markdown(memory) == before


def test_migrate_out_and_back_is_byte_identical(memory: Path, tmp_path: Path) -> None:
    out_dir, back = tmp_path / "out", tmp_path / "back"
    code, _, err = run("--dir", str(memory), "--embeddings", "none", "migrate", "--to", str(out_dir))
    assert code == 0, err
    code, out, err = run("--dir", str(back), "--embeddings", "none", "--json", "migrate",
                         "--from", str(out_dir))
    assert code == 0, err
    assert json.loads(out)["copied"] == sorted(markdown(memory))
    assert markdown(back) == markdown(memory)
    code, out, _ = run("--dir", str(back), "--embeddings", "none", "--json", "search", "单只个股 仓位上限")
    assert json.loads(out)["results"]


def test_migrate_into_a_memory_with_files_needs_overwrite(memory: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "MEMORY.md").write_text("- only this\n", encoding="utf-8")
    code, _, err = run("--dir", str(memory), "--embeddings", "none", "migrate", "--from", str(other))
    assert code == 2 and "--overwrite" in err
    code, _, err = run("--dir", str(memory), "--embeddings", "none", "migrate", "--from", str(other),
                       "--overwrite")
    assert code == 0, err
    assert markdown(memory) == {"MEMORY.md": b"- only this\n"}


def test_migrate_needs_exactly_one_direction(memory: Path) -> None:
    code, _, err = run("--dir", str(memory), "migrate")
    assert code == 2 and "--from" in err
