"""Async twins of a memory's operations: ``aget``, ``aappend``, ``asearch``, ``async_index``, ``aclose``, ...

Each twin has its sync method's name with an ``a`` in front and the same
parameters, and runs the sync method in a worker thread
(``asyncio.to_thread``): the Markdown store and the index are shared safely
across threads, and the event loop never waits on the disk, the embedding
provider or a lock. ``sync`` is the one exception to the naming: ``async`` is
a Python keyword, so its twin is :meth:`~AsyncMemoryMethods.async_index`
(``getattr(mem, "async")`` is the same method). A memory is also an async
context manager (``async with``), closed by :meth:`~AsyncMemoryMethods.aclose`.

Not twinned, by design: ``locked()`` (a re-entrant lock owned by the thread
that takes it; take it inside a function you pass to ``asyncio.to_thread``),
``mark_changed()`` (sets a flag, never waits) and ``as_retriever()`` /
``as_store()`` (they build objects with their own async methods).

Example:
    .. code-block:: python

        async with MarkdownMemory("memory", embeddings="none") as mem:
            await mem.aappend("- Prefers short answers")
            await mem.async_index()
            hits = await mem.asearch("answers")
            text = await mem.aget(hits[0].path)
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Callable, Sequence
from pathlib import PurePath
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from .config import MemoryConfig
from .documents import Remembered
from .files.session_context import SessionContext
from .history_search import AsOfMethods
from .search.pipeline import RankedResults
from .sync.indexer import SyncStats
from .sync.verify import VerifyReport
from .sync.watcher import MemoryWatcher
from .types import MemorySearchResult, ProgressCallback

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

__all__ = ["SYNC_TWIN", "AsyncMemoryMethods"]

SYNC_TWIN = "async_index"
"""The async twin of ``sync`` (``async`` itself is a keyword; ``getattr(mem, "async")`` also works)."""


class AsyncMemoryMethods(AsOfMethods):
    """The async twin of every memory operation, each running the sync one in a worker thread."""

    if TYPE_CHECKING:  # defined by MemoryCore; declared here so the twins type-check
        def search(self, query: str, *, max_results: int | None = None,
                   as_of: dt.date | None = None) -> list[MemorySearchResult]: ...
        def search_detailed(self, query: str, *, max_results: int | None = None,
                            config: MemoryConfig | None = None,
                            as_of: dt.date | None = None) -> RankedResults: ...
        def load_session_context(self, max_tokens: int | None = None) -> str: ...
        def session_context_report(self, max_tokens: int | None = None) -> SessionContext: ...
        def sync(self, force: bool = False, progress: ProgressCallback | None = None) -> SyncStats: ...
        def rebuild(self, progress: ProgressCallback | None = None) -> SyncStats: ...
        def verify(self, repair: bool = True, progress: ProgressCallback | None = None) -> VerifyReport: ...
        def status(self) -> dict[str, Any]: ...
        def embedding_model(self) -> tuple[Embeddings, int] | None: ...
        def similarity(self, query: str, texts: Sequence[str]) -> list[float] | None: ...
        def start_watching(self, on_sync: Callable[[SyncStats], None] | None = None, *,
                           debounce_ms: int | None = None) -> MemoryWatcher: ...
        def stop_watching(self) -> None: ...
        def close(self) -> None: ...
        @classmethod
        def from_postgres(cls, conninfo_or_pool: Any, tenant: str, *, embeddings: Any = "auto",
                          config: MemoryConfig | dict[str, Any] | None = None,
                          progress: ProgressCallback | None = None, vector_search: str = "auto",
                          pool_max_size: int = 10) -> Self: ...

    # -- search and context ------------------------------------------------------------

    async def asearch(self, query: str, *, max_results: int | None = None,
                      as_of: dt.date | None = None) -> list[MemorySearchResult]:
        """Async twin of :meth:`search`."""
        return await asyncio.to_thread(self.search, query, max_results=max_results, as_of=as_of)

    async def asearch_detailed(self, query: str, *, max_results: int | None = None,
                               config: MemoryConfig | None = None,
                               as_of: dt.date | None = None) -> RankedResults:
        """Async twin of :meth:`search_detailed`."""
        return await asyncio.to_thread(self.search_detailed, query, max_results=max_results, config=config,
                                       as_of=as_of)

    async def aload_session_context(self, max_tokens: int | None = None) -> str:
        """Async twin of :meth:`load_session_context`."""
        return await asyncio.to_thread(self.load_session_context, max_tokens)

    async def asession_context_report(self, max_tokens: int | None = None) -> SessionContext:
        """Async twin of :meth:`session_context_report`."""
        return await asyncio.to_thread(self.session_context_report, max_tokens)

    # -- the Markdown ------------------------------------------------------------------

    async def aget(self, path: str, start_line: int | None = None, end_line: int | None = None) -> str:
        """Async twin of :meth:`get`."""
        return await asyncio.to_thread(self.get, path, start_line, end_line)

    async def aappend(self, content: str, file: str = "long_term") -> str:
        """Async twin of :meth:`append`."""
        return await asyncio.to_thread(self.append, content, file)

    async def aremember(self, content: str, file: str = "long_term", *, source: str | None = None,
                        heading: str | None = None, expires: str | dt.date | None = None,
                        section: str | None = None) -> Remembered:
        """Async twin of :meth:`remember`."""
        return await asyncio.to_thread(self.remember, content, file, source=source, heading=heading,
                                       expires=expires, section=section)

    async def asupersede(self, old_text: str, new_text: str, file: str = "long_term", *,
                         source: str | None = None, today: dt.date | None = None,
                         expires: str | dt.date | None = None) -> bool:
        """Async twin of :meth:`supersede`."""
        return await asyncio.to_thread(self.supersede, old_text, new_text, file, source=source, today=today,
                                       expires=expires)

    async def aedit(self, old_text: str, new_text: str, file: str = "long_term") -> bool:
        """Async twin of :meth:`edit`."""
        return await asyncio.to_thread(self.edit, old_text, new_text, file)

    async def adelete(self, text: str, file: str = "long_term") -> bool:
        """Async twin of :meth:`delete`."""
        return await asyncio.to_thread(self.delete, text, file)

    async def areplace_lines(self, file: str, start_line: int, end_line: int, new_text: str) -> str:
        """Async twin of :meth:`replace_lines`."""
        return await asyncio.to_thread(self.replace_lines, file, start_line, end_line, new_text)

    async def awrite(self, file: str, content: str) -> str:
        """Async twin of :meth:`write`."""
        return await asyncio.to_thread(self.write, file, content)

    async def aupdate(self, file: str, fn: Callable[[str | None], str | None]) -> bool:
        """Async twin of :meth:`update`; ``fn`` runs in the worker thread, under the lock."""
        return await asyncio.to_thread(self.update, file, fn)

    async def aremove(self, file: str) -> bool:
        """Async twin of :meth:`remove`."""
        return await asyncio.to_thread(self.remove, file)

    async def aread_bytes(self, file: str) -> bytes:
        """Async twin of :meth:`read_bytes`."""
        return await asyncio.to_thread(self.read_bytes, file)

    async def aexists(self, file: str) -> bool:
        """Async twin of :meth:`exists`."""
        return await asyncio.to_thread(self.exists, file)

    async def astat(self, file: str) -> tuple[int, int] | None:
        """Async twin of :meth:`stat`."""
        return await asyncio.to_thread(self.stat, file)

    async def akeep_version(self, name: str, data: bytes, stamp: str, keep: int = 10) -> PurePath:
        """Async twin of :meth:`keep_version`."""
        return await asyncio.to_thread(self.keep_version, name, data, stamp, keep)

    async def alist_files(self, *, include_unindexed: bool = False) -> list[str]:
        """Async twin of :meth:`list_files`."""
        return await asyncio.to_thread(self.list_files, include_unindexed=include_unindexed)

    # -- the index ---------------------------------------------------------------------

    async def async_index(self, force: bool = False, progress: ProgressCallback | None = None) -> SyncStats:
        """Async twin of :meth:`sync` (bring the index up to date now); also ``getattr(mem, "async")``.

        ``progress`` is called from the worker thread.
        """
        return await asyncio.to_thread(self.sync, force, progress)

    async def arebuild(self, progress: ProgressCallback | None = None) -> SyncStats:
        """Async twin of :meth:`rebuild`."""
        return await asyncio.to_thread(self.rebuild, progress)

    async def averify(self, repair: bool = True, progress: ProgressCallback | None = None) -> VerifyReport:
        """Async twin of :meth:`verify`."""
        return await asyncio.to_thread(self.verify, repair, progress)

    async def astatus(self) -> dict[str, Any]:
        """Async twin of :meth:`status`."""
        return await asyncio.to_thread(self.status)

    async def aembedding_model(self) -> tuple[Embeddings, int] | None:
        """Async twin of :meth:`embedding_model` (it may ask the provider for the dimension)."""
        return await asyncio.to_thread(self.embedding_model)

    async def asimilarity(self, query: str, texts: Sequence[str]) -> list[float] | None:
        """Async twin of :meth:`similarity`."""
        return await asyncio.to_thread(self.similarity, query, texts)

    # -- watching and lifecycle ----------------------------------------------------------

    async def astart_watching(self, on_sync: Callable[[SyncStats], None] | None = None, *,
                              debounce_ms: int | None = None) -> MemoryWatcher:
        """Async twin of :meth:`start_watching` (``on_sync`` still runs on the watcher's thread)."""
        return await asyncio.to_thread(self.start_watching, on_sync, debounce_ms=debounce_ms)

    async def astop_watching(self) -> None:
        """Async twin of :meth:`stop_watching` (joining the watcher's threads happens off the loop)."""
        await asyncio.to_thread(self.stop_watching)

    @classmethod
    async def afrom_postgres(cls, conninfo_or_pool: Any, tenant: str, *, embeddings: Any = "auto",
                             config: MemoryConfig | dict[str, Any] | None = None,
                             progress: ProgressCallback | None = None, vector_search: str = "auto",
                             pool_max_size: int = 10) -> Self:
        """Async twin of ``from_postgres``."""
        return await asyncio.to_thread(
            cls.from_postgres, conninfo_or_pool, tenant, embeddings=embeddings, config=config,
            progress=progress, vector_search=vector_search, pool_max_size=pool_max_size)

    async def aclose(self) -> None:
        """Async twin of :meth:`close`."""
        await asyncio.to_thread(self.close)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()


# `async` is what the a-prefix rule gives for `sync`, and a keyword: reachable with getattr only.
setattr(AsyncMemoryMethods, "async", AsyncMemoryMethods.async_index)
