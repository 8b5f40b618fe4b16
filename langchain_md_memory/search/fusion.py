"""Fusion functions: how the vector and keyword candidate pools become one score per chunk.

A fusion function is pure: it takes each path's ``(chunk_id, score)`` pairs,
best first, and the two weights (already renormalised by
:func:`~langchain_md_memory.search.merge.effective_weights`, so they sum to 1),
and returns a fused score in [0, 1] per chunk. Pass one by name in
``MemoryConfig(fusion=...)`` or pass your own function.

- ``weighted`` (default): the specification's weighted sum, of calibrated evidence
  rather than raw scores (see :mod:`~langchain_md_memory.search.relevance`).
  Raw cosines of one model crowd into a narrow band (e5: 0.74–0.83 for any
  question against any note) while keyword scores spread over (0, 1], so the
  raw sum was decided by noise.
- ``weighted_raw``: the specification's weighted sum of the raw scores.
- ``minmax``: the weighted sum of scores min-max normalised over each pool.
- ``rrf``: reciprocal-rank fusion, ``Σ w / (k + rank)``, scaled so a chunk
  ranked first by both paths scores 1.

The harness in ``bench/quality`` compares them (``bench/QUALITY.md``).

Example:
    .. code-block:: python

        from langchain_md_memory.search.fusion import minmax_fusion

        fused = minmax_fusion([("a", 0.83), ("b", 0.80)], [("b", 9.0)], 0.5, 0.5)
        assert fused == {"a": 0.5, "b": 0.5}
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from ..errors import MemoryInputError

__all__ = [
    "FUSIONS",
    "Fusion",
    "FusionFunction",
    "FusionName",
    "Scored",
    "minmax",
    "minmax_fusion",
    "resolve_fusion",
    "rrf_fusion",
    "weighted_fusion",
]

Scored = Sequence[tuple[str, float]]
"""``(chunk_id, score)`` pairs of one recall path, best first, ids distinct."""

FusionFunction = Callable[[Scored, Scored, float, float], dict[str, float]]
"""``(vector, keyword, vector_weight, text_weight) -> {chunk_id: fused score}``."""

FusionName = Literal["weighted", "weighted_raw", "minmax", "rrf"]


def minmax(scored: Scored) -> dict[str, float]:
    """Scores mapped onto [0, 1] over the pool; a pool of equal scores maps to 1."""
    if not scored:
        return {}
    values = [score for _, score in scored]
    low, high = min(values), max(values)
    if high - low <= 1e-12:
        return {chunk_id: 1.0 for chunk_id, _ in scored}
    return {chunk_id: (score - low) / (high - low) for chunk_id, score in scored}


def _weighted(vector: Mapping[str, float], keyword: Mapping[str, float],
              w_v: float, w_t: float) -> dict[str, float]:
    return {
        chunk_id: w_v * vector.get(chunk_id, 0.0) + w_t * keyword.get(chunk_id, 0.0)
        for chunk_id in dict.fromkeys([*vector, *keyword])
    }


def minmax_fusion(vector: Scored, keyword: Scored, vector_weight: float,
                  text_weight: float) -> dict[str, float]:
    """``w_v·v' + w_t·k'`` with ``v'``, ``k'`` min-max normalised over this query's pools."""
    return _weighted(minmax(vector), minmax(keyword), vector_weight, text_weight)


def weighted_fusion(vector: Scored, keyword: Scored, vector_weight: float,
                    text_weight: float) -> dict[str, float]:
    """``w_v·v + w_t·k``: the specification's merge, of whatever scores it is given.

    The pipeline hands it calibrated evidence for ``fusion="weighted"`` and
    the raw recall scores for ``fusion="weighted_raw"``.
    """
    v, k = dict(vector), dict(keyword)
    fused = _weighted(v, k, vector_weight, text_weight)
    # A convex combination never exceeds its largest input; min() only removes float overshoot.
    return {i: min(score, max(v.get(i, 0.0), k.get(i, 0.0))) for i, score in fused.items()}


def rrf_fusion(vector: Scored, keyword: Scored, vector_weight: float, text_weight: float,
               *, k: int = 60) -> dict[str, float]:
    """Reciprocal-rank fusion ``Σ w·(k+1)/(k+rank)``: first on both paths scores 1.

    Raises:
        MemoryInputError: if ``k`` is smaller than 1.
    """
    if k < 1:
        raise MemoryInputError(f"rrf_k must be at least 1, got {k}")
    fused: dict[str, float] = {}
    for weight, scored in ((vector_weight, vector), (text_weight, keyword)):
        for rank, (chunk_id, _) in enumerate(scored, start=1):
            fused[chunk_id] = fused.get(chunk_id, 0.0) + weight * (k + 1) / (k + rank)
    return fused


@dataclass(frozen=True, slots=True)
class Fusion:
    """A fusion as the pipeline uses it: the function, and what it is handed and what ``min_score`` cuts.

    ``calibrated``: the function sees calibrated evidence (:mod:`~.relevance`) instead of raw scores.
    ``cuts_merged``: ``min_score`` cuts the merged score, as in the specification; else it cuts the relevance.
    """

    combine: FusionFunction
    calibrated: bool = False
    cuts_merged: bool = False


FUSIONS: dict[str, Fusion] = {
    "weighted": Fusion(weighted_fusion, calibrated=True),
    "weighted_raw": Fusion(weighted_fusion, cuts_merged=True),
    "minmax": Fusion(minmax_fusion),
    "rrf": Fusion(rrf_fusion),
}


def resolve_fusion(fusion: str | FusionFunction, rrf_k: int) -> Fusion:
    """The :class:`Fusion` of a name of :data:`FUSIONS` (``rrf`` with ``rrf_k``) or of a function.

    Raises:
        MemoryInputError: for an unknown name.
    """
    if callable(fusion):
        return Fusion(fusion)
    if fusion not in FUSIONS:
        raise MemoryInputError(f"unknown fusion {fusion!r}; use one of {sorted(FUSIONS)} or a function")
    if fusion == "rrf":
        return Fusion(lambda v, t, wv, wt: rrf_fusion(v, t, wv, wt, k=rrf_k))
    return FUSIONS[fusion]
