"""Keeps the SQLite index in step with the Markdown: incremental sync and embedding.

A file is re-read only when its mtime, size or content hash changed; all
chunks of a changed file are replaced at once; chunks of deleted files go.
Vectors come from the embedding cache when the embedded text was seen before,
so an unchanged paragraph never costs an embedding call.

A sync a search runs first embeds for at most ``embedding.search_wait_s``: a
backlog larger than that (a memory never indexed, a pull of many notes) is
embedded on a background thread while searches answer from what is indexed
(the chunks still waiting are found by keywords; :attr:`Indexer.embedding_backlog`
says how many). Each of its passes holds the sync lock for about one model call
(:data:`~.embedding.SLICE_S`), so a search that must sync waits at most that long.
An explicit :meth:`Indexer.sync` embeds everything before it returns.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import replace

from ..config import MemoryConfig
from ..embeddings.base import Embedder
from ..errors import IndexDamagedError, MemoryIndexError, MemoryStoreError
from ..files.base import DocumentStore
from ..files.chunker import chunk_markdown, chunking_signature
from ..files.facts import strip_annotations
from ..files.paths import file_kind
from ..files.sections import past_facts
from ..index.base import IndexOwner, SearchIndex
from ..index.rows import ChunkRow, FileState, PastRow
from ..text import index_terms
from ..text.redaction import scrub
from ..types import ChunkRecord, ProgressCallback, ProgressEvent
from .batches import WriteBatches
from .embedding import SLICE_S, EmbedOutcome, Pace, embed_missing, embed_text, index_identity
from .freshness import FolderCheck
from .stats import SyncStats

__all__ = ["Indexer", "SyncStats", "embed_text", "index_identity", "over_max_file_bytes"]

logger = logging.getLogger(__name__)

# After an embedding failure, sync does not retry the provider for this long.
_EMBED_BACKOFF_S = 30.0

_LAST_SYNC = "last_sync"
"""The index's meta key holding when a sync last changed the index (a Unix time)."""


def over_max_file_bytes(size: int, max_bytes: int) -> str:
    """Why a document of ``size`` bytes is left out of the index (``status()["skipped_files"]``)."""
    return f"{size} bytes, over max_file_bytes={max_bytes}"


def _sha256(data: str | bytes) -> str:
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()


