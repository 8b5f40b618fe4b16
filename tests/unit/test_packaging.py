"""The package's metadata: version, licence, dependency groups, and the README commands CI runs."""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import metadata, version
from pathlib import Path

import langchain_md_memory

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_installed_version_is_the_packages_version():
    assert re.fullmatch(r"\d+\.\d+\.\d+", langchain_md_memory.__version__)
    assert version("langchain-md-memory") == langchain_md_memory.__version__


def test_licence_file_matches_the_declared_licence():
    assert PYPROJECT["project"]["license"] == "MIT"
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License") and "langchain-md-memory contributors" in text
    assert metadata("langchain-md-memory")["License-Expression"] == "MIT"


def test_project_urls_point_at_the_repository():
    urls = PYPROJECT["project"]["urls"]
    assert set(urls) >= {"Homepage", "Repository", "Issues"}
    repo = "https://github.com/langchain-md-memory/langchain-md-memory"
    assert all(u.startswith(repo) for u in urls.values())


def test_dev_group_is_test_lint_and_typing():
    groups = PYPROJECT["dependency-groups"]
    assert groups["dev"] == [{"include-group": name} for name in ("test", "lint", "typing")]
    assert any(r.startswith("pytest>=") for r in groups["test"])
    assert any(r.startswith("ruff") for r in groups["lint"])
    assert any(r.startswith("mypy") for r in groups["typing"])
    assert not {"test", "dev"} & set(PYPROJECT["project"]["optional-dependencies"])


def test_changelog_has_an_unreleased_section_for_this_version():
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "## [Unreleased]" in changelog
    assert f"released as {langchain_md_memory.__version__}" in changelog


def test_ci_runs_the_readme_commands_word_for_word_in_order():
    commands = re.findall(r"^```bash\n(python3 -m venv .venv &&.*?)\n```", README, re.M)
    assert len(commands) == 2 and "md-memory" in commands[0] and "pytest" in commands[1]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    first = next(i for i, line in enumerate(ci) if line.startswith(commands[0]))
    second = ci.index(commands[1])
    status = next(i for i, line in enumerate(ci) if "git status --porcelain" in line)
    assert first < status < second
    assert "pytest collected no tests" in "\n".join(ci[second:])
