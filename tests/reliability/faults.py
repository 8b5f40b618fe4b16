"""Shared helpers of the reliability suite: a seeded memory, read-only simulation, SQLite peeks."""

from __future__ import annotations

import contextlib
import errno
import os
import pathlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from langchain_md_memory import MarkdownMemory

TOPICS = 40
"""Files in :func:`seed_memory`; topic ``i`` holds the unique word ``alphaI``."""

_real_connect = sqlite3.connect


def topic_text(i: int) -> str:
    """Content of ``topic{i}.md``: a heading and paragraphs naming ``alpha{i}``."""
    body = f"The unique word of this topic is alpha{i}; position limit five percent.\n\n"
    return f"# Topic {i}\n\n" + body * 6


def seed_memory(root: Path, n: int = TOPICS) -> None:
    """``n`` topic files plus MEMORY.md, fully indexed, index closed."""
    with MarkdownMemory(root, embeddings="none") as mem:
        mem.append("- Risk: conservative; no single stock above 5% of the portfolio")
        for i in range(n):
            mem.write(f"topic{i}.md", topic_text(i))
        mem.sync()


def assert_finds_every_topic(mem: MarkdownMemory, n: int = TOPICS, step: int = 7) -> int:
    """Search ``alphaI`` for every ``step``-th topic; the top hit must be that topic. Returns queries run."""
    queries = 0
    for i in range(0, n, step):
        hits = mem.search(f"alpha{i}")
        queries += 1
        assert hits, f"no hit for alpha{i}"
        assert hits[0].path == f"topic{i}.md"
        assert f"alpha{i}" in hits[0].text
    hits = mem.search("single stock")
    assert hits and hits[0].path == "MEMORY.md"
    return queries + 1


def raw_rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    """Rows straight from a SQLite file (never through the package)."""
    conn = _real_connect(str(db))
    try:
        return list(conn.execute(sql).fetchall())
    finally:
        conn.close()


def is_root() -> bool:
    """True when chmod cannot stop us from writing (tests run as root in CI)."""
    return hasattr(os, "geteuid") and os.geteuid() == 0


@contextlib.contextmanager
def read_only(folder: Path, *, folder_too: bool) -> Iterator[str]:
    """Make ``folder``'s index (and with ``folder_too`` the folder) read-only; yields how.

    As a normal user this is real ``chmod``. As root, where chmod does not stop
    writes, it is simulated: SQLite opens every file under ``folder`` with a
    ``mode=ro`` URI, and with ``folder_too`` unlinking anything there fails with
    EACCES, as in a read-only folder.
    """
    index = folder / "index.sqlite"
    if not is_root():
        modes = [(index, index.stat().st_mode)] + ([(folder, folder.stat().st_mode)] if folder_too else [])
        index.chmod(0o444)
        if folder_too:
            folder.chmod(0o555)
        try:
            yield "chmod"
        finally:
            for path, mode in reversed(modes):
                path.chmod(mode)
        return

    prefix = str(folder)
    with pytest.MonkeyPatch.context() as monkeypatch:
        yield from _simulate_read_only(monkeypatch, prefix, folder_too)


def _simulate_read_only(monkeypatch: pytest.MonkeyPatch, prefix: str, folder_too: bool) -> Iterator[str]:

    def ro_connect(database: str, *args: Any, **kwargs: Any) -> Any:
        if isinstance(database, str) and database.startswith(prefix):
            kwargs["uri"] = True
            return _real_connect(f"file:{database}?mode=ro", *args, **kwargs)
        return _real_connect(database, *args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", ro_connect)
    if folder_too:
        real_unlink = pathlib.Path.unlink
        real_os_unlink = os.unlink

        def no_unlink(self: pathlib.Path, missing_ok: bool = False) -> None:
            if str(self).startswith(prefix):
                raise PermissionError(errno.EACCES, "Permission denied", str(self))
            real_unlink(self, missing_ok)

        def no_os_unlink(path: str, *args: Any, **kwargs: Any) -> None:
            if os.fspath(path).startswith(prefix):
                raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))
            real_os_unlink(path, *args, **kwargs)

        monkeypatch.setattr(pathlib.Path, "unlink", no_unlink)
        monkeypatch.setattr(os, "unlink", no_os_unlink)
        monkeypatch.setattr(os, "replace", _refuse_in(prefix, os.replace))
    yield "simulated (root): sqlite mode=ro" + (" + EACCES on unlink/replace" if folder_too else "")


def _refuse_in(prefix: str, real: Any) -> Any:
    def wrapper(src: str, dst: str, *a: Any, **k: Any) -> None:
        if os.fspath(dst).startswith(prefix):
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(dst))
        real(src, dst, *a, **k)

    return wrapper
