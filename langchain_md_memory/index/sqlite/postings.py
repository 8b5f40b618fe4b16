"""Keyword postings kept in memory: each query term's chunks, term counts and chunk lengths.

Keyword recall scores every chunk holding a query term (:func:`~..scoring.bm25_top_k`), so its
answer is the exhaustive BM25 top k. Reading a frequent term's postings from FTS5 costs in
proportion to its occurrences, so they are read once, on
the first query that needs them, and kept: for this index generation, and across this process's
own writes, which :meth:`KeywordPostings.apply` folds in (the chunks a write removed and added).
A write by another process changes the generation without telling this one: everything is read
again. What is kept is bounded (:data:`POSTINGS_PER_CHUNK`); the least recently used terms go first.

A process that keeps searching a memory of up to :data:`RESIDENT_INSTANCES` indexed words reads
every term's postings at once instead (one pass over FTS5, about 0.7 s and 16 bytes a posting at
100k chunks), after it has read :data:`READS_BEFORE_RESIDENT` terms one by one: no later search
reads FTS5 for a term, and a term the memory lacks is known absent without a statement. A one-off
search never pays for the pass. A term this process's writes touch is read from FTS5 again.

The postings come from the FTS5 index itself (an ``fts5vocab`` table of term instances), so they
count what keyword matching counts; a chunk's length is its ``n_terms``, as BM25 has always used.

Example:
    .. code-block:: python

        postings = KeywordPostings(db.query)
        postings.follow(generation)                  # inside the read snapshot
        bond, doc_freq = postings.term("bond")       # Postings(rowids, tf, lengths), FTS5's count
        tops, idf = postings.searches([["bond", "ladder"]], limit=24)   # [[(bm25, rowid)]], idf
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from ...text import SCRIPT_CJK
from ..scoring import Postings, bm25_parts, bm25_top_k, lucene_idf

__all__ = ["INSTANCES_TABLE", "POSTINGS_PER_CHUNK", "READS_BEFORE_RESIDENT", "RESIDENT_INSTANCES",
           "KeywordPostings"]

Query = Callable[[str, Sequence[Any]], Sequence[Any]]
"""Runs one SQL statement and returns its rows (``IndexConnection.query``)."""

INSTANCES_TABLE = "chunks_instances"
"""The ``fts5vocab(chunks_fts, 'instance')`` table: one row per term occurrence (term, doc, col, offset)."""

POSTINGS_PER_CHUNK = 2
"""Postings kept in memory: at most this many per chunk of the memory (24 bytes each), and never
fewer than :data:`_MIN_KEPT`. A query's own terms are kept while it runs, whatever their size."""
_MIN_KEPT = 1_000_000
RESIDENT_INSTANCES = 8_000_000
"""A memory with at most this many indexed words (FTS5 term instances: about 150k chunks of 50 words)
has all its postings read at once by a process that keeps searching it."""
READS_BEFORE_RESIDENT = 32
"""Terms read one by one from FTS5 (in one index generation) before all postings are read at once."""

# The terms of CJK text (kana, CJK ideographs, Hangul, compatibility ideographs) sort in this range.
_CJK_TERMS = ("\u3040", "\ufb00")
_EMPTY = Postings(np.empty(0, np.int64), np.empty(0, np.int32), np.empty(0, np.int32))

Change = tuple[int, int, str]
"""One chunk a write removed or added: ``(rowid, n_terms, terms)`` (``terms`` as stored in FTS5)."""


