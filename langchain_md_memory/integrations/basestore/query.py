"""A store search with a ``query``: how similar each item is, and how the memory ranks it.

Each item gets up to two numbers. ``hybrid_score`` is the memory's own calibrated score of the
item's best chunk (vector and keyword evidence merged), the number ``mem.search`` ranks by; the
memory's index holds each item's whole section, so it ranks (and is the ``score``) while every item
is embedded whole (index fields ``"$"``, the default). When a store or a put chose other fields,
the cosine similarity of the query's vector and the item's, taken over the texts those fields
select (``get_text_at_path`` paths), the best of them, ranks instead, as in LangGraph's
``InMemoryStore`` and ``PostgresStore``.

Example:
    .. code-block:: python

        from langchain_md_memory.integrations.basestore.query import query_scores

        scores = query_scores(files, "hotpot", ("users",), {(("users", "alice"), "food")}, want=10)
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from langgraph.store.base import get_text_at_path

from ...errors import MemoryInputError
from .folders import NamespaceFiles
from .items import indexed_items
from .sections import ParsedFile

if TYPE_CHECKING:
    from ...memory import MarkdownMemory

__all__ = ["DEFAULT_FIELDS", "Ident", "index_config", "query_scores", "rank_items", "similarities",
           "store_fields"]

logger = logging.getLogger(__name__)

Ident = tuple[tuple[str, ...], str]
"""An item's identity: ``(namespace, key)``."""

DEFAULT_FIELDS = ("$",)
"""What a store embeds of an item by default: its whole value (as LangGraph's stores do)."""

# The most hits one query search asks the pipeline for while looking for enough store items.
_MAX_QUERY_POOL = 1000


def query_scores(files: NamespaceFiles, query: str, prefix: tuple[str, ...], candidates: Collection[Ident], *,
                 want: int) -> dict[Ident, float]:
    """The hybrid score of each candidate the pipeline recalls (an item's best chunk), as far as needed.

    Other memory files share the ranking, so the pool widens until ``want`` candidates are
    scored, every candidate is, or the pipeline has nothing more to give.
    """
    config = files.memory.config.merged(ranking={"min_score": 0.0, "mmr": {"enabled": False},
                                                 "access_weight": 0.0})
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


def similarities(memory: MarkdownMemory, query: str,
                 items: Mapping[Ident, tuple[Mapping[str, Any], Sequence[str]]]) -> dict[Ident, float] | None:
    """Each item's cosine similarity to ``query``: the best over the texts its fields select.

    ``items`` maps an item to its value and index fields. Vectors come from the index's embedding
    cache when the text was seen before. ``None`` when there are no vectors to compare (a
    keyword-only memory, the embeddings down); an item whose fields select no text is left out.
    """
    texts: list[str] = []
    owners: list[Ident] = []
    for ident, (value, fields) in items.items():
        for path in fields:
            for text in get_text_at_path(value, path):
                texts.append(text)
                owners.append(ident)
    try:
        scores = memory.similarity(query, texts)
    except Exception as exc:  # a provider failing mid-search: the hybrid ranking answers
        logger.warning("store search: cosine similarity unavailable, ranking by the memory's score: %s", exc)
        return None
    if scores is None:
        return None
    best: dict[Ident, float] = {}
    for ident, score in zip(owners, scores, strict=True):
        best[ident] = max(score, best.get(ident, score))
    return best


def rank_items(similar: Mapping[Ident, float] | None, hybrid: Mapping[Ident, float],
               newest_first: Sequence[Ident]) -> list[tuple[Ident, float | None, float | None]]:
    """``(item, score, hybrid_score)`` for every item of ``newest_first``, in a query search's order.

    ``score`` is the cosine similarity (``similar``) where it is given, else the hybrid score (the
    memory's own ranking, as ``mem.search`` ranks); scored items come first, best first (the newer
    on a tie), then the rest, newest first, with ``score=None``.
    """
    scores = hybrid if similar is None else similar
    age = {ident: i for i, ident in enumerate(newest_first)}
    scored = sorted((ident for ident in newest_first if ident in scores),
                    key=lambda ident: (-scores[ident], age[ident]))
    rest = [ident for ident in newest_first if ident not in scores]
    return [(ident, scores.get(ident), hybrid.get(ident)) for ident in [*scored, *rest]]


def store_fields(index: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The fields of a store's ``index`` config (``{"fields": [...]}``); the default without one.

    Raises:
        MemoryInputError: for other keys (the memory's own embeddings embed the store: pass
            ``embeddings=`` to ``MarkdownMemory``) or fields that are not a list of paths.
    """
    if index is None:
        return DEFAULT_FIELDS
    other = sorted(set(index) - {"fields"})
    if other:
        raise MemoryInputError(
            f"as_store(index=...) takes only 'fields', not {other}: the memory's own embeddings embed the "
            "store's items (give them to MarkdownMemory(embeddings=...))"
        )
    fields = index.get("fields")
    if fields is None:
        return DEFAULT_FIELDS
    if isinstance(fields, str) or not all(isinstance(path, str) and path for path in fields):
        raise MemoryInputError(f"index fields must be a list of paths such as ['text', 'tags[*]'], "
                               f"got {fields!r}")
    return tuple(fields)


def index_config(memory: MarkdownMemory, fields: Sequence[str] = DEFAULT_FIELDS) -> dict[str, Any] | None:
    """``{"dims", "embed", "fields"}`` as LangGraph's stores expose it; ``None`` without vectors.

    The memory's embeddings (asked for their dimension once, if no call has shown it yet) embed
    what ``fields`` select of each item; ``dims`` and ``embed`` are ``None`` while the provider
    cannot be reached.
    """
    try:
        model = memory.embedding_model()
    except Exception as exc:  # an attribute read must not fail because a provider is down
        logger.warning("store index_config: embedding dimension unknown: %s", exc)
        return {"dims": None, "embed": None, "fields": list(fields)}
    if model is None:
        return None
    embed, dims = model
    return {"dims": dims, "embed": embed, "fields": list(fields)}
