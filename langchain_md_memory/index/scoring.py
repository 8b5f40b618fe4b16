"""The scoring both index backends share: BM25 with a positive idf, and a query's vector background.

One module, so that a query scores the same wherever its memory lives: the SQLite
index (:mod:`.sqlite`) and PostgreSQL (:mod:`langchain_md_memory.postgres`) import
their keyword and cosine arithmetic from here, and nothing from each other.

Keywords: :func:`bm25_score` scores one document, the definition; :func:`bm25_top_k`
scores every posting of the query's terms at once with numpy (the same arithmetic in
the same order, so the same floats) and keeps the best.

Vectors: a multilingual model scores a question higher against any note written in
the question's language than against a note in another one. Each script group's
background (the query's mean and spread of cosines to the group's notes) is measured,
and :func:`combine_backgrounds` turns them into each group's *offset* (how far its
background stands from the memory-wide one) and the memory-wide background, the
relevance gate's yardstick. :func:`offset_top_k` ranks cosines less their group's
offset: an answer then stands out from notes in its own language by as much as it
would in a memory of that language alone. A group of fewer than :data:`MIN_BACKGROUND`
vectors has no background: its cosines are ranked as they are, and the backends name
its hits in a :class:`HitsBackground`, which the relevance label does not read them against.

Example:
    .. code-block:: python

        idf = {"bond": lucene_idf(10, 2)}
        assert bm25_score(["bond"], ["bond", "ladder"], idf, avg_len=2.0) > 0
        bond = Postings(np.array([3, 7]), np.array([1, 2]), np.array([2, 5]))
        assert [rowid for _, rowid in bm25_top_k([bond], [idf["bond"]], avg_len=2.0, limit=1)] == [3]
        offsets, background = combine_backgrounds([(0, 10, (0.30, 0.05)), (1, 10, (0.20, 0.05))])
        top = offset_top_k([(1, 0, 0.5), (2, 1, 0.45)], offsets, 1, groups=2)
        assert top[0][0] == 2  # 0.45 in a group 0.1 less near the query outranks 0.5
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import NamedTuple, TypeVar

import numpy as np

from ..types import ChunkRecord
from .topk import at_or_above_kth

__all__ = [
    "BACKGROUND_SAMPLE", "BM25_B", "BM25_K1", "MAX_QUERY_TERMS", "MIN_BACKGROUND", "NO_SUCH_TERM",
    "Background", "Calibration", "HitsBackground", "Postings", "bm25_parts", "bm25_score", "bm25_top_k",
    "combine_backgrounds", "hits_background", "lucene_idf", "offset_top_k", "scaled_to_best",
    "unmeasured_rows",
]

T = TypeVar("T")

BM25_K1 = 1.2
BM25_B = 0.75
MAX_QUERY_TERMS = 32
"""A longer query is cut to its first this many terms (keyword recall and the coverage weights)."""
NO_SUCH_TERM = " "
"""A term no chunk holds (an indexed term never holds a space): its idf is the one a term absent from the
memory gets, the highest."""


def lucene_idf(n_docs: int, doc_freq: int) -> float:
    """``ln(1 + (N - n + 0.5) / (n + 0.5))``: unlike FTS5's idf it never drops to ~0.

    FTS5's ``bm25()`` clamps the idf of a term found in more than half of the
    chunks to 1e-6, so in a small memory a chunk matching only such a term
    would score nothing.
    """
    return math.log(1.0 + (n_docs - doc_freq + 0.5) / (doc_freq + 0.5))


def bm25_score(
    terms: Sequence[str], doc_terms: Sequence[str], idf: Mapping[str, float], avg_len: float
) -> float:
    """Okapi BM25 of one document (its indexed terms) for the query terms."""
    norm = BM25_K1 * (1 - BM25_B + BM25_B * len(doc_terms) / avg_len)
    score = 0.0
    for term in terms:
        # A few C-level counts beat a Counter of the whole document: queries have a few terms.
        tf = doc_terms.count(term)
        if tf:
            score += idf[term] * tf * (BM25_K1 + 1) / (tf + norm)
    return score


class Postings(NamedTuple):
    """The chunks holding one term: rowids ascending, the term's count in each, each chunk's term count."""

    rowids: np.ndarray  # int64
    tf: np.ndarray  # int32
    lengths: np.ndarray  # int32


def bm25_parts(postings: Postings, idf: float, avg_len: float) -> np.ndarray:
    """Each posting's part of its chunk's BM25: :func:`bm25_score`'s expression for one term, over arrays.

    The same operations in the same order on the same float64 values: the same floats.
    """
    freq, length = postings.tf.astype(np.float64), postings.lengths.astype(np.float64)
    norm = BM25_K1 * (1 - BM25_B + BM25_B * length / avg_len)
    parts: np.ndarray = idf * freq * (BM25_K1 + 1) / (freq + norm)
    return parts


def bm25_top_k(postings: Sequence[Postings], idf: Sequence[float], avg_len: float, limit: int,
               parts: Sequence[np.ndarray] | None = None) -> list[tuple[float, int]]:
    """The ``limit`` best ``(bm25, rowid)`` of the chunks in ``postings``, best first, ties to lower rowids.

    ``postings[i]`` is the i-th query term's, weighed by ``idf[i]`` (``parts[i]``, when given, is
    its :func:`bm25_parts`, worked out before). Every posting is scored: the exhaustive top k,
    whatever the terms' frequencies. A chunk's parts are added in query-term order (``bincount``
    adds in array order), so each score is the float :func:`bm25_score` gives.
    """
    if parts is None:
        parts = [bm25_parts(p, weight, avg_len) for p, weight in zip(postings, idf, strict=True)]
    held = [(p.rowids, part) for p, part in zip(postings, parts, strict=True) if len(p.rowids)]
    if not held or limit <= 0:
        return []
    if len(held) == 1:
        ids, scores = held[0]
    else:
        every, weights = np.concatenate([r for r, _ in held]), np.concatenate([w for _, w in held])
        top = int(every.max())
        if top <= 32 * len(every):  # a pass over the rowids' range beats a sort (every score is > 0)
            sums = np.bincount(every, weights=weights, minlength=top + 1)
            ids = np.flatnonzero(sums > 0)  # a boolean mask: numpy finds its nonzeros far faster
            scores = sums[ids]
        else:
            ids, inverse = np.unique(every, return_inverse=True)
            scores = np.bincount(inverse, weights=weights, minlength=len(ids))
    if len(ids) > limit:  # the candidates at or above the k-th score, ties included, then exact order
        keep = at_or_above_kth(scores, limit)
        ids, scores = ids[keep], scores[keep]
    order = np.lexsort((ids, -scores))[:limit]
    return [(float(scores[i]), int(ids[i])) for i in order]


def scaled_to_best(top: Sequence[tuple[float, int]], records: Mapping[int, T]) -> list[tuple[T, float]]:
    """``(record, score / best score)`` of a top k, in (0, 1]; a rowid without a record is left out."""
    if not top:
        return []
    best = top[0][0]
    if best <= 0.0:
        return [(records[rowid], 1.0) for _, rowid in top if rowid in records]
    return [(records[rowid], max(score / best, 1e-6)) for score, rowid in top if rowid in records]


# -- vectors ---------------------------------------------------------------------------

BACKGROUND_SAMPLE = 2048
"""Stored vectors a background reads at most, per script group."""
MIN_BACKGROUND = 8
"""Fewer cosines than this (in a script group) make no background (``None``)."""

Background = tuple[float, float]
"""Mean and standard deviation of a query's cosine to the stored vectors: how similar the query is to an
arbitrary note of the memory, the yardstick that tells a hit standing out from the crowd (an answer) from
the best of a crowd of equally near notes (no answer)."""
Calibration = tuple[dict[int, float], Background | None]
"""Each script group's offset and the memory-wide background (see :func:`combine_backgrounds`)."""


