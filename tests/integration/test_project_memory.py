"""Per-project memory under one home: layout, global + project search, scoped paths, session context."""

import threading
import time

import pytest

from langchain_md_memory import MarkdownMemory, MemoryConfig
from langchain_md_memory.errors import MemoryPathError
from langchain_md_memory.files.projects import HOME_ENV, project_id
from langchain_md_memory.text import estimate_tokens
from tests.support.repos import git_repo


@pytest.fixture
def home(tmp_path):
    return tmp_path / "home"


@pytest.fixture
def repo(tmp_path):
    return git_repo(tmp_path / "work" / "widgets", "git@github.com:acme/widgets.git")


@pytest.fixture
def mem(repo, home):
    m = MarkdownMemory.for_project(repo, root=home, embeddings="none")
    yield m
    m.close()


def test_layout_is_global_at_home_and_project_in_its_id_folder(mem, repo, home):
    mem.append("- Build with `make dist`")
    mem.append("- Today: fixed the flaky upload test", file="daily")
    mem.append("- Answer in English, briefly", file="~global/MEMORY.md")
    pid = project_id(repo)
    assert mem.memory_dir == home.resolve() / pid
    assert mem.project is not None and mem.project.name == "acme/widgets"
    assert (home / pid / "MEMORY.md").read_text(encoding="utf-8") == "- Build with `make dist`\n"
    assert (home / "MEMORY.md").read_text(encoding="utf-8") == "- Answer in English, briefly\n"
    assert len(list((home / pid).glob("????-??-??.md"))) == 1
    assert mem.global_memory is not None and mem.global_memory.memory_dir == home.resolve()


def test_search_covers_both_memories_and_says_which(mem):
    mem.append("- Deploys go through the staging cluster first")
    mem.append("- Deploys only on weekdays, never Friday afternoon", file="~global/MEMORY.md")
    hits = mem.search("deploys")
    scopes = {h.scope: h for h in hits}
    assert set(scopes) == {"project", "global"}
    assert scopes["project"].path == "MEMORY.md"
    assert scopes["global"].path == "~global/MEMORY.md"
    assert "Friday" in scopes["global"].text and "staging" in scopes["project"].text
    # every hit can be read back through the project memory by its path
    for h in hits:
        assert h.text.strip().splitlines()[0] in mem.get(h.path, h.start_line, h.end_line)


def test_the_global_memory_never_indexes_project_folders(mem, home, repo):
    mem.append("- quokka-only-in-project")
    mem.append("- global fact", file="~global/MEMORY.md")
    assert mem.global_memory is not None
    mem.global_memory.sync()
    assert mem.global_memory.status()["files"] == 1
    assert mem.global_memory.search("quokka") == []
    assert [h.scope for h in mem.search("quokka")] == ["project"]
    # and it will not read or write them either
    with pytest.raises(MemoryPathError, match="subfolder"):
        mem.get(f"~global/{project_id(repo)}/MEMORY.md")
    with pytest.raises(MemoryPathError, match="subfolder"):
        mem.append("- sneaky", file=f"~global/{project_id(repo)}/MEMORY.md")


def test_two_checkouts_of_one_remote_share_one_memory(tmp_path, home):
    a = git_repo(tmp_path / "a" / "widgets", "git@github.com:acme/widgets.git")
    b = git_repo(tmp_path / "b" / "widgets-copy", "https://github.com/acme/widgets")
    with MarkdownMemory.for_project(a, root=home, embeddings="none") as first:
        first.append("- The release checklist lives in RELEASING.md")
    with MarkdownMemory.for_project(b, root=home, embeddings="none") as second:
        hits = second.search("release checklist")
        assert hits and hits[0].scope == "project" and "RELEASING.md" in hits[0].text
    assert sorted(p.name for p in home.iterdir() if p.is_dir()) == [project_id(a)]


def test_other_projects_memories_stay_out_of_search(tmp_path, home):
    a = git_repo(tmp_path / "a", "git@github.com:acme/alpha.git")
    b = git_repo(tmp_path / "b", "git@github.com:acme/beta.git")
    with MarkdownMemory.for_project(a, root=home, embeddings="none") as alpha:
        alpha.append("- alpha uses postgres")
    with MarkdownMemory.for_project(b, root=home, embeddings="none") as beta:
        assert beta.search("postgres") == []


