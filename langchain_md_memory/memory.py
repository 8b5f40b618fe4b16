"""The facade users construct: a memory composed of its owners, and its ways out to LangChain.

:class:`MarkdownMemory` forwards to four private owners: ``_documents`` (the Markdown behind the write
guard), ``_indexer`` (the index and its sync), ``_searcher`` (the I/O of a search around the steps of
:mod:`.search.pipeline`) and ``_watcher``. Every method taking a file asks ``_route`` which memory
holds it; :class:`ProjectMemory` overrides that one method (``~global/...`` goes to the global memory)
and adds the global memory to its searcher's sources. The ways out (retriever, ``BaseStore``, dream,
archives) use public methods.
"""

from __future__ import annotations

import datetime as dt
import os
import threading
import warnings
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
from .index.sqlite.folder import open_folder
from .search.pipeline import RankedResults
from .search.searcher import Searcher, Source
from .sync.indexer import Indexer, SyncStats
from .sync.status import IndexedFile, indexed_files, memory_status
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
            resolve_embeddings(embeddings, batch_size=config.embedding.batch_size,
                               timeout_s=config.embedding.timeout_s, retries=config.embedding.retries))
        self._indexer = Indexer(parts.store, parts.index, self.embedder, config, progress)
        self._config = config
        self._documents = Documents(parts.store, config.limits, config.hygiene, on_change=self._mark_changed)
        self._searcher = Searcher(self._indexer, self.embedder, parts.store, self.location)
        self._watcher: MemoryWatcher | None = None
        self._indexer.watcher_healthy = lambda: self._watcher is not None and self._watcher.healthy
        self._joined: list[MarkdownMemory] = []  # watched and closed with it (a project's global memory)
        self._closed = False
        self._lock = threading.RLock()
        if watch:
            with closed_on_error(self):
                self.start_watching()

    def __getattr__(self, name: str) -> Any:
        """Names of earlier releases, each with a ``DeprecationWarning`` naming its successor (until 0.4)."""
        moved = _MOVED.get(name)
        if moved is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        successor, get = moved
        warnings.warn(f"MarkdownMemory.{name} is deprecated: use {successor} (it works until 0.4)",
                      DeprecationWarning, stacklevel=2)
        return get(self)

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
        """The memory's :class:`MemoryConfig` (assignable: writes, syncs and searches use the new one)."""
        return self._config

    @config.setter
    def config(self, value: MemoryConfig) -> None:
        self._config = self._indexer.config = value
        self._documents.limits, self._documents.hygiene = value.limits, value.hygiene

    @property
    def store(self) -> DocumentStore:
        """The document store: the folder of Markdown files, or a database's rows of them."""
        return self._documents.store

    @property
    def index(self) -> SearchIndex:
        """The index in use now."""
        return self._indexer.index

    @property
    def progress(self) -> ProgressCallback | None:
        """Receives the progress of syncs (searches' too), rebuilds and verifies not given their own."""
        return self._indexer.progress

    @progress.setter
    def progress(self, callback: ProgressCallback | None) -> None:
        self._indexer.progress = callback

    @property
    def memory_dir(self) -> Path:
        """The absolute memory folder; ``MemoryStoreError`` for a memory that is none (PostgreSQL)."""
        store = self._documents.backing_store  # a draft's store records writes in the same folder
        if self._folder_error or not isinstance(store, MarkdownStore):
            raise MemoryStoreError(self._folder_error or f"{self.location} is not a folder")
        return store.root

    @property
    def in_folder(self) -> bool:
        """True for a folder memory (Markdown files on disk), False for a database backend."""
        return not self._folder_error

    def _route(self, file: str) -> tuple[MarkdownMemory, str, str]:
        """Which memory holds ``file``: ``(memory, its path there, the prefix its paths get here)``."""
        return self, file, ""

    # The Markdown: each is the method of :class:`~.files.documents.Documents` of that name.

    get = routed(Documents.get)
    append = routed(Documents.append, paths_out=True)
    remember = routed(Documents.remember, paths_out=True)
    write = routed(Documents.write, paths_out=True)
    supersede = routed(Documents.supersede)
    edit = routed(Documents.edit)
    delete_text = routed(Documents.delete_text)
    replace_lines = routed(Documents.replace_lines)
    insert_lines = routed(Documents.insert_lines)
    update = routed(Documents.update)
    delete_file = routed(Documents.delete_file)
    read_bytes = routed(Documents.read_bytes)
    exists = routed(Documents.exists)
    stat = routed(Documents.stat)
    list_files = owned(Documents.list_files)
    keep_version = owned(Documents.keep_version)
    move_files = owned(Documents.move_files)
    locked = owned(Documents.locked)
    job_lock = owned(Documents.job_lock)
    redact = owned(Documents.redact)

    def _mark_changed(self) -> None:
        """Note that the Markdown changed; the next search syncs first."""
        self._indexer.mark_dirty()

    def search(self, query: str, *, max_results: int | None = None, as_of: dt.date | None = None
               ) -> list[MemorySearchResult]:
        """Hybrid search (recall, merge, min-score, decay, MMR, top-k), synced first; see :class:`Searcher`.

        ``as_of`` (else a date the question names): the struck History lines valid that day first."""
        return self.search_detailed(query, max_results=max_results, as_of=as_of).hits

    def search_detailed(self, query: str, *, max_results: int | None = None,
                        config: MemoryConfig | None = None, as_of: dt.date | None = None,
                        progress: ProgressCallback | None = None) -> RankedResults:
        """Like :meth:`search`, also returning the per-step funnel and degradation note.

        ``progress`` receives the events of the sync the search runs first, if it runs one (else the
        memory's own callback does)."""
        self._check_open()
        return self._searcher.search(query, max_results=max_results, config=config or self.config,
                                     as_of=as_of, progress=progress)

    def similarity(self, query: str, texts: Sequence[str]) -> list[float] | None:
        """Cosine similarity of ``query`` to each text (vectors cached in the index); ``None``: no vectors."""
        return self._searcher.similarity(query, texts)

    def load_session_context(self, max_tokens: int | None = None) -> str:
        """MEMORY.md, today's and yesterday's logs within a token budget; cut with a note, never dropped."""
        budget = self.config.session.context_tokens if max_tokens is None else max_tokens
        return build_session_context(self.store, budget).text

    def session_context_report(self, max_tokens: int | None = None) -> SessionContext:
        """The session context with how many lines of each file it shows (``md-memory status`` prints it)."""
        budget = self.config.session.context_tokens if max_tokens is None else max_tokens
        return build_session_context(self.store, budget, warn=False)

    def sync(self, force: bool = False, progress: ProgressCallback | None = None) -> SyncStats:
        """Bring the index up to date now; ``force`` re-chunks every file (``progress``: index, embed)."""
        self._check_open()
        return self._indexer.sync(force=force, progress=progress)

    def rebuild(self, progress: ProgressCallback | None = None) -> SyncStats:
        """Build a fresh index from the Markdown and swap it in atomically (``progress`` as for sync)."""
        self._check_open()
        return self._indexer.rebuild(progress=progress)

    def verify(self, repair: bool = True, progress: ProgressCallback | None = None) -> VerifyReport:
        """Compare every Markdown file with the index; re-sync what differs when ``repair``."""
        with self._lock:
            return verify_index(self._indexer, repair=repair, progress=progress or self.progress)

    def embedding_model(self) -> tuple[Embeddings, int] | None:
        """The LangChain ``Embeddings`` in use and their dimension (probed once); ``None``: keyword-only."""
        return None if self.embedder is None else (self.embedder.embeddings, self.embedder.identity().dim)

    def status(self) -> dict[str, Any]:
        """Counts and state: files, files to index, chunks, embedded and waiting, provider, last sync,
        fallbacks, watcher. Only reads (a walk of the files' stamps, the index's counts): it never
        indexes or embeds, so it answers at once; :meth:`sync` does the work it shows is left."""
        return memory_status(self.location, self._indexer, self.embedder, self._watcher,
                             self._searcher.sync_error)

    def indexed_files(self) -> dict[str, IndexedFile]:
        """Each file the index holds, by path: size, last change, chunks (the index's rows, no Markdown)."""
        return indexed_files(self._indexer)

    @property
    def watching(self) -> bool:
        """True while the file watcher runs."""
        return self._watcher is not None and self._watcher.running

    def start_watching(self, on_sync: Callable[[SyncStats], None] | None = None, *,
                       debounce_ms: int | None = None) -> MemoryWatcher:
        """Sync the index after files change, debounced; ``on_sync`` gets each sync's stats (idempotent)."""
        with self._lock:
            if self._closed:
                raise MemoryIndexError("this memory is closed; open a new MarkdownMemory to watch it")
            if self._folder_error:
                raise MemoryStoreError(self._folder_error)
            watcher = self._watcher = self._watcher or MemoryWatcher(
                self.memory_dir, self._indexer.sync,
                debounce_ms=self.config.index.watch_debounce_ms if debounce_ms is None else debounce_ms,
                recursive=self.store.recursive, on_change=self._mark_changed, on_sync=on_sync)
            watcher.start()
        for other in self._joined:
            other.start_watching(on_sync, debounce_ms=debounce_ms)
        return watcher

    def stop_watching(self) -> None:
        """Stop the watcher and join its threads; searches still sync when files changed."""
        with self._lock:
            watcher, self._watcher = self._watcher, None
        if watcher is not None:
            watcher.stop()
        for other in self._joined:
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
        """Stop the watcher and background embedding (what it embedded is kept), let a background folder
        walk finish, then close the index. Idempotent."""
        self.stop_watching()
        self._indexer.stop_embedding()
        self._indexer.freshness.wait()
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._indexer.handle.close()
        for other in self._joined:
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
            mem._joined.append(mem.global_memory)
            mem._searcher.sources.append(Source(GLOBAL_PREFIX, "global", mem.global_memory._searcher))
            if watch:
                mem.start_watching()
        return mem

    # Async twins: the same parameters, run in a worker thread (``sync``'s is ``async_index``).
    asearch = twin(search)
    asearch_detailed = twin(search_detailed)
    asimilarity = twin(similarity)
    aload_session_context = twin(load_session_context)
    asession_context_report = twin(session_context_report)
    aget = twin(get)
    aappend = twin(append)
    aremember = twin(remember)
    asupersede = twin(supersede)
    aedit = twin(edit)
    adelete_text = twin(delete_text)
    areplace_lines = twin(replace_lines)
    ainsert_lines = twin(insert_lines)
    awrite = twin(write)
    aupdate = twin(update)
    adelete_file = twin(delete_file)
    amove_files = twin(move_files)
    aread_bytes = twin(read_bytes)
    aexists = twin(exists)
    astat = twin(stat)
    alist_files = twin(list_files)
    akeep_version = twin(keep_version)
    async_index = twin(sync)
    arebuild = twin(rebuild)
    averify = twin(verify)
    astatus = twin(status)
    aindexed_files = twin(indexed_files)
    aembedding_model = twin(embedding_model)
    astart_watching = twin(start_watching)
    astop_watching = twin(stop_watching)
    aclose = twin(close)
    adream = twin(dream)
    aexport_archive = twin(export_archive)

    afrom_postgres = class_twin(from_postgres)
    aimport_archive = class_twin(import_archive)
    afor_project = class_twin(for_project)


