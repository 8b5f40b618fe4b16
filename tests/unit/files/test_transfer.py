"""Migrate, pull and push between document stores: exact bytes, refusals that write nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from langchain_md_memory import MarkdownMemory
from langchain_md_memory.files.store import MarkdownStore
from langchain_md_memory.files.transfer import (
    PULL_MANIFEST,
    PushConflictError,
    TransferError,
    migrate,
    pull,
    push,
)

# Bytes a text round trip would change: a BOM, CRLF, a lone CR, invalid UTF-8, no final newline.
DOCUMENTS = {
    "MEMORY.md": "\ufeff# Memory\r\n\r\n- Risk: conservative\r\n".encode(),
    "memory/2026-11-30.md": b"## 09:00\n- mixed\r\n- endings\rkept\n- bad byte \xff here",
    "topics/deep/finance.md": "# 财务\n\n- 单只个股不超过总仓位 5%\n".encode(),
    ".prefs.unindexed.md": b"- kept out of search\n",
}


def files_of(store: MarkdownStore) -> dict[str, bytes]:
    return {p: (store.root / p).read_bytes() for p in store.scan(include_unindexed=True)}


@pytest.fixture
def server(tmp_path: Path) -> MarkdownStore:
    store = MarkdownStore(tmp_path / "server")
    for path, data in DOCUMENTS.items():
        store.write_bytes(path, data)
    return store


def test_write_bytes_keeps_every_byte(server: MarkdownStore) -> None:
    assert files_of(server) == DOCUMENTS


def test_migrate_round_trip_is_byte_identical(server: MarkdownStore, tmp_path: Path) -> None:
    there = MarkdownStore(tmp_path / "there")
    assert migrate(server, there) == sorted(DOCUMENTS)
    back = MarkdownStore(tmp_path / "back")
    migrate(there, back)
    assert files_of(back) == DOCUMENTS


def test_migrate_refuses_a_target_with_documents_and_writes_nothing(server: MarkdownStore,
                                                                    tmp_path: Path) -> None:
    target = MarkdownStore(tmp_path / "target")
    target.write_bytes("MEMORY.md", b"- theirs\n")
    with pytest.raises(TransferError, match="overwrite"):
        migrate(server, target)
    assert files_of(target) == {"MEMORY.md": b"- theirs\n"}


def test_migrate_with_overwrite_leaves_exactly_the_source(server: MarkdownStore, tmp_path: Path) -> None:
    target = MarkdownStore(tmp_path / "target")
    target.write_bytes("MEMORY.md", b"- theirs\n")
    target.write_bytes("old.md", b"- only here\n")
    migrate(server, target, overwrite=True)
    assert files_of(target) == DOCUMENTS


def test_pull_edit_push_applies_only_the_changes(server: MarkdownStore, tmp_path: Path) -> None:
    folder = tmp_path / "copy"
    assert pull(server, folder, origin="alice") == sorted(DOCUMENTS)
    manifest = json.loads((folder / PULL_MANIFEST).read_text(encoding="utf-8"))
    assert manifest["origin"] == "alice" and sorted(manifest["documents"]) == sorted(DOCUMENTS)

    (folder / "MEMORY.md").write_bytes(DOCUMENTS["MEMORY.md"] + b"- Retire at 55\r\n")
    (folder / "topics/deep/finance.md").unlink()
    (folder / "new.md").write_bytes(b"- a person's new note\n")
    # Someone else changes a document the person left alone: not a conflict, and kept.
    server.write_bytes("memory/2026-11-30.md", b"- changed on the server\n")

    report = push(folder, server, origin="alice")
    assert report.written == ["MEMORY.md", "new.md"] and report.removed == ["topics/deep/finance.md"]
    assert files_of(server) == {
        "MEMORY.md": DOCUMENTS["MEMORY.md"] + b"- Retire at 55\r\n",
        "memory/2026-11-30.md": b"- changed on the server\n",
        ".prefs.unindexed.md": DOCUMENTS[".prefs.unindexed.md"],
        "new.md": b"- a person's new note\n",
    }
    assert push(folder, server, origin="alice").changed == 0  # the manifest moved with the push


def test_push_after_a_concurrent_server_edit_is_refused_and_changes_nothing(server: MarkdownStore,
                                                                            tmp_path: Path) -> None:
    folder = tmp_path / "copy"
    pull(server, folder, origin="alice")
    (folder / "MEMORY.md").write_bytes(b"- the person's version\n")
    (folder / "new.md").write_bytes(b"- would be new\n")
    server.write_bytes("MEMORY.md", b"- the agent's version\n")
    before_server, before_folder = files_of(server), files_of(MarkdownStore(folder))

    with pytest.raises(PushConflictError) as caught:
        push(folder, server, origin="alice")
    assert caught.value.paths == ["MEMORY.md"]
    assert "MEMORY.md" in str(caught.value) and "Nothing was written" in str(caught.value)
    assert files_of(server) == before_server
    assert files_of(MarkdownStore(folder)) == before_folder


def test_a_document_created_on_both_sides_is_a_conflict(server: MarkdownStore, tmp_path: Path) -> None:
    folder = tmp_path / "copy"
    pull(server, folder, origin="alice")
    (folder / "ideas.md").write_bytes(b"- mine\n")
    server.write_bytes("ideas.md", b"- theirs\n")
    with pytest.raises(PushConflictError, match=r"ideas\.md"):
        push(folder, server, origin="alice")
    assert (server.root / "ideas.md").read_bytes() == b"- theirs\n"


def test_push_refuses_another_origin_and_folders_never_pulled(server: MarkdownStore, tmp_path: Path) -> None:
    folder = tmp_path / "copy"
    pull(server, folder, origin="alice")
    (folder / "MEMORY.md").write_bytes(b"- edited\n")
    with pytest.raises(TransferError, match="pulled from 'alice', not 'bob'"):
        push(folder, server, origin="bob")
    with pytest.raises(TransferError, match="pull first"):
        push(tmp_path / "never", server, origin="alice")
    assert files_of(server) == DOCUMENTS


def test_pull_refuses_a_folder_with_other_markdown_or_unpushed_edits(server: MarkdownStore,
                                                                     tmp_path: Path) -> None:
    busy = MarkdownStore(tmp_path / "busy")
    busy.write_bytes("notes.md", b"- mine\n")
    with pytest.raises(TransferError, match="empty or new folder"):
        pull(server, busy.root, origin="alice")

    folder = tmp_path / "copy"
    pull(server, folder, origin="alice")
    server.write_bytes("later.md", b"- added on the server\n")
    assert "later.md" in pull(server, folder, origin="alice")  # a clean pulled folder catches up
    (folder / "MEMORY.md").write_bytes(b"- not pushed yet\n")
    with pytest.raises(TransferError, match="unpushed change"):
        pull(server, folder, origin="alice")
    assert (folder / "MEMORY.md").read_bytes() == b"- not pushed yet\n"


def test_a_pushed_edit_is_found_by_the_memory_searching_the_store(tmp_path: Path) -> None:
    with MarkdownMemory(tmp_path / "server", embeddings="none") as mem:
        mem.append("- Prefers index funds")
        assert mem.search("index funds")
        folder = tmp_path / "copy"
        pull(mem.store, folder, origin="server")
        (folder / "MEMORY.md").write_text("- Switched to a bond ladder\n", encoding="utf-8")
        push(folder, mem.store, origin="server")
        assert [h.path for h in mem.search("bond ladder")] == ["MEMORY.md"]
        assert mem.search("index funds") == []