def test_home_comes_from_the_environment_when_no_root_is_given(repo, tmp_path, monkeypatch):
    monkeypatch.setenv(HOME_ENV, str(tmp_path / "env-home"))
    with MarkdownMemory.for_project(repo, embeddings="none") as m:
        assert m.memory_dir == (tmp_path / "env-home").resolve() / project_id(repo)
        assert m.status()["global_memory_dir"] == str((tmp_path / "env-home").resolve())
        assert m.status()["project"] == project_id(repo)


def test_a_folder_without_git_gets_a_path_based_memory(tmp_path, home):
    folder = tmp_path / "notes"
    folder.mkdir()
    with MarkdownMemory.for_project(folder, root=home, embeddings="none") as m:
        assert m.project is not None and m.project.source == "path"
        assert m.memory_dir.name.startswith("notes-")


def test_session_context_loads_global_then_project_within_one_budget(mem):
    mem.append("- project rule: run the linter before pushing")
    mem.append("- global rule: always answer in English", file="~global/MEMORY.md")
    context = mem.load_session_context()
    assert context.index("# Global memory") < context.index("always answer in English")
    assert context.index("always answer in English") < context.index("# Project memory (acme/widgets)")
    assert context.index("# Project memory") < context.index("run the linter")
    budget = estimate_tokens(context) - 3
    tight = mem.load_session_context(max_tokens=budget)
    assert "always answer in English" in tight and "run the linter" not in tight
    # The project's MEMORY.md is not dropped silently: its layer says what was left out.
    project = tight.split("# Project memory (acme/widgets)")[1]
    assert project.strip() == "MEMORY.md: 0 of 1 lines shown; search it with memory_search"


def test_global_hits_have_their_own_decay_and_kind(mem):
    mem.append("- rebalanced the portfolio today", file="~global/daily")
    hit = next(h for h in mem.search("rebalanced portfolio") if h.scope == "global")
    assert hit.file_kind == "daily"
    assert hit.path.startswith("~global/") and hit.path.endswith(".md")
    assert hit.decay == pytest.approx(1.0)


def test_edit_and_delete_reach_the_global_file(mem, home):
    mem.append("- prefers tabs", file="~global/MEMORY.md")
    assert mem.edit("tabs", "spaces", file="~global/MEMORY.md")
    assert (home / "MEMORY.md").read_text(encoding="utf-8") == "- prefers spaces\n"
    assert mem.delete_text("- prefers spaces", file="~global/MEMORY.md")
    assert [h.scope for h in mem.search("prefers spaces")] == []


def test_close_closes_both_memories_and_their_watchers(repo, home):
    m = MarkdownMemory.for_project(repo, root=home, embeddings="none",
                                   config=MemoryConfig(index={"watch_debounce_ms": 100}), watch=True)
    assert m.watching and m.global_memory is not None and m.global_memory.watching
    m.append("- watched project fact")
    deadline = time.monotonic() + 3
    while m._watcher is not None and m._watcher.sync_count == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert m._watcher is not None and m._watcher.sync_count >= 1
    # the global watcher is not recursive: a project write is none of its business
    assert m.global_memory._watcher is not None and m.global_memory._watcher.event_count == 0
    m.close()
    assert not m.watching and not m.global_memory.watching
    assert not [t for t in threading.enumerate() if t.name.startswith("md-memory-watcher")]


def test_both_memories_share_one_embedding_client_and_vector_recall(repo, home):
    from langchain_core.embeddings import DeterministicFakeEmbedding

    with MarkdownMemory.for_project(repo, root=home, embeddings=DeterministicFakeEmbedding(size=16)) as m:
        assert m.global_memory is not None and m.global_memory.embedder is m.embedder
        m.append("- project: exact phrase one")
        m.append("- global: exact phrase two", file="~global/MEMORY.md")
        ranked = m.search_detailed("- global: exact phrase two")
        assert ranked.degraded is None
        top = ranked.hits[0]
        assert top.scope == "global" and top.vector_score == pytest.approx(1.0, abs=1e-5)
        assert {h.scope for h in ranked.hits} == {"project", "global"}


def test_the_memory_tools_cite_and_read_global_hits(mem):
    from langchain_md_memory import create_memory_tools

    mem.append("- Always quote prices in EUR", file="~global/MEMORY.md")
    memory_search, memory_get, memory_update = create_memory_tools(mem)
    found = memory_search.invoke({"query": "quote prices EUR"})
    assert "~global/MEMORY.md" in found
    assert memory_get.invoke({"path": "~global/MEMORY.md"}) == "- Always quote prices in EUR\n"
    memory_update.invoke({"content": "- Round to whole euros", "file": "~global/MEMORY.md"})
    assert "Round to whole euros" in mem.get("~global/MEMORY.md")


