"""A store search with a ``query``: the memory's hybrid pipeline scores the items it recalls.

Example:
    .. code-block:: python

        from langchain_md_memory.integrations.basestore.query import query_scores

        scores = query_scores(files, "hotpot", ("users",), {(("users", "alice"), "food")}, want=10)
"""

from __future__ import annotations

from collections.abc import Collection

from .folders import NamespaceFiles
from .items import indexed_items
from .sections import ParsedFile

__all__ = ["Ident", "query_scores"]

Ident = tuple[tuple[str, ...], str]
"""An item's identity: ``(namespace, key)``."""

# The most hits one query search asks the pipeline for while looking for enough store items.
_MAX_QUERY_POOL = 1000


def query_scores(files: NamespaceFiles, query: str, prefix: tuple[str, ...], candidates: Collection[Ident], *,
                 want: int) -> dict[Ident, float]:
    """The pipeline's score of each candidate it recalls (an item's best chunk), as far as needed.

    Other memory files share the ranking, so the pool widens until ``want`` candidates are
    scored, every candidate is, or the pipeline has nothing more to give.
    """
    config = files.memory.config.merged(min_score=0.0, mmr={"enabled": False}, access_weight=0.0)
    pool = min(max(2 * want, 10), _MAX_QUERY_POOL)
    while True:
        hits = files.memory.search_detailed(query, max_results=pool, config=config).hits
        cache: dict[str, ParsedFile | None] = {}
        scores: dict[Ident, float] = {}
        for hit in hits:  # best first, so an item's first hit is its best chunk
            namespace = files.namespace_of(hit.path)
            if namespace is None or namespace[: len(prefix)] != prefix:
                continue
            if hit.path not in cache:
                cache[hit.path] = files.read(hit.path)
            for stored in indexed_items(cache[hit.path]):
                ident = (namespace, stored.key)
                overlaps = stored.start_line <= hit.end_line and hit.start_line <= stored.end_line
                if overlaps and ident in candidates and ident not in scores:
                    scores[ident] = hit.score
        if len(scores) >= min(want, len(candidates)) or len(hits) < pool or pool >= _MAX_QUERY_POOL:
            return scores
        pool = min(pool * 4, _MAX_QUERY_POOL)
