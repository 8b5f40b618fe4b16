"""What ``status()`` reports about a memory: files, chunks, embeddings, syncs, fallbacks, the watcher.

Example:
    .. code-block:: python

        info = mem.status()
        print(info["chunks"], info["waiting_for_embeddings"], info["watcher_healthy"])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..embeddings import EmbeddingClient
from ..text.redaction import scrub
from ..types import iso_time
from .indexer import Indexer, index_identity
from .watcher import MemoryWatcher

__all__ = ["IndexedFile", "indexed_files", "memory_status"]


def memory_status(location: str, indexer: Indexer, embedder: EmbeddingClient | None,
                  watcher: MemoryWatcher | None, sync_error: str | None) -> dict[str, Any]:
    """Counts and state of the memory at ``location`` (what ``MarkdownMemory.status`` returns)."""
    index = indexer.index
    chunks, embedded = index.count_chunks()
    identity = None
    if embedder is not None:
        try:
            identity = index_identity(embedder)
        except Exception as exc:
            identity = f"unavailable ({type(exc).__name__})"
    return {
        "memory_dir": location,
        "index": index.path,
        "files": len(index.file_states()),
        "chunks": chunks,
        "embedded": embedded,
        "provider": None if embedder is None else embedder.provider,
        "embedding_identity": identity,
        "identity_changed_from": indexer.identity_changed_from,
        "embedding_error": indexer.embedding_error,
        "waiting_for_embeddings": 0 if embedder is None else chunks - embedded,
        "skipped_files": indexer.skipped_files,
        "file_warnings": dict(indexer.warnings),
        "index_fallback": indexer.handle.fallback,
        "index_repaired": index.repaired,
        "sync_error": sync_error,
        "dirty": indexer.dirty,
        "last_sync": iso_time(indexer.last_sync),
        "watching": watcher is not None and watcher.running,
        "watcher_healthy": watcher is not None and watcher.healthy,
        "watcher_syncs": None if watcher is None else watcher.sync_count,
        "watcher_error": None if watcher is None or watcher.last_error is None else scrub(watcher.last_error),
    }



@dataclass(frozen=True, slots=True)
class IndexedFile:
    """One file as the index last saw it: its size, when it last changed, how many chunks it made."""

    path: str
    size: int
    modified_ns: int
    """The file's mtime (a folder) or its last write's time (PostgreSQL), in ns since the epoch."""
    chunks: int


def indexed_files(indexer: Indexer) -> dict[str, IndexedFile]:
    """Every file the index holds, by path: the index's own rows, no Markdown read."""
    spans = indexer.index.health.chunk_spans()
    return {path: IndexedFile(path, state.size, state.mtime_ns, len(spans.get(path, ())))
            for path, state in indexer.index.file_states().items()}