class KeywordPostings:
    """The postings of the terms queried so far, the chunks' lengths and the corpus statistics.

    Not locked: the index calls it under its connection's lock, inside the read snapshot (searches)
    or the write transaction (:meth:`apply`), so what it reads and keeps is of one index state.
    """

    def __init__(self, query: Query) -> None:
        self._query = query
        self.generation = -1
        """The index generation what is kept belongs to (-1: nothing kept)."""
        self._terms: OrderedDict[str, tuple[Postings, int]] = OrderedDict()  # and FTS5 rows without a chunk
        self._held = 0  # postings in _terms
        self._stats: tuple[int, int] | None = None  # chunks, their terms in all
        self._lengths: tuple[np.ndarray, np.ndarray] | None = None  # rowids ascending, n_terms
        self._scripts: dict[int, bool] = {}
        self._parts: dict[str, np.ndarray] = {}  # each kept term's BM25 parts, for the current statistics
        self._reads = 0  # terms read from FTS5 one by one in this generation
        self._resident: _Resident | None = None  # every term's postings, read at once
        self._stale: set[str] = set()  # resident terms this process's writes touched since

    @property
    def holds_terms(self) -> bool:
        """True when some term's postings are kept (a write must then say which terms it removed)."""
        return bool(self._terms) or self._resident is not None

    def clear(self) -> None:
        """Forget everything (read again on next use)."""
        self.generation = -1
        self._terms.clear()
        self._held = 0
        self._stats = None
        self._lengths = None
        self._scripts.clear()
        self._parts.clear()
        self._reads = 0
        self._resident = None
        self._stale.clear()

    def follow(self, generation: int) -> None:
        """Keep what is held only if it belongs to ``generation`` (the index's, read in this snapshot)."""
        if generation != self.generation:
            self.clear()
            self.generation = generation

    # -- reading ---------------------------------------------------------------------

    def corpus_stats(self) -> tuple[int, float]:
        """(chunks, mean terms per chunk): BM25's N and average length (1.0 for an empty memory)."""
        if self._stats is None:
            row = self._query("SELECT count(*), total(n_terms) FROM chunks", ())[0]
            self._stats = (int(row[0]), int(row[1]))
        n_docs, total = self._stats
        return n_docs, (total / n_docs if n_docs and total else 1.0)

    def term(self, term: str) -> tuple[Postings, int]:
        """The chunks holding ``term`` and how many FTS5 rows hold it (its document frequency, as the
        FTS5 vocabulary counts it): read from FTS5 unless kept."""
        kept = self._terms.get(term)
        if kept is not None:
            self._terms.move_to_end(term)
        elif (kept := self._from_resident(term)) is None:
            kept = self._terms[term] = self._read(term)
            self._held += len(kept[0].rowids)
            self._reads += 1
        return kept[0], len(kept[0].rowids) + kept[1]

    def _from_resident(self, term: str) -> tuple[Postings, int] | None:
        """``term``'s postings from those read at once (reading them all first when it is time), or
        ``None`` when they must be read from FTS5."""
        asked = self._resident is None and self._reads == READS_BEFORE_RESIDENT  # once a generation
        if asked and 0 < self.size()[1] <= RESIDENT_INSTANCES:
            self._resident = _Resident.read(self._query, self._lengths_of)
        if self._resident is None or term in self._stale:
            return None
        return self._resident.get(term)

    def size(self) -> tuple[int, int]:
        """(chunks, indexed words in all): each chunk's ``n_terms`` is its count of FTS5 term instances."""
        self.corpus_stats()
        assert self._stats is not None
        return self._stats

    def holds_script(self, script: int) -> bool:
        """True when some indexed term is written in ``script`` (``SCRIPT_CJK``: CJK characters;
        ``SCRIPT_OTHER``: anything else). Probes of the FTS5 vocabulary's order, a few µs."""
        if script not in self._scripts:
            low, high = _CJK_TERMS
            sql = f"SELECT 1 FROM {INSTANCES_TABLE} WHERE term >= ? AND term < ? LIMIT 1"
            ranges = [(low, high)] if script == SCRIPT_CJK else [("", low), (high, "\U0010ffff")]
            self._scripts[script] = any(self._query(sql, bounds) for bounds in ranges)
        return self._scripts[script]

    def doc_freqs(self, terms: Sequence[str]) -> dict[str, int]:
        """Each term's document frequency, from its postings (read and kept: counting a term's
        rows costs FTS5 as much as reading them, and a search asking for it reads them next)."""
        out = {term: self.term(term)[1] for term in terms}
        self.trim()
        return out

    def searches(self, queries: Sequence[Sequence[str]], limit: int
                 ) -> tuple[list[list[tuple[float, int]]], dict[str, float]]:
        """The exhaustive BM25 top ``limit`` ``(score, rowid)`` of each query's terms (see
        :func:`~..scoring.bm25_top_k`), and the first query's terms' idf. A term two queries share
        is read once."""
        n_docs, avg_len = self.corpus_stats()
        tops: list[list[tuple[float, int]]] = []
        first: dict[str, float] = {}
        for n, terms in enumerate(queries):
            found = [self.term(term) for term in terms]
            idf = [lucene_idf(n_docs, df) for _, df in found]
            postings = [p for p, _ in found]
            # A term's parts depend on the statistics alone (its idf, the mean length): kept with it.
            for term, p, weight in zip(terms, postings, idf, strict=True):
                if term not in self._parts:
                    self._parts[term] = bm25_parts(p, weight, avg_len)
            parts = [self._parts[term] for term in terms]
            tops.append(bm25_top_k(postings, idf, avg_len, limit, parts))
            first = dict(zip(terms, idf, strict=True)) if n == 0 else first
        self.trim()
        return tops, first

    def scores_of(self, terms: Sequence[str], rowids: np.ndarray) -> np.ndarray:
        """The BM25 over ``terms`` of each chunk of ``rowids``: the score :meth:`searches` gives it (the same
        parts added in the same order), 0 for one holding none of them."""
        n_docs, avg_len = self.corpus_stats()
        total = np.zeros(len(rowids))
        for term in terms:
            postings, df = self.term(term)
            if term not in self._parts:
                self._parts[term] = bm25_parts(postings, lucene_idf(n_docs, df), avg_len)
            at = np.minimum(np.searchsorted(postings.rowids, rowids), max(len(postings.rowids) - 1, 0))
            held = (postings.rowids[at] == rowids) if len(postings.rowids) else np.zeros(len(rowids), bool)
            total[held] += self._parts[term][at[held]]
        self.trim()
        return total

    def trim(self) -> None:
        """Drop the least recently used terms until what is kept fits (call after a search)."""
        n_docs = self._stats[0] if self._stats is not None else 0
        limit = max(_MIN_KEPT, POSTINGS_PER_CHUNK * n_docs)
        while self._held > limit and len(self._terms) > 1:
            term, (dropped, _) = self._terms.popitem(last=False)
            self._held -= len(dropped.rowids)
            self._parts.pop(term, None)

    def _read(self, term: str) -> tuple[Postings, int]:
        """The term's postings, and how many FTS5 rows holding it have no chunk (left out of them)."""
        row = self._query(f"SELECT group_concat(doc, ' ') FROM {INSTANCES_TABLE} WHERE term = ?", (term,))
        text = row[0][0] if row else None
        if not text:
            return _EMPTY, 0
        postings, _, orphans = _parsed([text], self._lengths_of)
        return postings, int(orphans[0])

    def _lengths_of(self, rowids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Which of ``rowids`` are chunks, and their term counts (0 where not)."""
        if self._lengths is None:
            text = self._query("SELECT group_concat(rowid || ' ' || n_terms, ' ') FROM chunks", ())[0][0]
            pairs = np.fromstring(text or "", dtype=np.int64, sep=" ").reshape(-1, 2)
            order = np.argsort(pairs[:, 0], kind="stable")
            self._lengths = (pairs[order, 0].copy(), pairs[order, 1].astype(np.int32))
        ids, counts = self._lengths
        at = np.minimum(np.searchsorted(ids, rowids), max(len(ids) - 1, 0))
        known = ids[at] == rowids if len(ids) else np.zeros(len(rowids), dtype=bool)
        return known, np.where(known, counts[at] if len(ids) else 0, 0).astype(np.int32)

    # -- this process's writes -----------------------------------------------------

    def after_write(self, before: int, removed: Sequence[Change], added: Sequence[Change]) -> None:
        """Follow a write that moved the index from generation ``before`` to the next (in its transaction)."""
        if self.generation == before:
            self.apply(removed, added)
            self.generation = before + 1
        else:  # another process wrote since what is kept was read: read again on next use
            self.clear()

    def apply(self, removed: Sequence[Change], added: Sequence[Change]) -> None:
        """Fold in one write: the chunks it removed, then those it added (inside its transaction)."""
        self._scripts.clear()
        self._parts.clear()  # the statistics change with any write
        if self._resident is not None:  # what was read at once no longer holds for these terms
            self._stale.update(term for _, _, terms in (*removed, *added) for term in terms.split())
        if self._stats is not None:
            n_docs, total = self._stats
            self._stats = (n_docs - len(removed) + len(added),
                           total - sum(n for _, n, _ in removed) + sum(n for _, n, _ in added))
        if self._lengths is not None:
            ids, counts = self._lengths
            keep = _kept(ids, [r for r, _, _ in removed])
            new_ids = np.fromiter((r for r, _, _ in added), np.int64, len(added))
            new_counts = np.fromiter((n for _, n, _ in added), np.int32, len(added))
            merged = _merged(ids[keep], (counts[keep],), new_ids, (new_counts,))
            self._lengths = (merged[0], merged[1][0])
        if not self._terms:
            return
        for term, rows in _by_term(removed, self._terms).items():
            old = self._terms[term][0]
            keep = _kept(old.rowids, [r for r, _ in rows])
            self._replace(term, Postings(old.rowids[keep], old.tf[keep], old.lengths[keep]))
        for term, rows in _by_term(added, self._terms).items():
            old = self._terms[term][0]
            ids = np.asarray([r for r, _ in rows], dtype=np.int64)
            tf = np.asarray([tf for _, (tf, _) in rows], dtype=np.int32)
            lengths = np.asarray([n for _, (_, n) in rows], dtype=np.int32)
            ids, (tf, lengths) = _merged(old.rowids, (old.tf, old.lengths), ids, (tf, lengths))
            self._replace(term, Postings(ids, tf, lengths))

    def _replace(self, term: str, postings: Postings) -> None:
        old, orphans = self._terms[term]
        self._held += len(postings.rowids) - len(old.rowids)
        self._terms[term] = (postings, orphans)


class _Resident:
    """Every term's postings as slices of three arrays (rowids, term counts, chunk lengths), read in
    one pass over the FTS5 instance table, and each term's FTS5 rows without a chunk."""

    def __init__(self, spans: dict[str, tuple[int, int, int]], rowids: np.ndarray, tf: np.ndarray,
                 lengths: np.ndarray) -> None:
        self._spans = spans
        self._columns = (rowids, tf, lengths)

    def get(self, term: str) -> tuple[Postings, int]:
        """``term``'s postings (views) and its rows without a chunk; none for a term no chunk holds."""
        span = self._spans.get(term)
        if span is None:
            return _EMPTY, 0
        start, stop, orphans = span
        rowids, tf, lengths = self._columns
        return Postings(rowids[start:stop], tf[start:stop], lengths[start:stop]), orphans

    @classmethod
    def read(cls, query: Query, lengths_of: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]
             ) -> _Resident:
        """Read every term's postings (the same as :meth:`KeywordPostings._read` gives, term by term)."""
        rows = query(f"SELECT term, group_concat(doc, ' ') FROM {INSTANCES_TABLE} GROUP BY term", ())
        terms = [str(row[0]) for row in rows]
        texts = [str(row[1]) for row in rows]
        del rows
        postings, owner, orphans = _parsed(texts, lengths_of)
        bounds = np.searchsorted(owner, np.arange(len(terms) + 1))
        spans = {term: (int(bounds[i]), int(bounds[i + 1]), int(orphans[i])) for i, term in enumerate(terms)}
        return cls(spans, *postings)


