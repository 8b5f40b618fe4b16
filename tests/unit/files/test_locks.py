"""LockFile: exclusive, non-blocking, and it says who holds it."""

from __future__ import annotations

import os
from pathlib import Path

from langchain_md_memory.files.locks import LockFile


def test_second_holder_is_refused_until_release(tmp_path: Path) -> None:
    first, second = LockFile(tmp_path / ".x.lock"), LockFile(tmp_path / ".x.lock")
    assert first.acquire() and first.held
    assert not second.acquire() and not first.acquire()
    holder = second.holder()
    assert holder is not None and holder.pid == os.getpid() and f"pid {os.getpid()}" in str(holder)
    first.release()
    assert not first.held and first.holder() is None
    assert second.acquire()
    second.release()


def test_context_manager_releases(tmp_path: Path) -> None:
    lock = LockFile(tmp_path / ".y.lock")
    with lock as acquired:
        assert acquired and not LockFile(tmp_path / ".y.lock").acquire()
    assert LockFile(tmp_path / ".y.lock").acquire()
