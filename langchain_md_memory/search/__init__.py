"""Search stages as pure functions over plain hits, and the pipeline composing them.

Stage 1 :func:`merge_candidates`, stage 2 :func:`filter_min_score`, the
source-aware :func:`apply_source_weights`, stage 3 :func:`apply_temporal_decay`,
stage 4 :func:`mmr_rerank`, and :func:`rank` which runs them all plus the
top-K cut (stage 5). None of them does I/O.
"""

from __future__ import annotations

from .decay import apply_temporal_decay, decay_multiplier, hit_age_days
from .merge import effective_weights, filter_min_score, merge_candidates, ranking_key, sort_hits
from .mmr import Similarity, cosine_similarity_fn, jaccard, jaccard_similarity_fn, mmr_rerank
from .pipeline import FUNNEL_STAGES, RankedResults, Recall, rank
from .weighting import apply_source_weights, weight_multiplier

__all__ = [
    "FUNNEL_STAGES",
    "RankedResults",
    "Recall",
    "Similarity",
    "apply_source_weights",
    "apply_temporal_decay",
    "cosine_similarity_fn",
    "decay_multiplier",
    "effective_weights",
    "filter_min_score",
    "hit_age_days",
    "jaccard",
    "jaccard_similarity_fn",
    "merge_candidates",
    "mmr_rerank",
    "rank",
    "ranking_key",
    "sort_hits",
    "weight_multiplier",
]
