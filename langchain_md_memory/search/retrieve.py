"""Recall: the one place a search reads the index, turning a query into the two candidate pools.

Everything after this (merge, min-score, decay, MMR, top-K) is a pure function
of the :class:`~langchain_md_memory.search.pipeline.Recall` returned here.

Example:
    .. code-block:: python

        vector = started_query_vector(embedder, "retirement age", None)  # embedding begun
        recall = retrieve(index, "retirement age", 24, config.ranking, vector)
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..config import RankingConfig
from ..embeddings.base import Embedder
from ..index.base import SearchIndex
from ..index.scoring import MAX_QUERY_TERMS, NO_SUCH_TERM
from ..text import CJK_CHAR_RE, query_term_forms, query_terms
from ..text.crosslingual import bundled_dictionary, gloss_heads, translations_script
from ..text.redaction import scrub
from ..text.stopwords import is_stop_term
from ..types import ChunkRecord
from .pipeline import Recall
from .relevance import CROSSED_WEIGHT

__all__ = [
    "Crossing", "QueryVector", "bounded_keywords", "crossing", "keyword_completed", "query_vector",
    "retrieve", "started_query_vector",
]

_PER_WORD = 16
"""Translations looked up for one word of the query."""
_CANDIDATE_TERMS = 256
"""Terms of a long query whose idf is read to choose the most informative (the longest first)."""

logger = logging.getLogger(__name__)


QueryVector = Callable[[], tuple[Any, str | None]]
"""What :func:`started_query_vector` returns: waits for the query's embedding, ``(vector, why none)``."""


def query_vector(embedder: Embedder | None, query: str,
                 embedding_error: str | None) -> tuple[Any, str | None]:
    """The query's embedding, or ``None`` and why the search runs on keywords only.

    Never raises: an outage or a timeout leaves the keyword path to answer alone.
    """
    return started_query_vector(embedder, query, embedding_error)()


def started_query_vector(embedder: Embedder | None, query: str,
                         embedding_error: str | None) -> QueryVector:
    """:func:`query_vector`, its embedding begun now (on a worker thread, for a remote model):
    keyword recall reads the index meanwhile. The function returned waits for it (the first call;
    later ones give the same answer) and never raises.
    """
    if embedder is None or not query.strip():
        return lambda: (None, None)
    if embedding_error is not None:
        degraded = f"embeddings unavailable ({embedding_error}); keyword results only"
        return lambda: (None, degraded)
    # The model reads only its window: the rest would cost minutes of encoding and change nothing.
    fitted = embedder.fit_query(query)
    note = None
    if len(fitted) < len(query):
        note = (f"long query: the embedding model read its first {len(fitted)} of {len(query)} characters "
                "(its input window)")
        logger.info("%s", note)
    try:
        wait = embedder.start_query(fitted)
    except Exception as exc:  # could not even start: answer from keywords
        failed = _failed(exc)
        return lambda: failed

    @functools.cache
    def answer() -> tuple[Any, str | None]:
        try:
            return wait(), note
        except Exception as exc:  # outage, timeout: answer from keywords
            return _failed(exc)

    return answer


def _failed(exc: Exception) -> tuple[None, str]:
    reason = scrub(f"{type(exc).__name__}: {exc}")
    logger.warning("query embedding failed, answering from keywords: %s", reason)
    return None, f"vector search failed ({reason}); keyword results only"


@functools.lru_cache(maxsize=65536)
def _alternatives(target: str) -> list[tuple[str, ...]]:
    """How a note can hold one translation: every bigram of a Chinese word; the one or two words
    each part of an English gloss names its thing with
    (:func:`~langchain_md_memory.text.crosslingual.gloss_heads`), or the last of two ("younger sister")."""
    if CJK_CHAR_RE.search(target):
        terms = tuple(t for t in query_terms(target) if not is_stop_term(t))
        return [terms] if terms else []
    out: list[tuple[str, ...]] = []
    for words in gloss_heads(target):
        terms = tuple(t for t in query_terms(" ".join(words)) if not is_stop_term(t))
        out += [terms] if len(terms) == 1 else [terms, terms[-1:]] if len(terms) == 2 else []
    return list(dict.fromkeys(out))


Candidates = tuple[tuple[str, tuple[str, ...]], ...]
"""A word's translations as ``(target, the terms a note holding it holds)``."""


