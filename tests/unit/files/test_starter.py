"""Starting a memory folder: empty or from the bundled example, never over a memory already there."""

from __future__ import annotations

import tomllib
from fnmatch import fnmatch
from pathlib import Path

import pytest

from langchain_md_memory.errors import MemoryInputError
from langchain_md_memory.files.gitignore import GITIGNORE_TEXT
from langchain_md_memory.files.starter import (
    MemoryFolderInUseError,
    example_memory,
    init_memory,
    memory_contents,
)

ROOT = Path(__file__).resolve().parents[3]


def bundled() -> dict[str, bytes]:
    return {item.name: item.read_bytes() for item in example_memory().iterdir() if item.name.endswith(".md")}


def test_init_writes_a_gitignore_and_an_empty_memory_md(tmp_path: Path) -> None:
    folder = tmp_path / "new" / "memory"
    assert init_memory(folder) == [".gitignore", "MEMORY.md"]
    assert (folder / "MEMORY.md").read_bytes() == b""
    assert (folder / ".gitignore").read_text(encoding="utf-8") == GITIGNORE_TEXT


def test_init_example_copies_every_bundled_file_byte_for_byte(tmp_path: Path) -> None:
    written = init_memory(tmp_path / "demo", example=True)
    assert {"MEMORY.md", "goals.md"} <= set(written) and ".gitignore" in written
    assert {name: (tmp_path / "demo" / name).read_bytes() for name in bundled()} == bundled()
    assert not (tmp_path / "demo" / "index.sqlite").exists()


def test_an_empty_existing_folder_is_fine_and_its_gitignore_is_kept(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("mine\n")
    assert init_memory(tmp_path) == ["MEMORY.md"]
    assert (tmp_path / ".gitignore").read_text() == "mine\n"


@pytest.mark.parametrize("already", ["MEMORY.md", "notes/topic.md", "2026-01-02.md", "index.sqlite"])
def test_init_refuses_a_folder_holding_a_memory_and_names_what_is_there(tmp_path: Path, already: str) -> None:
    (tmp_path / already).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / already).write_text("- keep me\n")
    for example in (False, True):
        with pytest.raises(MemoryFolderInUseError, match=already.replace(".", r"\.")):
            init_memory(tmp_path, example=example)
    assert (tmp_path / already).read_text() == "- keep me\n"
    assert memory_contents(tmp_path) == [already]


def test_the_refusal_names_memory_md_first_and_counts_the_rest(tmp_path: Path) -> None:
    init_memory(tmp_path, example=True)
    with pytest.raises(MemoryFolderInUseError) as caught:
        init_memory(tmp_path)
    assert caught.value.existing[0] == "MEMORY.md"
    assert "(MEMORY.md, " in str(caught.value) and "more)" in str(caught.value)


def test_a_file_in_place_of_the_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "memory").write_text("x")
    with pytest.raises(MemoryInputError, match="not a folder"):
        init_memory(tmp_path / "memory")


def test_the_repositorys_example_folder_is_the_bundled_one() -> None:
    repo = ROOT / "examples" / "memory"
    assert {p.name: p.read_bytes() for p in repo.glob("*.md")} == bundled()
    assert repo.resolve() == Path(str(example_memory())).resolve()


def test_the_wheel_carries_every_example_file_and_no_index() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    globs = pyproject["tool"]["setuptools"]["package-data"]["langchain_md_memory"]
    shipped = [g for g in globs if g.startswith("examples/memory/")]
    assert all(any(fnmatch(f"examples/memory/{name}", g) for g in shipped) for name in bundled())
    assert not any(fnmatch("examples/memory/index.sqlite", g) for g in shipped)
