"""The tree invariants and all-or-nothing transfers, on a PostgreSQL tenant (issue 39).

The shared list runs with ``tree_memory`` on PostgreSQL; below it, what only a database can
show: a push whose last write fails is rolled back, and a tenant written before the tree check
(holding ``a.md`` and ``a.md/b.md``) is refused by pull before anything lands in the folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from langchain_md_memory import MarkdownMemory
from langchain_md_memory.files.transfer import TransferError, pull, push
from tests.integration.test_tree_invariants import *  # noqa: F403


@pytest.fixture
def tree_memory(pg_memory: MarkdownMemory) -> MarkdownMemory:
    return pg_memory


def test_a_push_whose_last_write_fails_is_rolled_back(pg_memory: MarkdownMemory, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    pg_memory.append("- Prefers tea")
    before = pg_memory.get("MEMORY.md")
    copy = tmp_path / "copy"
    pull(pg_memory.store, copy, origin="t")
    (copy / "MEMORY.md").write_text(before + "- Walks to work\n", encoding="utf-8")
    (copy / "z.md").write_text("- new\n", encoding="utf-8")
    real = pg_memory.store.write_bytes

    def fail_on_z(path: str, data: bytes) -> None:
        if path == "z.md":
            raise OSError("the connection dropped")
        real(path, data)

    monkeypatch.setattr(pg_memory.store, "write_bytes", fail_on_z)
    with pytest.raises(OSError, match="dropped"):
        push(copy, pg_memory.store, origin="t")
    monkeypatch.undo()
    assert pg_memory.list_files() == ["MEMORY.md"]
    assert pg_memory.get("MEMORY.md") == before
    assert push(copy, pg_memory.store, origin="t").written == ["MEMORY.md", "z.md"]


def test_pull_refuses_a_legacy_tenant_no_folder_can_hold_and_writes_nothing(pg_memory: MarkdownMemory,
                                                                            tmp_path: Path) -> None:
    pg_memory.write("a.md", "- file\n")
    store = pg_memory.store
    store.db.query(  # type: ignore[attr-defined]
        "INSERT INTO md_memory_documents(tenant, path, content, revision) VALUES (%s, %s, %s, 1)",
        (store.tenant, "a.md/b.md", "- nested\n"),  # type: ignore[attr-defined]
    )
    with pytest.raises(TransferError, match=r"nothing was written.*'a.md' is not a plain folder"):
        pull(store, tmp_path / "copy", origin="t")
    assert not (tmp_path / "copy").exists()


def test_two_hosts_creating_a_file_and_a_file_under_it_at_once_leave_one(pg_memory_factory) -> None:
    import threading

    from langchain_md_memory.errors import MemoryPathError

    first, second = pg_memory_factory(), pg_memory_factory()
    for round_ in range(8):
        name = f"r{round_}.md"
        barrier = threading.Barrier(2)
        refused: list[str] = []

        def create(mem: MarkdownMemory, path: str, barrier: threading.Barrier = barrier,
                   refused: list[str] = refused) -> None:
            barrier.wait()
            try:
                mem.write(path, "- x\n")
            except MemoryPathError as exc:
                refused.append(str(exc))

        threads = [threading.Thread(target=create, args=(first, name)),
                   threading.Thread(target=create, args=(second, f"{name}/b.md"))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        held = [p for p in first.list_files() if p.startswith(f"r{round_}.md")]
        assert len(held) == 1 and len(refused) == 1