@functools.lru_cache(maxsize=65536)
def _word_candidates(source: str, targets: tuple[str, ...]) -> tuple[tuple[str, ...], Candidates]:
    """One word's query terms and its translations' candidates, shorter words first (the everyday
    ones), a handful of them: each costs a lookup. Worked out once per word."""
    pairs = [(tg, alt) for tg in sorted(targets, key=len) for alt in _alternatives(tg)][:_PER_WORD]
    return tuple(query_terms(source)), tuple(pairs)


@dataclass(frozen=True, slots=True)
class Crossing:
    """The query terms' translations the memory holds, their terms' idf, and the keyword query
    that searches them (``""``: nothing to search)."""

    translations: dict[str, tuple[tuple[str, ...], ...]] = field(default_factory=dict)
    idf: dict[str, float] = field(default_factory=dict)
    query: str = ""


def crossing(index: SearchIndex, query: str, terms: list[str]) -> Crossing:
    """What keyword recall also searches for ``query``: its words translated (see
    :mod:`langchain_md_memory.text.crosslingual`), kept where the memory holds them.

    Nothing, and no dictionary read, when the memory holds no term in the translations' script
    (an English question over English notes). Else costs the words' lookups (each worked out once)
    and one document-frequency read of the candidates' terms.
    """
    if not terms or not index.holds_script(translations_script(query)):
        return Crossing()
    dictionary = bundled_dictionary()
    if dictionary is None:
        return Crossing()
    wanted = set(terms)
    candidates: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
    for source, targets in dictionary.translations(query).items():
        sources, pairs = _word_candidates(source, tuple(targets))
        for term in (t for t in sources if t in wanted):
            candidates.setdefault(term, []).extend(pairs)
    needed = list(dict.fromkeys(t for pairs in candidates.values() for _, alt in pairs for t in alt))
    if not needed:
        return Crossing()
    idf = index.term_idf([*needed[:2 * MAX_QUERY_TERMS], NO_SUCH_TERM])
    absent = idf.pop(NO_SUCH_TERM)
    held = {t for t, value in idf.items() if value < absent}
    out: dict[str, tuple[tuple[str, ...], ...]] = {}
    searched: list[str] = []
    for term, found in candidates.items():
        kept = [(target, alt) for target, alt in found if held.issuperset(alt)]
        if kept:
            out[term] = tuple(dict.fromkeys(alt for _, alt in kept))
            searched += [target for target, _ in kept]
    if not out:
        return Crossing()
    return Crossing(out, {t: idf[t] for t in held}, " ".join(dict.fromkeys(searched)))


def unseamed(index: SearchIndex, query: str, weights: dict[str, float]) -> dict[str, float]:
    """``weights`` with the bigrams straddling two words of the query's Chinese weighing nothing.

    Every two characters of a Chinese run are a term, so ``我现在房租是多少`` asks for 在房 and
    租是 too; no note holds them, they weigh as the rarest terms, and a note holding 现在 and 房租
    could not reach full coverage. The dictionary (:meth:`~langchain_md_memory.text.crosslingual.
    Dictionary.seams`) says which bigrams straddle two words. One beside a lone content
    character keeps its weight when a note holds it: 教育金 is no dictionary word, and a note
    saying 教育金 holds 育金. Costs one document-frequency read, only then. A question without
    Chinese returns at once, without reading the dictionary.
    """
    if not CJK_CHAR_RE.search(query):
        return weights
    dictionary = bundled_dictionary()
    seams = {t: lone for t, lone in dictionary.seams(query).items() if t in weights} if dictionary else {}
    if not seams:
        return weights
    absent = index.term_idf([NO_SUCH_TERM])[NO_SUCH_TERM] if any(seams.values()) else 0.0
    return {t: 0.0 if t in seams and not (seams[t] and w < absent) else w for t, w in weights.items()}


def bounded_keywords(index: SearchIndex, query: str) -> tuple[str, str | None]:
    """``query``, or for one of more than ``MAX_QUERY_TERMS`` terms its most informative ones.

    A pasted document has thousands of terms; keyword recall reads ``MAX_QUERY_TERMS``. They are
    the ones with the highest idf among those the memory holds (a term no note holds finds
    nothing), chosen from the ``_CANDIDATE_TERMS`` longest (a long word is a rare one), then the
    longest others; returned as the query's own words joined by spaces, with a note saying so.
    """
    if len(query) < 4 * MAX_QUERY_TERMS:  # too short to hold more terms than recall reads
        return query, None
    forms = query_term_forms(query)
    if len(forms) <= MAX_QUERY_TERMS:
        return query, None
    candidates = sorted(forms, key=len, reverse=True)[:_CANDIDATE_TERMS]
    idf = index.term_idf([*candidates, NO_SUCH_TERM])
    absent = idf.pop(NO_SUCH_TERM)
    held = sorted((t for t in candidates if idf.get(t, absent) < absent), key=lambda t: -idf[t])
    chosen = list(dict.fromkeys([*held, *candidates]))[:MAX_QUERY_TERMS]
    note = f"long query: keyword search used its {len(chosen)} most informative of {len(forms)} terms"
    logger.info("%s", note)
    return " ".join(forms[t] for t in chosen), note


