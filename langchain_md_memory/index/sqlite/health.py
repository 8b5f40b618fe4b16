"""What ``verify`` asks an index file about its own health: SQLite's check, chunk spans, keyword rows.

Example:
    .. code-block:: python

        idx = MemoryIndex.open("memory/index.sqlite")
        assert idx.health.integrity_problems() == [] and idx.health.keyword_orphans() == 0
"""

from __future__ import annotations

from .connection import IndexConnection

__all__ = ["IndexHealth"]


class IndexHealth:
    """The health questions of an SQLite index file (``MemoryIndex.health``), over its connection."""

    def __init__(self, db: IndexConnection) -> None:
        self._db = db

    def integrity_problems(self) -> list[str]:
        """SQLite's ``quick_check`` findings (reads every page); empty when the file is sound."""
        found = [str(r[0]) for r in self._db.query("PRAGMA quick_check").fetchall()]
        return [] if found == ["ok"] else found

    def chunk_spans(self) -> dict[str, list[tuple[int, int, str]]]:
        """``(start_line, end_line, hash)`` of every stored chunk, by file."""
        out: dict[str, list[tuple[int, int, str]]] = {}
        for path, start, end, digest in self._db.query("SELECT path, start_line, end_line, hash FROM chunks"):
            out.setdefault(path, []).append((int(start), int(end), str(digest)))
        return out

    def paths_without_keywords(self) -> list[str]:
        """Files with a chunk that has no keyword row (it could never be found by keywords)."""
        rows = self._db.query(
            "SELECT DISTINCT c.path FROM chunks c LEFT JOIN chunks_fts f ON f.rowid = c.rowid "
            "WHERE f.rowid IS NULL"
        )
        return sorted(str(r[0]) for r in rows)

    def keyword_orphans(self) -> int:
        """Keyword rows whose chunk is gone (only a rebuild removes them)."""
        sql = "SELECT count(*) FROM chunks_fts WHERE rowid NOT IN (SELECT rowid FROM chunks)"
        return int(self._db.query(sql).fetchone()[0])