class Indexer:
    """Incremental sync from a document store into an index (the two seams).

    One sync runs at a time; a caller arriving while one runs waits for it and
    then runs its own (cheap when nothing changed). ``progress`` receives the
    events of every sync that is not given its own callback.
    """

    def __init__(
        self, store: DocumentStore, handle: IndexOwner, embedder: Embedder | None, config: MemoryConfig,
        progress: ProgressCallback | None = None,
    ) -> None:
        self.store = store
        self.progress = progress
        self.handle = handle
        self.embedder = embedder
        self.config = config
        self._dirty = True
        self._sync_lock = threading.RLock()  # re-entered by a rebuild in place
        self._embed_retry_at = 0.0
        self._known: dict[str, tuple[int, int]] | None = None
        self.freshness = FolderCheck(store)
        """Walks the folder for edits made outside the package (see :mod:`.freshness`)."""
        self.watcher_healthy: Callable[[], bool] = lambda: False
        """True while a file watcher reports every change (then a search stats nothing)."""
        self.last_sync: float | None = None
        self.identity_changed_from: str | None = None
        self.skipped: dict[str, str] = {}
        """Files left out of the index, and why (e.g. over ``max_file_bytes``)."""
        self.warnings: dict[str, str] = self._load_warnings()
        """Files indexed with a problem, and what it is (e.g. not valid UTF-8); kept in the index's meta."""
        self.embedding_error: str | None = None
        self._behind = False  # chunks wait for the background job (read and written under the sync lock)
        self._backlog_left = 0
        self._backlog: threading.Thread | None = None
        self._backlog_stop = threading.Event()

    @property
    def skipped_files(self) -> dict[str, str]:
        """Every Markdown file the index leaves out, and why: :attr:`skipped`, and the files the last
        walk found the path guard refuses (a name no memory path may have, a symlink leading outside)."""
        return {**self.freshness.refused, **self.skipped}

    @property
    def index(self) -> SearchIndex:
        """The index in use now (the handle swaps it on rebuild or recovery)."""
        return self.handle.index

    # -- dirty tracking -------------------------------------------------------------

    def mark_dirty(self) -> None:
        """Note that the Markdown changed; the next search syncs first."""
        self._dirty = True

    @property
    def dirty(self) -> bool:
        """True when a write went through the facade since the last sync."""
        return self._dirty

    def sync_if_needed(self, progress: ProgressCallback | None = None) -> SyncStats | None:
        """Sync when the Markdown changed, reusing the directory walk that found it; else ``None``.

        The sync of a search: it embeds for at most ``embedding.search_wait_s`` and leaves the rest
        to the background job (see the module docstring). ``progress`` as for :meth:`sync`.

        Writes through the package set the dirty flag. Edits made by hand or
        by another process are caught by a healthy file watcher (it sets the
        flag on every event, so a search then trusts it and stats nothing) or,
        without one, by a directory walk comparing every file's (mtime, size)
        with what the last sync saw: before every search up to
        ``stat_check_max_files`` files, above it when a folder changed or a
        periodic walk is due (see :mod:`.freshness`). ``stat_check_max_files=0``
        turns the walk off.
        """
        needed, scanned = self._check()
        if not needed:
            return None
        return self._sync(False, progress, scanned, wait=self.config.embedding.search_wait_s)

    def _check(self) -> tuple[bool, dict[str, tuple[int, int]] | None]:
        """(sync needed, the directory walk made to decide it, if one was)."""
        if self._dirty or self._known is None:
            return True, None
        limit = self.config.index.stat_check_max_files
        if self.watcher_healthy() or limit == 0:
            return False, None
        if len(self._known) > limit and (state := self.freshness.state()) != "stale":
            if state == "due":  # the periodic walk runs after this search; a change syncs the next one
                known = self._known
                self.freshness.walk_later(lambda files: self.mark_dirty() if files != known else None)
            return False, None
        scanned = self.freshness.walk()
        return scanned != self._known, scanned

    # -- sync -----------------------------------------------------------------------

    def sync(self, force: bool = False, progress: ProgressCallback | None = None) -> SyncStats:
        """Bring the index up to date with the Markdown files; returns what changed.

        ``force`` re-reads and re-chunks every file; unchanged chunk texts
        still come from the embedding cache, so nothing is re-embedded.
        ``progress`` receives ``index`` events (files) and ``embed`` events (chunks).
        """
        return self._sync(force, progress, None)

    def _sync(self, force: bool, progress: ProgressCallback | None,
              scanned: dict[str, tuple[int, int]] | None, wait: float | None = None) -> SyncStats:
        """``wait``: embed for at most this many seconds, then hand the rest to the background job."""
        progress = progress or self.progress
        with self._sync_lock:
            self._dirty = False
            counters = SyncStats()
            started = time.perf_counter()
            try:
                self._sync_files(force, counters, progress, scanned)
                self._embed_missing(counters, progress, wait)
                self.index.after_sync()
                self.last_sync = time.time()
                self._record_sync(counters)
            except BaseException:
                self._dirty = True
                raise
            counters.seconds = time.perf_counter() - started
            logger.debug("sync: %s", counters)
            return counters

    def _record_sync(self, c: SyncStats) -> None:
        """Keep the time of a sync that changed the index in it, for another process's status; one
        that found nothing to do writes nothing (a search's sync is usually such a one)."""
        changed = c.files_changed or c.files_removed or c.chunks_removed or c.embedded or c.cached
        if changed or self.index.get_meta(_LAST_SYNC) is None:
            self.index.set_meta(_LAST_SYNC, repr(self.last_sync))

    def synced_at(self) -> float | None:
        """When the index was last brought up to date: this process's last sync, or the last sync of
        any process that changed the index, whichever is later; ``None``: never synced."""
        stored = self.index.get_meta(_LAST_SYNC)
        try:
            recorded = float(stored) if stored is not None else None
        except ValueError:  # not a time this package wrote: as if none were recorded
            recorded = None
        return max((t for t in (self.last_sync, recorded) if t is not None), default=None)

    def files_to_index(self, found: dict[str, tuple[int, int]]) -> list[str]:
        """The documents a sync would index again, given their stamps ``found`` by a walk: new or
        changed since the index saw them (every one, when the chunking changed), and those the index
        holds that are gone. Reads the index alone: no document is read, nothing is written."""
        known = self.index.file_states()
        limit = self.config.limits.max_file_bytes
        rechunk = bool(known) and self.index.get_meta("chunking") != self._chunking_signature()
        out = []
        for path, (mtime_ns, size) in found.items():
            old = known.get(path)
            if size > limit:  # never indexed: only a version indexed before it grew has to go
                stale = old is not None
            else:
                stale = rechunk or old is None or (old.mtime_ns, old.size) != (mtime_ns, size)
            if stale:
                out.append(path)
        return sorted([*out, *(known.keys() - found.keys())])

    def _sync_files(self, force: bool, c: SyncStats, progress: ProgressCallback | None,
                    scanned: dict[str, tuple[int, int]] | None = None) -> None:
        known = self.index.file_states()
        signature = self._chunking_signature()
        # Chunking or terms changed: every file again, recorded once done (an interrupted sync starts over).
        rechunk = self.index.get_meta("chunking") != signature
        if rechunk and not known:  # a new index: nothing to chunk again
            self.index.set_meta("chunking", signature)
            rechunk = False
        force = force or rechunk
        # A walk made by needs_sync() moments ago is as good as a new one: every changed file is
        # re-stat-ed inside the write transaction below, and a file added since is seen next time.
        if scanned is None:
            scanned = self.freshness.walk()
        paths = sorted(scanned)
        seen: dict[str, tuple[int, int]] = {}
        c.files = len(paths)
        fingerprint = self._fingerprint_or_none()
        # A first build (nothing cached) skips a lookup per file: the embedding phase looks up what waits.
        lookup = fingerprint if fingerprint is not None and self.index.cache.holds_any(fingerprint) else None
        with WriteBatches(self.index) as batches:
            for done, path in enumerate(paths, 1):
                old = known.get(path)
                if not force and old is not None and (old.mtime_ns, old.size) == scanned[path]:
                    seen[path] = scanned[path]
                    continue
                # Read the file inside the index's write transaction: another process's sync that
                # read an older version cannot commit after us, so the index never goes back in time.
                batches.enter()
                stat = self._reindex_file(path, force, lookup, c)
                batches.done()
                if stat is not None:
                    seen[path] = stat
                if progress is not None:
                    progress(ProgressEvent("index", done, len(paths), "files"))
        for path in known.keys() - seen.keys() - scanned.keys():
            c.chunks_removed += self.index.remove_file(path)
            c.files_removed += 1
        if self.warnings.keys() - scanned.keys():
            self.warnings = {p: w for p, w in self.warnings.items() if p in scanned}
        self._save_warnings()
        if rechunk:
            self.index.set_meta("chunking", signature)
        self._remember(seen)
        if progress is not None:
            progress(ProgressEvent("index", len(paths), len(paths), "files"))

    def _chunking_signature(self) -> str:
        cfg = self.config.chunking
        return chunking_signature(cfg.chunk_tokens, cfg.chunk_overlap_tokens, cfg.chunk_context_tokens)

    def _remember(self, seen: dict[str, tuple[int, int]]) -> None:
        """Keep what this sync saw: the next check compares a walk with it."""
        self._known = seen

    def _reindex_file(self, path: str, force: bool, cache_identity: str | None, c: SyncStats
                      ) -> tuple[int, int] | None:
        """Re-read one file and replace its chunks if its content changed; returns the stat read.

        ``cache_identity``: look the chunks' vectors up in the cache under it (``None``: do not).
        """
        try:
            found = self.store.read_stamped(path, max_bytes=self.config.limits.max_file_bytes)
        except (OSError, MemoryStoreError) as exc:
            logger.warning("skipping %s: %s", path, exc)
            return None
        if found is None:
            return None
        stat, raw = found
        old = self.index.file_state(path)
        if raw is None:
            # Never read a huge file into a search's sync; say so in status instead.
            reason = over_max_file_bytes(stat[1], self.config.limits.max_file_bytes)
            if self.skipped.get(path) != reason:
                logger.warning("not indexing %s: %s", path, reason)
            self.skipped[path] = reason
            if old is not None:
                c.chunks_removed += self.index.remove_file(path)
            return stat
        self.skipped.pop(path, None)
        if not force and old is not None and (old.mtime_ns, old.size) == stat:
            return stat  # another process indexed this very version meanwhile
        digest = _sha256(raw)
        state = FileState(path, stat[0], stat[1], digest)
        if not force and old is not None and old.hash == digest:
            self.index.touch_file(state)
            return stat
        text = self._decode(path, raw)
        rows = self._chunk_rows(path, text, cache_identity, c)
        past = [PastRow(fact, _sha256(fact.statement)) for fact in past_facts(path, text)]
        removed, added = self.index.replace_file(state, file_kind(path), rows, past)
        c.files_changed += 1
        c.chunks_removed += removed
        c.chunks_added += added
        return stat

    def _load_warnings(self) -> dict[str, str]:
        try:
            stored = json.loads(self.index.get_meta("file_warnings") or "{}")
        except (ValueError, MemoryStoreError):  # a damaged index is healed elsewhere
            return {}
        return {str(k): str(v) for k, v in stored.items()} if isinstance(stored, dict) else {}

    def _save_warnings(self) -> None:
        # Another process's status reads them: a warned file is not re-read until it changes.
        text = json.dumps(self.warnings, ensure_ascii=False, sort_keys=True)
        if (self.index.get_meta("file_warnings") or "{}") != text:
            self.index.set_meta("file_warnings", text)

    def _decode(self, path: str, raw: bytes) -> str:
        """The file's text; bytes that are not UTF-8 become U+FFFD, and :attr:`warnings` says so."""
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            reason = (f"not valid UTF-8 (first bad byte at offset {exc.start}); indexed with U+FFFD "
                      "in place of the bad bytes: save the file as UTF-8")
            if self.warnings.get(path) != reason:
                logger.warning("%s is %s", path, reason)
            self.warnings[path] = reason
            return raw.decode("utf-8", errors="replace")
        self.warnings.pop(path, None)
        return text

    def _chunk_rows(self, path: str, text: str, cache_identity: str | None, c: SyncStats) -> list[ChunkRow]:
        chunks = chunk_markdown(
            text, chunk_tokens=self.config.chunking.chunk_tokens,
            overlap_tokens=self.config.chunking.chunk_overlap_tokens,
            context_tokens=self.config.chunking.chunk_context_tokens,
        )
        now = time.time()
        kind = file_kind(path)
        taken: set[str] = set()
        rows: list[ChunkRow] = []
        for chunk in chunks:
            chunk_id = f"{path}:{chunk.start_line}-{chunk.end_line}"
            n = 1
            while chunk_id in taken:
                n += 1
                chunk_id = f"{path}:{chunk.start_line}-{chunk.end_line}#{n}"
            taken.add(chunk_id)
            record = ChunkRecord(chunk_id, path, chunk.start_line, chunk.end_line, chunk.heading, chunk.text,
                                 chunk.hash, kind, now)
            # Provenance and expiry comments are bookkeeping: a query for "thread" must not find every fact.
            visible = strip_annotations(chunk.text)
            terms = index_terms(f"{chunk.heading}\n{visible}" if chunk.heading else visible)
            digest = _sha256(embed_text(chunk.heading, chunk.text, chunk.context))
            rows.append(ChunkRow(record, digest, terms, context=chunk.context))
        if cache_identity is None or not rows:
            return rows
        cached = self.index.cache.lookup([r.embed_hash for r in rows], cache_identity)
        if not cached:
            return rows
        c.cached += sum(1 for r in rows if r.embed_hash in cached)
        return [replace(r, vector=cached.get(r.embed_hash)) for r in rows]

    # -- embeddings -----------------------------------------------------------------

    def _fingerprint_or_none(self) -> str | None:
        """The embedding identity, clearing stored vectors when it changed."""
        if self.embedder is None or time.monotonic() < self._embed_retry_at:
            return None
        try:
            fingerprint = index_identity(self.embedder)
        except Exception as exc:  # provider down: keyword-only until it recovers
            self._embedding_failed(exc)
            return None
        stored = self.index.get_meta("embedding_identity")
        if stored != fingerprint:
            if stored is not None:
                logger.info("embedding identity changed from %s to %s; re-embedding", stored, fingerprint)
                self.identity_changed_from = stored
            self.index.clear_vectors()
            self.index.set_meta("embedding_identity", fingerprint)
        return fingerprint

    def _embed_missing(self, c: SyncStats, progress: ProgressCallback | None,
                       wait: float | None = None) -> None:
        """Embed what waits (under the sync lock); ``wait``: for at most that long, see :meth:`_sync`."""
        if wait is not None and self._behind:
            return  # the background job takes the new chunks too
        fingerprint = self._fingerprint_or_none()
        if fingerprint is None or self.embedder is None:
            return

        def report(done: int, total: int) -> None:
            if progress is not None:
                progress(ProgressEvent("embed", done, total, "chunks"))

        ends = None if wait is None else time.monotonic() + wait
        outcome = embed_missing(self.index, self.embedder, fingerprint,
                                batch_size=self.config.embedding.batch_size, report=report,
                                halt=None if ends is None else lambda: time.monotonic() >= ends)
        self._count(outcome, c)
        if outcome.stopped:
            self._start_backlog(outcome.left)
        elif outcome.failure is None:
            self._backlog_left = 0  # this sync embedded what a background job still counted

    def _count(self, outcome: EmbedOutcome, c: SyncStats | None) -> None:
        if c is not None:
            c.embedded += outcome.embedded
            c.cached += outcome.cached
            c.embed_errors += outcome.errors
        if outcome.failure is not None:
            self._embedding_failed(outcome.failure)
        elif outcome.embedded:
            self.embedding_error = None

    # -- the background job ----------------------------------------------------------

    @property
    def embedding_backlog(self) -> int:
        """Chunks the background job is still to embed (0 when it is not running)."""
        return self._backlog_left if self._behind else 0

    def _start_backlog(self, left: int) -> None:
        """Embed the ``left`` chunks that wait on a background thread (called under the sync lock)."""
        if self._backlog is not None:
            self._backlog.join()  # one that just finished (it let go of the lock): nothing left to wait for
        self._behind, self._backlog_left = True, left
        self._backlog_stop.clear()
        self._backlog = threading.Thread(target=self._embed_backlog, name="md-memory-embedding", daemon=True)
        self._backlog.start()

    def stop_embedding(self) -> None:
        """Stop the background job, if one runs, within about one model call; what it embedded is kept."""
        self._backlog_stop.set()
        if self._backlog is not None and self._backlog is not threading.current_thread():
            self._backlog.join()

    def _embed_backlog(self) -> None:
        """The background job: passes of about one model call each, until nothing waits or it is stopped."""
        pace = Pace(self.config.embedding.batch_size)
        base = 0  # chunks embedded by the passes before, so the progress counts never go back

        def report(done: int, total: int) -> None:
            self._backlog_left = total - done
            if self.progress is not None:
                self.progress(ProgressEvent("embed", base + done, base + total, "chunks"))

        while True:
            with self._sync_lock:
                outcome = None
                try:
                    if not self._backlog_stop.is_set():
                        outcome = self._embed_pass(pace, report)
                    if outcome is not None and not outcome.stopped:
                        self.index.after_sync()  # what is built in bulk once the vectors are in
                except Exception as exc:  # e.g. the index was closed or swapped under it
                    logger.warning("embedding in the background stopped: %s", scrub(exc))
                if outcome is None or not outcome.stopped or outcome.failure is not None:
                    self._behind = False  # under the lock: a sync that sees it False embeds for itself
                    return
                base += outcome.embedded + outcome.cached

    def _embed_pass(self, pace: Pace, report: Callable[[int, int], None]) -> EmbedOutcome | None:
        fingerprint = self._fingerprint_or_none()
        if fingerprint is None or self.embedder is None:
            return None
        ends = time.monotonic() + SLICE_S
        outcome = embed_missing(self.index, self.embedder, fingerprint,
                                batch_size=self.config.embedding.batch_size, report=report, pace=pace,
                                halt=lambda: self._backlog_stop.is_set() or time.monotonic() >= ends)
        self._count(outcome, None)
        return outcome

    def _embedding_failed(self, exc: BaseException) -> None:
        self.embedding_error = scrub(f"{type(exc).__name__}: {exc}")
        self._embed_retry_at = time.monotonic() + _EMBED_BACKOFF_S
        logger.warning("embedding failed, keyword-only until it recovers: %s", self.embedding_error)

    # -- rebuild and recovery --------------------------------------------------------

    def rebuild(self, progress: ProgressCallback | None = None) -> SyncStats:
        """Rebuild the index from the Markdown the way its owner does (see ``IndexOwner.rebuild``).

        A SQLite file is built fresh beside the current one and swapped in atomically; PostgreSQL is
        rebuilt in place (every file re-read, its chunks replaced, files gone removed). Either way
        readers never see it empty. ``progress`` as for :meth:`sync`.
        """
        with self._sync_lock:
            builder, stats = self.handle.rebuild(lambda owner: self._build(owner, progress))
            if builder is not self:  # a fresh index is in place: what its build saw is what it holds
                if builder._known is not None:
                    self._remember(builder._known)
                self.warnings = builder.warnings
                self._dirty = False
        return stats

    def _build(self, owner: IndexOwner, progress: ProgressCallback | None) -> tuple[Indexer, SyncStats]:
        if owner is self.handle:  # rebuilt in place: this indexer's own forced sync
            return self, self._sync(True, progress, None)
        builder = Indexer(self.store, owner, self.embedder, self.config, progress or self.progress)
        return builder, builder.sync(force=True, progress=progress)

    def recover(self, exc: MemoryIndexError, failed: SearchIndex) -> None:
        """Replace an index that failed mid-use: rebuilt from the Markdown, else an in-memory one.

        A busy index is another process at work, not damage: its file is never rebuilt over.
        Nothing happens when another thread already replaced ``failed``.
        """
        with self.handle.lock:
            if self.handle.index is not failed:
                return
            reason = str(exc)
            if isinstance(exc, IndexDamagedError) and not self.handle.in_memory:
                logger.warning("index %s failed (%s); rebuilding it from the Markdown", failed.path, exc)
                try:
                    self.rebuild()
                    return
                except (MemoryStoreError, OSError) as again:
                    reason = f"{exc}; the rebuild failed too: {again}"
            logger.warning("index %s failed (%s); answering from an in-memory index", failed.path, reason)
            self.handle.fall_back(reason)
            self.mark_dirty()
        self.sync()
