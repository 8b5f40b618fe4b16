"""Retrieval metrics over one ranking per query: R@k, reciprocal rank, top-1, no-answer.

A query's gold is a list of *groups*; a group is found when any hit matches any
of its alternatives. Everything is computed from :func:`gold_ranks`, the 1-based
rank at which each group is first found (``None`` when not in the ranking):

- ``R@k``: share of the query's groups found in the top ``k``;
- reciprocal rank: ``1 / rank`` of the first hit that finds any group, 0 if none;
- top-1: the first hit finds a group;
- no-answer (gold empty): the search returned nothing at all, or no hit labelled ``confident``;
- labels: an answerable query whose first hit is gold should have that hit ``confident``;
  ``empty`` counts answerable queries that got no hit at all (a withheld answer).

Example:
    .. code-block:: python

        ranks = gold_ranks(["x", "a", "b"], [{"a"}, {"b"}, {"c"}])
        assert ranks == [2, 3, None]
        assert recall_at_k(ranks, 2) == 1 / 3 and reciprocal_rank(ranks) == 0.5
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "RELEVANCE_BUCKETS",
    "Outcome",
    "Summary",
    "gold_ranks",
    "recall_at_k",
    "reciprocal_rank",
    "reliability",
    "summarise",
    "top1",
]


def _member(hit: Any, group: Any) -> bool:
    return hit in group


def gold_ranks(
    ranking: Sequence[Any],
    gold: Sequence[Any],
    matches: Callable[[Any, Any], bool] = _member,
) -> list[int | None]:
    """For each gold group, the 1-based rank of the first hit that ``matches`` it, else ``None``."""
    ranks: list[int | None] = []
    for group in gold:
        ranks.append(next((i for i, hit in enumerate(ranking, 1) if matches(hit, group)), None))
    return ranks


def recall_at_k(ranks: Sequence[int | None], k: int) -> float:
    """Share of gold groups found within the top ``k`` (0.0 for a query without gold)."""
    if not ranks:
        return 0.0
    return sum(1 for r in ranks if r is not None and r <= k) / len(ranks)


def reciprocal_rank(ranks: Sequence[int | None]) -> float:
    """``1 / rank`` of the first hit that finds any gold group; 0.0 when none does."""
    found = [r for r in ranks if r is not None]
    return 1.0 / min(found) if found else 0.0


def top1(ranks: Sequence[int | None]) -> float:
    """1.0 when the first hit finds a gold group, else 0.0."""
    return 1.0 if any(r == 1 for r in ranks) else 0.0


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one query got: gold ranks (empty for a no-answer query) and how many hits came back."""

    qid: str
    category: str
    ranks: tuple[int | None, ...]
    returned: int
    split: str = ""
    confident: bool = False
    """Some hit was labelled ``confident``."""
    top_confident: bool = False
    """The first hit was labelled ``confident``."""
    top_relevance: float | None = None
    """The first hit's ``relevance`` (``None`` without hits)."""

    @property
    def answerable(self) -> bool:
        """False for a query whose answer is not in memory (empty gold)."""
        return bool(self.ranks)


@dataclass(frozen=True, slots=True)
class Summary:
    """Means over a set of outcomes; ``None`` where no query of that kind was asked."""

    answerable: int
    no_answer: int
    r5: float | None
    r10: float | None
    mrr: float | None
    top1: float | None
    no_answer_rate: float | None
    empty: int = 0
    """Answerable queries that got no hit at all."""
    gold_top_confident: float | None = None
    """Share of answerable queries whose first hit is gold that have it labelled ``confident``."""


def _mean(values: Collection[float]) -> float | None:
    return sum(values) / len(values) if values else None


def summarise(outcomes: Iterable[Outcome]) -> Summary:
    """R@5, R@10, MRR and top-1 over answerable queries; no-answer rate over the others."""
    items = list(outcomes)
    ans = [o for o in items if o.answerable]
    none = [o for o in items if not o.answerable]
    return Summary(
        answerable=len(ans),
        no_answer=len(none),
        r5=_mean([recall_at_k(o.ranks, 5) for o in ans]),
        r10=_mean([recall_at_k(o.ranks, 10) for o in ans]),
        mrr=_mean([reciprocal_rank(o.ranks) for o in ans]),
        top1=_mean([top1(o.ranks) for o in ans]),
        no_answer_rate=_mean([1.0 if o.returned == 0 or not o.confident else 0.0 for o in none]),
        empty=sum(1 for o in ans if o.returned == 0),
        gold_top_confident=_mean([1.0 if o.top_confident else 0.0 for o in ans if top1(o.ranks)]),
    )


RELEVANCE_BUCKETS = (0.0, 0.2, 0.3, 0.45, 0.6, 0.8, 1.01)
"""Edges of the reliability table's buckets of first-hit relevance (0.45: the confident label)."""


def reliability(outcomes: Iterable[Outcome]) -> list[tuple[str, int, float | None, float | None]]:
    """Per bucket of first-hit relevance: ``(bucket, queries, share first hit gold, share confident)``.

    No-answer queries count as first hit not gold: the table says how far each
    relevance can be trusted on this data.
    """
    rows = []
    items = [o for o in outcomes if o.top_relevance is not None]
    for low, high in itertools.pairwise(RELEVANCE_BUCKETS):
        part = [o for o in items if low <= (o.top_relevance or 0.0) < high]
        label = f"{low:.2f}–{min(high, 1.0):.2f}"
        rows.append((label, len(part), _mean([top1(o.ranks) for o in part]),
                     _mean([1.0 if o.top_confident else 0.0 for o in part])))
    return rows
