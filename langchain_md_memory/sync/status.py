"""What ``status()`` reports about a memory: files, chunks, embeddings, syncs, fallbacks, the watcher.

It only reads: one walk of the documents' stamps (no document is opened), counts from the index, the
state the last sync left. Nothing is indexed or embedded and the embedding model is not loaded, so
it answers at once on any memory, and checking an interrupted index leaves it as it was: what is
left to do shows as ``files_to_index`` (new, changed or removed since the index saw them) and
``waiting_for_embeddings`` (chunks without a vector); ``sync()`` (``md-memory index``) does it.

Example:
    .. code-block:: python

        info = mem.status()
        print(info["files_to_index"], info["waiting_for_embeddings"], info["watcher_healthy"])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..embeddings import EmbeddingClient, EmbeddingIdentity
from ..text.redaction import scrub
from ..types import iso_time
from .embedding import space_identity
from .indexer import Indexer, over_max_file_bytes
from .watcher import MemoryWatcher

__all__ = ["IndexedFile", "indexed_files", "memory_status"]


def memory_status(location: str, indexer: Indexer, embedder: EmbeddingClient | None,
                  watcher: MemoryWatcher | None, sync_error: str | None) -> dict[str, Any]:
    """Counts and state of the memory at ``location`` (what ``MarkdownMemory.status`` returns)."""
    index = indexer.index
    found, refused = indexer.freshness.look()
    to_index = indexer.files_to_index(found)
    chunks, embedded = index.count_chunks()
    identity = index.get_meta("embedding_identity")
    if embedder is None:
        waiting = 0
    else:  # vectors of another model are all made again by the next sync
        waiting = chunks - embedded if identity is None or _made_by(embedder, identity) else chunks
    limit = indexer.config.limits.max_file_bytes
    oversized = {path: over_max_file_bytes(size, limit) for path, (_, size) in found.items() if size > limit}
    return {
        "memory_dir": location,
        "index": index.path,
        "files": len(found),
        "files_to_index": len(to_index),
        "chunks": chunks,
        "embedded": embedded,
        "provider": None if embedder is None else embedder.provider,
        "embedding_identity": identity,
        "identity_changed_from": indexer.identity_changed_from,
        "embedding_error": indexer.embedding_error,
        "waiting_for_embeddings": waiting,
        "skipped_files": {**refused, **indexer.skipped_files, **oversized},
        "file_warnings": dict(indexer.warnings),
        "index_fallback": indexer.handle.fallback,
        "index_repaired": index.repaired,
        "sync_error": sync_error,
        # A write through this memory since its last sync that the walk cannot see (same size and
        # mtime tick) still counts.
        "dirty": bool(to_index) or (indexer.last_sync is not None and indexer.dirty),
        "last_sync": iso_time(indexer.synced_at()),
        "watching": watcher is not None and watcher.running,
        "watcher_healthy": watcher is not None and watcher.healthy,
        "watcher_syncs": None if watcher is None else watcher.sync_count,
        "watcher_error": None if watcher is None or watcher.last_error is None else scrub(watcher.last_error),
    }


def _made_by(embedder: EmbeddingClient, stored: str) -> bool:
    """Whether the index's vectors (their identity ``stored``) are ``embedder``'s model's, told without
    the model call that measures its dimension (loading the bundled model takes seconds): the
    dimension is the one part of ``stored`` a provider and model name do not fix."""
    dim = stored.partition("|")[0].rpartition(":")[2]
    if not dim.isdigit():
        return False
    return space_identity(EmbeddingIdentity(embedder.provider, embedder.model, int(dim))) == stored


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
