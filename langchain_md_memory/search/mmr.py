"""Step 7, MMR (maximal marginal relevance): relevant, and not saying the same thing twice.

Each pick maximises ``λ·relevance − (1−λ)·max similarity to the hits already
picked``. Relevance is the hit's score min-max normalised over the pool, so
it is on the same scale as the similarity; similarities below a duplicate
threshold count as 0, so only near-duplicates are demoted. Similarity is Jaccard over
CJK-aware token sets by default (:func:`langchain_md_memory.text.token_set`),
or embedding cosine via :func:`cosine_similarity_fn`.

Example:
    .. code-block:: python

        from langchain_md_memory.search.mmr import jaccard

        assert jaccard(frozenset({"a", "b"}), frozenset({"b", "c"})) == 1 / 3
        assert jaccard(frozenset(), frozenset()) == 0.0
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import numpy as np

from ..errors import MemoryInputError
from ..text import token_set
from ..types import MemorySearchResult

__all__ = [
    "Similarity",
    "cosine_similarity_fn",
    "jaccard",
    "jaccard_similarity_fn",
    "mmr_rerank",
    "only_duplicates",
]

logger = logging.getLogger(__name__)

Similarity = Callable[[int, int], float]
"""Similarity of the hits at two pool positions, in [0, 1]."""


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """``|a ∩ b| / |a ∪ b|``; two empty sets are 0.0, not 1.0.

    Two texts with no tokens share no evidence of being duplicates; calling
    them identical would let MMR push a hit down for nothing.
    """
    shared = len(a & b)
    union = len(a) + len(b) - shared  # |a ∪ b|, without building it
    if union == 0:
        return 0.0
    return shared / union


def jaccard_similarity_fn(texts: Sequence[str]) -> Similarity:
    """Jaccard over the token sets of ``texts``, each tokenised once."""
    sets = [token_set(text) for text in texts]
    return lambda i, j: jaccard(sets[i], sets[j])


def cosine_similarity_fn(vectors: Sequence[np.ndarray | None]) -> Similarity | None:
    """Cosine similarity (clipped to [0, 1]) of the given embeddings, or ``None``.

    ``None`` — the caller falls back to Jaccard — when any vector is missing,
    or the vectors do not share one dimension (mixed embedding models).
    Vectors are re-normalised, so they need not be unit length; a zero vector
    is similar to nothing.
    """
    if not vectors or any(v is None for v in vectors):
        return None
    arrays = [np.asarray(v, dtype=np.float64).ravel() for v in vectors if v is not None]
    if len({a.shape[0] for a in arrays}) != 1:
        logger.debug("MMR: embedding dimensions differ (%s); using Jaccard", sorted({a.size for a in arrays}))
        return None
    matrix = np.vstack(arrays)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    # Anti-correlated chunks are simply "not similar"; a negative value would reward a pick.
    gram = np.clip(matrix @ matrix.T, 0.0, 1.0)
    return lambda i, j: float(gram[i, j])


def _normalised(scores: Sequence[float], floor: float | None) -> list[float]:
    # Min-max: dividing by the best score leaves compressed scores (e.g. raw cosines, all
    # within 0.74-0.83) almost flat, so similarity alone would decide the order. The floor is
    # the weakest candidate's score, below the pool, so the pool's last hit can still be picked.
    low = min(scores) if floor is None else min(floor, *scores)
    high = max(scores)
    if not high - low > 1e-12:
        return [1.0] * len(scores)
    return [(s - low) / (high - low) for s in scores]


def only_duplicates(similarity: Similarity, threshold: float) -> Similarity:
    """``similarity`` rescaled so that below ``threshold`` it is 0 and an exact duplicate stays 1.

    Two notes on one topic share words without repeating each other; MMR
    should demote only the repeats.
    """
    if threshold <= 0.0:
        return similarity
    return lambda i, j: max(0.0, (similarity(i, j) - threshold) / (1.0 - threshold))


def _similar_to(pool: Sequence[MemorySearchResult], similarity: Similarity | None,
                threshold: float) -> Callable[[int, Sequence[int]], list[float]]:
    """``(j, others) -> [sim(i, j) for i in others]``, ``sim`` being ``similarity`` (default: Jaccard
    of the texts' token sets) as :func:`only_duplicates` rescales it."""
    sim = only_duplicates(
        similarity if similarity is not None else jaccard_similarity_fn([hit.text for hit in pool]), threshold
    )
    return lambda j, others: [sim(i, j) for i in others]


def mmr_rerank(
    hits: Sequence[MemorySearchResult],
    *,
    lambda_: float,
    similarity: Similarity | None = None,
    duplicate_threshold: float = 0.0,
    relevance_floor: float | None = None,
    limit: int | None = None,
) -> list[MemorySearchResult]:
    """Reorder ``hits`` greedily by maximal marginal relevance; scores are not changed.

    ``similarity(i, j)`` compares ``hits[i]`` and ``hits[j]``; by default it is
    the Jaccard similarity of their texts' token sets. Ties go to the higher
    original score, then to the earlier position. ``lambda_ >= 1`` (pure
    relevance) and pools of at most one hit come back in their input order.
    Similarities below ``duplicate_threshold`` count as 0 (see
    :func:`only_duplicates`). Relevance is min-max normalised between
    ``relevance_floor`` (default: the pool's lowest score; pass the weakest
    candidate's) and the best score. With ``limit``, only the first ``limit`` are picked (each pick
    depends only on those before it, so they are the same), the rest follow in input order.

    Raises:
        ValueError: if ``lambda_`` is outside [0, 1].
    """
    if not 0.0 <= lambda_ <= 1.0:
        raise MemoryInputError(f"MMR lambda must be within [0, 1], got {lambda_}")
    pool = list(hits)
    if len(pool) <= 1 or lambda_ == 1.0:
        return pool
    similar = _similar_to(pool, similarity, duplicate_threshold)
    scores = [hit.score for hit in pool]
    relevance = _normalised(scores, relevance_floor)
    gain = [lambda_ * value for value in relevance]  # each pick's key: gain - penalty × max similarity
    penalty = 1.0 - lambda_
    max_sim = [0.0] * len(pool)
    remaining = list(range(len(pool)))
    order: list[int] = []
    picks = len(pool) if limit is None else min(max(limit, 0), len(pool))
    while len(order) < picks:
        # max() keeps the first of equal keys; the key already encodes "higher score, then earlier".
        best = max(remaining, key=lambda i: (gain[i] - penalty * max_sim[i], scores[i], -i))
        order.append(best)
        remaining.remove(best)
        for i, s in zip(remaining, similar(best, remaining), strict=True):
            if s > max_sim[i]:
                max_sim[i] = s
    return [pool[i] for i in [*order, *remaining]]
