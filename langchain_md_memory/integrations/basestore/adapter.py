"""The Markdown memory as a LangGraph ``BaseStore``: namespaces are folders, items are sections.

The namespace ``("users", "alice")`` is the folder ``users/alice/`` under the
memory directory, and its items are ``## <key>`` sections of two files there, in
one format (see :mod:`.sections`), with ``value["content"]`` as the readable body:

- ``store.md`` holds the items put with the default ``index``; the memory
  indexes it like any other note, so ``mem.search``, the ``memory_search`` tool
  and ``search(query=...)`` (answered by the memory's own hybrid pipeline) find
  them;
- ``.store.unindexed.md`` holds the items put with ``index=False``; its name is
  hidden, so the memory never indexes it (no chunk, no vector), yet a person can
  still read and edit it, and ``get``, searches without a query and
  ``list_namespaces`` read it.

A key lives in one of the two; a put that changes its ``index`` moves it in one
locked operation that writes the new copy before removing the old, and reads
prefer ``store.md`` should a crash leave it in both. Every read parses the
current files, so a hand edit is seen by the next ``get``; writes are locked
read-modify-writes, and the index picks up ``store.md`` changes on the next
search.

A search with a ``query`` behaves as LangGraph's ``InMemoryStore`` and
``PostgresStore`` do: it returns every indexed item under the prefix that passes
the filter, ordered by similarity (the memory's hybrid score, MMR off, no
``min_score`` cut), up to ``limit``; items no recall path could score (in a
keyword-only memory, those without the query's words) come last with
``score=None``.

Example:
    .. code-block:: python

        from langchain_md_memory import MarkdownMemory

        mem = MarkdownMemory("memory", embeddings="none")
        store = mem.as_store()
        store.put(("users", "alice"), "food", {"content": "Loves Sichuan hotpot", "kind": "preference"})
        assert store.get(("users", "alice"), "food").value["kind"] == "preference"
        hits = store.search(("users",), query="hotpot")
        assert hits[0].key == "food" and hits[0].score > 0
        store.put(("users", "alice"), "pin", {"content": "PIN hint: birthday"}, index=False)
        assert mem.search("birthday") == []  # in users/alice/.store.unindexed.md
        assert store.get(("users", "alice"), "pin") is not None
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Iterable, Mapping, Sequence
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from ...errors import MemoryInputError
from ...files.paths import is_managed_file
from .changes import Change, FileChanges, apply_changes, find_item, merged_items, plan_changes
from .filters import namespace_matches, value_matches
from .items import check_page, indexed_items, only_preamble, to_item, to_search_item
from .namespaces import check_labels, is_label, namespace_file, validate_op
from .sections import ParsedFile, check_key, namespace_preamble, parse_sections

if TYPE_CHECKING:
    from ...core import MemoryCore

__all__ = ["NAMESPACE_FILE", "MarkdownBaseStore", "unindexed_file_name"]

logger = logging.getLogger(__name__)

NAMESPACE_FILE = "store.md"
"""The Markdown file holding one namespace's items, inside the namespace's folder."""


def unindexed_file_name(file_name: str = NAMESPACE_FILE) -> str:
    """The hidden sibling of a namespace file, for ``index=False`` items (``.store.unindexed.md``)."""
    name = PurePosixPath(file_name)
    return f".{name.stem}.unindexed{name.suffix}"


# The most hits one query search asks the pipeline for while looking for enough store items.
_MAX_QUERY_POOL = 1000

_Ident = tuple[tuple[str, ...], str]
"""An item's identity: ``(namespace, key)``."""


