"""Special files and swapped folders: refused with a clear error, never waited on, never followed.

Each case failed before the package opened files beneath the memory folder by descriptor:
a FIFO named ``y.md`` blocked ``memory_get`` forever, an append replaced it with a regular
file, ``memory_get`` read ``index.sqlite`` and a stray ``.env``, and a folder flipped to a
symlink after the path guard let a read return a file outside the memory.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
from pathlib import Path

import pytest
from langchain_core.tools import ToolException

from langchain_md_memory import MarkdownMemory, create_memory_tools
from langchain_md_memory.errors import MemoryPathError
from langchain_md_memory.files.safe_open import read_stamped_beneath, replace_beneath

pytestmark = pytest.mark.timeout(5)  # a FIFO that is waited on would hang: fail instead


@pytest.fixture
def mem(memory_dir: Path):
    with MarkdownMemory(memory_dir, embeddings="none") as memory:
        memory.append("- Real fact")
        yield memory


def _tool(mem: MarkdownMemory, name: str):
    return next(t for t in create_memory_tools(mem) if t.name == name)


def test_a_fifo_is_refused_by_read_edit_delete_and_append_without_blocking(mem: MarkdownMemory) -> None:
    fifo = mem.memory_dir / "y.md"
    os.mkfifo(fifo)
    for call in (lambda: mem.get("y.md"), lambda: mem.edit("a", "b", file="y.md"),
                 lambda: mem.delete_text("a", file="y.md"), lambda: mem.append("x", file="y.md")):
        with pytest.raises(MemoryPathError, match="not a regular file"):
            call()
    assert fifo.is_fifo()  # never replaced by a regular file
    result = _tool(mem, "memory_get").invoke({"path": "y.md"})
    assert "not a regular file" in result and str(mem.memory_dir) not in result
    assert mem.search("Real fact")  # the scan skips it; search still works


def test_a_socket_path_is_refused(mem: MarkdownMemory, tmp_path: Path) -> None:
    import socket

    sock_path = mem.memory_dir / "s.md"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(sock_path))
        with pytest.raises(MemoryPathError, match="not a regular file"):
            mem.get("s.md")
    finally:
        server.close()


@pytest.mark.parametrize("name", ["index.sqlite", ".env", ".md-memory.lock", "notes.txt"])
def test_memory_get_reads_only_memory_markdown(mem: MarkdownMemory, name: str) -> None:
    (mem.memory_dir / name).write_text("SECRET=1\n")
    with pytest.raises(MemoryPathError, match="Only Markdown memory files can be read"):
        mem.get(name)
    with pytest.raises(ToolException) as caught:
        _tool(mem, "memory_get").func(path=name)  # type: ignore[misc]
    assert "SECRET" not in str(caught.value)


def test_a_folder_swapped_for_a_symlink_after_the_guard_is_not_followed(tmp_path: Path) -> None:
    root, outside = tmp_path / "memory", tmp_path / "outside"
    (root / "notes").mkdir(parents=True)
    outside.mkdir()
    (root / "notes" / "a.md").write_text("inside\n")
    (outside / "a.md").write_text("outside secret\n")
    stop = threading.Event()

    def flip() -> None:  # swap the folder for a symlink to the outside and back, as fast as possible
        notes, real = root / "notes", root / "notes.real"
        while not stop.is_set():
            with contextlib.suppress(OSError):
                os.rename(notes, real)
            with contextlib.suppress(OSError):
                os.symlink(outside, notes)
            with contextlib.suppress(OSError):
                os.unlink(notes)
            if notes.is_dir() and not notes.is_symlink():  # a write in the gap made the folder afresh
                shutil.rmtree(notes, ignore_errors=True)
            with contextlib.suppress(OSError):
                os.rename(real, notes)

    flipper = threading.Thread(target=flip)
    flipper.start()
    seen: set[bytes] = set()
    try:
        for _ in range(2000):
            try:
                found = read_stamped_beneath(root, "notes/a.md", max_bytes=1 << 20)
                if found is not None:
                    seen.add(found[1] or b"")
                replace_beneath(root, "notes/a.md", b"inside\n", default_mode=0o644)
            except (MemoryPathError, OSError):
                continue
    finally:
        stop.set()
        flipper.join()
    assert seen <= {b"inside\n"}
    assert (outside / "a.md").read_text() == "outside secret\n"
    assert sorted(p.name for p in outside.iterdir()) == ["a.md"]
