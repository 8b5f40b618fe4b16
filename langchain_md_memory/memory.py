"""The facade users construct: a memory composed of its owners, and its ways out to LangChain.

:class:`MarkdownMemory` forwards to four owners: ``documents`` (the Markdown behind the write guard),
``indexer`` (the index and its sync), ``searcher`` (recall, every ranking step, the hits) and the
watcher. Every method taking a file asks ``_route`` which memory holds it; :class:`ProjectMemory`
overrides that one method (``~global/...`` goes to the global memory) and adds the global memory to
its searcher's sources. The ways out (retriever, ``BaseStore``, dream, archives) use public methods.
"""

from __future__ import annotations

import datetime as dt
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from .aio import SYNC_TWIN, class_twin, closed_on_error, owned, routed, twin
from .config import MemoryConfig
from .embeddings import EmbeddingClient, resolve_embeddings
from .errors import MemoryIndexError, MemoryInputError, MemoryStoreError
from .features.archive import export_archive, import_archive
from .files.base import DocumentStore, StateStore
from .files.documents import Documents
from .files.projects import GLOBAL_PREFIX, ProjectIdentity, layered_context, memory_home, project_identity
from .files.session_context import SessionContext, build_session_context
from .files.store import MarkdownStore
from .index.base import Backend, SearchIndex
from .index.folder import open_folder
from .search.pipeline import RankedResults
from .search.searcher import Searcher, Source
from .sync.indexer import Indexer, SyncStats
from .sync.status import memory_status
from .sync.verify import VerifyReport, verify_index
from .sync.watcher import MemoryWatcher
from .types import MemorySearchResult, ProgressCallback

if TYPE_CHECKING:  # LangChain loads only when a way out is taken: a keyword search from the CLI needs none
    from langchain_core.embeddings import Embeddings
    from langchain_core.language_models import LanguageModelLike

    from .features.dream import DreamResult
    from .integrations.basestore import MarkdownBaseStore
    from .integrations.retriever import MarkdownMemoryRetriever

__all__ = ["SYNC_TWIN", "MarkdownMemory", "ProjectMemory"]