def keyword_completed(index: SearchIndex, terms: Sequence[str], idf: Mapping[str, float],
                      keyword: list[tuple[ChunkRecord, float]], found: list[tuple[ChunkRecord, float]]
                      ) -> list[tuple[ChunkRecord, float]]:
    """The vector candidates keyword recall did not return, with the keyword score they have.

    Keyword recall of ``terms`` (weighed by ``idf``) keeps its best ``pool``; a chunk just below
    them that the vector path found would otherwise get no keyword evidence at all, as if it held
    none of the query's words. Its BM25 is divided by that of keyword recall's best hit, as
    keyword recall's own scores are. Costs one read of these chunks' indexed terms.
    """
    returned = {record.id for record, _ in keyword}
    missing = [record for record, _ in found if record.id not in returned]
    if not keyword or not missing:
        return []
    top = keyword[0][0].id
    raw = index.keyword_scores(terms, [top, *(record.id for record in missing)], idf)
    best = raw.get(top, 0.0)
    if best <= 0.0:
        return []
    return [(record, min(1.0, raw[record.id] / best)) for record in missing if record.id in raw]


def retrieve(index: SearchIndex, query: str, pool: int, config: RankingConfig, vector: QueryVector
             ) -> Recall:
    """Up to ``pool`` candidates from each path, and stored vectors when MMR compares by cosine.

    ``vector`` gives the query's embedding (see :func:`started_query_vector`): asked for after keyword
    recall, which runs while it is computed. Read in one snapshot of the index: both paths see one
    state of it, and the reads share one transaction (on SQLite, cheaper than a snapshot each).
    """
    with index.snapshot():
        return _recall(index, query, pool, config, vector)


def _recall(index: SearchIndex, query: str, pool: int, config: RankingConfig, pending: QueryVector
            ) -> Recall:
    query, bounded = bounded_keywords(index, query)
    terms = query_terms(query)
    crossed = crossing(index, query, terms) if config.cross_language else Crossing()
    # One keyword read for the question and its translation, each cut to its first MAX_QUERY_TERMS terms.
    asked = [terms, query_terms(crossed.query)] if crossed.query else [terms]
    searched = [each[:MAX_QUERY_TERMS] for each in asked]
    recalled = index.keyword_search(searched, pool)
    keyword, *translated = recalled.hits
    vector, embedded = pending()
    degraded = "; ".join(filter(None, [embedded, bounded])) or None
    found: list[tuple[ChunkRecord, float]] = []
    background = None
    if vector is not None:
        try:
            by_vector = index.vector_search(vector, pool)
            found, background = by_vector.hits, by_vector.background
        except Exception as exc:  # e.g. a dimension change: answer from keywords
            reason = scrub(f"{type(exc).__name__}: {exc}")
            logger.warning("vector recall failed, answering from keywords: %s", reason)
            degraded = "; ".join(filter(None, [f"vector search failed ({reason}); keyword results only",
                                               bounded]))
    if config.complete_keyword_scores and found:
        keyword = [*keyword, *keyword_completed(index, searched[0], recalled.idf, keyword, found)]
    # The coverage weights: the idf keyword recall weighed the question's terms by.
    weights = {**crossed.idf, **unseamed(index, query, recalled.idf)}
    # What keyword recall found with the translations joins its pool, weighed down.
    keyword = [*keyword, *((record, CROSSED_WEIGHT * score) for hits in translated for record, score in hits)]
    ids = [r.id for r, _ in found] + [r.id for r, _ in keyword]
    wants_vectors = config.mmr.enabled and config.mmr.similarity != "jaccard"
    vectors = index.vectors_for(ids) if found and wants_vectors else {}
    return Recall(found, keyword, vectors, degraded, terms, background if found else None, weights,
                  crossed.translations)
