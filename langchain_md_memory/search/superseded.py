"""A dated hit that restates a superseded fact ranks below the hit holding its replacement.

The pipeline's step 9 (:func:`~langchain_md_memory.search.pipeline.restated_order`), after top k.

``supersede`` strikes the old fact under its file's ``## History`` (never indexed), but a daily
log or session written before that day may still say the old thing ("on-call moves to a biweekly
rotation"), and nothing in the log itself says it is out of date. Given the facts superseded in
the files of the hits (:func:`~langchain_md_memory.files.facts.superseded_statements`), a hit dated
before the day a fact was superseded gives its place to the hit that replaced it and follows it (the
others keep their order, MMR's included) when it:

- holds more than half of the old statement's terms that its successor's text lacks (what changed:
  ``biweekly rotation``, ``1,650``; wording the new line merely dropped is among them, hence the
  majority), and
- shares at least two terms with both of them (it is about the same thing).

The successor is a hit from the file that struck the fact, whose text shares at least half of
the old statement's terms (the replacement line sits in it) and whose relevance reaches the confident
bar (it answers the query itself, as for newer statements first: an old log answering a question
about its own event far better than the fact's current line keeps its place). The successor takes
the score of the first hit that follows it (the query found the fact there), the lift recorded in
its ``decay``; the older hits' score and ``decay`` are scaled to just below it, as
:func:`~langchain_md_memory.search.decay.newer_statements_first` does; they are not buried.

Example:
    .. code-block:: python

        hits = restated_below_successors(hits, {"work.md": [("On-call: biweekly rotation", day)]})
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence

from ..files.facts import provenance_day
from ..text import query_terms, token_set
from ..types import MemorySearchResult
from .decay import hit_day, lifted_to, placed_below
from .relevance import CONFIDENT_RELEVANCE

__all__ = ["restated_below_successors", "successor_paths"]

_SHARED_TERMS = 2
"""Terms a restating hit shares with the old statement and its successor: the same subject."""


def successor_paths(hits: Sequence[MemorySearchResult]) -> set[str]:
    """Files whose struck facts could move a hit: those of hits holding a line the package wrote on a
    known day, answering the query, with a hit dated before that day ranked above them."""
    paths: set[str] = set()
    first_day: dt.date | None = None  # the earliest day of the hits ranked above, so far
    for hit in hits:
        written = provenance_day(hit.provenance)
        if (written is not None and first_day is not None and first_day < written
                and hit.relevance >= CONFIDENT_RELEVANCE):
            paths.add(hit.path)
        day = hit_day(hit)
        if day is not None and (first_day is None or day < first_day):
            first_day = day
    return paths


def restated_below_successors(
    hits: Sequence[MemorySearchResult], superseded: Mapping[str, Sequence[tuple[str, dt.date]]]
) -> list[MemorySearchResult]:
    """``hits`` in their order, except that a dated hit restating a superseded fact gives its place to
    its successor and follows it."""
    if not superseded:
        return list(hits)
    terms = [token_set(hit.text) for hit in hits]
    days = [hit_day(hit) for hit in hits]
    below: dict[int, int] = {}  # a restating hit -> the successor it goes under (the lowest one)
    for n, successor in enumerate(hits):
        if successor.relevance < CONFIDENT_RELEVANCE:
            continue  # it does not answer the query itself: an older hit that does keeps its place
        for old, day in superseded.get(successor.path, ()):
            old_terms = frozenset(query_terms(old))
            shared = old_terms & terms[n]
            if len(shared) < max(_SHARED_TERMS, (len(old_terms) + 1) // 2):
                continue  # the replacement is not in this hit
            changed = old_terms - terms[n]
            for o in range(n):
                then = days[o]
                if (then is not None and then < day and 2 * len(changed & terms[o]) > len(changed)
                        and len(shared & terms[o]) >= _SHARED_TERMS):
                    below[o] = n
    # A successor takes the place of the first hit that goes under it (or under one that does), and
    # those follow it: the current statement stands where the query found its fact.
    place: dict[int, int] = {}  # a successor that stays -> the first position it takes
    for o in below:
        n = below[o]
        while n in below:  # o < below[o]: no cycle
            n = below[n]
        place[n] = min(o, place.get(n, o))
    taking = {o: n for n, o in place.items()}
    out: list[MemorySearchResult] = []

    def emit(hit: MemorySearchResult, n: int) -> None:
        out.append(hit)
        for o in sorted(o for o, under in below.items() if under == n):  # o < n: no cycle
            emit(placed_below(hits[o], hit.score), o)

    for n, hit in enumerate(hits):
        if n in taking:
            emit(lifted_to(hits[taking[n]], hit.score), taking[n])
        elif n not in below and n not in place:
            emit(hit, n)
    return out