class MarkdownMemory:
    """Long-term memory in Markdown files with a rebuildable SQLite hybrid index (or, through
    :meth:`from_postgres`, one tenant's Markdown rows and index in PostgreSQL).

    Args:
        memory_dir: the folder of ``MEMORY.md``, daily logs, topic files, ``sessions/`` (created if missing).
        embeddings: a LangChain ``Embeddings``, or ``"auto"`` (OpenAI with ``OPENAI_API_KEY``, else the
            bundled offline model, else keyword-only), ``"openai[:<model>]"``, ``"local"``, ``"none"``.
        config: a :class:`MemoryConfig` or a dict of its fields.
        watch: start the file watcher at once. recursive: index subfolders (the global memory: no).
        progress: receives the :class:`~.types.ProgressEvent` s of syncs, rebuilds, verifies, archives.

    Every operation has an async twin (``aget``, ``asearch``, ...; ``sync``'s is ``async_index``).

    Example:
        .. code-block:: python

            with MarkdownMemory("memory", embeddings="none", config={"max_results": 3}) as mem:
                mem.append("Retirement target age: 60")
                assert "60" in mem.search("retirement age")[0].text
    """

    def __init__(self, memory_dir: str | os.PathLike[str] | None,
                 embeddings: Embeddings | EmbeddingClient | str | None = "auto",
                 config: MemoryConfig | Mapping[str, Any] | None = None, *, watch: bool = False,
                 recursive: bool = True, progress: ProgressCallback | None = None,
                 backend: Backend | None = None) -> None:
        config = config if isinstance(config, MemoryConfig) else MemoryConfig.model_validate(config or {})
        if backend is None and memory_dir is None:
            raise MemoryInputError("give the memory folder, or use MarkdownMemory.from_postgres")
        parts = backend or open_folder(memory_dir or ".", config, recursive=recursive)
        self._folder_error = parts.folder_error
        self.location = parts.location
        """Where the memory lives: its folder, or ``postgresql://host/db#tenant``."""
        self.state: StateStore = parts.state
        """Durable bookkeeping kept when the index goes (``.md-memory/state.json``, or a table)."""
        self.embedder: EmbeddingClient | None = embeddings if isinstance(embeddings, EmbeddingClient) else (
            resolve_embeddings(embeddings, batch_size=config.embedding_batch_size,
                               timeout_s=config.embedding_timeout_s, retries=config.embedding_retries))
        self.indexer = Indexer(parts.store, parts.index, self.embedder, config, progress)
        self.documents = Documents(parts.store, config, on_change=self.mark_changed)
        self.searcher = Searcher(self.indexer, self.embedder, parts.store, self.location)
        self.watcher: MemoryWatcher | None = None
        self.indexer.watcher_healthy = lambda: self.watcher is not None and self.watcher.healthy
        self.joined: list[MarkdownMemory] = []
        """Memories watched and closed with this one (a project memory's global memory)."""
        self._closed = False
        self._lock = threading.RLock()
        if watch:
            with closed_on_error(self):
                self.start_watching()

    @classmethod
    def from_postgres(cls, /, conninfo_or_pool: Any, tenant: str, *, embeddings: Any = "auto",
                      config: MemoryConfig | dict[str, Any] | None = None,
                      progress: ProgressCallback | None = None, vector_search: str = "auto",
                      pool_max_size: int = 10) -> MarkdownMemory:
        """One tenant's memory in PostgreSQL + pgvector (``postgres`` extra); see ``postgres.open_backend``.

        ``conninfo_or_pool``: a connection string or an open ``psycopg_pool.ConnectionPool`` (left open)."""
        from .postgres import open_backend  # the postgres extra: imported only when asked for

        cfg = config if isinstance(config, MemoryConfig) else MemoryConfig.model_validate(config or {})
        backend = open_backend(conninfo_or_pool, tenant, cfg, vector_search=vector_search,
                               pool_max_size=pool_max_size)
        with closed_on_error(backend.index):
            return cls(None, embeddings, cfg, progress=progress, backend=backend)

    @property
    def config(self) -> MemoryConfig:
        """The memory's :class:`MemoryConfig` (assignable: writes and searches use the new one)."""
        return self.documents.config

    @config.setter
    def config(self, value: MemoryConfig) -> None:
        self.documents.config = value

    @property
    def store(self) -> DocumentStore:
        """The document store: the folder of Markdown files, or a database's rows of them."""
        return self.documents.store

    @property
    def index(self) -> SearchIndex:
        """The index in use now."""
        return self.indexer.index

    @property
    def index_fallback(self) -> str | None:
        """Why the index lives in memory instead of beside the Markdown, or ``None``."""
        return self.indexer.handle.fallback

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
        if self._folder_error or not isinstance(self.store, MarkdownStore):
            raise MemoryStoreError(self._folder_error or f"{self.location} is not a folder")
        return self.store.root

    @property
    def in_folder(self) -> bool:
        """True for a folder memory (Markdown files on disk), False for a database backend."""
        return not self._folder_error

    def _route(self, file: str) -> tuple[MarkdownMemory, str, str]:
        """Which memory holds ``file``: ``(memory, its path there, the prefix its paths get here)``."""
        return self, file, ""

    # The Markdown: each is the method of :class:`~.files.documents.Documents` of that name.

    get, append, remember, write = routed(Documents.get), routed(Documents.append, paths_out=True), \
        routed(Documents.remember, paths_out=True), routed(Documents.write, paths_out=True)
    supersede, edit, delete = routed(Documents.supersede), routed(Documents.edit), routed(Documents.delete)
    replace_lines, insert_lines = routed(Documents.replace_lines), routed(Documents.insert_lines)
    update, remove = routed(Documents.update), routed(Documents.remove)
    read_bytes, exists, stat = routed(Documents.read_bytes), routed(Documents.exists), routed(Documents.stat)
    list_files, keep_version, move_files = owned(Documents.list_files), owned(Documents.keep_version), \
        owned(Documents.move_files)
    locked, job_lock, redact = owned(Documents.locked), owned(Documents.job_lock), owned(Documents.redact)

    def mark_changed(self) -> None:
        """Note that the Markdown changed; the next search syncs first."""
        self.indexer.mark_dirty()

    def search(self, query: str, *, max_results: int | None = None, as_of: dt.date | None = None
               ) -> list[MemorySearchResult]:
        """Hybrid search (recall, merge, min-score, decay, MMR, top-k), synced first; see :class:`Searcher`.

        ``as_of`` (else a date the question names): the struck History lines valid that day first."""
        return self.search_detailed(query, max_results=max_results, as_of=as_of).hits

    def search_detailed(self, query: str, *, max_results: int | None = None,
                        config: MemoryConfig | None = None, as_of: dt.date | None = None) -> RankedResults:
        """Like :meth:`search`, also returning the per-step funnel and degradation note."""
        self._check_open()
        return self.searcher.search(query, max_results=max_results, config=config or self.config, as_of=as_of)

    def similarity(self, query: str, texts: Sequence[str]) -> list[float] | None:
        """Cosine similarity of ``query`` to each text (vectors cached in the index); ``None``: no vectors."""
        return self.searcher.similarity(query, texts)

    def load_session_context(self, max_tokens: int | None = None) -> str:
        """MEMORY.md, today's and yesterday's logs within a token budget; cut with a note, never dropped."""
        budget = self.config.max_session_context_tokens if max_tokens is None else max_tokens
        return build_session_context(self.store, budget).text

    def session_context_report(self, max_tokens: int | None = None) -> SessionContext:
        """The session context with how many lines of each file it shows (``md-memory status`` prints it)."""
        budget = self.config.max_session_context_tokens if max_tokens is None else max_tokens
        return build_session_context(self.store, budget, warn=False)

    def sync(self, force: bool = False, progress: ProgressCallback | None = None) -> SyncStats:
        """Bring the index up to date now; ``force`` re-chunks every file (``progress``: index, embed)."""
        self._check_open()
        return self.indexer.sync(force=force, progress=progress)

    def rebuild(self, progress: ProgressCallback | None = None) -> SyncStats:
        """Build a fresh index from the Markdown and swap it in atomically (``progress`` as for sync)."""
        self._check_open()
        return self.indexer.rebuild(progress=progress)

    def verify(self, repair: bool = True, progress: ProgressCallback | None = None) -> VerifyReport:
        """Compare every Markdown file with the index; re-sync what differs when ``repair``."""
        with self._lock:
            return verify_index(self.indexer, repair=repair, progress=progress or self.progress)

    def embedding_model(self) -> tuple[Embeddings, int] | None:
        """The LangChain ``Embeddings`` in use and their dimension (probed once); ``None``: keyword-only."""
        return None if self.embedder is None else (self.embedder.embeddings, self.embedder.identity().dim)

    def status(self) -> dict[str, Any]:
        """Counts and state: files, chunks, embedded, provider, last sync, fallbacks, watcher."""
        return memory_status(self.location, self.indexer, self.embedder, self.watcher,
                             self.searcher.sync_error)

    @property
    def watching(self) -> bool:
        """True while the file watcher runs."""
        return self.watcher is not None and self.watcher.running

    def start_watching(self, on_sync: Callable[[SyncStats], None] | None = None, *,
                       debounce_ms: int | None = None) -> MemoryWatcher:
        """Sync the index after files change, debounced; ``on_sync`` gets each sync's stats (idempotent)."""
        with self._lock:
            if self._closed:
                raise MemoryIndexError("this memory is closed; open a new MarkdownMemory to watch it")
            if self._folder_error:
                raise MemoryStoreError(self._folder_error)
            watcher = self.watcher = self.watcher or MemoryWatcher(
                self.memory_dir, self.indexer.sync,
                debounce_ms=self.config.watch_debounce_ms if debounce_ms is None else debounce_ms,
                recursive=self.store.recursive, on_change=self.mark_changed, on_sync=on_sync)
            watcher.start()
        for other in self.joined:
            other.start_watching(on_sync, debounce_ms=debounce_ms)
        return watcher

    def stop_watching(self) -> None:
        """Stop the watcher and join its threads; searches still sync when files changed."""
        with self._lock:
            watcher, self.watcher = self.watcher, None
        if watcher is not None:
            watcher.stop()
        for other in self.joined:
            other.stop_watching()

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
        for other in self.joined:
            other.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        provider = "none" if self.embedder is None else self.embedder.provider
        return f"{type(self).__name__}({self.location!r}, embeddings={provider!r})"

    def as_retriever(self, **kwargs: Any) -> MarkdownMemoryRetriever:
        """A LangChain retriever, configured as ``VectorStore.as_retriever`` is."""
        from .integrations.retriever import MarkdownMemoryRetriever
        return MarkdownMemoryRetriever.from_memory(self, **kwargs)

    def as_store(self, **kwargs: Any) -> MarkdownBaseStore:
        """A LangGraph ``BaseStore`` over this memory: namespaces as folders, items as ``## key`` sections."""
        from .integrations.basestore import MarkdownBaseStore
        return MarkdownBaseStore(self, **kwargs)

    def dream(self, /, model: LanguageModelLike, **kwargs: Any) -> DreamResult:
        """Consolidate session logs into MEMORY.md with ``model``; see :func:`features.dream.dream`."""
        from .features.dream import dream
        return dream(self, model, **{"progress": self.progress, **kwargs})

    def export_archive(self, path: str | os.PathLike[str], progress: ProgressCallback | None = None) -> Path:
        """Write the Markdown files (and the state file, nothing else) to a ``.tar.gz``; returns its path."""
        return export_archive(self, path, progress or self.progress)

    @classmethod
    def import_archive(cls, /, path: str | os.PathLike[str], memory_dir: str | os.PathLike[str],
                       *, overwrite: bool = False, max_bytes: int | None = None,
                       max_files: int | None = None, **kwargs: Any) -> MarkdownMemory:
        """Unpack a validated archive into ``memory_dir`` and open it (``kwargs``: the constructor's)."""
        caps = {k: v for k, v in (("max_bytes", max_bytes), ("max_files", max_files)) if v is not None}
        import_archive(path, memory_dir, overwrite=overwrite, progress=kwargs.get("progress"), **caps)
        with closed_on_error(cls(memory_dir, **kwargs)) as mem:
            mem.sync(force=True)
        return mem

    @classmethod
    def for_project(cls, /, path: str | os.PathLike[str] = ".", root: str | os.PathLike[str] | None = None,
                    **kwargs: Any) -> ProjectMemory:
        """The memory of the project at ``path``, searched with the global one; see :class:`ProjectMemory`."""
        identity, home = project_identity(path), memory_home(root)
        watch = kwargs.pop("watch", False)
        mem = ProjectMemory(home / identity.id, **kwargs)
        mem.project = identity
        with closed_on_error(mem):
            # "none", not None: None would mean "auto" and could pick a different model.
            shared = {**kwargs, "embeddings": mem.embedder or "none", "config": mem.config,
                      "recursive": False}
            mem.global_memory = MarkdownMemory(home, **shared)
            mem.joined.append(mem.global_memory)
            mem.searcher.sources.append(Source(GLOBAL_PREFIX, "global", mem.global_memory.searcher))
            if watch:
                mem.start_watching()
        return mem

    asearch, asearch_detailed, asimilarity = twin(search), twin(search_detailed), twin(similarity)
    aload_session_context, asession_context_report = twin(load_session_context), twin(session_context_report)
    aget, aappend, aremember, asupersede = twin(get), twin(append), twin(remember), twin(supersede)
    aedit, adelete, areplace_lines, awrite = twin(edit), twin(delete), twin(replace_lines), twin(write)
    aupdate, aremove, aread_bytes, aexists = twin(update), twin(remove), twin(read_bytes), twin(exists)
    ainsert_lines, amove_files = twin(insert_lines), twin(move_files)
    astat, alist_files, akeep_version = twin(stat), twin(list_files), twin(keep_version)
    async_index, arebuild, averify, astatus = twin(sync), twin(rebuild), twin(verify), twin(status)
    aembedding_model, astart_watching, astop_watching = twin(embedding_model), twin(start_watching), \
        twin(stop_watching)
    aclose, adream, aexport_archive = twin(close), twin(dream), twin(export_archive)

    afrom_postgres, aimport_archive = class_twin(from_postgres), class_twin(import_archive)
    afor_project = class_twin(for_project)


