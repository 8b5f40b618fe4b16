"""The store's namespace folders as the memory holds them: which exist, and their two files, parsed.

Example:
    .. code-block:: python

        from langchain_md_memory.integrations.basestore.folders import NamespaceFiles

        files = NamespaceFiles(mem, "store.md")
        visible, hidden = files.read_namespace(("users", "alice"))
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from langgraph.store.base import InvalidNamespaceError

from .changes import refresh_expiries
from .namespaces import check_labels, is_label, namespace_file
from .sections import ParsedFile, parse_sections

if TYPE_CHECKING:
    from ...memory import MarkdownMemory

__all__ = ["NamespaceFiles"]


class NamespaceFiles:
    """Each namespace's visible ``file_name`` and its hidden sibling ``hidden_name``, in ``memory``."""

    __slots__ = ("file_name", "hidden_name", "memory")

    def __init__(self, memory: MarkdownMemory, file_name: str, hidden_name: str) -> None:
        self.memory = memory
        self.file_name = file_name
        self.hidden_name = hidden_name

    def path(self, namespace: tuple[str, ...], *, indexed: bool = True) -> str:
        """The namespace's visible file (``indexed``) or hidden one, relative to the memory directory."""
        return namespace_file(namespace, self.file_name if indexed else self.hidden_name)

    def namespaces(self, prefix: tuple[str, ...]) -> list[tuple[str, ...]]:
        """Every namespace under ``prefix`` whose folder holds either of its files, sorted."""
        names = (self.file_name, self.hidden_name)
        found: set[tuple[str, ...]] = set()
        for rel in self.memory.list_files(include_unindexed=True):
            *folders, name = rel.split("/")
            namespace = tuple(folders)
            if name in names and namespace and namespace[: len(prefix)] == prefix \
                    and all(is_label(label) for label in namespace):
                found.add(namespace)
        return sorted(found)

    def namespace_of(self, rel: str) -> tuple[str, ...] | None:
        """The namespace whose visible file is ``rel``, or ``None`` when it is no such file."""
        parts = PurePosixPath(rel).parts
        if len(parts) < 2 or parts[-1] != self.file_name:
            return None
        namespace = tuple(parts[:-1])
        try:
            check_labels(namespace)
        except InvalidNamespaceError:
            return None  # a folder a namespace could not have made (e.g. "v1.2") is not ours
        return namespace

    def read_namespace(self, namespace: tuple[str, ...]) -> tuple[ParsedFile | None, ParsedFile | None]:
        """The namespace's (indexed, unindexed) files parsed now; readers prefer the first."""
        return self.read(self.path(namespace)), self.read(self.path(namespace, indexed=False))

    def read(self, rel: str) -> ParsedFile | None:
        """A namespace file parsed now (never cached), or ``None`` when it does not exist."""
        text = self.text(rel)
        return None if text is None else parse_sections(text, fallback_time=self.mtime(rel))

    def text(self, rel: str) -> str | None:
        """A namespace file's text, or ``None`` when it does not exist."""
        if not self.memory.exists(rel):  # the path guard raises for escapes
            return None
        return self.memory.get(rel)

    def mtime(self, rel: str) -> dt.datetime:
        """When ``rel`` last changed (the epoch when it does not exist): the time of undated items."""
        stat = self.memory.stat(rel)
        seconds = stat[0] / 1e9 if stat is not None else 0.0
        return dt.datetime.fromtimestamp(seconds, dt.UTC)

    def refresh(self, namespace: tuple[str, ...], keys: Collection[str], now: dt.datetime) -> None:
        """Push the expiry of the items ``keys`` that have a TTL to ``now`` plus it, in both files."""
        with self.memory.locked():
            for rel in (self.path(namespace), self.path(namespace, indexed=False)):
                if self.memory.exists(rel):
                    fallback = self.mtime(rel)

                    def refreshed(old: str | None, fallback: dt.datetime = fallback) -> str | None:
                        return refresh_expiries(old, keys, now=now, fallback_time=fallback)

                    self.memory.update(rel, refreshed)
