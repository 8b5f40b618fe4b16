"""DocumentStore: a backend writes the byte primitives; every text operation comes from the base, once.

The same cases run on a folder (:class:`MarkdownStore`) and on the smallest backend a newcomer could
write (documents in a dict): both must give the same bytes, the same answers and the same errors.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path, PurePath

import pytest

from langchain_md_memory.errors import MemoryInputError, MemoryPathError, MemoryStoreError
from langchain_md_memory.files.base import Change, ChangeStamp, DocumentStore, JobLock
from langchain_md_memory.files.drafts import DraftStore
from langchain_md_memory.files.paths import is_managed_file, is_memory_file
from langchain_md_memory.files.store import MarkdownStore


class DictStore(DocumentStore):
    """Documents in a dict under one lock: all a new backend has to write."""

    def __init__(self) -> None:
        self.documents: dict[str, tuple[int, bytes]] = {}
        self.changes: list[Change] = []
        self._lock = threading.RLock()

    def scan(self, *, include_unindexed: bool = False) -> dict[str, ChangeStamp]:
        wanted = is_memory_file if include_unindexed else is_managed_file
        return {path: (revision, len(data)) for path, (revision, data) in self.documents.items()
                if wanted(path)}

    def stat(self, path: str) -> ChangeStamp | None:
        found = self.documents.get(self.relpath(path))
        return None if found is None else (found[0], len(found[1]))

    def read_stamped(self, path: str, *, max_bytes: int) -> tuple[ChangeStamp, bytes | None] | None:
        found = self.documents.get(self.relpath(path))
        if found is None:
            return None
        revision, data = found
        return (revision, len(data)), data if len(data) <= max_bytes else None

    def rewrite(self, path: str, change: Change) -> bool:
        rel = self.relpath(path)
        with self._lock:
            self.changes.append(change)
            old = self.documents.get(rel)
            new = change if isinstance(change, bytes) else change(None if old is None else old[1])
            if new is None:
                return False
            self.documents[rel] = ((0 if old is None else old[0]) + 1, new)
            return True

    def remove(self, path: str) -> bool:
        with self._lock:
            return self.documents.pop(self.relpath(path), None) is not None

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        with self._lock:
            yield

    def job_lock(self, name: str) -> JobLock:
        raise NotImplementedError("no long jobs here")

    def keep_version(self, name: str, data: bytes, stamp: str, keep: int) -> PurePath:
        raise NotImplementedError("no versions kept here")


@pytest.fixture(params=["folder", "dict", "draft"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> DocumentStore:
    """A folder, a dict, and a dry run over a folder (it answers as a store does, writing nothing)."""
    if request.param == "draft":
        return DraftStore(MarkdownStore(tmp_path / "mem"))
    return MarkdownStore(tmp_path / "mem") if request.param == "folder" else DictStore()


def test_a_backend_implements_only_the_byte_primitives() -> None:
    assert DocumentStore.__abstractmethods__ == {
        "scan", "stat", "read_stamped", "rewrite", "remove", "locked", "job_lock", "keep_version",
    }

    others = {name: vars(DictStore)[name] for name in DocumentStore.__abstractmethods__ - {"rewrite"}}
    no_rewrite = type("NoRewrite", (DocumentStore,), others)
    with pytest.raises(TypeError, match=r"abstract method '?rewrite"):
        no_rewrite()


def test_append_edit_and_delete_keep_a_crlf_document_crlf(store: DocumentStore) -> None:
    store.write_bytes("MEMORY.md", b"# Notes\r\n- likes tea\r\n")
    store.append("MEMORY.md", "- runs daily")
    assert store.edit("MEMORY.md", "likes tea", "likes coffee") is True
    assert store.delete_text("MEMORY.md", "- runs daily\n") is True
    assert store.read_bytes("MEMORY.md") == b"# Notes\r\n- likes coffee\r\n"
    assert store.read("MEMORY.md") == "# Notes\n- likes coffee\n"


def test_an_edit_to_the_same_text_is_found_and_an_absent_one_is_not(store: DocumentStore) -> None:
    store.write("MEMORY.md", "- likes tea\n")
    assert store.edit("MEMORY.md", "likes tea", "likes tea") is True
    assert store.edit("MEMORY.md", "likes coffee", "likes tea") is False
    assert store.delete_text("nope.md", "likes") is False
    assert not store.exists("nope.md")


def test_the_errors_name_the_count_the_document_and_the_empty_text(store: DocumentStore) -> None:
    store.write("MEMORY.md", "risk: low\nrisk: low\n")
    with pytest.raises(MemoryInputError, match=r"occurs 2 times in 'MEMORY\.md'"):
        store.edit("MEMORY.md", "risk: low", "risk: high")
    with pytest.raises(MemoryInputError, match="only whitespace"):
        store.delete_text("MEMORY.md", "\n")
    for call in (lambda: store.read("nope.md"), lambda: store.replace_lines("nope.md", 1, 1, "x"),
                 lambda: store.insert_lines("nope.md", 0, "x")):
        with pytest.raises(MemoryPathError, match=r"Memory file 'nope\.md' does not exist"):
            call()
    assert store.read_bytes("MEMORY.md") == b"risk: low\nrisk: low\n"
    assert not store.exists("nope.md")


def test_a_read_over_the_limit_names_the_size(store: DocumentStore) -> None:
    store.write("big.md", "x" * 100)
    assert store.read_bytes("big.md", max_bytes=100) == b"x" * 100
    with pytest.raises(MemoryStoreError, match=r"'big\.md' is 100 bytes, over the 99 allowed"):
        store.read_bytes("big.md", max_bytes=99)


def test_lines_are_replaced_and_inserted_byte_for_byte_around_invalid_utf8(store: DocumentStore) -> None:
    store.write_bytes("notes.md", b"- Caf\xe9\r\n- broken \xff\n- last")
    assert store.read_lines("notes.md", 2, 2) == "- broken \ufffd\n"
    assert store.replace_lines("notes.md", 2, 2, "- fixed") == "- broken \ufffd\n"
    store.insert_lines("notes.md", 0, "# Top")
    assert store.read_bytes("notes.md") == b"# Top\r\n- Caf\xe9\r\n- fixed\n- last"


def test_update_sees_the_text_and_writes_only_a_change(store: DocumentStore) -> None:
    assert store.update("count.md", lambda old: f"{int(old or '0') + 1}\n") is True
    assert store.update("count.md", lambda old: old) is False
    assert store.update("count.md", lambda old: None) is False
    assert store.update("count.md", lambda old: f"{int(old or '0') + 1}\n") is True
    assert store.read("count.md") == "2\n" and store.list_files() == ["count.md"]


def test_a_whole_replacement_never_asks_the_backend_for_the_old_bytes() -> None:
    store = DictStore()
    store.write_bytes("a.md", b"one\n")
    store.write_bytes("a.md", b"two\n")
    assert store.changes == [b"one\n", b"two\n"]  # the new bytes themselves: nothing to read first
    assert store.read_bytes("a.md") == b"two\n" and store.stat("a.md") == (2, 4)
