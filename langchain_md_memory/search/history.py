"""As-of search: the struck History lines read back from the files, scored and ranked for a day.

:class:`~.searcher.Searcher` calls :func:`answer_as_of`. Superseded lines are not indexed, so it
reads them from the files
(:func:`~langchain_md_memory.search.asof.past_facts`), scores them against the question (cosine with
the embedder, through the index's embedding cache; else the share of the question's informative terms
they hold), and :func:`~langchain_md_memory.search.asof.as_of_ranked` puts those valid on the day first.
"""

from __future__ import annotations

import calendar
import datetime as dt
import logging
from typing import TYPE_CHECKING, Any

from ..errors import MemoryInputError, MemoryStoreError
from ..files.base import DocumentStore
from ..sync.embedding import cosines
from ..sync.indexer import index_identity
from ..text import token_set
from .asof import PastFact, as_of_ranked, past_facts, period_end
from .periods import Period, named_period
from .pipeline import RankedResults

if TYPE_CHECKING:
    from ..embeddings import EmbeddingClient
    from ..index.base import SearchIndex

__all__ = ["answer_as_of", "as_of_date", "asked_period"]

logger = logging.getLogger(__name__)

_NO_SUCH_TERM = " "  # no chunk holds it: its idf is the one a term absent from the memory gets
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


def _past_facts(store: DocumentStore) -> list[PastFact]:
    found: list[PastFact] = []
    for path in store.list_files():
        try:
            text = store.read_bytes(path).decode("utf-8", errors="replace")
        except (MemoryStoreError, OSError) as exc:  # gone meanwhile: its History with it
            logger.debug("cannot read %s for its History: %s", path, exc)
            continue
        found.extend(past_facts(path, text))
    return found


def _past_scores(index: SearchIndex, embedder: EmbeddingClient | None, query: str, facts: list[PastFact],
                 vector: Any) -> tuple[list[float], bool]:
    statements = [fact.statement for fact in facts]
    if vector is not None and embedder is not None:
        found = cosines(index, embedder, index_identity(embedder), vector, statements)
        return [max(0.0, cosine) for cosine in found], True
    terms = sorted(t for t in token_set(query) if t not in _DATE_TERMS and not t.isdecimal())
    idf = index.term_idf([*terms, _NO_SUCH_TERM]) if terms else {}
    absent = idf.get(_NO_SUCH_TERM, float("inf"))
    weights = {t: idf.get(t, absent) for t in terms if idf.get(t, absent) < absent}
    total = sum(weights.values())
    held = [token_set(statement) for statement in statements]
    scores = [sum(w for t, w in weights.items() if t in have) / total if total else 0.0 for have in held]
    return scores, False


def answer_as_of(ranked: RankedResults, store: DocumentStore, index: SearchIndex,
                 embedder: EmbeddingClient | None, query: str, vector: Any, day: dt.date, k: int,
                 strict: bool) -> RankedResults:
    """``ranked`` answered as of ``day`` (see :func:`~langchain_md_memory.search.asof.as_of_ranked`)."""
    facts = [fact for fact in _past_facts(store) if fact.holds(day)]
    scores, by_vector = (_past_scores(index, embedder, query, facts, vector) if facts
                         else ([], vector is not None))
    hits = as_of_ranked(ranked.hits, facts, scores, day, k, vector=by_vector, strict=strict)
    if not strict and len(hits) == len(ranked.hits) and all(
            a.chunk_id == b.chunk_id for a, b in zip(hits, ranked.hits, strict=True)):
        hits = ranked.hits  # a date read from the question that adds nothing leaves the hits alone
    logger.debug("as of %s (%s): %d past facts valid", day, "asked" if strict else "read", len(facts))
    return RankedResults(hits, {**ranked.funnel, "top_k": len(hits)}, ranked.degraded, day)
