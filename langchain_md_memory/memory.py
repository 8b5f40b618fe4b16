"""The facade: one object that owns the Markdown store, index, embeddings and sync.

Example:
    .. code-block:: python

        from langchain_md_memory import MarkdownMemory

        with MarkdownMemory("memory", embeddings="none") as mem:
            mem.append("- Risk: conservative; no single stock above 5% of the portfolio")
            hit = mem.search("single stock limit")[0]
            print(hit.path, hit.start_line, hit.score)
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.embeddings import Embeddings

from .config import MemoryConfig
from .embeddings.client import EmbeddingClient, resolve_embeddings
from .errors import MemoryIndexError, MemoryInputError, MemoryPathError, MemoryStoreError
from .files.paths import INDEX_FILE, is_managed_file
from .files.store import MarkdownStore
from .index.sqlite import MemoryIndex
from .project import (
    GLOBAL_PREFIX,
    ProjectIdentity,
    combine_recalls,
    layered_context,
    mark_scopes,
    memory_home,
    project_identity,
    split_global_path,
    split_ids,
)
from .search.pipeline import RankedResults, Recall, rank
from .sync.indexer import Indexer, ProgressFn, SyncStats, index_identity
from .types import MemorySearchResult

if TYPE_CHECKING:
    from langchain_core.language_models import LanguageModelLike

    from .features.dream import DreamResult
    from .integrations.basestore import MarkdownBaseStore
    from .integrations.retriever import MarkdownMemoryRetriever
    from .sync.verify import VerifyReport
    from .sync.watcher import MemoryWatcher

__all__ = ["MarkdownMemory"]

logger = logging.getLogger(__name__)


_UNUSABLE_INDEX = ("malformed", "not a database", "disk i/o", "no such table", "no such column",
                   "locked", "busy", "readonly", "unable to open")


def _index_unusable(exc: Exception) -> bool:
    """True for errors that replacing the index can cure (damage, a lock, a vanished file)."""
    message = str(exc).lower()
    return any(word in message for word in _UNUSABLE_INDEX)


class MarkdownMemory:
    """Long-term memory in Markdown files with a rebuildable SQLite hybrid index.

    Args:
        memory_dir: the folder holding ``MEMORY.md``, daily ``YYYY-MM-DD.md``
            logs, topic files and ``sessions/``; created if missing.
        embeddings: a LangChain ``Embeddings`` instance, or a spec string:
            ``"auto"`` (OpenAI when ``OPENAI_API_KEY`` is set, else the bundled
            offline model when installed, else keyword-only), ``"openai"``,
            ``"openai:<model>"``, ``"local"``, ``"none"``.
        config: a :class:`MemoryConfig` or a dict of its fields.
        watch: start the file watcher at once (see :meth:`start_watching`);
            ``close()`` stops it.
        recursive: index subfolders (``sessions/``, topic folders); ``False``
            keeps to top-level files, as the global memory of
            :meth:`for_project` does.

    Example:
        .. code-block:: python

            mem = MarkdownMemory("memory", embeddings="none", config={"max_results": 3})
            mem.append("Retirement target age: 60")
            assert "60" in mem.search("retirement age")[0].text
            mem.close()
    """

    def __init__(
        self,
        memory_dir: str | os.PathLike[str],
        embeddings: Embeddings | EmbeddingClient | str | None = "auto",
        config: MemoryConfig | Mapping[str, Any] | None = None,
        *,
        watch: bool = False,
        recursive: bool = True,
    ) -> None:
        if not isinstance(config, MemoryConfig):
            config = MemoryConfig.model_validate(config or {})
        self.config = config
        self.store = MarkdownStore(memory_dir, recursive=recursive)
        self.store.sweep_temp_files()
        # An existing client is shared as is (the global memory reuses its project's).
        self.embedder: EmbeddingClient | None = embeddings if isinstance(embeddings, EmbeddingClient) else (
            resolve_embeddings(
                embeddings,
                batch_size=self.config.embedding_batch_size,
                timeout_s=self.config.embedding_timeout_s,
                retries=self.config.embedding_retries,
            )
        )
        self.index_fallback: str | None = None
        self.indexer = Indexer(self.store, self._open_index(), self.embedder, self.config)
        self._closed = False
        self._lock = threading.RLock()
        self.watcher: MemoryWatcher | None = None
        self.global_memory: MarkdownMemory | None = None
        """The global memory searched with this one (set by :meth:`for_project`)."""
        self.project: ProjectIdentity | None = None
        if watch:
            try:
                self.start_watching()
            except BaseException:
                self.close()
                raise

    @property
    def memory_dir(self) -> Path:
        """The absolute memory folder."""
        return self.store.root

    @property
    def index(self) -> MemoryIndex:
        """The SQLite index currently in use."""
        return self.indexer.index

    def _open_index(self) -> MemoryIndex:
        path = str(self.store.root / INDEX_FILE)
        try:
            return MemoryIndex.open(path)
        except MemoryIndexError as exc:
            # e.g. a read-only folder: keep answering from an in-memory index built from the Markdown.
            self.index_fallback = str(exc)
            logger.warning("cannot use %s (%s); using an in-memory index", path, exc)
            return MemoryIndex.open(":memory:")

    # -- search ---------------------------------------------------------------------

    def search(self, query: str, *, max_results: int | None = None) -> list[MemorySearchResult]:
        """Hybrid search: recall, merge, min-score, decay, MMR, top-k.

        Syncs first when the Markdown changed. Never raises for an embedding
        outage: the keyword path answers alone.
        """
        return self.search_detailed(query, max_results=max_results).hits

    async def asearch(self, query: str, *, max_results: int | None = None) -> list[MemorySearchResult]:
        """Async twin of :meth:`search`."""
        return await asyncio.to_thread(self.search, query, max_results=max_results)

    def search_detailed(self, query: str, *, max_results: int | None = None,
                        config: MemoryConfig | None = None) -> RankedResults:
        """Like :meth:`search`, also returning the per-stage funnel and degradation note."""
        cfg = config or self.config
        k = max_results if max_results is not None else cfg.max_results
        if k < 1:
            raise MemoryInputError(f"max_results must be at least 1, got {k}")
        self._check_open()
        self._ensure_synced()
        pool = cfg.candidate_multiplier * k
        query_vector, degraded = self._query_vector(query)
        recall = self._recall_recovering(query, pool, cfg, query_vector, degraded)
        other = self.global_memory
        if other is not None:
            # One ranking over both memories; global ids and paths get the ~global/ prefix.
            other._ensure_synced()
            shared = other.embedder is self.embedder
            vector_g, degraded_g = (query_vector, degraded) if shared else other._query_vector(query)
            recall = combine_recalls(recall, other._recall_recovering(query, pool, cfg, vector_g, degraded_g))
        counts = self._access_counts(recall) if cfg.access_weight > 0 else None
        ranked = rank(recall, cfg, max_results=k, access_counts=counts)
        if other is not None:
            ranked = RankedResults(mark_scopes(ranked.hits), ranked.funnel, ranked.degraded)
        if cfg.access_weight > 0:
            own, theirs = split_ids([h.chunk_id for h in ranked.hits])
            self.index.record_access(own)
            if other is not None and theirs:
                other.index.record_access(theirs)
        return ranked

    def _query_vector(self, query: str) -> tuple[Any, str | None]:
        if self.embedder is None or not query.strip():
            return None, None
        if self.indexer.embedding_error is not None:
            return None, f"embeddings unavailable ({self.indexer.embedding_error}); keyword results only"
        try:
            return self.embedder.embed_query(query), None
        except Exception as exc:  # outage, timeout: answer from keywords
            logger.warning("query embedding failed, answering from keywords: %s", exc)
            return None, f"vector search failed ({type(exc).__name__}: {exc}); keyword results only"

    def _recall_recovering(self, query: str, pool: int, cfg: MemoryConfig, query_vector: Any,
                           degraded: str | None) -> Recall:
        used = self.indexer.index
        try:
            return self._recall(query, pool, cfg, query_vector, degraded)
        # Damaged, locked or vanished mid-use: the Markdown still answers. Damage met while a
        # lazy cursor is read arrives as a bare sqlite3.Error. An index swapped out under this search
        # (rebuilt by another thread) is simply asked again. Anything else is a bug: raise it.
        except (MemoryIndexError, sqlite3.Error) as exc:
            with self._lock:  # a rebuild in progress holds it until the new index is in place
                swapped = self.indexer.index is not used
            if not swapped:
                if not _index_unusable(exc):
                    raise
                self._recover_index(exc, used)
            return self._recall(query, pool, cfg, query_vector, degraded)

    def _recover_index(self, exc: Exception, failed: MemoryIndex) -> None:
        """Swap out an index that failed mid-use: a rebuilt file, else an in-memory index."""
        with self._lock:
            old = self.indexer.index
            if old is not failed:  # another thread already replaced it
                return
            # A lock is another process at work, not damage: never rebuild over its file.
            locked = "locked" in str(exc) or "busy" in str(exc)
            if old.path != ":memory:" and not locked:
                logger.warning("index %s failed (%s); rebuilding it from the Markdown", old.path, exc)
                try:
                    self.rebuild()
                    return
                except (MemoryStoreError, OSError) as again:
                    exc = MemoryIndexError(f"{exc}; the rebuild failed too: {again}")
            logger.warning("index %s failed (%s); answering from an in-memory index", old.path, exc)
            self.index_fallback = str(exc)
            self.indexer.index = MemoryIndex.open(":memory:")
            self.indexer.mark_dirty()
            old.close()
            self.indexer.sync()

    def _recall(self, query: str, pool: int, cfg: MemoryConfig, query_vector: Any,
                degraded: str | None) -> Recall:
        keyword = self.index.keyword_search(query, pool)
        vector: list[Any] = []
        if query_vector is not None:
            try:
                vector = self.index.vector_search(query_vector, pool)
            except Exception as exc:  # e.g. a dimension change: answer from keywords
                logger.warning("vector recall failed, answering from keywords: %s", exc)
                degraded = f"vector search failed ({type(exc).__name__}: {exc}); keyword results only"
        ids = [r.id for r, _ in vector] + [r.id for r, _ in keyword]
        wants_vectors = cfg.mmr.enabled and cfg.mmr.similarity != "jaccard"
        vectors = self.index.vectors_for(ids) if vector and wants_vectors else {}
        return Recall(vector, keyword, vectors, degraded)

    def _access_counts(self, recall: Recall) -> dict[str, int] | None:
        ids = [r.id for r, _ in recall.vector] + [r.id for r, _ in recall.keyword]
        if not ids:
            return None
        own, theirs = split_ids(ids)
        counts = self.index.access_counts(own) if own else {}
        if theirs and self.global_memory is not None:
            global_counts = self.global_memory.index.access_counts(theirs)
            counts.update({GLOBAL_PREFIX + i: n for i, n in global_counts.items()})
        return counts

    def _ensure_synced(self) -> None:
        try:
            self.indexer.sync_if_needed()
        except (MemoryIndexError, sqlite3.Error) as exc:
            logger.warning("sync failed, searching the index as it is: %s", exc)

    # -- files ----------------------------------------------------------------------

    def get(self, path: str, start_line: int | None = None, end_line: int | None = None) -> str:
        """Exact lines of a memory file (1-based, inclusive); the whole file by default."""
        target, path = self._route(path)
        if target is not self:
            return target.get(path, start_line, end_line)
        self._check_flat(path)
        return self.store.read_lines(path, start_line, end_line)

    def append(self, content: str, file: str = "long_term") -> str:
        """Append ``content`` to a memory file; returns the file's relative path."""
        target, file = self._route(file)
        if target is not self:
            return GLOBAL_PREFIX + target.append(content, file)
        path = self._writable(file)
        if not content or not content.strip():
            raise MemoryInputError("content is empty: give the text to remember")
        self.store.append(path, content)
        self.indexer.mark_dirty()
        return path

    def edit(self, old_text: str, new_text: str, file: str = "long_term") -> bool:
        """Replace the first exact occurrence of ``old_text``; False when absent."""
        target, file = self._route(file)
        if target is not self:
            return target.edit(old_text, new_text, file)
        path = self._writable(file)
        changed = self.store.edit(path, old_text, new_text)
        if changed:
            self.indexer.mark_dirty()
        return changed

    def delete(self, text: str, file: str = "long_term") -> bool:
        """Remove the first exact occurrence of ``text``; False when absent."""
        target, file = self._route(file)
        if target is not self:
            return target.delete(text, file)
        path = self._writable(file)
        changed = self.store.delete(path, text)
        if changed:
            self.indexer.mark_dirty()
        return changed

    def write(self, file: str, content: str) -> str:
        """Replace a memory file's whole content atomically; returns its relative path."""
        target, file = self._route(file)
        if target is not self:
            return GLOBAL_PREFIX + target.write(file, content)
        path = self._writable(file)
        self.store.write(path, content)
        self.indexer.mark_dirty()
        return path

    def _writable(self, file: str) -> str:
        path = self.store.relpath(file)
        if not is_managed_file(path):
            raise MemoryPathError(
                f"Only Markdown memory files can be written: {file!r} is not a visible '.md' file. "
                "Use 'long_term', 'daily' or a relative path such as 'goals.md'."
            )
        self._check_flat(path)
        self.store.resolve(path)
        return path

    def _route(self, file: str) -> tuple[MarkdownMemory, str]:
        """``(global memory, inner path)`` for a ``~global/...`` path of a project memory."""
        inner = split_global_path(file)
        if inner is not None and self.global_memory is not None:
            return self.global_memory, inner
        return self, file

    def _check_flat(self, path: str) -> None:
        # The global memory's subfolders are other projects' memories: never reach them through it.
        if not self.store.recursive and "/" in self.store.relpath(path):
            raise MemoryPathError(
                f"{path!r} is in a subfolder; this memory holds only top-level files such as 'MEMORY.md'"
            )

    def load_session_context(self, max_tokens: int | None = None) -> str:
        """MEMORY.md, then today's and yesterday's logs, within a token budget.

        A project memory (:meth:`for_project`) loads the global memory first,
        then the project's, each under its own heading, within the one budget.
        """
        budget = self.config.max_session_context_tokens if max_tokens is None else max_tokens
        if self.global_memory is None:
            return self.store.load_session_context(budget)
        name = self.project.name if self.project is not None else self.memory_dir.name
        return layered_context([
            (f"Global memory (paths under {GLOBAL_PREFIX})", self.global_memory.store.load_session_context),
            (f"Project memory ({name})", self.store.load_session_context),
        ], budget)

    # -- index ----------------------------------------------------------------------

    def sync(self, force: bool = False, progress: ProgressFn | None = None) -> SyncStats:
        """Bring the index up to date now; ``force`` re-chunks every file."""
        self._check_open()
        return self.indexer.sync(force=force, progress=progress)

    def rebuild(self, progress: ProgressFn | None = None) -> SyncStats:
        """Build a fresh index file from the Markdown and swap it in atomically."""
        self._check_open()
        with self._lock:
            old = self.indexer.index
            if old.path == ":memory:":
                return self.indexer.sync(force=True, progress=progress)
            _, stats = self.indexer.rebuild(MemoryIndex.open, progress=progress)
            old.close()
            return stats

    def verify(self, repair: bool = True) -> VerifyReport:
        """Compare every Markdown file with the index; re-sync what differs when ``repair``.

        See :func:`verify.verify_index`. Example: ``assert mem.verify().ok``.
        """
        from .sync.verify import verify_index

        with self._lock:
            return verify_index(self.indexer, repair=repair)

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
            "memory_dir": str(self.memory_dir),
            "index": self.index.path,
            "files": len(self.index.file_states()),
            "chunks": chunks,
            "embedded": embedded,
            "provider": None if self.embedder is None else self.embedder.provider,
            "embedding_identity": identity,
            "identity_changed_from": self.indexer.identity_changed_from,
            "embedding_error": self.indexer.embedding_error,
            "index_fallback": self.index_fallback,
            "dirty": self.indexer.dirty,
            "last_sync": self.indexer.last_sync,
            "watching": self.watching,
            "watcher_syncs": None if self.watcher is None else self.watcher.sync_count,
            "watcher_error": None if self.watcher is None else self.watcher.last_error,
            "project": None if self.project is None else self.project.id,
            "global_memory_dir": None if self.global_memory is None else str(self.global_memory.memory_dir),
        }

    # -- dream and archive ----------------------------------------------------------

    def dream(self, model: LanguageModelLike, **kwargs: Any) -> DreamResult:
        """Consolidate session logs into MEMORY.md with ``model``; see :func:`dream.dream` for kwargs."""
        from .features.dream import dream

        return dream(self, model, **kwargs)

    async def adream(self, model: LanguageModelLike, **kwargs: Any) -> DreamResult:
        """Async twin of :meth:`dream`."""
        return await asyncio.to_thread(self.dream, model, **kwargs)

    def export_archive(self, path: str | os.PathLike[str]) -> Path:
        """Write the Markdown files (nothing else) to a ``.tar.gz``; returns its path."""
        from .features.archive import export_archive

        return export_archive(self, path)

    @classmethod
    def import_archive(cls, path: str | os.PathLike[str], memory_dir: str | os.PathLike[str],
                       *, overwrite: bool = False, max_bytes: int | None = None,
                       max_files: int | None = None, **kwargs: Any) -> MarkdownMemory:
        """Unpack a validated archive into ``memory_dir`` and open it with a fresh index.

        ``kwargs`` (``embeddings``, ``config``) go to the constructor.
        """
        from .features.archive import import_archive

        caps = {k: v for k, v in (("max_bytes", max_bytes), ("max_files", max_files)) if v is not None}
        import_archive(path, memory_dir, overwrite=overwrite, **caps)
        mem = cls(memory_dir, **kwargs)
        try:
            mem.sync(force=True)
        except BaseException:
            mem.close()
            raise
        return mem

    # -- integration ----------------------------------------------------------------

    def as_retriever(self, **kwargs: Any) -> MarkdownMemoryRetriever:
        """A LangChain retriever over this memory (``k`` and config overrides as kwargs)."""
        from .integrations.retriever import MarkdownMemoryRetriever

        return MarkdownMemoryRetriever.from_memory(self, **kwargs)

    def as_store(self, **kwargs: Any) -> MarkdownBaseStore:
        """A LangGraph ``BaseStore`` over this memory: namespaces as folders, items as ``## key`` sections.

        Example:
            .. code-block:: python

                store = mem.as_store()
                store.put(("users", "alice"), "food", {"content": "Loves hotpot"})
                agent = create_agent(model, tools=[...], store=store)
        """
        from .integrations.basestore import MarkdownBaseStore

        return MarkdownBaseStore(self, **kwargs)

    # -- lifecycle ------------------------------------------------------------------

    @classmethod
    def for_project(cls, path: str | os.PathLike[str] = ".", root: str | os.PathLike[str] | None = None,
                    **kwargs: Any) -> MarkdownMemory:
        """The memory of the project at ``path``, searched together with the global memory.

        The project is named by its git remote (``org/repo`` plus a short
        hash), else its path; see :func:`project.project_identity`. Its files
        live in ``<root>/<project-id>/``; the global memory is ``<root>``'s
        top-level files. ``root`` defaults to ``$LANGCHAIN_MD_MEMORY_HOME``,
        else ``~/.langchain_md_memory``. ``kwargs`` (``embeddings``,
        ``config``, ``watch``) go to both memories, which share one
        embedding client; hits say ``scope="project"`` or ``"global"``.

        Example:
            .. code-block:: python

                with MarkdownMemory.for_project(".", embeddings="none") as mem:
                    mem.append("- Run tests with `make check`")  # project MEMORY.md
                    mem.append("- Prefers short answers", file="~global/MEMORY.md")
                    print([(h.scope, h.path) for h in mem.search("tests")])
        """
        identity = project_identity(path)
        home = memory_home(root)
        mem = cls(home / identity.id, **kwargs)
        mem.project = identity
        try:
            # "none", not None: None would mean "auto" and could pick a different model.
            embedder = mem.embedder if mem.embedder is not None else "none"
            shared = {**kwargs, "embeddings": embedder, "config": mem.config, "recursive": False}
            mem.global_memory = cls(home, **shared)
        except BaseException:
            mem.close()
            raise
        return mem

    # -- watching -------------------------------------------------------------------

    @property
    def watching(self) -> bool:
        """True while the file watcher runs."""
        return self.watcher is not None and self.watcher.running

    def start_watching(self, on_sync: Callable[[SyncStats], None] | None = None, *,
                       debounce_ms: int | None = None) -> MemoryWatcher:
        """Sync the index on its own after files change, debounced (default ``watch_debounce_ms``).

        ``on_sync`` receives each sync's stats on the watcher thread. The
        global memory of a project memory is watched too. Idempotent: a
        running watcher is returned as is.
        """
        from .sync.watcher import MemoryWatcher

        with self._lock:
            if self._closed:
                raise MemoryIndexError("this memory is closed; open a new MarkdownMemory to watch it")
            if self.watcher is None:
                self.watcher = MemoryWatcher(
                    self.memory_dir, self.indexer.sync,
                    debounce_ms=self.config.watch_debounce_ms if debounce_ms is None else debounce_ms,
                    recursive=self.store.recursive, on_change=self.indexer.mark_dirty, on_sync=on_sync,
                )
            self.watcher.start()
            if self.global_memory is not None:
                self.global_memory.start_watching(on_sync, debounce_ms=debounce_ms)
            return self.watcher

    def stop_watching(self) -> None:
        """Stop the watcher and join its threads; searches still sync when files changed."""
        with self._lock:
            watcher, self.watcher = self.watcher, None
        if watcher is not None:
            watcher.stop()
        if self.global_memory is not None:
            self.global_memory.stop_watching()

    @property
    def closed(self) -> bool:
        """True after :meth:`close`: searches then raise, the Markdown files stay readable."""
        return self._closed

    def _check_open(self) -> None:
        # Without this, the index recovery would take the closed connection for damage and reopen it.
        if self._closed:
            raise MemoryIndexError("this memory is closed; open a new MarkdownMemory to search it")

    def close(self) -> None:
        """Stop the watcher, then close the index (and the global memory's). Idempotent."""
        self.stop_watching()
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self.index.close()
        if self.global_memory is not None:
            self.global_memory.close()

    def __enter__(self) -> MarkdownMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        provider = "none" if self.embedder is None else self.embedder.provider
        return f"MarkdownMemory({str(self.memory_dir)!r}, embeddings={provider!r})"
