"""The Markdown memory as a LangGraph ``BaseStore``: namespaces are folders, items are sections.

The namespace ``("users", "alice")`` is the folder ``users/alice/`` under the memory directory, and
its items are ``## <key>`` sections (:mod:`.sections`), ``value["content"]`` the readable body, of two
files there: ``store.md`` (the default ``index``: the memory indexes it like any other note, so
``mem.search``, the ``memory_search`` tool and ``search(query=...)`` find them) and the hidden
``.store.unindexed.md`` (``index=False``: never indexed, still read by ``get``, searches without a
query and ``list_namespaces``, and by a person). A put that changes an item's ``index`` moves it in one
locked operation, new copy first; reads prefer ``store.md`` should a crash leave it in both. Every read
parses the current files, so a hand edit is seen by the next ``get``.

A search with a ``query`` returns, as LangGraph's ``InMemoryStore`` and ``PostgresStore`` do, every
item under the prefix that passes the filter, the most relevant first, up to ``limit``, unscored ones
last with ``score=None``; it ranks as ``mem.search`` does (hybrid), or by cosine similarity over the
index fields a store or a put chose (see :meth:`MarkdownBaseStore._query_search` and :mod:`.query`).

TTLs behave as in LangGraph's ``SqliteStore``, with every read omitting what has expired:
``put(..., ttl=minutes)`` (or the ``TTLConfig``'s ``default_ttl``) writes the expiry after the item's
line (:mod:`.expiry`); a read pushes it on when it asks to (``refresh_ttl``, by default) and the config
sets ``refresh_on_read``; an item past its expiry is never returned by ``get``, ``search`` or
``list_namespaces`` (``omit_expired`` always on: a store served to many graphs must not hand out what a
sweep has not reached yet), and :meth:`MarkdownBaseStore.sweep_ttl` (or the sweeper thread) deletes it
from the Markdown. :class:`AsyncMarkdownBaseStore` is the same store with the TTL calls awaitable, as
``AsyncSqliteStore`` has them.

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
import concurrent.futures
import datetime as dt
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)

from ...errors import MemoryInputError
from ...files.paths import is_managed_file
from .changes import Change, FileChanges, apply_changes, find_item, merged_items, plan_changes
from .coalesce import Coalescer
from .expiry import check_ttl
from .filters import namespace_matches, value_matches
from .folders import NamespaceFiles
from .items import (
    check_put,
    indexed_items,
    only_preamble,
    redacted_value,
    to_item,
    to_search_item,
    validate_op,
)
from .namespaces import NAMESPACE_FILE, unindexed_file_name
from .query import (
    DEFAULT_FIELDS,
    Ident,
    index_config,
    query_scores,
    rank_items,
    similarities,
    store_fields,
)
from .sections import StoredItem, check_key, namespace_preamble
from .sweeper import Sweeper

if TYPE_CHECKING:
    from ...memory import MarkdownMemory

__all__ = ["NAMESPACE_FILE", "AsyncMarkdownBaseStore", "MarkdownBaseStore", "unindexed_file_name"]

logger = logging.getLogger(__name__)

_Found = tuple[tuple[str, ...], StoredItem]
"""An item as read from its namespace file."""
_Scored = tuple[_Found, float | None, float | None]
"""An item with its ``score`` and ``hybrid_score`` in a search."""


class MarkdownBaseStore(BaseStore):
    """A LangGraph ``BaseStore`` whose items are ``## key`` sections of Markdown files.

    Args:
        memory: the :class:`~langchain_md_memory.MarkdownMemory` whose folder,
            lock and search pipeline the store uses.
        file_name: the namespace file in each namespace folder (a visible
            ``.md`` name, so it is indexed and searchable); ``index=False``
            items go to its hidden sibling, see :func:`unindexed_file_name`.
        ttl: LangGraph's ``TTLConfig`` (``default_ttl`` and ``sweep_interval_minutes`` in
            minutes, ``refresh_on_read``; expired items are omitted whatever ``omit_expired``
            says); ``None``: items expire only when put with a ``ttl``, reads never refresh them,
            and :meth:`start_ttl_sweeper` does nothing, as in ``SqliteStore``.
        clock: returns the current time (timezone-aware), for timestamps and expiries; the
            system clock by default (tests and replays pass their own).
        index: ``{"fields": [...]}``, the paths whose text a query is compared with (LangGraph's
            ``IndexConfig`` fields; default ``["$"]``, the whole value); the memory's own
            embeddings do the embedding. ``put(..., index=[...])`` overrides it per item.

    Namespace labels must be non-empty and free of ``/``, ``\\``, ``.``,
    control characters and surrounding whitespace, and must not start with
    ``~`` or ``#`` (folders the memory ignores); bad labels raise
    ``InvalidNamespaceError``. Keys must fit on a Markdown heading line: see
    :func:`.sections.check_key` (a put with a bad key raises ``ValueError``;
    a get of one returns ``None``). ``index=False`` items live in the hidden
    sibling file: readable through ``get``, filter searches and
    ``list_namespaces``, never in the memory's index, so they answer neither a
    ``query`` nor ``mem.search``.

    Example:
        .. code-block:: python

            from langchain.agents import create_agent

            agent = create_agent(model, tools=[...], store=mem.as_store())
    """

    __slots__ = ("_clock", "_coalescer", "_fields", "_files", "_memory", "_sweeper", "ttl_config")

    supports_ttl = True

    def __init__(self, memory: MarkdownMemory, *, file_name: str = NAMESPACE_FILE,
                 ttl: TTLConfig | None = None, clock: Callable[[], dt.datetime] | None = None,
                 index: Mapping[str, Any] | None = None) -> None:
        if "/" in file_name or not is_managed_file(file_name):
            raise MemoryInputError(
                f"file_name must be a visible '.md' name without folders, got {file_name!r}"
            )
        if ttl is not None and ttl.get("default_ttl") is not None:
            check_ttl(ttl["default_ttl"])  # type: ignore[arg-type]
        self._memory = memory
        self._files = NamespaceFiles(memory, file_name, unindexed_file_name(file_name))
        self.ttl_config = ttl
        self._clock = clock or (lambda: dt.datetime.now(dt.UTC))
        self._sweeper = Sweeper(self._sweep_expired)
        self._fields = store_fields(index)
        self._coalescer = Coalescer(lambda ops: asyncio.to_thread(self.batch, ops))

    @property
    def memory(self) -> MarkdownMemory:
        """The memory this store reads and writes."""
        return self._memory

    def namespace_path(self, namespace: tuple[str, ...]) -> str:
        """The namespace file's path relative to the memory directory (``users/alice/store.md``).

        Raises:
            InvalidNamespaceError: for an empty namespace or a bad label.
        """
        return self._files.path(namespace)

    def unindexed_path(self, namespace: tuple[str, ...]) -> str:
        """The hidden file of the namespace's ``index=False`` items (``users/alice/.store.unindexed.md``).

        Raises:
            InvalidNamespaceError: for an empty namespace or a bad label.
        """
        return self._files.path(namespace, indexed=False)

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
                results[i] = self._get(op)
            elif isinstance(op, SearchOp):
                results[i] = self._search(op)
            elif isinstance(op, ListNamespacesOp):
                results[i] = self._list_namespaces(op)
            else:
                raise MemoryInputError(f"Unknown operation type: {type(op).__name__}")
        self._flush(pending)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async twin of :meth:`batch` (in a worker thread); a single op (``aget``, ``aput``, ...) joins
        the others of its event-loop tick in one deduplicated batch (:mod:`.coalesce`)."""
        ops = list(ops)
        if len(ops) == 1:
            validate_op(ops[0])  # a bad op fails its own caller, not the batch it would join
            return [await self._coalescer.submit(ops[0])]
        return await asyncio.to_thread(self.batch, ops)

    @property
    def index_config(self) -> dict[str, Any] | None:
        """How items are embedded, in LangGraph's ``IndexConfig`` keys; see :func:`.query.index_config`."""
        return index_config(self._memory, self._fields)

    # -- get / put ----------------------------------------------------------------------

    def _get(self, op: GetOp) -> Item | None:
        try:
            check_key(op.key)
        except ValueError:
            return None  # such a key can never have been stored
        found = find_item(op.key, *self._files.read_namespace(op.namespace))
        if found is None or self._omitted(found):
            return None
        if self._refreshes(op.refresh_ttl):
            self._refresh([(op.namespace, found)])
        return to_item(op.namespace, found)

    def _flush(self, puts: Sequence[PutOp]) -> None:
        by_namespace: dict[tuple[str, ...], list[Change]] = {}
        for op in puts:
            if op.value is None:
                change = Change(op.key, None)
            else:
                check_key(op.key)
                check_put(op.key, op.value, redact=self._memory.redact,
                          max_write_bytes=self._memory.config.limits.max_write_bytes)
                change = Change(op.key, redacted_value(op.value, self._memory.redact), op.index is not False,
                                ttl=None if op.ttl is None else check_ttl(op.ttl),
                                fields=tuple(op.index) if isinstance(op.index, list) else None)
            by_namespace.setdefault(tuple(op.namespace), []).append(change)
        for namespace, changes in by_namespace.items():
            self._write(namespace, changes)

    def _write(self, namespace: tuple[str, ...], changes: list[Change]) -> None:
        now = self._clock()
        # One lock (re-entrant) from the reads to the last write: two writers to a namespace never lose
        # each other's items, and no other writer sees a move half done.
        with self._memory.locked():
            steps = plan_changes(changes, *self._files.read_namespace(namespace), now=now)
            for step in steps:
                self._apply(namespace, step, now)

    def _apply(self, namespace: tuple[str, ...], step: FileChanges, now: dt.datetime) -> None:
        """Make one write of a plan (the memory notes the change for its index)."""
        rel = self.namespace_path(namespace) if step.indexed else self.unindexed_path(namespace)
        preamble = namespace_preamble(namespace, indexed=step.indexed)
        fallback = self._files.mtime(rel)

        def rewrite(old: str | None) -> str | None:
            return apply_changes(old, step.changes, now=now, preamble=preamble, fallback_time=fallback)

        logger.debug("store: applying %d change(s) to %s", len(step.changes), rel)
        if not step.indexed and only_preamble(rewrite(self._files.text(rel)), preamble):
            self._memory.delete_file(rel)  # its last item left: no empty hidden file lingers
            return
        self._memory.update(rel, rewrite)

    # -- search ---------------------------------------------------------------------

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        if op.query:
            ranked = self._query_search(op, prefix)
        else:
            ranked = [
                ((namespace, stored), None, None)
                for namespace in self._files.namespaces(prefix)
                for stored in merged_items(*self._files.read_namespace(namespace))
                if value_matches(stored.value, op.filter) and not self._omitted(stored)
            ]
            ranked.sort(key=lambda scored: scored[0][1].updated_at, reverse=True)
        page = ranked[op.offset : op.offset + op.limit]
        if self._refreshes(op.refresh_ttl):
            self._refresh([found for found, _, _ in page])
        return [to_search_item(to_item(*found), score, hybrid) for found, score, hybrid in page]

    def _query_search(self, op: SearchOp, prefix: tuple[str, ...]) -> list[_Scored]:
        """Every item under ``prefix`` passing the filter: the most relevant to the query first.

        The memory's own hybrid ranking (vector and keyword evidence, as ``mem.search`` ranks; without
        cutting: no ``min_score``, no MMR) ranks and is the ``score``, LangGraph's "relevance/similarity
        score", when every candidate is embedded whole (index fields ``["$"]``, the default): the
        memory's index holds each item's whole section, so it answers for exactly that. When the store
        or a put chose other fields, the index cannot see them: the cosine similarity of the query and
        the texts those fields select ranks instead, as in LangGraph's stores (and the hybrid score
        ranks in a keyword-only memory, or while the embeddings are down). Items nothing scored (no
        recall path found them, or put with ``index=False``) follow, newest first, with
        ``score=None``; each result's ``hybrid_score`` is the memory's own score
        (:class:`.items.MemorySearchItem`).
        """
        assert op.query is not None
        candidates: dict[Ident, _Found] = {}
        indexed: dict[Ident, StoredItem] = {}
        for namespace in self._files.namespaces(prefix):
            visible, hidden = self._files.read_namespace(namespace)
            searchable = {stored.key for stored in indexed_items(visible)}
            for stored in merged_items(visible, hidden):
                if value_matches(stored.value, op.filter) and not self._omitted(stored):
                    candidates[namespace, stored.key] = (namespace, stored)
                    if stored.key in searchable:
                        indexed[namespace, stored.key] = stored
        hybrid = query_scores(self._files, op.query, prefix, set(indexed), want=op.offset + op.limit)
        fields = {ident: stored.fields or self._fields for ident, stored in indexed.items()}
        whole = all(chosen == DEFAULT_FIELDS for chosen in fields.values())
        similar = None if whole else similarities(self._memory, op.query, {
            ident: (stored.value, fields[ident]) for ident, stored in indexed.items()})
        newest = sorted(candidates, key=lambda ident: candidates[ident][1].updated_at, reverse=True)
        ranked = rank_items(similar, hybrid, newest)
        return [(candidates[ident], score, mine) for ident, score, mine in ranked]

    # -- TTL -------------------------------------------------------------------------

    def sweep_ttl(self) -> int:
        """Delete every item whose expiry has passed, from both files of every namespace; returns how many.

        Each namespace is read and rewritten under the memory's lock, so an item put again
        meanwhile (with a new expiry) is never deleted.
        """
        return self._sweep_expired()

    def _sweep_expired(self) -> int:
        """The sweep itself, for :meth:`sweep_ttl`, its async twin and the sweeper thread."""
        swept = 0
        for namespace in self._files.namespaces(()):
            with self._memory.locked():
                now = self._clock()
                expired = [stored.key for stored in merged_items(*self._files.read_namespace(namespace))
                           if stored.expiry is not None and stored.expiry.passed(now)]
                if expired:
                    self._write(namespace, [Change(key, None) for key in expired])
                    swept += len(expired)
        return swept

    async def asweep_ttl(self) -> int:
        """Async twin of :meth:`sweep_ttl`."""
        return await asyncio.to_thread(self._sweep_expired)

    def start_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> concurrent.futures.Future[None]:
        """Sweep expired items every ``sweep_interval_minutes`` (else the config's, else 5) on a thread.

        Without a ``ttl`` config nothing starts and the future is already done, as in
        ``SqliteStore``. Cancel the future or call :meth:`stop_ttl_sweeper` to stop it (before
        closing the memory).
        """
        config = self.ttl_config
        interval = sweep_interval_minutes or (config.get("sweep_interval_minutes") if config else None) or 5
        return self._sweeper.start(float(interval) if config else None)

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; True when it stopped (or never ran), False when ``timeout`` came first."""
        return self._sweeper.stop(timeout)

    def __del__(self) -> None:
        sweeper = getattr(self, "_sweeper", None)
        if sweeper is not None:
            sweeper.stop(timeout=0.1)

    def _omitted(self, stored: StoredItem) -> bool:
        """True when reads leave ``stored`` out: it has expired, swept or not."""
        return stored.expiry is not None and stored.expiry.passed(self._clock())

    def _refreshes(self, asked: bool) -> bool:
        """Whether a read that ``asked`` (its ``refresh_ttl``) pushes expiries on.

        As ``SqliteStore`` decides: only when the config sets ``refresh_on_read``; ``BaseStore``
        turns an unset ``refresh_ttl`` into True, so without the config's word no read refreshes.
        """
        return asked and bool(self.ttl_config and self.ttl_config.get("refresh_on_read", False))

    def _refresh(self, found: Sequence[_Found]) -> None:
        """Push the expiry of each item in ``found`` that has a TTL to now plus its TTL (a read's refresh)."""
        keys: dict[tuple[str, ...], set[str]] = {}
        for namespace, stored in found:
            if stored.expiry is not None and stored.expiry.minutes is not None:
                keys.setdefault(namespace, set()).add(stored.key)
        for namespace, names in keys.items():
            self._files.refresh(namespace, names, self._clock())

    # -- namespaces -----------------------------------------------------------------

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        namespaces = [
            namespace
            for namespace in self._files.namespaces(())
            if all(namespace_matches(condition, namespace) for condition in op.match_conditions or ())
            and any(not self._omitted(item) for item in merged_items(*self._files.read_namespace(namespace)))
        ]
        if op.max_depth is not None:
            namespaces = list({namespace[: op.max_depth] for namespace in namespaces})
        return sorted(namespaces)[op.offset : op.offset + op.limit]

    def __repr__(self) -> str:
        return f"MarkdownBaseStore({self._memory.location!r}, file_name={self._files.file_name!r})"


class AsyncMarkdownBaseStore(MarkdownBaseStore):
    """:class:`MarkdownBaseStore` with its TTL calls awaitable, as ``AsyncSqliteStore`` has them.

    ``await store.sweep_ttl()``, ``await store.start_ttl_sweeper()`` (an awaitable that ends when the
    sweeper stops; cancelling it stops the sweeper) and ``await store.stop_ttl_sweeper()``: code
    written for LangGraph's async stores runs unchanged. Every other method is the same store's
    (``aget``, ``aput``, ... and their sync forms). :func:`langchain_md_memory.langgraph.generate_store`
    yields one.

    Example:
        .. code-block:: python

            store = AsyncMarkdownBaseStore(mem, ttl={"sweep_interval_minutes": 5})
            await store.start_ttl_sweeper()
            ...
            await store.stop_ttl_sweeper()
    """

    __slots__ = ()

    # The async signatures are LangGraph's async stores'; the sync ones stay on MarkdownBaseStore.
    async def sweep_ttl(self) -> int:  # type: ignore[override]
        """Delete every expired item (see :meth:`MarkdownBaseStore.sweep_ttl`); returns how many."""
        return await asyncio.to_thread(self._sweep_expired)

    async def start_ttl_sweeper(  # type: ignore[override]
        self, sweep_interval_minutes: float | None = None
    ) -> asyncio.Future[None]:
        """Start the sweeper thread (see :meth:`MarkdownBaseStore.start_ttl_sweeper`).

        Returns an awaitable that ends when the sweeper stops; cancelling it stops the sweeper.
        """
        return asyncio.wrap_future(super().start_ttl_sweeper(sweep_interval_minutes))

    async def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:  # type: ignore[override]
        """Stop the sweeper thread; True when it stopped (or never ran), False when ``timeout`` came first."""
        return await asyncio.to_thread(self._sweeper.stop, timeout)
