"""The facade users construct: a memory plus its ways out to LangChain, LangGraph, dream and archives.

:class:`MarkdownMemory` is :class:`~langchain_md_memory.core.MemoryCore` (files,
index, search, sync, watching) plus what is built on it: a retriever, a
LangGraph ``BaseStore``, dream consolidation and archives. :class:`ProjectMemory`
(from :meth:`MarkdownMemory.for_project`) searches a project's memory together
with the global one and routes ``~global/...`` paths to it.

Example:
    .. code-block:: python

        from langchain_md_memory import MarkdownMemory

        with MarkdownMemory("memory", embeddings="none") as mem:
            mem.append("- Prefers index funds over single stocks")
            docs = mem.as_retriever(k=2).invoke("what does the user prefer?")
            archive = mem.export_archive("backups/")
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain_core.language_models import LanguageModelLike

from .config import MemoryConfig
from .core import MemoryCore
from .documents import Remembered
from .features.archive import export_archive, import_archive
from .features.dream import DreamResult, dream
from .integrations.basestore import MarkdownBaseStore
from .integrations.retriever import MarkdownMemoryRetriever
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
from .search.pipeline import RankedResults, Recall
from .sync.indexer import SyncStats
from .sync.watcher import MemoryWatcher
from .types import ProgressCallback

__all__ = ["MarkdownMemory", "ProjectMemory"]


class MarkdownMemory(MemoryCore):
    """Long-term memory in Markdown files with a rebuildable SQLite hybrid index (or, through
    :meth:`from_postgres`, one tenant's Markdown rows and index in PostgreSQL).

    Args:
        memory_dir: the folder holding ``MEMORY.md``, daily ``YYYY-MM-DD.md``
            logs, topic files and ``sessions/``; created if missing.
        embeddings: a LangChain ``Embeddings`` instance, or a spec string:
            ``"auto"`` (OpenAI when ``OPENAI_API_KEY`` is set, else the bundled
            offline model when installed, else keyword-only), ``"openai"``,
            ``"openai:<model>"``, ``"local"``, ``"none"``.
        config: a :class:`MemoryConfig` or a dict of its fields.
        watch: start the file watcher at once; ``close()`` stops it.
        recursive: index subfolders (``sessions/``, topic folders); ``False``
            keeps to top-level files, as the global memory of
            :meth:`for_project` does.
        progress: receives :class:`~langchain_md_memory.types.ProgressEvent` s of
            syncs (a search's too), rebuilds, verifies, archives and dreams not
            given their own callback; the library never prints.

    Example:
        .. code-block:: python

            mem = MarkdownMemory("memory", embeddings="none", config={"max_results": 3})
            mem.append("Retirement target age: 60")
            assert "60" in mem.search("retirement age")[0].text
            mem.close()
    """

    # -- integration ----------------------------------------------------------------

    def as_retriever(self, **kwargs: Any) -> MarkdownMemoryRetriever:
        """A LangChain retriever over this memory, configured as ``VectorStore.as_retriever`` is.

        Takes ``search_type`` (``"similarity"``, ``"mmr"``, ``"similarity_score_threshold"``),
        ``search_kwargs`` (``k``, ``score_threshold``, ``lambda_mult``, ``fetch_k``), ``k``, ``tags``,
        ``metadata`` and any MemoryConfig field; see :class:`MarkdownMemoryRetriever`.

        Example:
            .. code-block:: python

                retriever = mem.as_retriever(search_type="mmr", search_kwargs={"k": 3}, tags=["memory"])
                [d.metadata["source"] for d in retriever.invoke("retirement")]   # file paths
        """
        return MarkdownMemoryRetriever.from_memory(self, **kwargs)

    def as_store(self, **kwargs: Any) -> MarkdownBaseStore:
        """A LangGraph ``BaseStore`` over this memory: namespaces as folders, items as ``## key`` sections.

        Example:
            .. code-block:: python

                store = mem.as_store()
                store.put(("users", "alice"), "food", {"content": "Loves hotpot"})
                agent = create_agent(model, tools=[...], store=store)
        """
        return MarkdownBaseStore(self, **kwargs)

    # -- dream and archive ----------------------------------------------------------

    def dream(self, model: LanguageModelLike, **kwargs: Any) -> DreamResult:
        """Consolidate session logs into MEMORY.md with ``model``; see :func:`features.dream.dream`."""
        kwargs.setdefault("progress", self.progress)
        return dream(self, model, **kwargs)

    async def adream(self, model: LanguageModelLike, **kwargs: Any) -> DreamResult:
        """Async twin of :meth:`dream`."""
        return await asyncio.to_thread(self.dream, model, **kwargs)

    def export_archive(self, path: str | os.PathLike[str], progress: ProgressCallback | None = None) -> Path:
        """Write the Markdown files (and the state file, nothing else) to a ``.tar.gz``; returns its path."""
        return export_archive(self, path, progress or self.progress)

    async def aexport_archive(self, path: str | os.PathLike[str],
                              progress: ProgressCallback | None = None) -> Path:
        """Async twin of :meth:`export_archive`."""
        return await asyncio.to_thread(self.export_archive, path, progress)

    @classmethod
    def import_archive(cls, path: str | os.PathLike[str], memory_dir: str | os.PathLike[str],
                       *, overwrite: bool = False, max_bytes: int | None = None,
                       max_files: int | None = None, **kwargs: Any) -> MarkdownMemory:
        """Unpack a validated archive into ``memory_dir`` and open it with a fresh index.

        ``kwargs`` (``embeddings``, ``config``, ``progress``) go to the constructor; ``progress``
        also receives the ``import`` events.
        """
        caps = {k: v for k, v in (("max_bytes", max_bytes), ("max_files", max_files)) if v is not None}
        import_archive(path, memory_dir, overwrite=overwrite, progress=kwargs.get("progress"), **caps)
        mem = cls(memory_dir, **kwargs)
        try:
            mem.sync(force=True)
        except BaseException:
            mem.close()
            raise
        return mem

    @classmethod
    async def aimport_archive(cls, path: str | os.PathLike[str], memory_dir: str | os.PathLike[str],
                              *, overwrite: bool = False, max_bytes: int | None = None,
                              max_files: int | None = None, **kwargs: Any) -> MarkdownMemory:
        """Async twin of :meth:`import_archive`."""
        return await asyncio.to_thread(cls.import_archive, path, memory_dir, overwrite=overwrite,
                                       max_bytes=max_bytes, max_files=max_files, **kwargs)

    # -- projects -------------------------------------------------------------------

    @classmethod
    def for_project(cls, path: str | os.PathLike[str] = ".", root: str | os.PathLike[str] | None = None,
                    **kwargs: Any) -> ProjectMemory:
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
        return ProjectMemory.open(path, root, **kwargs)

    @classmethod
    async def afor_project(cls, path: str | os.PathLike[str] = ".",
                           root: str | os.PathLike[str] | None = None, **kwargs: Any) -> ProjectMemory:
        """Async twin of :meth:`for_project` (asks git and opens both indexes in a worker thread)."""
        return await asyncio.to_thread(cls.for_project, path, root, **kwargs)


class ProjectMemory(MarkdownMemory):
    """A project's memory searched together with the global one; ``~global/...`` paths go there.

    Built by :meth:`MarkdownMemory.for_project`. Global hits carry paths like
    ``~global/MEMORY.md`` and ``scope="global"``; reads and writes of those
    paths go to :attr:`global_memory`, which holds only top-level files.
    """

    global_memory: MarkdownMemory
    """The global memory searched with this one."""
    project: ProjectIdentity
    """Who the project is (id, readable name, remote or path)."""

    @classmethod
    def open(cls, path: str | os.PathLike[str] = ".", root: str | os.PathLike[str] | None = None,
             **kwargs: Any) -> ProjectMemory:
        """See :meth:`MarkdownMemory.for_project`."""
        identity = project_identity(path)
        home = memory_home(root)
        watch = kwargs.pop("watch", False)
        mem = cls(home / identity.id, **kwargs)
        mem.project = identity
        try:
            # "none", not None: None would mean "auto" and could pick a different model.
            embedder = mem.embedder if mem.embedder is not None else "none"
            shared = {**kwargs, "embeddings": embedder, "config": mem.config, "recursive": False}
            mem.global_memory = MarkdownMemory(home, **shared)
            if watch:
                mem.start_watching()
        except BaseException:
            mem.close()
            raise
        return mem

    @classmethod
    async def aopen(cls, path: str | os.PathLike[str] = ".", root: str | os.PathLike[str] | None = None,
                    **kwargs: Any) -> ProjectMemory:
        """Async twin of :meth:`open`."""
        return await asyncio.to_thread(cls.open, path, root, **kwargs)

    # -- search: one ranking over both memories -------------------------------------

    def search_detailed(self, query: str, *, max_results: int | None = None,
                        config: MemoryConfig | None = None, as_of: dt.date | None = None) -> RankedResults:
        """Like :meth:`MarkdownMemory.search_detailed`, over the project and the global memory.

        ``as_of`` reads the struck History lines of the project memory."""
        ranked = super().search_detailed(query, max_results=max_results, config=config, as_of=as_of)
        return RankedResults(mark_scopes(ranked.hits), ranked.funnel, ranked.degraded, ranked.as_of)

    def _recall(self, query: str, pool: int, cfg: MemoryConfig, vector: Any, degraded: str | None) -> Recall:
        own = super()._recall(query, pool, cfg, vector, degraded)
        other = self.global_memory
        other._ensure_synced()
        shared = other.embedder is self.embedder
        vector_g, degraded_g = (vector, degraded) if shared else other._query_vector(query)
        return combine_recalls(own, other._recall(query, pool, cfg, vector_g, degraded_g))

    def _access_counts(self, ids: list[str]) -> dict[str, int]:
        own, theirs = split_ids(ids)
        counts = super()._access_counts(own) if own else {}
        if theirs:
            theirs_counts = self.global_memory._access_counts(theirs)
            counts.update({GLOBAL_PREFIX + i: n for i, n in theirs_counts.items()})
        return counts

    def _record_access(self, ids: list[str]) -> None:
        own, theirs = split_ids(ids)
        super()._record_access(own)
        if theirs:
            self.global_memory._record_access(theirs)

    # -- files: ~global/ paths go to the global memory ------------------------------

    def get(self, path: str, start_line: int | None = None, end_line: int | None = None) -> str:
        """Exact lines of a memory file; ``~global/...`` reads the global memory."""
        inner = split_global_path(path)
        if inner is not None:
            return self.global_memory.get(inner, start_line, end_line)
        return super().get(path, start_line, end_line)

    def append(self, content: str, file: str = "long_term") -> str:
        """Append to a memory file; ``~global/...`` appends to the global memory."""
        inner = split_global_path(file)
        if inner is not None:
            return GLOBAL_PREFIX + self.global_memory.append(content, inner)
        return super().append(content, file)

    def remember(self, content: str, file: str = "long_term", *, source: str | None = None,
                 heading: str | None = None, expires: str | dt.date | None = None,
                 section: str | None = None) -> Remembered:
        """Append what memory does not already state; ``~global/...`` goes to the global memory."""
        inner = split_global_path(file)
        if inner is None:
            return super().remember(content, file, source=source, heading=heading, expires=expires,
                                    section=section)
        done = self.global_memory.remember(content, inner, source=source, heading=heading, expires=expires,
                                           section=section)
        return dataclasses.replace(done, path=GLOBAL_PREFIX + done.path, duplicates=tuple(
            (fact, GLOBAL_PREFIX + at) for fact, at in done.duplicates))

    def supersede(self, old_text: str, new_text: str, file: str = "long_term", *, source: str | None = None,
                  today: dt.date | None = None, expires: str | dt.date | None = None) -> bool:
        """Replace a fact, keeping the old one as history; ``~global/...`` in the global memory."""
        inner = split_global_path(file)
        if inner is not None:
            return self.global_memory.supersede(old_text, new_text, inner, source=source, today=today,
                                                expires=expires)
        return super().supersede(old_text, new_text, file, source=source, today=today, expires=expires)

    def edit(self, old_text: str, new_text: str, file: str = "long_term") -> bool:
        """Replace the first exact occurrence of ``old_text``; ``~global/...`` edits the global memory."""
        inner = split_global_path(file)
        if inner is not None:
            return self.global_memory.edit(old_text, new_text, inner)
        return super().edit(old_text, new_text, file)

    def delete(self, text: str, file: str = "long_term") -> bool:
        """Remove the first exact occurrence of ``text``; ``~global/...`` deletes in the global memory."""
        inner = split_global_path(file)
        if inner is not None:
            return self.global_memory.delete(text, inner)
        return super().delete(text, file)

    def write(self, file: str, content: str) -> str:
        """Replace a memory file's whole content; ``~global/...`` writes the global memory."""
        inner = split_global_path(file)
        if inner is not None:
            return GLOBAL_PREFIX + self.global_memory.write(inner, content)
        return super().write(file, content)

    def replace_lines(self, file: str, start_line: int, end_line: int, new_text: str) -> str:
        """Replace a line range of a memory file; ``~global/...`` in the global memory."""
        inner = split_global_path(file)
        if inner is not None:
            return self.global_memory.replace_lines(inner, start_line, end_line, new_text)
        return super().replace_lines(file, start_line, end_line, new_text)

    def update(self, file: str, fn: Callable[[str | None], str | None]) -> bool:
        """Read-modify-write one memory file; ``~global/...`` in the global memory."""
        inner = split_global_path(file)
        return self.global_memory.update(inner, fn) if inner is not None else super().update(file, fn)

    def remove(self, file: str) -> bool:
        """Delete a memory file; ``~global/...`` from the global memory."""
        inner = split_global_path(file)
        return self.global_memory.remove(inner) if inner is not None else super().remove(file)

    def read_bytes(self, file: str) -> bytes:
        """A memory file's exact bytes; ``~global/...`` reads the global memory."""
        inner = split_global_path(file)
        return self.global_memory.read_bytes(inner) if inner is not None else super().read_bytes(file)

    def exists(self, file: str) -> bool:
        """True when ``file`` is an existing memory file; ``~global/...`` asks the global memory."""
        inner = split_global_path(file)
        return self.global_memory.exists(inner) if inner is not None else super().exists(file)

    def stat(self, file: str) -> tuple[int, int] | None:
        """``(mtime_ns, size)`` of a memory file; ``~global/...`` in the global memory."""
        inner = split_global_path(file)
        return self.global_memory.stat(inner) if inner is not None else super().stat(file)

    def load_session_context(self, max_tokens: int | None = None) -> str:
        """The global memory's context first, then the project's, each under its own heading, one budget."""
        budget = self.config.max_session_context_tokens if max_tokens is None else max_tokens
        return layered_context([
            (f"Global memory (paths under {GLOBAL_PREFIX})", self.global_memory.load_session_context),
            (f"Project memory ({self.project.name})", super().load_session_context),
        ], budget)

    # -- state and lifecycle --------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """:meth:`MarkdownMemory.status` plus the project id and the global memory's folder."""
        return {**super().status(), "project": self.project.id,
                "global_memory_dir": str(self.global_memory.memory_dir)}

    def start_watching(self, on_sync: Callable[[SyncStats], None] | None = None, *,
                       debounce_ms: int | None = None) -> MemoryWatcher:
        """Watch the project's files and the global memory's."""
        watcher = super().start_watching(on_sync, debounce_ms=debounce_ms)
        self.global_memory.start_watching(on_sync, debounce_ms=debounce_ms)
        return watcher

    def stop_watching(self) -> None:
        """Stop both watchers."""
        super().stop_watching()
        if hasattr(self, "global_memory"):
            self.global_memory.stop_watching()

    def close(self) -> None:
        """Close the project memory, then the global one. Idempotent."""
        super().close()
        if hasattr(self, "global_memory"):
            self.global_memory.close()

