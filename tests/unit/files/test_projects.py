"""Project identity from git remotes and paths, the memory home, and global/project scoping."""

import re
from pathlib import Path

import pytest

from langchain_md_memory.files.projects import (
    DEFAULT_HOME,
    HOME_ENV,
    layered_context,
    memory_home,
    normalize_remote,
    project_id,
    project_identity,
    project_memory_dir,
)
from langchain_md_memory.text import estimate_tokens
from tests.support.repos import git_repo

SAFE_FOLDER = re.compile(r"^[a-z0-9][a-z0-9._-]*-[0-9a-f]{8}$")


@pytest.mark.parametrize("url", [
    "git@github.com:org/repo.git",
    "git@github.com:org/repo",
    "https://github.com/org/repo",
    "https://github.com/org/repo.git",
    "https://github.com/org/repo/",
    "https://github.com/org/repo.git/",
    "ssh://git@github.com/org/repo.git",
    "ssh://git@github.com:2222/org/repo.git",
    "https://user:s3cr3t-token@github.com/Org/Repo.git",
    "git://github.com/org/repo",
    "github.com:org/repo.git",
])
def test_remote_forms_normalise_to_org_repo(url):
    assert normalize_remote(url) == "org/repo"


def test_subgroups_and_local_path_remotes_keep_their_meaningful_parts():
    assert normalize_remote("git@gitlab.com:group/sub/repo.git") == "group/sub/repo"
    assert normalize_remote("/srv/git/org/repo.git") == "org/repo"
    assert normalize_remote("file:///srv/git/org/repo.git") == "org/repo"


@pytest.mark.parametrize("url", ["", "   ", "https://github.com/", "git@github.com:"])
def test_urls_without_a_repository_give_none(url):
    assert normalize_remote(url) is None


def test_repo_with_remote_is_named_by_the_remote(tmp_path):
    repo = git_repo(tmp_path / "checkout", "git@github.com:Acme/Widgets.git")
    ident = project_identity(repo)
    assert ident.source == "remote"
    assert ident.name == "acme/widgets"
    assert ident.remote == "git@github.com:Acme/Widgets.git"
    assert ident.id.startswith("acme-widgets-")
    assert SAFE_FOLDER.match(ident.id)


def test_ssh_and_https_checkouts_of_one_remote_share_an_id(tmp_path):
    a = git_repo(tmp_path / "a", "git@github.com:org/repo.git")
    b = git_repo(tmp_path / "elsewhere" / "b", "https://github.com/org/repo")
    assert project_id(a) == project_id(b)


def test_a_subfolder_of_a_repo_has_the_repo_id(tmp_path):
    repo = git_repo(tmp_path / "r", "https://github.com/org/repo")
    sub = repo / "src" / "pkg"
    sub.mkdir(parents=True)
    assert project_id(sub) == project_id(repo)


def test_same_org_repo_on_different_hosts_gets_different_ids(tmp_path):
    gh = git_repo(tmp_path / "gh", "https://github.com/org/repo")
    gl = git_repo(tmp_path / "gl", "https://gitlab.com/org/repo")
    assert project_identity(gh).name == project_identity(gl).name == "org/repo"
    assert project_id(gh) != project_id(gl)


def test_repo_without_remote_falls_back_to_its_path(tmp_path):
    repo = git_repo(tmp_path / "My Project")
    (repo / "deep").mkdir()
    ident = project_identity(repo / "deep")
    assert ident.source == "path"
    assert ident.remote is None
    assert ident.name == "My Project"
    assert ident.id.startswith("my-project-")
    assert SAFE_FOLDER.match(ident.id)
    # the repository top level names it, not the subfolder asked about
    assert project_id(repo) == ident.id


def test_plain_folders_with_one_name_in_two_places_do_not_collide(tmp_path):
    one, two = tmp_path / "x" / "app", tmp_path / "y" / "app"
    one.mkdir(parents=True)
    two.mkdir(parents=True)
    assert project_id(one) != project_id(two)
    assert project_id(one).startswith("app-")
    assert project_id(one) == project_id(one)  # stable


def test_credentials_in_a_remote_never_reach_the_identity(tmp_path):
    repo = git_repo(tmp_path / "r", "https://bob:ghp_supersecret@github.com/org/repo.git")
    ident = project_identity(repo)
    assert "supersecret" not in ident.id and "supersecret" not in (ident.remote or "")
    assert ident.remote == "https://github.com/org/repo.git"
    assert ident.id == project_id(git_repo(tmp_path / "s", "git@github.com:org/repo.git"))


def test_hostile_names_become_one_safe_folder(tmp_path):
    repo = git_repo(tmp_path / "r", "https://example.com/../..%2f/.hidden/..weird name!.git")
    ident = project_identity(repo)
    assert "/" not in ident.id and ".." not in ident.id and not ident.id.startswith(".")
    assert SAFE_FOLDER.match(ident.id)


def test_home_is_argument_then_env_then_default(tmp_path, monkeypatch):
    monkeypatch.setenv(HOME_ENV, str(tmp_path / "from-env"))
    assert memory_home(tmp_path / "arg") == (tmp_path / "arg").resolve()
    assert memory_home() == (tmp_path / "from-env").resolve()
    monkeypatch.delenv(HOME_ENV)
    assert memory_home() == Path(DEFAULT_HOME).expanduser().resolve()


def test_project_memory_dir_is_home_slash_project_id(tmp_path):
    repo = git_repo(tmp_path / "r", "git@github.com:org/repo.git")
    folder, ident = project_memory_dir(repo, tmp_path / "home")
    assert folder == (tmp_path / "home").resolve() / ident.id
    assert folder.parent == (tmp_path / "home").resolve()


# -- scoping ---------------------------------------------------------------------------


def test_layered_context_serves_layers_in_order_within_one_budget():
    first = "## MEMORY.md\n\n" + "global fact. " * 20
    second = "## MEMORY.md\n\n" + "project fact. " * 20

    def loader(text):
        return lambda free: text if estimate_tokens(text) <= free else ""

    out = layered_context([("Global memory", loader(first)), ("Project memory", loader(second))], 10_000)
    assert out.index("# Global memory") < out.index("global fact") < out.index("# Project memory")
    budget = estimate_tokens(f"# Global memory\n\n{first}") + 5
    tight = layered_context([("Global memory", loader(first)), ("Project memory", loader(second))], budget)
    assert "global fact" in tight and "project fact" not in tight
    assert estimate_tokens(tight) <= budget
    assert layered_context([("Global memory", loader(first))], 3) == ""


def test_a_folder_outside_any_repo_ignores_the_callers_repo(tmp_path, monkeypatch):
    monkeypatch.chdir(git_repo(tmp_path / "cwd-repo", "git@github.com:org/cwd.git"))
    lone = tmp_path / "lone"
    lone.mkdir()
    ident = project_identity(lone)
    assert ident.source == "path" and ident.name == "lone"
    assert project_identity(".").name == "org/cwd"
