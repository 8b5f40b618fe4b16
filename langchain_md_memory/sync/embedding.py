"""Giving chunks their vectors: from the embedding cache when the text was seen before, else the model.

Chunks missing a vector are read a page at a time (a rowid cursor visits each
once). Within a page the texts not in the cache go to the model in calls sized
to take about :data:`SLICE_S` each (one text first, then as many as the last
call's pace allows, at most ``batch_size``). The statements of struck History
lines follow, sliced the same way, into the cache only: an as-of search reads
their vectors from there. Vectors are committed as soon as :data:`FLUSH_S` has
passed since the last commit, so a model slower than that (any real one) has
each call's vectors written before its next call: an interrupted sync keeps
every vector it paid for, and the next sync starts where it stopped. A fast
embedder (or the cache) shares one commit among many calls instead of paying
one each.

Between calls the work can stop: Ctrl-C (a model computing in this process
holds the interpreter until its call returns, so short calls are what lets it
through at once), or ``halt`` (a search's deadline, a background job told to
stop); :attr:`EmbedOutcome.stopped` then says work was left.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..embeddings.base import Embedder
from ..embeddings.client import INDEX_TOKENIZER_VERSION
from ..files.chunker import CHUNKER_VERSION
from ..files.facts import strip_annotations
from ..index.base import SearchIndex

__all__ = [
    "FLUSH_S", "SLICE_S", "EmbedOutcome", "Pace", "embed_cached", "embed_missing", "embed_text",
    "index_identity", "space_identity",
]

FLUSH_S = 0.05
"""Vectors wait at most this long (plus one model call) for their commit."""

_FLUSH_ROWS = 4096
"""... or until this many chunks wait, whichever comes first."""

SLICE_S = 1.0
"""A model call is given as many texts as took about this long at the last call's pace, so stopping
(Ctrl-C, a deadline) waits at most about this long for the call under way."""


@dataclass(slots=True)
class EmbedOutcome:
    """What :func:`embed_missing` did: texts embedded, vectors from the cache, texts left by a failure,
    and whether it stopped (``halt``) with work left, and how much (``left``)."""

    embedded: int = 0
    cached: int = 0
    errors: int = 0
    failure: Exception | None = None
    stopped: bool = False
    left: int = 0


@dataclass(slots=True)
class Pace:
    """How many texts the next model call gets: one at first, then what took :data:`SLICE_S` at the last
    call's pace, at most ``batch_size``. One pace may serve several :func:`embed_missing` runs."""

    batch_size: int
    size: int = 1

    def took(self, texts: int, seconds: float) -> None:
        per_text = seconds / texts
        fits = int(SLICE_S / per_text) if per_text > 0 else self.batch_size
        self.size = max(1, min(self.batch_size, fits))

    def call(self, embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
        """``texts`` embedded in one model call, timed for the next call's size."""
        started = time.perf_counter()
        vectors = embedder.embed_documents(texts)
        self.took(len(texts), time.perf_counter() - started)
        return vectors


def embed_text(heading: str, text: str, context: str = "") -> str:
    """The text sent to the embedding model for a chunk: its heading path, the text, then its context.

    ``context`` is what the chunker gives a short chunk: its neighbouring lines
    (see :mod:`langchain_md_memory.files.chunker`). ``src:`` and ``expires:``
    comments are left out: bookkeeping, not meaning.
    """
    parts = (heading, strip_annotations(text), strip_annotations(context))
    return "\n\n".join(part for part in parts if part)


@dataclass
class _Pending:
    """Vectors computed but not yet committed; :meth:`flush` writes them in one transaction."""

    index: SearchIndex
    fingerprint: str
    fresh: list[tuple[str, np.ndarray]] = field(default_factory=list)
    rows: list[tuple[int, np.ndarray]] = field(default_factory=list)
    since: float = field(default_factory=time.perf_counter)

    def add(self, fresh: list[tuple[str, np.ndarray]], rows: list[tuple[int, np.ndarray]]) -> int:
        """Queue vectors (``fresh`` ones for the cache too), committing when due; returns ``len(rows)``."""
        self.fresh += fresh
        self.rows += rows
        if len(self.rows) >= _FLUSH_ROWS or time.perf_counter() - self.since >= FLUSH_S:
            self.flush()
        return len(rows)

    def flush(self) -> None:
        """Commit what waits: the cache and the chunks' vectors together."""
        if self.rows or self.fresh:
            with self.index.writing():
                self.index.cache.store(self.fresh, self.fingerprint)
                self.index.set_vectors(self.rows)
        self.fresh, self.rows, self.since = [], [], time.perf_counter()


def embed_missing(index: SearchIndex, embedder: Embedder, fingerprint: str, *, batch_size: int,
                  report: Callable[[int, int], None] | None = None,
                  halt: Callable[[], bool] | None = None, pace: Pace | None = None) -> EmbedOutcome:
    """Give every chunk without a vector one; ``report(done, total)`` counts chunks as they get theirs.

    A provider failure stops the work (the chunks left stay keyword-only) and is
    returned in :attr:`EmbedOutcome.failure`, not raised. ``halt`` is asked before
    each model call; when it says True the work stops there (:attr:`EmbedOutcome.stopped`).
    ``pace`` sizes the model calls (a new one, starting at one text, by default).
    """
    out = EmbedOutcome()
    chunks, embedded = index.count_chunks()
    past = index.past_facts_missing_vectors()
    total, done = max(chunks - embedded, 0) + len(past), 0

    def advance(n: int) -> None:
        nonlocal done, total
        done += n
        total = max(total, done)  # another process may add chunks meanwhile
        if report is not None and n:
            report(done, total)

    if report is not None and total:
        report(0, total)
    pending = _Pending(index, fingerprint)
    pace = pace or Pace(batch_size)
    stop = halt or (lambda: False)
    try:
        _embed_pages(index, embedder, fingerprint, pace, out, pending, advance, stop)
        if out.failure is None and not out.stopped:
            _embed_past(embedder, past, pace, out, pending, advance, stop)
    finally:
        pending.flush()
    if out.stopped:
        out.left = total - done
    if report is not None and done < total and not out.stopped:
        report(total, total)  # the rest got vectors from another process meanwhile
    return out


def _embed_pages(index: SearchIndex, embedder: Embedder, fingerprint: str, pace: Pace, out: EmbedOutcome,
                 pending: _Pending, advance: Callable[[int], None], halt: Callable[[], bool]) -> None:
    after = 0
    while True:
        # Chunks queued in ``pending`` are past ``after``: the cursor never reads them again.
        page = index.chunks_missing_vectors(pace.batch_size * 8, after_rowid=after)
        if not page:
            return
        after = page[-1][0]
        cached = index.cache.lookup([p[1] for p in page], fingerprint)
        ready = [(p[0], cached[p[1]]) for p in page if p[1] in cached]
        out.cached += len(ready)
        advance(pending.add([], ready))
        # One call per distinct text: duplicates in a page share a vector.
        rows_of: dict[str, list[int]] = {}
        texts: dict[str, str] = {}
        for rowid, digest, heading, text, context in page:
            if digest not in cached:
                rows_of.setdefault(digest, []).append(rowid)
                texts.setdefault(digest, embed_text(heading, text, context))
        todo = list(rows_of)
        for batch, vectors in _paced(embedder, todo, [texts[d] for d in todo], pace, out, halt):
            fresh = list(zip(batch, vectors, strict=True))
            advance(pending.add(fresh, [(rowid, v) for d, v in fresh for rowid in rows_of[d]]))
        if out.stopped or out.failure is not None:
            return


def _embed_past(embedder: Embedder, past: Sequence[tuple[str, str]], pace: Pace, out: EmbedOutcome,
                pending: _Pending, advance: Callable[[int], None], halt: Callable[[], bool]) -> None:
    """Vectors of struck lines' statements (``(hash, statement)``), into the cache only."""
    digests = [digest for digest, _ in past]
    for batch, vectors in _paced(embedder, digests, [statement for _, statement in past], pace, out, halt):
        pending.add(list(zip(batch, vectors, strict=True)), [])
        advance(len(batch))


def _paced(embedder: Embedder, keys: Sequence[str], texts: Sequence[str], pace: Pace, out: EmbedOutcome,
           halt: Callable[[], bool]) -> Iterator[tuple[Sequence[str], np.ndarray]]:
    """``keys`` in batches with the vectors of their ``texts``, one model call each, sized by ``pace``.

    Stops early, marking ``out``, when ``halt`` says so or a call fails: any provider failure leaves
    the rest keyword-only until the next sync.
    """
    start = 0
    while start < len(keys):
        if halt():
            out.stopped = True
            return
        end = start + pace.size
        batch = keys[start:end]
        try:
            vectors = pace.call(embedder, texts[start:end])
        except Exception as exc:
            out.errors += len(keys) - start
            out.failure = exc
            return
        out.embedded += len(batch)
        yield batch, vectors
        start = end


def cosines(index: SearchIndex, embedder: Embedder, fingerprint: str, vector: np.ndarray,
            texts: Sequence[str]) -> list[float]:
    """The cosine of the unit ``vector`` to each of ``texts``, embedded through the index's cache."""
    rows = embed_cached(index, embedder, fingerprint, texts) if texts else ()
    return [float(row @ vector) for row in rows]


def embed_cached(index: SearchIndex, embedder: Embedder, fingerprint: str,
                 texts: Sequence[str]) -> np.ndarray:
    """Unit vectors of ``texts`` (one row each, in order): from the index's embedding cache, the
    rest embedded in one call and cached for next time."""
    digests = [hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest() for text in texts]
    known = index.cache.lookup(list(dict.fromkeys(digests)), fingerprint)
    todo = list(dict.fromkeys(d for d in digests if d not in known))
    if todo:
        first = {d: t for d, t in zip(digests, texts, strict=True)}
        fresh = list(zip(todo, embedder.embed_documents([first[d] for d in todo]), strict=True))
        with index.writing():
            index.cache.store(fresh, fingerprint)
        known.update(fresh)
    return np.vstack([known[d] for d in digests]) if digests else np.empty((0, 1), dtype=np.float32)


def index_identity(embedder: Embedder) -> str:
    """What the stored vectors depend on: ``provider:model:dim`` plus chunker and tokenizer versions."""
    return space_identity(embedder.identity())


def space_identity(space: object) -> str:
    """:func:`index_identity` of an embedder whose ``identity()`` is ``space`` (``provider:model:dim``)."""
    return f"{space}|chunker={CHUNKER_VERSION}|tokenizer={INDEX_TOKENIZER_VERSION}"