# `async` is what the a-prefix rule gives for `sync`, and a keyword: reachable with getattr only.
setattr(MarkdownMemory, "async", MarkdownMemory.async_index)


class ProjectMemory(MarkdownMemory):
    """A project's memory searched with the global one (``scope="global"`` hits); ``~global/...`` goes there.

    Built by :meth:`MarkdownMemory.for_project`: files in ``<root>/<project-id>/`` (named by the git
    remote, else the path), the global memory is ``<root>``'s top-level files (``root``:
    ``$LANGCHAIN_MD_MEMORY_HOME``, else ``~/.langchain_md_memory``); both share one embedding client.
    """

    global_memory: MarkdownMemory
    """The global memory searched with this one."""
    project: ProjectIdentity
    """Who the project is (id, readable name, remote or path)."""

    def _route(self, file: str) -> tuple[MarkdownMemory, str, str]:
        if file.startswith(GLOBAL_PREFIX):
            return self.global_memory, file[len(GLOBAL_PREFIX):], GLOBAL_PREFIX
        return self, file, ""

    def load_session_context(self, max_tokens: int | None = None) -> str:
        """The global memory's context first, then the project's, each under its own heading, one budget."""
        budget = self.config.max_session_context_tokens if max_tokens is None else max_tokens
        return layered_context([
            (f"Global memory (paths under {GLOBAL_PREFIX})", self.global_memory.load_session_context),
            (f"Project memory ({self.project.name})", super().load_session_context),
        ], budget)

    def status(self) -> dict[str, Any]:
        """:meth:`MarkdownMemory.status` plus the project id and the global memory's folder."""
        return {**super().status(), "project": self.project.id,
                "global_memory_dir": str(self.global_memory.memory_dir)}