class HitsBackground(tuple[float, float]):
    """The memory-wide :data:`Background` of a query's vector hits, naming the hits it does not measure.

    ``unmeasured`` holds the chunk ids of hits whose script group has fewer than
    :data:`MIN_BACKGROUND` vectors: that group has no background of its own, so its cosines are
    neither offset nor comparable with the rest (a question's own language scores higher against
    any note), and the background says nothing of them. It equals the plain ``(mean, std)``.
    """

    unmeasured: frozenset[str]

    def __new__(cls, background: Background, unmeasured: Iterable[str] = ()) -> HitsBackground:
        made = super().__new__(cls, background)
        made.unmeasured = frozenset(unmeasured)
        return made


def unmeasured_rows(found: Iterable[tuple[int, int, float]], measured: Collection[int]) -> set[int]:
    """The rowids of ``(rowid, group, cosine)`` whose group is not in ``measured`` (has no background)."""
    return {rowid for rowid, group, _ in found if group not in measured}


def hits_background(background: Background | None, unmeasured: Collection[int],
                    records: Mapping[int, ChunkRecord]) -> HitsBackground | None:
    """``background`` naming the hits among ``records`` (by rowid) whose rowid is ``unmeasured`` (see
    :class:`HitsBackground`); ``None`` without a background."""
    if background is None:
        return None
    return HitsBackground(background, (records[rowid].id for rowid in unmeasured if rowid in records))


def combine_backgrounds(measured: Sequence[tuple[int, int, Background]]) -> Calibration:
    """Each group's offset and the memory-wide background from ``(group, rows, (mean, std))`` per group.

    The spread is memory-wide (within and between groups), the yardstick of the relevance
    gate: measured against the spread within groups alone, the offset cosines of questions
    with no answer stored stood out too often.
    """
    total = sum(n for _, n, _ in measured)
    if not total:
        return {}, None
    mean = sum(n * stats[0] for _, n, stats in measured) / total
    offsets = {group: stats[0] - mean for group, _, stats in measured}
    variance = sum(n * (stats[1] ** 2 + offsets[group] ** 2) for group, n, stats in measured) / total
    return offsets, (mean, math.sqrt(variance))


def offset_top_k(found: Iterable[tuple[int, int, float]], offsets: Mapping[int, float], k: int, *,
                 groups: int) -> list[tuple[int, float]]:
    """The ``k`` best ``(rowid, score in [0, 1])`` of ``(rowid, group, cosine in [0, 1])``, best first, ties
    to lower rowids: each cosine less its group's offset, clipped to [0, 1].

    A memory of one script group (``groups`` counts those holding vectors) ranks the plain cosines: its
    one offset is 0 but for rounding.
    """
    shifts = offsets if groups > 1 else {}
    ranked = [(rowid, min(1.0, max(0.0, cosine - shifts.get(group, 0.0)))) for rowid, group, cosine in found]
    ranked.sort(key=lambda item: (-item[1], item[0]))
    return ranked[:k]
