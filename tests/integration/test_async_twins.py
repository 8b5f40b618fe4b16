"""Every public operation of a memory has an ``a``-prefixed async twin that does what the sync one does.

The first test finds the public sync methods by looking at the classes (so a new method without a twin
fails it); the rest run each twin on a real memory and check its effect on the Markdown and the index.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from pathlib import Path
from typing import Any

import pytest

from langchain_md_memory import MarkdownMemory, ProjectMemory
from langchain_md_memory.errors import MemoryIndexError, MemoryPathError
from langchain_md_memory.memory import SYNC_TWIN

NOT_TWINNED = {
    "as_retriever": "builds a retriever, which has ainvoke/abatch",
    "as_store": "builds a BaseStore, which has aget/aput/asearch/abatch",
    "locked": "a re-entrant lock owned by the thread that takes it",
    "job_lock": "builds a lock object, taken and released by the thread that runs the job",
    "mark_changed": "sets a flag; never waits",
    "redact": "pure text work; never touches the disk",
}


def twin_name(name: str) -> str:
    return SYNC_TWIN if name == "sync" else f"a{name}"


def public_sync_methods(cls: type) -> list[str]:
    names = []
    for name in dir(cls):
        if name.startswith("_") or name in NOT_TWINNED:
            continue
        attr = inspect.getattr_static(cls, name)
        func = attr.__func__ if isinstance(attr, classmethod | staticmethod) else attr
        if inspect.isfunction(func) and not inspect.iscoroutinefunction(func):
            names.append(name)
    return names


def parameters(method: Any) -> list[tuple[str, Any, Any, Any]]:
    return [(p.name, p.kind, p.default, p.annotation) for p in inspect.signature(method).parameters.values()]


@pytest.mark.parametrize("cls", [MarkdownMemory, ProjectMemory])
def test_every_public_sync_method_has_an_async_twin_with_the_same_parameters(cls: type) -> None:
    names = public_sync_methods(cls)
    # The enumeration sees the whole surface: files, search, index, watcher, lifecycle, archives, projects.
    assert {"get", "append", "edit", "delete_text", "write", "update", "delete_file", "search",
            "search_detailed", "sync", "rebuild", "verify", "status", "load_session_context", "close",
            "start_watching", "dream", "export_archive", "import_archive", "for_project"} <= set(names)
    missing = [name for name in names if not inspect.iscoroutinefunction(getattr(cls, twin_name(name), None))]
    assert not missing, f"no async twin for: {missing}"
    differ = [name for name in names
              if parameters(getattr(cls, name)) != parameters(getattr(cls, twin_name(name)))]
    assert not differ, f"twins whose parameters differ from the sync method: {differ}"


def test_the_sync_twin_is_also_reachable_as_async() -> None:
    assert getattr(MarkdownMemory, "async") is MarkdownMemory.async_index


# -- each twin does what its sync method does ---------------------------------------------------


async def test_aappend_aget_aedit_adelete_change_the_markdown(kw_memory: MarkdownMemory) -> None:
    assert await kw_memory.aappend("- Prefers short answers") == "MEMORY.md"
    assert await kw_memory.aget("MEMORY.md") == "- Prefers short answers\n"
    assert await kw_memory.aedit("short", "detailed") is True
    assert await kw_memory.aedit("nowhere", "x") is False
    assert await kw_memory.aget("MEMORY.md", 1, 1) == "- Prefers detailed answers\n"
    assert await kw_memory.adelete_text("- Prefers detailed answers\n") is True
    assert await kw_memory.adelete_text("gone") is False
    assert await kw_memory.aget("MEMORY.md") == ""


async def test_a_twin_raises_what_the_sync_method_raises(kw_memory: MarkdownMemory) -> None:
    with pytest.raises(MemoryPathError, match="outside the memory directory"):
        await kw_memory.aget("../outside.txt")


async def test_awrite_areplace_lines_aupdate_aremove(kw_memory: MarkdownMemory) -> None:
    assert await kw_memory.awrite("topics.md", "one\ntwo\nthree\n") == "topics.md"
    assert await kw_memory.areplace_lines("topics.md", 2, 2, "TWO") == "two\n"
    loop_thread = threading.get_ident()
    ran_on: list[int] = []

    def shout(text: str | None) -> str:
        ran_on.append(threading.get_ident())
        return (text or "").upper()

    assert await kw_memory.aupdate("topics.md", shout) is True
    assert ran_on and ran_on[0] != loop_thread  # the work ran in a worker thread, not on the event loop
    assert await kw_memory.aread_bytes("topics.md") == b"ONE\nTWO\nTHREE\n"
    assert await kw_memory.aexists("topics.md") is True
    mtime_ns, size = await kw_memory.astat("topics.md") or (0, 0)
    assert size == 14 and mtime_ns > 0
    assert await kw_memory.alist_files() == ["topics.md"]
    assert await kw_memory.adelete_file("topics.md") is True
    assert (await kw_memory.aexists("topics.md"), await kw_memory.astat("topics.md")) == (False, None)


async def test_asearch_asearch_detailed_and_aload_session_context(kw_memory: MarkdownMemory) -> None:
    kw_memory.append("- Deploys go through staging first")
    kw_memory.append("- Deploy on weekdays only", file="daily")
    assert [h.chunk_id for h in await kw_memory.asearch("deploys")] == [
        h.chunk_id for h in kw_memory.search("deploys")]
    no_mmr = kw_memory.config.merged(ranking={"mmr": {"enabled": False}})
    ranked = await kw_memory.asearch_detailed("deploys", max_results=1, config=no_mmr)
    assert len(ranked.hits) == 1 and ranked.funnel["top_k"] == 1
    context = await kw_memory.aload_session_context(200)
    assert context == kw_memory.load_session_context(200) and "staging" in context


async def test_async_index_arebuild_averify_astatus(kw_memory: MarkdownMemory, memory_dir: Path) -> None:
    (memory_dir / "notes.md").write_text("- Written by hand\n", encoding="utf-8")
    stats = await kw_memory.async_index()
    assert stats.files_changed == 1
    assert (await getattr(kw_memory, "async")(force=True)).files == 1
    rebuilt = await kw_memory.arebuild()
    assert rebuilt.files == 1 and [h.path for h in kw_memory.search("hand")] == ["notes.md"]
    assert (await kw_memory.averify(repair=False)).ok
    status = await kw_memory.astatus()
    assert (status["files"], status["chunks"]) == (1, 1)


async def test_astart_watching_and_astop_watching(kw_memory: MarkdownMemory) -> None:
    watcher = await kw_memory.astart_watching(debounce_ms=50)
    assert kw_memory.watching and watcher.running
    await kw_memory.astop_watching()
    assert not kw_memory.watching


async def test_aclose_and_async_with_close_the_memory(memory_dir: Path) -> None:
    async with MarkdownMemory(memory_dir, embeddings="none") as mem:
        await mem.aappend("- kept")
    assert mem.closed
    with pytest.raises(MemoryIndexError, match="closed"):
        await mem.asearch("kept")
    other = MarkdownMemory(memory_dir, embeddings="none")
    await other.aclose()
    await other.aclose()  # idempotent, as close() is
    assert other.closed


async def test_aexport_archive_and_aimport_archive_round_trip(kw_memory: MarkdownMemory,
                                                              tmp_path: Path) -> None:
    kw_memory.append("- Retire at 55")
    archive = await kw_memory.aexport_archive(tmp_path / "backup.tar.gz")
    restored = await MarkdownMemory.aimport_archive(archive, tmp_path / "restored", embeddings="none")
    try:
        assert isinstance(restored, MarkdownMemory)
        assert restored.get("MEMORY.md") == "- Retire at 55\n"
        assert [h.path for h in restored.search("retire")] == ["MEMORY.md"]
    finally:
        restored.close()


async def test_afor_project_routes_global_paths(tmp_path: Path) -> None:
    project = tmp_path / "work" / "widgets"
    project.mkdir(parents=True)
    mem = await MarkdownMemory.afor_project(project, root=tmp_path / "home", embeddings="none")
    try:
        assert isinstance(mem, ProjectMemory)
        # The twins call the ProjectMemory overrides: ~global/ paths reach the global memory.
        assert await mem.aappend("- Answer briefly", file="~global/MEMORY.md") == "~global/MEMORY.md"
        assert await mem.aget("~global/MEMORY.md") == "- Answer briefly\n"
        assert (tmp_path / "home" / "MEMORY.md").read_text(encoding="utf-8") == "- Answer briefly\n"
        assert (await mem.astatus())["project"] == mem.project.id
    finally:
        await mem.aclose()
    assert mem.global_memory.closed


async def test_twins_run_concurrently_on_one_memory(kw_memory: MarkdownMemory) -> None:
    paths = await asyncio.gather(*(kw_memory.aappend(f"- fact {n}") for n in range(8)))
    assert paths == ["MEMORY.md"] * 8
    text = await kw_memory.aget("MEMORY.md")
    assert sorted(text.splitlines()) == sorted(f"- fact {n}" for n in range(8))
