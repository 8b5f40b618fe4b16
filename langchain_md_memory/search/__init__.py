"""Search: a list of named steps, each a pure function over plain data, and the searcher around them.

The steps, in the order they run (:mod:`.pipeline` composes them; :mod:`.searcher` does the I/O):

1. recall: the vector and keyword candidates (:mod:`.retrieve`, read by the searcher)
2. expire: facts past their ``expires:`` day leave (:mod:`.expiry`)
3. fuse: one scored candidate a chunk (:func:`merge_candidates`, :mod:`.fusion`, :mod:`.relevance`)
4. cut: an explicit min score (:func:`filter_min_score`)
5. weigh: source weights and access counts (:func:`apply_source_weights`), the question's fit
   (:mod:`.question_fit`)
6. decay: recent logs first, newer statements before older ones (:func:`apply_temporal_decay`)
7. MMR: near-duplicates move down (:func:`mmr_rerank`)
8. top k
9. restated order: a restated superseded fact below its successor (:mod:`.superseded`)
10. as-of: the facts that held on an asked day first (:mod:`.asof`)

:func:`~.pipeline.run` runs steps 2 to 10, :func:`rank` steps 3 to 8; neither does I/O.
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
