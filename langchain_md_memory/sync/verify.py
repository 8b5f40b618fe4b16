"""The consistency check: does the index say what the Markdown says, and if not, repair it.

Every managed Markdown file is read and hashed and compared with the index's
``files`` row and its chunks. A file can be:

* ``missing`` — on disk, unknown to the index;
* ``orphaned`` — in the index (a ``files`` row or chunks), gone from disk;
* ``stale`` — changed on disk (mtime/size and content) since it was indexed;
* ``hash_mismatch`` — mtime and size match the index but the content does not
  (an edit within one mtime tick, or a damaged row): an ordinary sync cannot
  see this one;
* ``chunk_mismatch`` — the file row is current but its chunks are not what
  the chunker cuts from the file now, or a chunk lost its keyword (FTS) row.

Repair re-syncs exactly the affected files (their rows are dropped, then one
incremental sync re-chunks them; vectors come from the embedding cache), and
rebuilds the whole index when it cannot be read at all. A second pass then
checks the result.

Example:
    .. code-block:: python

        from langchain_md_memory import MarkdownMemory

        with MarkdownMemory("memory", embeddings="none") as mem:
            report = mem.verify()
            assert report.ok, report.remaining
            print(report.summary())
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import asdict, dataclass, field
from typing import Any

from ..errors import MemoryIndexError, MemoryStoreError
from ..files.chunker import chunk_markdown
from ..text.redaction import scrub
from ..types import ProgressCallback, ProgressEvent
from .indexer import Indexer

__all__ = ["VerifyReport", "verify_index"]

logger = logging.getLogger(__name__)

_PROBLEM_KINDS = ("missing", "orphaned", "stale", "hash_mismatch", "chunk_mismatch")


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """What :func:`verify_index` found, and what it repaired.

    The problem tuples (sorted relative paths) describe the index as found,
    before any repair. ``index_error`` is set when the index could not be read
    at all. ``repaired`` lists the paths re-synced or forgotten, ``rebuilt``
    says the whole index was rebuilt, and ``remaining`` the problems a second
    pass still saw after the repair (empty when it worked).
    """

    files: int
    indexed: int
    chunks: int
    missing: tuple[str, ...] = ()
    orphaned: tuple[str, ...] = ()
    stale: tuple[str, ...] = ()
    hash_mismatch: tuple[str, ...] = ()
    chunk_mismatch: tuple[str, ...] = ()
    index_error: str | None = None
    repaired: tuple[str, ...] = ()
    rebuilt: bool = False
    remaining: tuple[str, ...] = field(default=())

    @property
    def problems(self) -> tuple[str, ...]:
        """Every path with any problem, sorted and distinct."""
        return tuple(sorted({p for kind in _PROBLEM_KINDS for p in getattr(self, kind)}))

    @property
    def consistent(self) -> bool:
        """True when the index matched the Markdown before any repair."""
        return self.index_error is None and not self.problems

    @property
    def ok(self) -> bool:
        """True when the index matches the Markdown now (consistent, or repaired)."""
        if self.consistent:
            return True
        return (bool(self.repaired) or self.rebuilt) and not self.remaining

    def to_dict(self) -> dict[str, Any]:
        """The report as a plain dict (JSON-ready), with ``consistent`` and ``ok``."""
        data = asdict(self)
        data.update(consistent=self.consistent, ok=self.ok)
        return data

    def findings(self) -> str:
        """What is wrong, counted by kind (``inconsistent: stale 2``)."""
        found = [f"{kind.replace('_', ' ')} {len(getattr(self, kind))}"
                 for kind in _PROBLEM_KINDS if getattr(self, kind)]
        if self.index_error is not None:
            found.insert(0, f"index unreadable ({self.index_error})")
        return f"inconsistent: {', '.join(found)}"

    def summary(self) -> str:
        """One line for people: counts of each problem and what was done."""
        if self.consistent:
            return f"consistent: {self.files} files, {self.chunks} chunks"
        done = "rebuilt the index" if self.rebuilt else (
            f"re-synced {len(self.repaired)} files" if self.repaired else "not repaired")
        left = f"; still wrong: {', '.join(self.remaining)}" if self.remaining else ""
        return f"{self.findings()}; {done}{left}"


@dataclass(frozen=True, slots=True)
class _Findings:
    files: int
    indexed: int
    chunks: int
    problems: dict[str, tuple[str, ...]]
    fts_orphans: int  # keyword rows whose chunk is gone: only a rebuild removes them


def verify_index(indexer: Indexer, *, repair: bool = True,
                 progress: ProgressCallback | None = None) -> VerifyReport:
    """Compare every managed Markdown file with the index; repair what differs when ``repair``.

    ``progress`` receives ``verify`` events (files compared), then a repair's sync or rebuild events.

    Raises:
        MemoryIndexError: when a repair was needed and the index could not be
            rebuilt (for example a read-only folder).
    """
    try:
        found = _inspect(indexer, progress)
    except MemoryIndexError as exc:
        logger.warning("verify: index %s is unreadable (%s)", indexer.index.path, exc)
        if not repair:
            return VerifyReport(files=len(indexer.store.scan()), indexed=0, chunks=0, index_error=str(exc))
        _rebuild(indexer, progress)
        after = _inspect(indexer)
        return VerifyReport(files=after.files, indexed=0, chunks=0, index_error=str(exc), rebuilt=True,
                            remaining=_all_paths(after))
    report = _report(found)
    if report.consistent and not found.fts_orphans:
        return report
    logger.warning("verify: %s", report.summary() if not repair else report.findings() + "; repairing")
    if not repair:
        return report
    if found.fts_orphans:
        logger.warning("verify: %d keyword rows without a chunk; rebuilding the index", found.fts_orphans)
        _rebuild(indexer, progress)
        rebuilt, repaired = True, report.problems
    else:
        rebuilt, repaired = False, report.problems
        try:
            for path in repaired:
                indexer.index.remove_file(path)
            indexer.mark_dirty()
            indexer.sync(progress=progress)
        except MemoryIndexError as exc:  # e.g. a hostile trigger refusing the delete
            logger.warning("verify: re-syncing failed (%s); rebuilding the index", scrub(exc))
            _rebuild(indexer, progress)
            rebuilt = True
    after = _inspect(indexer)
    remaining = _all_paths(after)
    if remaining:
        logger.warning("verify: still inconsistent after repair: %s", ", ".join(remaining))
    return _report(found, repaired=repaired, rebuilt=rebuilt, remaining=remaining)


def _report(found: _Findings, *, repaired: tuple[str, ...] = (), rebuilt: bool = False,
            remaining: tuple[str, ...] = ()) -> VerifyReport:
    p = found.problems
    return VerifyReport(
        files=found.files, indexed=found.indexed, chunks=found.chunks, missing=p["missing"],
        orphaned=p["orphaned"], stale=p["stale"], hash_mismatch=p["hash_mismatch"],
        chunk_mismatch=p["chunk_mismatch"], repaired=repaired, rebuilt=rebuilt, remaining=remaining,
    )


def _all_paths(found: _Findings) -> tuple[str, ...]:
    return tuple(sorted({p for paths in found.problems.values() for p in paths}))


def _inspect(indexer: Indexer, progress: ProgressCallback | None = None) -> _Findings:
    store, index, config = indexer.store, indexer.index, indexer.config
    # Damaged pages can hide from the queries below (a search touches few pages); this reads them all.
    check = index.health.integrity_problems()
    if check:
        raise MemoryIndexError(f"index {index.path} failed its integrity check: {'; '.join(check[:3])}")
    scanned = store.scan()
    states = index.file_states()
    expected_chunks = index.health.chunk_spans()
    problems: dict[str, list[str]] = {kind: [] for kind in _PROBLEM_KINDS}
    for path in sorted(set(states) | set(expected_chunks)):
        if path not in scanned:
            problems["orphaned"].append(path)
    for done, (path, stat) in enumerate(sorted(scanned.items()), 1):
        if progress is not None:
            progress(ProgressEvent("verify", done - 1, len(scanned), "files"))
        try:
            raw = store.read_bytes(path)
        except (OSError, MemoryStoreError) as exc:
            logger.debug("verify: cannot read %s: %s", path, exc)  # sync skips it the same way
            continue
        state = states.get(path)
        if state is None:
            problems["missing"].append(path)
            continue
        digest = hashlib.sha256(raw).hexdigest()
        if digest != state.hash:
            kind = "hash_mismatch" if (state.mtime_ns, state.size) == stat else "stale"
            problems[kind].append(path)
            continue
        text = raw.decode("utf-8", errors="replace")
        want = sorted(
            (c.start_line, c.end_line, c.hash)
            for c in chunk_markdown(text, chunk_tokens=config.chunking.chunk_tokens,
                                    overlap_tokens=config.chunking.chunk_overlap_tokens)
        )
        if sorted(expected_chunks.get(path, [])) != want:
            problems["chunk_mismatch"].append(path)
    for path in index.health.paths_without_keywords():
        if path in scanned and path not in problems["chunk_mismatch"]:
            problems["chunk_mismatch"].append(path)
    chunks = sum(len(v) for v in expected_chunks.values())
    if progress is not None:
        progress(ProgressEvent("verify", len(scanned), len(scanned), "files"))
    return _Findings(
        files=len(scanned),
        indexed=len(states),
        chunks=chunks,
        problems={kind: tuple(sorted(paths)) for kind, paths in problems.items()},
        fts_orphans=index.health.keyword_orphans(),
    )


def _rebuild(indexer: Indexer, progress: ProgressCallback | None = None) -> None:
    try:
        indexer.rebuild(progress=progress)
    except OSError as exc:
        raise MemoryIndexError(f"cannot rebuild index {indexer.index.path}: {exc}") from exc
