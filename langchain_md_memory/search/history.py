"""As-of search: the struck History lines that held on a day, scored and ranked.

:class:`~.searcher.Searcher` calls :func:`answer_as_of`. Superseded lines are never chunks; the index
keeps them apart with the days they held and their vectors (embedded when their file was indexed), so
this reads the lines valid on the day from the index, scores them against the question (cosine with the
query's vector; else the share of the question's informative terms they hold), and
:func:`~langchain_md_memory.search.asof.as_of_ranked` puts them first. A line whose vector is not cached
yet (its embedding failed at sync) is embedded here, with the others that lack one, in one call.
"""

from __future__ import annotations

import calendar
import datetime as dt
import logging
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import MemoryInputError
from ..files.sections import PastFact
from ..index.scoring import NO_SUCH_TERM
from ..sync.embedding import embed_cached
from ..sync.indexer import index_identity
from ..text import token_set
from .asof import as_of_ranked, period_end
from .periods import Period, named_period
from .pipeline import RankedResults

if TYPE_CHECKING:
    from ..embeddings import EmbeddingClient
    from ..index.base import SearchIndex

__all__ = ["answer_as_of", "as_of_date", "asked_period"]

logger = logging.getLogger(__name__)

_DATE_TERMS = token_set(" ".join([*calendar.month_name, *calendar.month_abbr,
                                  "last this past month year week 去年 今年 前年 上个月 这个月 本月 月份"]))
"""Terms of a date phrase: they say when, not what, so a past fact is not scored on them."""


def as_of_date(value: Any) -> dt.date | None:
    """``value`` as an as-of day: a ``date`` (a ``datetime``'s day), an ISO ``YYYY-MM-DD`` string or ``None``.

    Raises:
        MemoryInputError: for anything else, naming the value and the format to use.
    """
    if value is None or (isinstance(value, dt.date) and not isinstance(value, dt.datetime)):
        return value
    if isinstance(value, dt.datetime):
        return value.date()
    text = str(value).strip()
    try:
        if len(text) == 10:
            return dt.date.fromisoformat(text)
    except ValueError:
        pass
    raise MemoryInputError(
        f"as_of={value!r} is not a date: give the day as YYYY-MM-DD, e.g. as_of='2025-03-31'")


def asked_period(query: str, as_of: Any, today: dt.date) -> tuple[Period | None, dt.date | None, bool]:
    """The period the question names (read once a search: it also weighs hits), the as-of day and
    whether the caller gave it (strict), else the end of that period."""
    period = named_period(query, today)
    day = as_of_date(as_of)
    return (period, day, True) if day is not None else (period, period_end(period, today), False)


def _past_scores(index: SearchIndex, embedder: EmbeddingClient | None, query: str,
                 found: list[tuple[PastFact, np.ndarray | None]], vector: Any) -> tuple[list[float], bool]:
    if vector is not None and embedder is not None:
        missing = [fact.statement for fact, stored in found if stored is None]
        fresh = iter(embed_cached(index, embedder, index_identity(embedder), missing) if missing else ())
        matrix = np.vstack([next(fresh) if stored is None else stored for _, stored in found])
        return np.maximum(matrix @ vector, 0.0).tolist(), True
    terms = sorted(t for t in token_set(query) if t not in _DATE_TERMS and not t.isdecimal())
    idf = index.term_idf([*terms, NO_SUCH_TERM]) if terms else {}
    absent = idf.get(NO_SUCH_TERM, float("inf"))
    weights = {t: idf.get(t, absent) for t in terms if idf.get(t, absent) < absent}
    total = sum(weights.values())
    held = [token_set(fact.statement) for fact, _ in found]
    scores = [sum(w for t, w in weights.items() if t in have) / total if total else 0.0 for have in held]
    return scores, False


def answer_as_of(ranked: RankedResults, index: SearchIndex, embedder: EmbeddingClient | None, query: str,
                 vector: Any, day: dt.date, k: int, strict: bool) -> RankedResults:
    """``ranked`` answered as of ``day`` (see :func:`~langchain_md_memory.search.asof.as_of_ranked`)."""
    found = index.past_facts_on(day)
    scores, by_vector = (_past_scores(index, embedder, query, found, vector) if found
                         else ([], vector is not None))
    facts = [fact for fact, _ in found]
    hits = as_of_ranked(ranked.hits, facts, scores, day, k, vector=by_vector, strict=strict)
    if not strict and len(hits) == len(ranked.hits) and all(
            a.chunk_id == b.chunk_id for a, b in zip(hits, ranked.hits, strict=True)):
        hits = ranked.hits  # a date read from the question that adds nothing leaves the hits alone
    logger.debug("as of %s (%s): %d past facts valid", day, "asked" if strict else "read", len(facts))
    return RankedResults(hits, {**ranked.funnel, "top_k": len(hits)}, ranked.degraded, day)
