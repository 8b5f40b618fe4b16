"""Chunk records by rowid, kept for the index generation they were read in.

A search reads its candidates' records (text, path, kind, time) by rowid, most of them new to it: a
read per row from SQLite. A :class:`RecordCache` keeps the records it read (up to ``size``). A process
that keeps searching a memory of up to :data:`RESIDENT_RECORDS` chunks and
:data:`~.postings.RESIDENT_INSTANCES` indexed words (what bounds the text held) reads them all in one
pass instead, after :data:`READS_BEFORE_RESIDENT` reads in one index generation, as keyword postings are
(:mod:`.postings`); a one-off search never pays for it. Their token sets are worked out then too
(:func:`~langchain_md_memory.text.keep_token_sets`): ranking reads the set of every candidate, and
tokenizing each one a search is what that spares. This process's own writes are folded in
(:meth:`RecordCache.after_write`); a write by another process changes the generation
without telling this one: everything is read again.

Example:
    .. code-block:: python

        records = RecordCache(db)
        found = records.get(generation, [3, 7])   # {rowid: ChunkRecord}, inside the read snapshot
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from ...text import forget_token_sets, keep_token_sets
from ...types import ChunkRecord
from ..rows import chunk_record
from .connection import IndexConnection
from .postings import RESIDENT_INSTANCES
from .schema import CHUNK_COLUMNS

__all__ = ["READS_BEFORE_RESIDENT", "RESIDENT_RECORDS", "RecordCache"]

RESIDENT_RECORDS = 150_000
"""A memory of at most this many chunks (and ``RESIDENT_INSTANCES`` indexed words) has every record read
at once by a process that keeps searching it."""
READS_BEFORE_RESIDENT = 32
"""Reads of records by rowid (in one index generation) before every record is read at once."""


class RecordCache:
    """Chunk records by rowid for one index generation: a memory's searches keep meeting the same chunks.

    Not locked: the index reads and fills it under its connection's lock, in the read snapshot
    whose generation it is given, and folds its own writes in inside their transaction.
    """

    def __init__(self, db: IndexConnection, memory_size: Callable[[], tuple[int, int]], size: int = 4096
                 ) -> None:
        self._db = db
        self._memory_size = memory_size  # (chunks, indexed words) of the index, this generation
        self._size = size
        self._generation = -1
        self._records: dict[int, ChunkRecord] = {}
        self._rowids: dict[str, int] = {}  # chunk id -> rowid of the kept records
        self._reads = 0  # records read by rowid in this generation
        self._resident: bool | None = None  # every record kept; False: too many (None: not asked yet)

    def get(self, generation: int, rowids: Sequence[int]) -> dict[int, ChunkRecord]:
        """The records of ``rowids`` (those gone left out), reading the ones not kept."""
        self._follow(generation)
        records = self._records
        out = {rowid: record for rowid in rowids if (record := records.get(rowid)) is not None}
        missing = [rowid for rowid in rowids if rowid not in out]
        if not missing or self._resident:
            return out
        self._reads += 1
        if self._reads > READS_BEFORE_RESIDENT and self._resident is None and self._read_all():
            return {rowid: record for rowid in rowids if (record := records.get(rowid)) is not None}
        sql = f"SELECT {CHUNK_COLUMNS} FROM chunks c WHERE c.rowid IN ({','.join('?' * len(missing))})"
        found = {int(r[0]): chunk_record(r) for r in self._db.query(sql, missing)}
        if len(records) + len(found) > self._size:
            records.clear()
            self._rowids.clear()
        self._keep(found.items())
        out.update(found)
        return out

    def rowids(self, generation: int, ids: Sequence[str]) -> dict[int, str]:
        """``{rowid: chunk id}`` of chunk ``ids`` in rowid order (chunks gone left out), reading the
        rowids of those not kept (a search's candidates were just read, and are)."""
        self._follow(generation)
        known = {chunk_id: rowid for chunk_id in ids if (rowid := self._rowids.get(chunk_id)) is not None}
        if missing := [chunk_id for chunk_id in ids if chunk_id not in known]:
            sql = f"SELECT id, rowid FROM chunks WHERE id IN ({','.join('?' * len(missing))})"
            known.update((str(chunk_id), int(rowid)) for chunk_id, rowid in self._db.query(sql, missing))
        return dict(sorted((rowid, chunk_id) for chunk_id, rowid in known.items()))

    def after_write(self, before: int, removed: Sequence[int], added: Iterable[tuple[int, ChunkRecord]]
                    ) -> None:
        """Follow a write that moved the index from generation ``before`` to the next (in its transaction):
        the chunks it removed (rowids) and added."""
        if self._generation != before:
            return  # not following: the next read starts afresh
        for rowid in removed:
            record = self._records.pop(rowid, None)
            if record is not None:
                self._rowids.pop(record.id, None)
        if self._resident:
            added = list(added)
            self._keep(added)
            keep_token_sets(record.text for _, record in added)
        self._generation = before + 1

    def clear(self) -> None:
        """Forget everything kept (a write folded in was rolled back)."""
        self._follow(-1)

    def close(self) -> None:
        """Forget everything kept, the token sets of the records too (the index closes)."""
        forget_token_sets(record.text for record in self._records.values())
        self._follow(-1)

    def _read_all(self) -> bool:
        """Read every record when the memory is small enough to hold (see the module); whether it did."""
        chunks, words = self._memory_size()
        self._resident = chunks <= RESIDENT_RECORDS and words <= RESIDENT_INSTANCES
        if self._resident:
            self._records.clear()
            self._rowids.clear()
            shared: dict[str, str] = {}
            rows = self._db.stream(f"SELECT {CHUNK_COLUMNS} FROM chunks c")
            self._keep((int(r[0]), chunk_record(r, shared)) for r in rows)
            keep_token_sets(record.text for record in self._records.values())
        return self._resident

    def _keep(self, records: Iterable[tuple[int, ChunkRecord]]) -> None:
        for rowid, record in records:
            self._records[rowid] = record
            self._rowids[record.id] = rowid

    def _follow(self, generation: int) -> None:
        if generation != self._generation or generation < 0:
            self._records.clear()
            self._rowids.clear()
            self._generation = generation
            self._reads = 0
            self._resident = None