_MOVED: dict[str, tuple[str, Callable[[MarkdownMemory], Any]]] = {
    "delete": ("delete_text", lambda mem: mem.delete_text),
    "adelete": ("adelete_text", lambda mem: mem.adelete_text),
    "remove": ("delete_file", lambda mem: mem.delete_file),
    "aremove": ("adelete_file", lambda mem: mem.adelete_file),
    "mark_changed": ("nothing: a write through the memory marks it", lambda mem: mem._mark_changed),
    "index_fallback": ('status()["index_fallback"]', lambda mem: mem._indexer.handle.fallback),
    # The owners the facade forwards to are its own business.
    "documents": ("the memory's methods", lambda mem: mem._documents),
    "indexer": ("sync(), rebuild(), status()", lambda mem: mem._indexer),
    "searcher": ("search_detailed()", lambda mem: mem._searcher),
    "watcher": ("watching, start_watching(), stop_watching()", lambda mem: mem._watcher),
    "joined": ("the project memory's global_memory", lambda mem: mem._joined),
}
"""Attributes of earlier releases: their successor, and how to reach what they named."""


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
        budget = self.config.session.context_tokens if max_tokens is None else max_tokens
        return layered_context([
            (f"Global memory (paths under {GLOBAL_PREFIX})", self.global_memory.load_session_context),
            (f"Project memory ({self.project.name})", super().load_session_context),
        ], budget)

    def status(self) -> dict[str, Any]:
        """:meth:`MarkdownMemory.status` plus the project id and the global memory's folder."""
        return {**super().status(), "project": self.project.id,
                "global_memory_dir": str(self.global_memory.memory_dir)}
