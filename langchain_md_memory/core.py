"""One memory folder wired together: its Markdown files, index, embeddings, sync and search.

:class:`MemoryCore` is what features (dream, flush, transcripts, archive) and integrations (tools,
nodes, retriever, BaseStore adapter) are written against; it wires the lower layers and computes
nothing itself. Users construct :class:`~langchain_md_memory.MarkdownMemory`, which adds the ways
out to those features and integrations (``as_retriever``, ``dream``, ...).

Example:
    .. code-block:: python

        from langchain_md_memory import MarkdownMemory

        with MarkdownMemory("memory", embeddings="none") as mem:
            mem.append("- Risk: conservative; no single stock above 5% of the portfolio")
            print(mem.search("single stock limit")[0].citation)
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from .aio import AsyncMemoryMethods
from .config import MemoryConfig
from .embeddings import EmbeddingClient, resolve_embeddings
from .errors import (
    IndexBusyError,
    IndexDamagedError,
    MemoryIndexError,
    MemoryInputError,
    MemoryStoreError,
    check_query_size,
)
from .files.base import DocumentStore, StateStore
from .files.paths import INDEX_FILE
from .files.session_context import SessionContext, build_session_context
from .files.state import StateFile
from .files.store import MarkdownStore
from .index.base import Backend, IndexOwner, SearchIndex
from .index.handle import IndexHandle
from .search.expiry import drop_expired
from .search.pipeline import RankedResults, Recall, rank
from .search.restated import restated_below_successors, successor_paths
from .search.retrieve import query_vector, retrieve
from .secrets import scrub
from .sync.embedding import cosines
from .sync.indexer import Indexer, SyncStats, index_identity
from .sync.verify import VerifyReport, verify_index
from .sync.watcher import MemoryWatcher
from .types import MemorySearchResult, ProgressCallback

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

__all__ = ["Backend", "MemoryCore"]

logger = logging.getLogger(__name__)


class MemoryCore(AsyncMemoryMethods):
    """One memory folder: Markdown files, index, embeddings, sync, search and watching.

    Construct :class:`~langchain_md_memory.MarkdownMemory` (same arguments);
    this base is what features and integrations are typed against. The parts
    (``store``, ``indexer``, ``index``, ``embedder``, ``watcher``) are public for
    inspection and tests; code built on a memory uses the methods below. Every operation
    has an async twin (``aget``, ``aappend``, ``asearch``, ...; see :mod:`langchain_md_memory.aio`).
    """

    def __init__(
        self,
        memory_dir: str | os.PathLike[str] | None,
        embeddings: Embeddings | EmbeddingClient | str | None = "auto",
        config: MemoryConfig | Mapping[str, Any] | None = None,
        *,
        watch: bool = False,
        recursive: bool = True,
        progress: ProgressCallback | None = None,
        backend: Backend | None = None,
    ) -> None:
        if not isinstance(config, MemoryConfig):
            config = MemoryConfig.model_validate(config or {})
        self.config = config
        self._backend = backend
        if backend is None:
            if memory_dir is None:
                raise MemoryInputError("give the memory folder, or use MarkdownMemory.from_postgres")
            folder = MarkdownStore(memory_dir, recursive=recursive, max_path_depth=config.max_path_depth,
                                   max_name_bytes=config.max_name_bytes)
            folder.sweep_temp_files()
            handle: IndexOwner = IndexHandle(folder.root / INDEX_FILE, vector_dtype=config.vector_dtype)
            self.location = str(folder.root)
            """Where the memory lives: its folder, or ``postgresql://host/db#tenant``."""
            self.store: DocumentStore = folder
            self.state: StateStore = StateFile(folder)
            """Durable bookkeeping kept when the index goes (``.md-memory/state.json``, or a table)."""
        else:
            self.store, handle, self.state, self.location = backend.store, backend.index, backend.state, \
                backend.location
        # An existing client is shared as is (the global memory reuses its project's).
        self.embedder: EmbeddingClient | None = embeddings if isinstance(embeddings, EmbeddingClient) else (
            resolve_embeddings(
                embeddings,
                batch_size=self.config.embedding_batch_size,
                timeout_s=self.config.embedding_timeout_s,
                retries=self.config.embedding_retries,
            )
        )
        self.indexer = Indexer(self.store, handle, self.embedder, self.config, progress)
        self.watcher: MemoryWatcher | None = None
        self.indexer.watcher_healthy = lambda: self.watcher is not None and self.watcher.healthy
        self._sync_error: str | None = None
        self._closed = False
        self._lock = threading.RLock()
        if watch:
            try:
                self.start_watching()
            except BaseException:
                self.close()
                raise

    # -- PostgreSQL -------------------------------------------------------------------

    @classmethod
    def from_postgres(cls, conninfo_or_pool: Any, tenant: str, *, embeddings: Any = "auto",
                      config: MemoryConfig | dict[str, Any] | None = None,
                      progress: ProgressCallback | None = None, vector_search: str = "auto",
                      pool_max_size: int = 10) -> Self:
        """One tenant's memory in PostgreSQL (≥ 14, with pgvector): same API and Markdown, many hosts.

        ``conninfo_or_pool``: a connection string or an open ``psycopg_pool.ConnectionPool`` (left
        open on :meth:`close`). See :func:`langchain_md_memory.postgres.open_backend` for the rest,
        and README "PostgreSQL". Needs the ``postgres`` extra.

        Example:
            .. code-block:: python

                with MarkdownMemory.from_postgres(url, tenant="alice", embeddings="none") as mem:
                    mem.append("- Prefers index funds")
        """
        from .postgres import open_backend  # the postgres extra: imported only when asked for

        cfg = config if isinstance(config, MemoryConfig) else MemoryConfig.model_validate(config or {})
        backend = open_backend(conninfo_or_pool, tenant, cfg, vector_search=vector_search,
                               pool_max_size=pool_max_size)
        try:
            return cls(None, embeddings, cfg, progress=progress, backend=backend)
        except BaseException:
            backend.index.close()
            raise

    @property
    def progress(self) -> ProgressCallback | None:
        """Receives the progress of syncs (searches' too), rebuilds and verifies not given their own."""
        return self.indexer.progress

    @progress.setter
    def progress(self, callback: ProgressCallback | None) -> None:
        self.indexer.progress = callback

    @property
    def memory_dir(self) -> Path:
        """The absolute memory folder; ``MemoryStoreError`` for a memory that is none (PostgreSQL)."""
        if self._backend is not None or not isinstance(self.store, MarkdownStore):
            raise MemoryStoreError(self._backend.folder_error if self._backend is not None
                                   else f"{self.location} is not a folder")
        return self.store.root

    @property
    def in_folder(self) -> bool:
        """True for a folder memory (Markdown files on disk), False for a database backend."""
        return self._backend is None

    @property
    def index(self) -> SearchIndex:
        """The index in use now."""
        return self.indexer.index

    @property
    def index_fallback(self) -> str | None:
        """Why the index lives in memory instead of beside the Markdown, or ``None``."""
        return self.indexer.handle.fallback

    # -- search ---------------------------------------------------------------------

    def search(self, query: str, *, max_results: int | None = None, as_of: dt.date | None = None
               ) -> list[MemorySearchResult]:
        """Hybrid search: recall, merge, min-score, decay, MMR, top-k; ``as_of``: what held on that day.

        Syncs first when the Markdown changed; an embedding outage leaves the keyword path to answer.
        ``as_of`` (else a date the question names) puts the struck History lines valid then first, each
        hit with ``valid_from``/``valid_until`` (see :mod:`.search.asof`)."""
        return self.search_detailed(query, max_results=max_results, as_of=as_of).hits

    def search_detailed(self, query: str, *, max_results: int | None = None,
                        config: MemoryConfig | None = None, as_of: dt.date | None = None) -> RankedResults:
        """Like :meth:`search`, also returning the per-stage funnel and degradation note."""
        cfg = config or self.config
        k = max_results if max_results is not None else cfg.max_results
        if k < 1:
            raise MemoryInputError(f"max_results must be at least 1, got {k}")
        check_query_size(query, cfg.max_query_chars)
        today = dt.date.today()
        period, day, strict = self._asked(query, as_of, today)
        self._check_open()
        self._ensure_synced()  # first: a sync that finds the embedder failing makes the query keyword-only
        vector, degraded = self._query_vector(query)
        recall = self._recall(query, cfg.candidate_multiplier * k, cfg, vector, degraded)
        recall = drop_expired(recall, today)
        ids = [r.id for r, _ in recall.vector] + [r.id for r, _ in recall.keyword]
        counts = self._access_counts(ids) if cfg.access_weight > 0 and ids else None
        ranked = rank(recall, cfg, max_results=2 * k if strict else k, access_counts=counts, period=period)
        if cfg.temporal_decay.newer_first < 1.0:  # the same switch as "newer statements first"
            hits = restated_below_successors(ranked.hits, self._struck_facts(successor_paths(ranked.hits)))
            ranked = RankedResults(hits, ranked.funnel, ranked.degraded, ranked.as_of)
        if day is not None:
            ranked = self._as_of(ranked, query, vector, day, k, strict)
        if self._sync_error is not None:
            lag = f"the index could not be updated ({self._sync_error}); recent changes may be missing"
            note = "; ".join(filter(None, [ranked.degraded, lag]))
            ranked = RankedResults(ranked.hits, ranked.funnel, note, ranked.as_of)
        if cfg.access_weight > 0:
            self._record_access([h.chunk_id for h in ranked.hits])
        self.indexer.freshness.start_pending()  # a periodic walk this search found due: after it, not during
        return ranked

    def _query_vector(self, query: str) -> tuple[Any, str | None]:
        return query_vector(self.embedder, query, self.indexer.embedding_error)

    def _recall(self, query: str, pool: int, cfg: MemoryConfig, vector: Any, degraded: str | None) -> Recall:
        """Both candidate pools; an index that fails mid-use is recovered and asked again."""
        used = self.indexer.index
        try:
            return retrieve(used, query, pool, cfg, vector, degraded)
        except MemoryIndexError as error:
            with self.indexer.handle.lock:  # a rebuild in progress holds it until the new index is in
                swapped = self.indexer.index is not used
            if not swapped:  # swapped: another thread rebuilt it under this search; just ask again
                if not isinstance(error, IndexBusyError | IndexDamagedError):
                    raise
                self.indexer.recover(error, used)
            return retrieve(self.indexer.index, query, pool, cfg, vector, degraded)

    def _access_counts(self, ids: list[str]) -> dict[str, int]:
        return self.index.access_counts(ids)

    def _record_access(self, ids: list[str]) -> None:
        self.index.record_access(ids)

    def _ensure_synced(self) -> None:
        try:
            self.indexer.sync_if_needed()
        except MemoryIndexError as exc:
            # e.g. a full disk: the Markdown is safe, the index lags; the next sync catches up.
            self._sync_error = scrub(exc).replace(self.location + os.sep, "")
            self.mark_changed()
            logger.warning("sync failed, searching the index as it is: %s", self._sync_error)
        else:
            self._sync_error = None

    def mark_changed(self) -> None:
        """Note that the Markdown changed; the next search syncs first."""
        self.indexer.mark_dirty()

    def load_session_context(self, max_tokens: int | None = None) -> str:
        """MEMORY.md, today's and yesterday's logs within a token budget; cut with a note, never dropped."""
        budget = self.config.max_session_context_tokens if max_tokens is None else max_tokens
        return build_session_context(self.store, budget).text

    def session_context_report(self, max_tokens: int | None = None) -> SessionContext:
        """The session context with how many lines of each file it shows (``md-memory status`` prints it)."""
        budget = self.config.max_session_context_tokens if max_tokens is None else max_tokens
        return build_session_context(self.store, budget, warn=False)

    # -- index ----------------------------------------------------------------------

    def sync(self, force: bool = False, progress: ProgressCallback | None = None) -> SyncStats:
        """Bring the index up to date now; ``force`` re-chunks every file.

        ``progress`` (default: the memory's) receives ``index`` and ``embed`` events.
        """
        self._check_open()
        return self.indexer.sync(force=force, progress=progress)

    def rebuild(self, progress: ProgressCallback | None = None) -> SyncStats:
        """Build a fresh index from the Markdown and swap it in atomically (``progress`` as for sync)."""
        self._check_open()
        return self.indexer.rebuild(progress=progress)

    def verify(self, repair: bool = True, progress: ProgressCallback | None = None) -> VerifyReport:
        """Compare every Markdown file with the index; re-sync what differs when ``repair``.

        See :func:`~langchain_md_memory.sync.verify.verify_index`. Example: ``assert mem.verify().ok``.
        ``progress`` (default: the memory's) receives ``verify`` events, then the repair's sync events.
        """
        with self._lock:
            return verify_index(self.indexer, repair=repair, progress=progress or self.progress)

    def embedding_model(self) -> tuple[Embeddings, int] | None:
        """The LangChain ``Embeddings`` in use and their dimension (probed once); ``None``: keyword-only."""
        return None if self.embedder is None else (self.embedder.embeddings, self.embedder.identity().dim)

    def similarity(self, query: str, texts: Sequence[str]) -> list[float] | None:
        """Cosine similarity of ``query`` to each text (vectors cached in the index); ``None``: no vectors."""
        vector, _ = self._query_vector(query)
        if vector is None or self.embedder is None:
            return None
        return cosines(self.index, self.embedder, index_identity(self.embedder), vector, texts)

    def status(self) -> dict[str, Any]:
        """Counts and state: files, chunks, embedded, provider, last sync, fallbacks."""
        chunks, embedded = self.index.count_chunks()
        identity = None
        if self.embedder is not None:
            try:
                identity = index_identity(self.embedder)
            except Exception as exc:
                identity = f"unavailable ({type(exc).__name__})"
        return {
            "memory_dir": self.location,
            "index": self.index.path,
            "files": len(self.index.file_states()),
            "chunks": chunks,
            "embedded": embedded,
            "provider": None if self.embedder is None else self.embedder.provider,
            "embedding_identity": identity,
            "identity_changed_from": self.indexer.identity_changed_from,
            "embedding_error": self.indexer.embedding_error,
            "waiting_for_embeddings": 0 if self.embedder is None else chunks - embedded,
            "skipped_files": dict(self.indexer.skipped),
            "file_warnings": dict(self.indexer.warnings),
            "index_fallback": self.index_fallback,
            "index_repaired": self.index.repaired,
            "sync_error": self._sync_error,
            "dirty": self.indexer.dirty,
            "last_sync": self.indexer.last_sync,
            "watching": self.watching,
            "watcher_healthy": self.watcher is not None and self.watcher.healthy,
            "watcher_syncs": None if self.watcher is None else self.watcher.sync_count,
            "watcher_error": None if self.watcher is None or self.watcher.last_error is None
            else scrub(self.watcher.last_error),
        }

    # -- watching -------------------------------------------------------------------

    @property
    def watching(self) -> bool:
        """True while the file watcher runs."""
        return self.watcher is not None and self.watcher.running

    def start_watching(self, on_sync: Callable[[SyncStats], None] | None = None, *,
                       debounce_ms: int | None = None) -> MemoryWatcher:
        """Sync the index on its own after files change, debounced (default ``watch_debounce_ms``).

        ``on_sync`` receives each sync's stats on the watcher thread.
        Idempotent: a running watcher is returned as is.
        """
        with self._lock:
            if self._closed:
                raise MemoryIndexError("this memory is closed; open a new MarkdownMemory to watch it")
            if self._backend is not None:
                raise MemoryStoreError(self._backend.folder_error)
            if self.watcher is None:
                self.watcher = MemoryWatcher(
                    self.memory_dir, self.indexer.sync,
                    debounce_ms=self.config.watch_debounce_ms if debounce_ms is None else debounce_ms,
                    recursive=self.store.recursive, on_change=self.mark_changed, on_sync=on_sync,
                )
            self.watcher.start()
            return self.watcher

    def stop_watching(self) -> None:
        """Stop the watcher and join its threads; searches still sync when files changed."""
        with self._lock:
            watcher, self.watcher = self.watcher, None
        if watcher is not None:
            watcher.stop()

    # -- lifecycle ------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """True after :meth:`close`: searches then raise, the Markdown files stay readable."""
        return self._closed

    def _check_open(self) -> None:
        # Without this, the index recovery would take the closed connection for damage and reopen it.
        if self._closed:
            raise MemoryIndexError("this memory is closed; open a new MarkdownMemory to search it")

    def close(self) -> None:
        """Stop the watcher and let a background folder walk finish, then close the index. Idempotent."""
        self.stop_watching()
        self.indexer.freshness.wait()
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self.indexer.handle.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        provider = "none" if self.embedder is None else self.embedder.provider
        return f"{type(self).__name__}({self.location!r}, embeddings={provider!r})"