def test_memory_update_edits_a_line_range_of_a_global_file_that_memory_get_read(mem, home):
    from langchain_md_memory import create_memory_tools

    mem.append("- Always quote prices in EUR\n- Round to cents", file="~global/MEMORY.md")
    _, memory_get, memory_update = create_memory_tools(mem)
    assert memory_get.invoke({"path": "~global/MEMORY.md", "start_line": 2, "end_line": 2}) == (
        "- Round to cents\n")
    done = memory_update.invoke({"action": "edit", "file": "~global/MEMORY.md", "start_line": 2,
                                 "content": "- Round to whole euros"})
    assert done == "Replaced lines 2-2 of ~global/MEMORY.md."
    assert (home / "MEMORY.md").read_text().splitlines()[1] == "- Round to whole euros"
    memory_update.invoke({"action": "delete", "file": "~global/MEMORY.md", "start_line": 1})
    assert "EUR" not in (home / "MEMORY.md").read_text()


def test_every_method_that_takes_a_file_routes_global_paths(mem, home, monkeypatch):
    """Each public method with a ``file``/``path`` parameter asks the one route (a new one too)."""
    import contextlib
    import inspect

    from langchain_md_memory.aio import FILE_PARAMETERS

    methods = dict(inspect.getmembers(MarkdownMemory, inspect.isfunction))
    takes_a_file = sorted(
        name for name, fn in methods.items()
        if not name.startswith("_") and not inspect.iscoroutinefunction(fn)  # twins call the sync method
        and set(FILE_PARAMETERS) & set(inspect.signature(fn).parameters)
        and name != "export_archive"  # its path is the archive written, outside the memory
    )
    assert {"get", "append", "replace_lines", "update", "delete_file", "read_bytes", "exists", "stat"} <= set(
        takes_a_file)
    asked: list[str] = []
    route = type(mem)._route
    monkeypatch.setattr(type(mem), "_route", lambda self, file: asked.append(file) or route(self, file))
    samples = {str: "x", int: 1, bool: False}
    for name in takes_a_file:
        params = list(inspect.signature(methods[name]).parameters.values())[1:]
        args = {p.name: "~global/MEMORY.md" if p.name in FILE_PARAMETERS
                else (lambda text: text) if "Callable" in str(p.annotation)
                else samples.get(type(p.default), "x") if p.default is not inspect.Parameter.empty else "x"
                for p in params if p.kind is not p.VAR_KEYWORD}
        asked.clear()
        with contextlib.suppress(Exception):  # what the call does after routing is not this test's concern
            getattr(mem, name)(**args)
        assert asked == ["~global/MEMORY.md"], f"{name} does not ask the route for its file"
    monkeypatch.undo()

    mem.write("~global/rules.md", "- one\n- two\n")
    assert mem.exists("~global/rules.md") and mem.stat("~global/rules.md") is not None
    assert mem.read_bytes("~global/rules.md") == b"- one\n- two\n"
    assert mem.replace_lines("~global/rules.md", 1, 1, "- uno") == "- one\n"
    assert mem.update("~global/rules.md", lambda text: (text or "") + "- three\n")
    assert (home / "rules.md").read_text() == "- uno\n- two\n- three\n"
    assert mem.delete_file("~global/rules.md") and not (home / "rules.md").exists()
    assert not mem.exists("~global/rules.md") and mem.stat("~global/rules.md") is None


def test_a_write_to_the_global_memory_is_shown_for_approval_under_its_global_path(mem, repo, home):
    from langchain_md_memory import memory_write_approval

    mem.append("- Build with `make dist`")
    mem.append("- Answer in English", file="~global/MEMORY.md")
    describe = memory_write_approval(mem)["memory_update"]["description"]
    assert callable(describe)
    shown = describe({"name": "memory_update", "id": "1", "args": {
        "action": "edit", "old_text": "in English", "content": "in French", "file": "~global/MEMORY.md",
    }}, {}, None)
    assert shown.splitlines()[:4] == ["memory_update would change ~global/MEMORY.md.",
                                      "@@ ~global/MEMORY.md, line 1 @@", "- - Answer in English",
                                      "+ - Answer in French"]
    assert (home / "MEMORY.md").read_text() == "- Answer in English\n"
    project = describe({"name": "memory_update", "id": "2", "args": {"content": "- Lint with ruff"}},
                       {}, None)
    assert project.startswith("memory_update would change MEMORY.md.\n")