def _parsed(texts: list[str], lengths_of: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]
            ) -> tuple[Postings, np.ndarray, np.ndarray]:
    """The postings of each text (a term's FTS5 occurrences as ``group_concat(doc, ' ')``), one after
    another; which text each posting is of; and each text's rows whose chunk is gone (only a rebuild
    removes them), left out of the postings: never a hit, but counted in the term's df."""
    counts = np.fromiter((text.count(" ") + 1 for text in texts), np.int64, len(texts))
    docs = np.fromstring(" ".join(texts), dtype=np.int64, sep=" ")  # one occurrence each, rowid order
    owner = np.repeat(np.arange(len(texts), dtype=np.int32), counts)
    if len(docs) > 1 and bool(np.any((docs[1:] < docs[:-1]) & (owner[1:] == owner[:-1]))):
        order = np.lexsort((docs, owner))
        docs, owner = docs[order], owner[order]
    starts = np.flatnonzero(np.r_[True, (docs[1:] != docs[:-1]) | (owner[1:] != owner[:-1])])
    rowids, owner = docs[starts], owner[starts]
    tf = np.diff(np.r_[starts, len(docs)]).astype(np.int32)
    del docs
    known, lengths = lengths_of(rowids)
    orphans = np.bincount(owner[~known], minlength=len(texts))
    if not known.all():
        rowids, tf, lengths, owner = rowids[known], tf[known], lengths[known], owner[known]
    return Postings(rowids, tf, lengths), owner, orphans


