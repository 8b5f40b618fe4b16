"""Limits that keep hostile sizes out: each refusal names the limit, and nothing is half-written.

Before the limits: a 50 MB memory_update content was accepted and the next search blocked for
92 s; a 211 MB Markdown file made the first search take 762 s; a path 2,000 folders deep
raised RecursionError out of the tool; an over-long name gave a raw [Errno 36] with the
host's absolute path.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from langchain_md_memory import MarkdownMemory, create_memory_tools
from langchain_md_memory.errors import MemoryInputError, MemoryPathError


@pytest.fixture
def mem(memory_dir: Path):
    with MarkdownMemory(memory_dir, embeddings="none") as memory:
        memory.append("- Keeps a cash buffer of six months")
        yield memory


def _run(mem: MarkdownMemory, name: str, **args: object) -> str:
    tool = next(t for t in create_memory_tools(mem) if t.name == name)
    return str(tool.invoke(args))


def test_fifty_megabytes_of_content_are_refused_and_the_file_is_untouched(mem: MarkdownMemory) -> None:
    before = (mem.memory_dir / "MEMORY.md").read_bytes()
    big = "x" * (50 * 1024 * 1024)
    with pytest.raises(MemoryInputError, match="max_write_bytes=1000000"):
        mem.append(big)
    reply = _run(mem, "memory_update", content=big)
    assert "max_write_bytes" in reply and len(reply) < 500
    assert (mem.memory_dir / "MEMORY.md").read_bytes() == before
    assert mem.search("cash buffer")


def test_a_file_over_max_file_bytes_is_not_indexed_and_status_says_why(memory_dir: Path) -> None:
    with MarkdownMemory(memory_dir, embeddings="none", config={"limits": {"max_file_bytes": 100_000}}) as mem:
        mem.append("- Keeps a cash buffer of six months")
        (memory_dir / "dump.md").write_text("needle " * 50_000)  # 350 kB
        assert [h.path for h in mem.search("cash buffer")] == ["MEMORY.md"]
        assert mem.search("needle") == []
        assert "over max_file_bytes=100000" in mem.status()["skipped_files"]["dump.md"]
        (memory_dir / "dump.md").write_text("needle in a small file\n")
        assert [h.path for h in mem.search("needle")] == ["dump.md"]
        assert mem.status()["skipped_files"] == {}


def test_a_deep_path_gets_an_error_the_model_can_read(mem: MarkdownMemory) -> None:
    deep = "d/" * 2000 + "x.md"
    with pytest.raises(MemoryPathError, match="max_path_depth=16"):
        mem.append("x", file=deep)
    for name, args in (("memory_update", {"content": "x", "file": deep}), ("memory_get", {"path": deep})):
        assert "max_path_depth" in _run(mem, name, **args)
    assert not (mem.memory_dir / "d").exists()


def test_an_over_long_name_says_so_without_the_hosts_path(mem: MarkdownMemory) -> None:
    long_name = "a" * 300 + ".md"
    calls = (("memory_update", {"content": "x", "file": long_name}), ("memory_get", {"path": long_name}))
    for name, args in calls:
        reply = _run(mem, name, **args)
        assert "max_name_bytes=255" in reply and str(mem.memory_dir) not in reply and "Errno" not in reply


def test_a_deep_tree_on_disk_is_walked_without_recursion_errors(memory_dir: Path) -> None:
    deep = memory_dir.joinpath(*["d"] * 40)
    deep.mkdir(parents=True)
    (deep / "x.md").write_text("- buried\n")
    (memory_dir / "MEMORY.md").write_text("- on top\n")
    with MarkdownMemory(memory_dir, embeddings="none") as mem:
        assert [h.path for h in mem.search("on top")] == ["MEMORY.md"]
        assert mem.search("buried") == []  # deeper than max_path_depth: not memory


def test_an_over_long_store_namespace_is_a_clear_error_not_an_oserror(mem: MarkdownMemory) -> None:
    store = mem.as_store()
    with pytest.raises(MemoryPathError, match="max_name_bytes=255"):
        store.put(("u" * 300,), "food", {"content": "Loves hotpot"})


def test_verify_says_repairing_before_it_repairs(mem: MarkdownMemory,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    import logging

    mem.search("cash")
    (mem.memory_dir / "new.md").write_text("- added behind the index's back\n")
    with caplog.at_level(logging.WARNING):
        report = mem.verify()
    assert report.ok and report.repaired == ("new.md",)
    warnings = [r.getMessage() for r in caplog.records if "verify" in r.getMessage()]
    assert warnings and warnings[0].endswith("; repairing") and "not repaired" not in " ".join(warnings)


def _cap_message(exc: BaseException) -> str:
    """The cap's message without the size, which differs between texts."""
    return str(exc).split(" bytes, ", 1)[1]


def test_a_three_megabyte_store_put_is_refused_with_the_caps_message(mem: MarkdownMemory) -> None:
    store = mem.as_store()
    files_before = sorted(p.relative_to(mem.memory_dir) for p in mem.memory_dir.rglob("*.md"))
    big = {"content": "x" * (3 * 1024 * 1024)}
    with pytest.raises(MemoryInputError, match="max_write_bytes=1000000") as from_store:
        store.put(("users", "alice"), "dump", big)
    with pytest.raises(MemoryInputError) as from_append:
        mem.append(big["content"])
    assert _cap_message(from_store.value) == _cap_message(from_append.value)
    assert sorted(p.relative_to(mem.memory_dir) for p in mem.memory_dir.rglob("*.md")) == files_before
    assert store.get(("users", "alice"), "dump") is None
    assert mem.search("cash buffer")
    store.put(("users", "alice"), "small", {"content": "Loves hotpot"})
    assert store.get(("users", "alice"), "small") is not None


def test_a_push_of_a_file_over_the_cap_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    from langchain_md_memory.files.store import MarkdownStore
    from langchain_md_memory.files.transfer import TransferError, pull, push

    server = MarkdownStore(tmp_path / "server")
    server.write("MEMORY.md", "- Prefers tea\n")
    pull(server, tmp_path / "copy", origin="s")
    (tmp_path / "copy" / "a.md").write_text("- small edit\n")
    (tmp_path / "copy" / "big.md").write_text("y" * 2_000_000)
    with pytest.raises(TransferError, match="over max_write_bytes=1000000"):
        push(tmp_path / "copy", server, origin="s")
    assert server.list_files() == ["MEMORY.md"]
