"""What one sync did, counted as it runs (``mem.sync()`` returns it).

Example:
    .. code-block:: python

        stats = mem.sync()
        print(stats.files_changed, stats.chunks_added, stats.embedded, stats.cached)
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SyncStats"]


@dataclass(slots=True)
class SyncStats:
    """What one sync did (counted as it runs)."""

    files: int = 0
    files_changed: int = 0
    files_removed: int = 0
    chunks_added: int = 0
    chunks_removed: int = 0
    embedded: int = 0
    cached: int = 0
    embed_errors: int = 0
    seconds: float = 0.0

    @property
    def chunks(self) -> int:
        """Alias of ``chunks_added`` (chunks written by this sync)."""
        return self.chunks_added