def _by_term(changes: Iterable[Change], kept: OrderedDict[str, tuple[Postings, int]]) -> dict[str, list[Any]]:
    """For each kept term in the changed chunks: ``(rowid, (tf, n_terms))`` of each chunk holding it."""
    out: dict[str, list[Any]] = {}
    for rowid, n_terms, terms in changes:
        for term, tf in Counter(terms.split()).items():
            if term in kept:
                out.setdefault(term, []).append((rowid, (tf, n_terms)))
    return out


def _kept(ids: np.ndarray, removed: Sequence[int]) -> np.ndarray:
    """A mask of the ascending ``ids`` not in ``removed``: a binary search each, not a pass over all of
    them per removed rowid (a write removes a file's few chunks from up to a million)."""
    keep = np.ones(len(ids), dtype=bool)
    if len(ids) and removed:
        gone = np.asarray(removed, dtype=np.int64)
        at = np.minimum(np.searchsorted(ids, gone), len(ids) - 1)
        keep[at[ids[at] == gone]] = False
    return keep


def _merged(ids: np.ndarray, columns: tuple[np.ndarray, ...], new_ids: np.ndarray,
            new_columns: tuple[np.ndarray, ...]) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """Rowid-ascending ``ids`` and their ``columns`` with new rows merged in, still ascending.

    A write's new rowids are above every other (SQLite's max + 1), so this is usually an append.
    """
    if not len(new_ids):
        return ids, columns
    all_ids = np.concatenate([ids, new_ids])
    merged = [np.concatenate([old, new]) for old, new in zip(columns, new_columns, strict=True)]
    if bool(np.any(all_ids[1:] < all_ids[:-1])):
        order = np.argsort(all_ids, kind="stable")
        all_ids, merged = all_ids[order], [column[order] for column in merged]
    return all_ids, tuple(merged)
