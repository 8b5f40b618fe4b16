"""Step 3 (fuse: one scored candidate a chunk from the two recall paths) and step 4 (cut: min score).

Example:
    .. code-block:: python

        from langchain_md_memory.search.merge import effective_weights

        assert effective_weights(True, True, 0.7, 0.3) == (0.7, 0.3)
        assert effective_weights(False, True, 0.7, 0.3) == (0.0, 1.0)
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ..errors import MemoryInputError
from ..files.facts import parse_provenance
from ..types import ChunkRecord, MemorySearchResult, Source
from .fusion import FusionFunction, weighted_fusion

Calibration = Callable[[str, ChunkRecord, float], float]
"""``(path, record, raw score) -> evidence``, ``path`` being ``"vector"`` or ``"keyword"``."""

__all__ = [
    "Calibration",
    "Candidate",
    "candidate_hit",
    "candidate_key",
    "effective_weights",
    "filter_min_score",
    "fused_candidates",
    "kept_by_min_score",
    "merge_candidates",
    "ranking_key",
    "sort_hits",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Candidate:
    """A merged chunk before it is a hit (:func:`candidate_hit`), with the numbers its hit shows.

    ``vector_score`` / ``keyword_score`` are the raw recall scores (``None``: that path did not return
    the chunk), ``retrieved_by`` says which paths did, ``merged_score`` is what the fusion made of them.
    """

    record: ChunkRecord
    vector_score: float | None
    keyword_score: float | None
    retrieved_by: Source
    merged_score: float


# A hit whose score equals the threshold up to float noise (0.7·v + 0.3·k rounding) is kept.
_SCORE_EPSILON = 1e-12


def effective_weights(
    has_vector: bool, has_keyword: bool, vector_weight: float, text_weight: float
) -> tuple[float, float]:
    """The (vector, keyword) weights for the paths that returned candidates.

    Both paths present: the configured weights normalised to sum 1. One path
    only: that path gets weight 1, so its scores are not halved and then lost
    to the min-score cut (e.g. no embeddings configured).

    Raises:
        ValueError: if both paths are present and the weights do not sum to a
            positive number.
    """
    if has_vector and has_keyword:
        total = vector_weight + text_weight
        if not total > 0 or vector_weight < 0 or text_weight < 0:
            raise MemoryInputError(
                f"vector_weight ({vector_weight}) and text_weight ({text_weight}) must be "
                "non-negative with a positive sum"
            )
        return vector_weight / total, text_weight / total
    if has_vector:
        return 1.0, 0.0
    return 0.0, 1.0


def ranking_key(hit: MemorySearchResult) -> tuple[float, float, float, str, int, str]:
    """Sort key: score descending; ties by raw vector then keyword score, then path, line and id.

    Calibrated evidence is 0 for every weak hit, so their raw scores keep them in order.
    """
    return (-hit.score, -(hit.vector_score or 0.0), -(hit.keyword_score or 0.0), hit.path, hit.start_line,
            hit.chunk_id)


def candidate_key(candidate: Candidate, score: float) -> tuple[float, float, float, str, int, str]:
    """:func:`ranking_key` of the hit of ``candidate`` (:func:`candidate_hit`) scoring ``score``."""
    record = candidate.record
    return (-score, -(candidate.vector_score or 0.0), -(candidate.keyword_score or 0.0), record.path,
            record.start_line, record.id)


def sort_hits(hits: Iterable[MemorySearchResult]) -> list[MemorySearchResult]:
    """``hits`` by score descending with the deterministic tie-break of :func:`ranking_key`."""
    return sorted(hits, key=ranking_key)


def _clean(score: float, chunk_id: str, path: str) -> float:
    if math.isfinite(score):
        return float(score)
    # A NaN would make the sort order arbitrary; count it as "no evidence".
    logger.warning("non-finite %s score %r for chunk %s; counted as 0", path, score, chunk_id)
    return 0.0


def _best_by_id(
    pairs: Sequence[tuple[ChunkRecord, float]], path: str
) -> dict[str, tuple[ChunkRecord, float]]:
    best: dict[str, tuple[ChunkRecord, float]] = {}
    for record, raw in pairs:
        score = _clean(raw, record.id, path)
        seen = best.get(record.id)
        if seen is None or score > seen[1]:
            best[record.id] = (record, score)
    return best


def _ranked(best: dict[str, tuple[ChunkRecord, float]], path: str,
            calibrate: Calibration | None) -> list[tuple[str, float]]:
    scored = [
        (chunk_id, score if calibrate is None else calibrate(path, record, score))
        for chunk_id, (record, score) in best.items()
    ]
    return sorted(scored, key=lambda pair: -pair[1])


def fused_candidates(
    vector: Sequence[tuple[ChunkRecord, float]],
    keyword: Sequence[tuple[ChunkRecord, float]],
    *,
    vector_weight: float,
    text_weight: float,
    fusion: FusionFunction = weighted_fusion,
    calibrate: Calibration | None = None,
) -> list[Candidate]:
    """What :func:`merge_candidates` makes its hits of, one per chunk id, in the order recall
    first returned them (not sorted): :func:`~.pipeline.rank` makes hits of only those it returns."""
    by_vector = _best_by_id(vector, "vector")
    by_keyword = _best_by_id(keyword, "keyword")
    w_v, w_t = effective_weights(bool(by_vector), bool(by_keyword), vector_weight, text_weight)
    vector_pool = _ranked(by_vector, "vector", calibrate)
    fused = fusion(vector_pool, _ranked(by_keyword, "keyword", calibrate), w_v, w_t)
    candidates: list[Candidate] = []
    for chunk_id in dict.fromkeys([*by_vector, *by_keyword]):
        v_entry = by_vector.get(chunk_id)
        k_entry = by_keyword.get(chunk_id)
        entry = v_entry if v_entry is not None else k_entry
        assert entry is not None  # every id came from one of the two maps
        v = v_entry[1] if v_entry is not None else None
        k = k_entry[1] if k_entry is not None else None
        source: Source = "keyword" if v is None else ("both" if k is not None else "vector")
        merged = _clean(fused.get(chunk_id, 0.0), chunk_id, "fused")
        candidates.append(Candidate(entry[0], v, k, source, merged))
    return candidates


def candidate_hit(candidate: Candidate, *, score: float | None = None, weight: float = 1.0,
                  decay: float = 1.0, relevance: float = 0.0, confident: bool = False,
                  relevance_rank: int = 0) -> MemorySearchResult:
    """The hit of a :class:`Candidate`: its ``merged_score`` is also, by default, its ``score``."""
    record, merged = candidate.record, candidate.merged_score
    return MemorySearchResult(
        path=record.path,
        start_line=record.start_line,
        end_line=record.end_line,
        text=record.text,
        score=merged if score is None else score,
        vector_score=candidate.vector_score,
        keyword_score=candidate.keyword_score,
        retrieved_by=candidate.retrieved_by,
        file_kind=record.file_kind,
        decay=decay,
        merged_score=merged,
        weight=weight,
        relevance_rank=relevance_rank,
        chunk_id=record.id,
        heading=record.heading,
        updated_at=record.updated_at,
        relevance=relevance,
        provenance=parse_provenance(record.text),
        confident=confident,
    )


def merge_candidates(
    vector: Sequence[tuple[ChunkRecord, float]],
    keyword: Sequence[tuple[ChunkRecord, float]],
    *,
    vector_weight: float,
    text_weight: float,
    fusion: FusionFunction = weighted_fusion,
    calibrate: Calibration | None = None,
) -> list[MemorySearchResult]:
    """Merge the vector and keyword candidates by chunk id into scored hits.

    ``score = merged_score = fusion(vector, keyword, w_v, w_t)[chunk]`` with
    the weights of :func:`effective_weights`; the default fusion is the specification's
    ``w_v·vector_score + w_t·keyword_score`` (see
    :mod:`~langchain_md_memory.search.fusion` for the others). A path that did
    not return a chunk leaves its raw score ``None``. ``calibrate(path, record,
    raw)`` (``path`` is ``"vector"`` or ``"keyword"``), when given, turns each
    raw score into the evidence the fusion sees; the hits keep the raw scores.
    The result is sorted as :func:`sort_hits` does.

    Example:
        .. code-block:: python

            from langchain_md_memory.types import ChunkRecord

            rec = ChunkRecord("c1", "MEMORY.md", 1, 3, "", "prefers dark mode", "h", "evergreen", 0.0)
            hits = merge_candidates([(rec, 0.8)], [(rec, 0.5)], vector_weight=0.7, text_weight=0.3)
            assert hits[0].retrieved_by == "both"
            assert abs(hits[0].score - (0.7 * 0.8 + 0.3 * 0.5)) < 1e-12
    """
    candidates = fused_candidates(vector, keyword, vector_weight=vector_weight, text_weight=text_weight,
                                  fusion=fusion, calibrate=calibrate)
    return sort_hits(candidate_hit(candidate) for candidate in candidates)


def filter_min_score(hits: Iterable[MemorySearchResult], min_score: float) -> list[MemorySearchResult]:
    """Drop hits scoring below ``min_score``; the rest sorted by :func:`sort_hits`."""
    return sort_hits(hit for hit in hits if hit.score >= min_score - _SCORE_EPSILON)


def kept_by_min_score(scores: Sequence[float], min_score: float) -> list[int]:
    """The positions of the ``scores`` :func:`filter_min_score` keeps, in order."""
    return [n for n, score in enumerate(scores) if score >= min_score - _SCORE_EPSILON]
