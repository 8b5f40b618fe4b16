"""Step 5, weigh (with :mod:`.question_fit`): per-file-kind multipliers and a bonus for often-returned chunks.

``final = merged_relevance × source_weight × access_boost × decay`` — this
module supplies the middle two factors. With every source weight 1.0 and
``access_weight`` 0 the stage is neutral.

Example:
    .. code-block:: python

        from langchain_md_memory.search.weighting import weight_multiplier

        assert weight_multiplier("session", {"session": 0.5}, 0, 0.0) == 0.5
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping

from ..types import MemorySearchResult
from .merge import sort_hits

__all__ = ["apply_source_weights", "reweighted", "weight_multiplier"]


def weight_multiplier(
    file_kind: str, weights: Mapping[str, float], count: int, access_weight: float
) -> float:
    """``weights[file_kind] · (1 + access_weight · log1p(count))``; a kind not listed weighs 1.0.

    ``log1p`` keeps the boost sub-linear, so a chunk returned 100 times does not
    drown a fresh, more relevant one.
    """
    kind_weight = weights.get(file_kind, 1.0)
    boost = 1.0 + access_weight * math.log1p(max(0, count)) if access_weight > 0 else 1.0
    return kind_weight * boost


def apply_source_weights(
    hits: Iterable[MemorySearchResult],
    *,
    weights: Mapping[str, float],
    access_counts: Mapping[str, int] | None,
    access_weight: float,
) -> list[MemorySearchResult]:
    """Multiply each hit's score by its :func:`weight_multiplier` and record it in ``weight``.

    ``access_counts`` maps chunk id to how often the chunk was returned before.
    When every multiplier is exactly 1.0 the hits come back unchanged (same
    objects, same order); otherwise they are re-sorted by the new scores.
    """
    counts = access_counts or {}
    return reweighted(hits, lambda hit: weight_multiplier(hit.file_kind, weights, counts.get(hit.chunk_id, 0),
                                                          access_weight))


def reweighted(hits: Iterable[MemorySearchResult],
               multiplier: Callable[[MemorySearchResult], float]) -> list[MemorySearchResult]:
    """Each hit's score and ``weight`` times ``multiplier(hit)``, re-sorted by the new scores.

    When every multiplier is exactly 1.0 the hits come back unchanged (same objects, same order).
    """
    out: list[MemorySearchResult] = []
    changed = False
    for hit in hits:
        factor = multiplier(hit)
        if factor == 1.0:
            out.append(hit)
            continue
        changed = True
        out.append(hit.revised(score=hit.score * factor, weight=hit.weight * factor))
    return sort_hits(out) if changed else out