class MarkdownBaseStore(BaseStore):
    """A LangGraph ``BaseStore`` whose items are ``## key`` sections of Markdown files.

    Args:
        memory: the :class:`~langchain_md_memory.MarkdownMemory` whose folder,
            lock and search pipeline the store uses.
        file_name: the namespace file in each namespace folder (a visible
            ``.md`` name, so it is indexed and searchable); ``index=False``
            items go to its hidden sibling, see :func:`unindexed_file_name`.

    Namespace labels must be non-empty and free of ``/``, ``\\``, ``.``,
    control characters and surrounding whitespace, and must not start with
    ``~`` or ``#`` (folders the memory ignores); bad labels raise
    ``InvalidNamespaceError``. Keys must fit on a Markdown heading line: see
    :func:`.sections.check_key` (a put with a bad key raises ``ValueError``;
    a get of one returns ``None``). ``index=False`` items live in the hidden
    sibling file: readable through ``get``, filter searches and
    ``list_namespaces``, never in the memory's index, so they answer neither a
    ``query`` nor ``mem.search``. TTLs are not supported.

    Example:
        .. code-block:: python

            from langchain.agents import create_agent

            agent = create_agent(model, tools=[...], store=mem.as_store())
    """

    __slots__ = ("_file_name", "_hidden_name", "_memory")

    def __init__(self, memory: MemoryCore, *, file_name: str = NAMESPACE_FILE) -> None:
        if "/" in file_name or not is_managed_file(file_name):
            raise MemoryInputError(
                f"file_name must be a visible '.md' name without folders, got {file_name!r}"
            )
        self._memory = memory
        self._file_name = file_name
        self._hidden_name = unindexed_file_name(file_name)

    @property
    def memory(self) -> MemoryCore:
        """The memory this store reads and writes."""
        return self._memory

    def namespace_path(self, namespace: tuple[str, ...]) -> str:
        """The namespace file's path relative to the memory directory (``users/alice/store.md``).

        Raises:
            InvalidNamespaceError: for an empty namespace or a bad label.
        """
        return namespace_file(namespace, self._file_name)

    def unindexed_path(self, namespace: tuple[str, ...]) -> str:
        """The hidden file of the namespace's ``index=False`` items (``users/alice/.store.unindexed.md``).

        Raises:
            InvalidNamespaceError: for an empty namespace or a bad label.
        """
        return namespace_file(namespace, self._hidden_name)

    # -- BaseStore ----------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order; each result is at the position of its op.

        Consecutive puts are grouped into one locked operation per namespace
        (one rewrite per file, three when keys move both ways between the
        indexed and the hidden file); a get or search after a put in the same
        batch sees it.
        """
        ops = list(ops)
        for op in ops:
            validate_op(op)
        results: list[Result] = [None] * len(ops)
        pending: list[PutOp] = []
        for i, op in enumerate(ops):
            if isinstance(op, PutOp):
                pending.append(op)
                continue
            self._flush(pending)
            pending = []
            if isinstance(op, GetOp):
                results[i] = self._get(op.namespace, op.key)
            elif isinstance(op, SearchOp):
                results[i] = self._search(op)
            elif isinstance(op, ListNamespacesOp):
                results[i] = self._list_namespaces(op)
            else:
                raise MemoryInputError(f"Unknown operation type: {type(op).__name__}")
        self._flush(pending)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async twin of :meth:`batch` (file and SQLite work runs in a worker thread)."""
        return await asyncio.to_thread(self.batch, list(ops))

    # -- get / put ----------------------------------------------------------------------

    def _get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        try:
            check_key(key)
        except ValueError:
            return None  # such a key can never have been stored
        found = find_item(key, *self._read_namespace(namespace))
        return None if found is None else to_item(namespace, found)

    def _flush(self, puts: Sequence[PutOp]) -> None:
        by_namespace: dict[tuple[str, ...], list[Change]] = {}
        for op in puts:
            if op.value is None:
                change = Change(op.key, None)
            else:
                check_key(op.key)
                change = Change(op.key, self._redacted(op.value), indexed=op.index is not False)
            by_namespace.setdefault(tuple(op.namespace), []).append(change)
        for namespace, changes in by_namespace.items():
            self._write(namespace, changes)

    def _redacted(self, value: Any) -> Any:
        """``value`` with secrets in its strings redacted, as every other write of the memory is."""
        if isinstance(value, str):
            return self._memory.redact(value)
        if isinstance(value, dict):
            return {key: self._redacted(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self._redacted(item) for item in value]
        return value

    def _write(self, namespace: tuple[str, ...], changes: list[Change]) -> None:
        now = dt.datetime.now(dt.UTC)
        # One lock (re-entrant) from the reads to the last write: two writers to a namespace never lose
        # each other's items, and no other writer sees a move half done.
        with self._memory.locked():
            steps = plan_changes(changes, *self._read_namespace(namespace), now=now)
            for step in steps:
                self._apply(namespace, step, now)

    def _apply(self, namespace: tuple[str, ...], step: FileChanges, now: dt.datetime) -> None:
        """Make one write of a plan (the memory notes the change for its index)."""
        rel = self.namespace_path(namespace) if step.indexed else self.unindexed_path(namespace)
        preamble = namespace_preamble(namespace, indexed=step.indexed)
        fallback = self._mtime(rel)

        def rewrite(old: str | None) -> str | None:
            return apply_changes(old, step.changes, now=now, preamble=preamble, fallback_time=fallback)

        logger.debug("store: applying %d change(s) to %s", len(step.changes), rel)
        if not step.indexed and only_preamble(rewrite(self._text(rel)), preamble):
            self._memory.remove(rel)  # its last item left: no empty hidden file lingers
            return
        self._memory.update(rel, rewrite)

    # -- search ---------------------------------------------------------------------

    def _search(self, op: SearchOp) -> list[SearchItem]:
        check_page(op.limit, op.offset)
        prefix = tuple(op.namespace_prefix)
        if op.query:
            ranked = self._query_search(op, prefix)
        else:
            found = [
                (item, None)
                for namespace in self._namespaces(prefix)
                for item in (to_item(namespace, s) for s in merged_items(*self._read_namespace(namespace)))
                if value_matches(item.value, op.filter)
            ]
            ranked = sorted(found, key=lambda pair: pair[0].updated_at, reverse=True)
        return [to_search_item(item, score) for item, score in ranked[op.offset : op.offset + op.limit]]

    def _query_search(self, op: SearchOp, prefix: tuple[str, ...]) -> list[tuple[Item, float | None]]:
        """Every indexed item under ``prefix`` passing the filter: by similarity to the query, best first.

        As in LangGraph's stores, the query ranks and never cuts: the memory's ``min_score`` does not
        apply, and MMR (which trades relevance for variety) is off. Items no recall path scored (a
        keyword-only memory, say) follow the scored ones, newest first, with ``score=None``.
        """
        assert op.query is not None
        candidates = {
            (namespace, stored.key): to_item(namespace, stored)
            for namespace in self._namespaces(prefix)
            for stored in indexed_items(self._read(self.namespace_path(namespace)))
            if value_matches(stored.value, op.filter)
        }
        scores = self._query_scores(op.query, prefix, candidates, want=op.offset + op.limit)
        scored = sorted(((candidates[ident], score) for ident, score in scores.items()),
                        key=lambda pair: (-pair[1], -pair[0].updated_at.timestamp()))
        rest = sorted((item for ident, item in candidates.items() if ident not in scores),
                      key=lambda item: item.updated_at, reverse=True)
        return [*scored, *((item, None) for item in rest)]

    def _query_scores(self, query: str, prefix: tuple[str, ...], candidates: Mapping[_Ident, Item], *,
                      want: int) -> dict[_Ident, float]:
        """The pipeline's score of each candidate it recalls (an item's best chunk), as far as needed.

        Other memory files share the ranking, so the pool widens until ``want`` candidates are
        scored, every candidate is, or the pipeline has nothing more to give.
        """
        config = self._memory.config.merged(min_score=0.0, mmr={"enabled": False}, access_weight=0.0)
        pool = min(max(2 * want, 10), _MAX_QUERY_POOL)
        while True:
            hits = self._memory.search_detailed(query, max_results=pool, config=config).hits
            cache: dict[str, ParsedFile | None] = {}
            scores: dict[_Ident, float] = {}
            for hit in hits:  # best first, so an item's first hit is its best chunk
                namespace = self._namespace_of(hit.path)
                if namespace is None or namespace[: len(prefix)] != prefix:
                    continue
                if hit.path not in cache:
                    cache[hit.path] = self._read(hit.path)
                for stored in indexed_items(cache[hit.path]):
                    ident = (namespace, stored.key)
                    overlaps = stored.start_line <= hit.end_line and hit.start_line <= stored.end_line
                    if overlaps and ident in candidates and ident not in scores:
                        scores[ident] = hit.score
            if len(scores) >= min(want, len(candidates)) or len(hits) < pool or pool >= _MAX_QUERY_POOL:
                return scores
            pool = min(pool * 4, _MAX_QUERY_POOL)

    # -- namespaces -----------------------------------------------------------------

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        check_page(op.limit, op.offset)
        if op.max_depth is not None and op.max_depth < 0:
            raise MemoryInputError(f"max_depth must be 0 or more, got {op.max_depth}")
        namespaces = [
            namespace
            for namespace in self._namespaces(())
            if all(namespace_matches(condition, namespace) for condition in op.match_conditions or ())
            and any(parsed is not None and parsed.items for parsed in self._read_namespace(namespace))
        ]
        if op.max_depth is not None:
            namespaces = list({namespace[: op.max_depth] for namespace in namespaces})
        return sorted(namespaces)[op.offset : op.offset + op.limit]

    def _namespaces(self, prefix: tuple[str, ...]) -> list[tuple[str, ...]]:
        """Every namespace under ``prefix`` whose folder holds either of its files, sorted."""
        names = (self._file_name, self._hidden_name)
        found: set[tuple[str, ...]] = set()
        for rel in self._memory.list_files(include_unindexed=True):
            *folders, name = rel.split("/")
            namespace = tuple(folders)
            if name in names and namespace and namespace[: len(prefix)] == prefix \
                    and all(is_label(label) for label in namespace):
                found.add(namespace)
        return sorted(found)

    def _namespace_of(self, rel: str) -> tuple[str, ...] | None:
        parts = PurePosixPath(rel).parts
        if len(parts) < 2 or parts[-1] != self._file_name:
            return None
        namespace = tuple(parts[:-1])
        try:
            check_labels(namespace)
        except InvalidNamespaceError:
            return None  # a folder a namespace could not have made (e.g. "v1.2") is not ours
        return namespace

    # -- files ------------------------------------------------------------------------

    def _read_namespace(self, namespace: tuple[str, ...]) -> tuple[ParsedFile | None, ParsedFile | None]:
        """The namespace's (indexed, unindexed) files parsed now; readers prefer the first."""
        return self._read(self.namespace_path(namespace)), self._read(self.unindexed_path(namespace))

    def _read(self, rel: str) -> ParsedFile | None:
        """A namespace file parsed now (never cached), or ``None`` when it does not exist."""
        text = self._text(rel)
        return None if text is None else parse_sections(text, fallback_time=self._mtime(rel))

    def _text(self, rel: str) -> str | None:
        if not self._memory.exists(rel):  # the path guard raises for escapes
            return None
        return self._memory.get(rel)

    def _mtime(self, rel: str) -> dt.datetime:
        stat = self._memory.stat(rel)
        seconds = stat[0] / 1e9 if stat is not None else 0.0
        return dt.datetime.fromtimestamp(seconds, dt.UTC)

    def __repr__(self) -> str:
        return f"MarkdownBaseStore({str(self._memory.memory_dir)!r}, file_name={self._file_name!r})"
