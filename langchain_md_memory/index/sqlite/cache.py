"""The embedding cache: vectors by content hash and embedding identity, so no text is embedded twice.

Example:
    .. code-block:: python

        index.cache.store([("ab12", vector)], "openai:text-embedding-3-small:1536")
        assert "ab12" in index.cache.lookup(["ab12"], "openai:text-embedding-3-small:1536")
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
from collections.abc import Sequence

import numpy as np

from ...errors import MemoryIndexError
from ..rows import from_blob, to_blob
from .connection import IndexConnection

__all__ = ["EmbeddingCache"]

logger = logging.getLogger(__name__)


class EmbeddingCache:
    """The ``embedding_cache`` table of one index."""

    def __init__(self, db: IndexConnection) -> None:
        self._db = db

    def lookup(self, hashes: Sequence[str], fingerprint: str) -> dict[str, np.ndarray]:
        """Cached vectors for content hashes under one embedding identity."""
        out: dict[str, np.ndarray] = {}
        for start in range(0, len(hashes), 500):
            part = list(hashes[start : start + 500])
            marks = ",".join("?" * len(part))
            rows = self._db.query(
                f"SELECT hash, vector FROM embedding_cache WHERE fingerprint = ? AND hash IN ({marks})",
                [fingerprint, *part],
            )
            out.update((r[0], from_blob(r[1]).copy()) for r in rows.fetchall())
        return out

    def holds_any(self, fingerprint: str) -> bool:
        """True when some vector is cached under this embedding identity."""
        sql = "SELECT EXISTS (SELECT 1 FROM embedding_cache WHERE fingerprint = ?)"
        return bool(self._db.query(sql, (fingerprint,)).fetchone()[0])

    def store(self, items: Sequence[tuple[str, np.ndarray]], fingerprint: str) -> None:
        """Store vectors in the embedding cache."""
        if not items:
            return
        with self._db.write() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO embedding_cache(hash, fingerprint, dim, vector) VALUES (?, ?, ?, ?)",
                ((h, fingerprint, int(v.shape[0]), to_blob(v)) for h, v in items),
            )

    def adopt(self, other_path: str) -> int:
        """Copy another index file's embedding cache into this one; returns rows copied.

        A damaged or foreign file gives nothing (a warning says why): the copy is rolled back and
        this index stays as it was, so a rebuild from a damaged index still completes.
        """
        if not os.path.exists(other_path):
            return 0
        copied = 0
        try:
            with self._db.write() as conn:
                conn.execute("ATTACH DATABASE ? AS old", (other_path,))
                try:
                    cur = conn.execute(
                        "INSERT OR IGNORE INTO embedding_cache SELECT hash, fingerprint, dim, vector "
                        "FROM old.embedding_cache"
                    )
                    copied = max(cur.rowcount, 0)
                finally:
                    with contextlib.suppress(sqlite3.Error):
                        conn.execute("DETACH DATABASE old")
        except (sqlite3.Error, MemoryIndexError) as exc:
            # The commit reads the attached file too: a damaged one fails there, after the copy.
            with contextlib.suppress(sqlite3.Error, MemoryIndexError), self._db.write() as conn:
                conn.execute("DETACH DATABASE old")
            logger.warning("could not copy the embedding cache from %s: %s", other_path, exc)
            return 0
        return copied
