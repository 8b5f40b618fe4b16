"""Calibrated evidence: how strongly a hit answers the query, comparable across memories and models.

Raw cosines of one model crowd into a narrow band (e5: 0.74–0.83 for any
question against any note) and a keyword score divided by the best hit is 1.0
for whatever matched best, even stop words alone. Neither can say "nothing
relevant is stored". Two signals can:

- **vector evidence**: how far the hit's cosine (offset for its script in a memory
  written in two, see :mod:`langchain_md_memory.index.scripts`) stands above this
  memory's background (the query's mean cosine to all its notes), in standard deviations
  (a z-score), mapped onto [0, 1]: ``(z - Z_NONE) / (Z_FULL - Z_NONE)``,
  clipped. A raw threshold would fit one model only.
- **coverage**: the share of the query's content terms (stop words dropped)
  found in the hit's text, each term weighted by its idf in the memory: a
  question naming something the memory never mentions ("shoe size" of a
  known person) is not answered by a note that shares only the common part.

The default fusion sums ``vector evidence`` and ``keyword evidence`` (the mean
of coverage and the BM25 score relative to the best hit, scaled by that best
hit's coverage: a query whose best keyword match holds only its common terms
has no hit at full BM25 evidence), weighted; a hit's
``relevance = max(vector evidence, coverage)`` (keyword evidence, when the search
runs on keywords only) labels it ``confident`` at :data:`CONFIDENT_RELEVANCE` and
is what an explicit ``min_score`` cuts. The label counts a cosine only where a
background measures it: on a memory of a handful of notes, or for a note of a
script group too small for a background, it rests on coverage (see :func:`labeller`).
Nothing is cut by default: the two signals of answered and unanswered questions
overlap, so a cut hides stored answers; the label lets the reader (a model, a
person) weigh a weak match.

Example:
    .. code-block:: python

        from langchain_md_memory.search.relevance import keyword_coverage, vector_evidence

        assert keyword_coverage(["bond", "ladder"], "Building a bond ladder") == 1.0
        assert keyword_coverage(["bond", "ladder"], "Bond funds") == 0.75  # half of the weight
        assert keyword_coverage(["shoe", "anna"], "Anna", {"shoe": 2.0, "anna": 1.0}) == 0.5
        assert vector_evidence(0.80, (0.80, 0.02)) == 0.0  # an average note
        assert vector_evidence(0.90, (0.80, 0.02)) == 1.0  # five deviations above it
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from ..index.scoring import HitsBackground
from ..text import token_set
from ..types import ChunkRecord, MemorySearchResult
from .merge import Calibration

__all__ = [
    "CONFIDENT_COVERAGE",
    "CONFIDENT_RELEVANCE",
    "CROSSED_WEIGHT",
    "FULL_COVERAGE_SHARE",
    "FULL_COVERAGE_TERMS",
    "NO_STRONG_MATCH",
    "Z_FULL",
    "Z_NONE",
    "Coverage",
    "Label",
    "Translations",
    "annotate_relevance",
    "best_coverage",
    "calibration",
    "keyword_coverage",
    "keyword_evidence",
    "labeller",
    "relevant",
    "vector_evidence",
]

# Chosen on the quality harness (bench/QUALITY.md): recall against how often no-answer questions are
# labelled not confident.
Z_NONE = 1.0
"""A cosine this many standard deviations above the background is no evidence yet."""
Z_FULL = 5.0
"""A cosine this many standard deviations above the background is full evidence."""
CONFIDENT_RELEVANCE = 0.45
"""A hit at least this relevant answers the query: ``confident`` (chosen on the quality harness: no-answer
questions labelled not confident against answered ones labelled confident)."""
CONFIDENT_COVERAGE = 0.45
"""The same label on a keyword-only search, read from the hit's coverage of the query's terms (its
BM25 relative to the best hit is 1.0 for whatever matched best, so it cannot say "unanswered")."""
FULL_COVERAGE_TERMS = 4
"""The query's heaviest content terms that make up its whole weight (a long query's four rarest)."""
FULL_COVERAGE_SHARE = 2 / 3
"""A note holding this share of that weight covers the query fully (chosen on the quality harness)."""
NO_STRONG_MATCH = "No strong match in memory; closest notes:"
"""What a reader (the tool's model, the CLI's user) is told first when no hit is ``confident``."""
CROSSED_WEIGHT = 0.7
"""What a query term held only through a translation weighs, against the term itself (chosen on the
quality harness)."""

Translations = Mapping[str, Sequence[tuple[str, ...]]]
"""Query term → the terms of each of its translations the memory holds (a translation is held
by a text holding all of its terms); see :mod:`langchain_md_memory.text.crosslingual`."""


def keyword_coverage(terms: Sequence[str], text: str, weights: Mapping[str, float] | None = None,
                     translations: Translations | None = None) -> float:
    """Share of the weight of ``terms`` (the query's content terms) found in ``text``, in [0, 1].

    Each term weighs ``weights[term]`` (its idf in the memory), nothing when ``weights``
    lacks it (a long query's terms beyond those keyword recall reads), 1 without ``weights``.
    The ``FULL_COVERAGE_TERMS`` heaviest make the whole, and ``FULL_COVERAGE_SHARE``
    of it counts as all. A term ``text`` lacks counts ``CROSSED_WEIGHT`` of its weight, or of
    its translation's if that is commoner, when ``text`` holds one of its ``translations``:
    an English question's "father" is held by a note saying 爸爸, and only that word of the
    question is. ``weights`` then hold the translations' terms too.

    A question names two or three things and a note answering it holds the
    rare ones; a long message (the first turn of a conversation, recalled as
    a query) names many, and a note sharing its rarest is on its topic.
    """
    return Coverage(terms, weights, translations)(text)


class Coverage:
    """:func:`keyword_coverage` of one query as a function of the text: the query's weights are
    worked out once, and each text once (a search asks for a hit's coverage at several stages)."""

    def __init__(self, terms: Sequence[str], weights: Mapping[str, float] | None = None,
                 translations: Translations | None = None) -> None:
        self.terms = terms
        self._weight = [weights.get(term, 0.0) if weights else 1.0 for term in terms]
        self._whole = sum(sorted(self._weight, reverse=True)[:FULL_COVERAGE_TERMS]) * FULL_COVERAGE_SHARE
        # Each term's translations with what one held counts (at most the term's weight: a translation
        # says no more than its own rarity in the memory), worked out once for every text.
        self._crossed = [[(alt, min(w, _rarest(alt, weights))) for alt in (translations or {}).get(term, ())]
                         for term, w in zip(terms, self._weight, strict=True)]
        self._seen: dict[str, float] = {}

    def __call__(self, text: str) -> float:
        known = self._seen.get(text)
        if known is None:
            known = self._seen[text] = self._coverage(text) if self.terms else 0.0
        return known

    def _coverage(self, text: str) -> float:
        present = token_set(text)
        found = 0.0
        for term, w, crossed in zip(self.terms, self._weight, self._crossed, strict=True):
            if term in present:
                found += w
            elif crossed:
                held = [value for alt, value in crossed if present.issuperset(alt)]
                found += CROSSED_WEIGHT * max(held, default=0.0)
        return min(1.0, found / self._whole) if self._whole > 0 else 0.0


def _rarest(terms: tuple[str, ...], weights: Mapping[str, float] | None) -> float:
    return max(weights.get(t, 0.0) for t in terms) if weights else 1.0


def vector_evidence(cosine: float | None, background: tuple[float, float] | None) -> float:
    """The cosine's z-score over the memory's background, mapped onto [0, 1].

    0 without a cosine; the raw cosine when there is no background to measure
    against (a memory of a handful of notes): it still orders the vector hits
    for the ranking, though it is no evidence for the label (:func:`labeller`).
    """
    if cosine is None:
        return 0.0
    if background is None or not _measured(background):
        return cosine
    mean, std = background
    z = (cosine - mean) / std
    evidence = (z - Z_NONE) / (Z_FULL - Z_NONE)
    # min(1.0, max(0.0, evidence)) without the two calls (a NaN is 0.0 either way)
    return (evidence if evidence < 1.0 else 1.0) if evidence > 0.0 else 0.0


def _measured(background: tuple[float, float] | None) -> bool:
    """True when ``background`` has a spread to measure a cosine against."""
    return background is not None and background[1] > 1e-6


def keyword_evidence(terms: Sequence[str], text: str, relative_bm25: float,
                     weights: Mapping[str, float] | None = None, best: float = 1.0,
                     translations: Translations | None = None, coverage: Coverage | None = None) -> float:
    """Mean of the query's term coverage in ``text`` and its BM25 relative to the best hit, times ``best``.

    Coverage alone ties every note holding all the terms; BM25 relative to the
    best alone calls the best match 1.0 whatever it matched. ``best`` is the
    best match's own coverage (:func:`best_coverage`), so BM25 counts in full
    only against a best match that holds the query's rare terms.
    """
    if not terms:
        return relative_bm25
    covered = (coverage or Coverage(terms, weights, translations))(text)
    return 0.5 * covered + 0.5 * relative_bm25 * best


def best_coverage(terms: Sequence[str], scored: Iterable[tuple[str, float]],
                  weights: Mapping[str, float] | None = None,
                  translations: Translations | None = None, coverage: Coverage | None = None) -> float:
    """Coverage of the text with the highest keyword score of ``(text, score)`` pairs; 1.0 without terms."""
    top = max(scored, key=lambda pair: pair[1], default=None)
    if not terms or top is None:
        return 1.0
    return (coverage or Coverage(terms, weights, translations))(top[0])


def calibration(terms: Sequence[str], background: tuple[float, float] | None,
                weights: Mapping[str, float] | None = None,
                keyword: Sequence[tuple[ChunkRecord, float]] = (),
                translations: Translations | None = None, coverage: Coverage | None = None) -> Calibration:
    """The per-path evidence function the default fusion sums (see :func:`merge_candidates`).

    ``keyword`` is what keyword recall returned: its best hit's coverage scales BM25 evidence.
    ``translations`` count in coverage (see :func:`keyword_coverage`); ``coverage`` is the
    query's :class:`Coverage`, when the caller shares one.
    """
    coverage = coverage or Coverage(terms, weights, translations)
    best = best_coverage(terms, ((record.text, raw) for record, raw in keyword), coverage=coverage)

    def calibrate(path: str, record: ChunkRecord, raw: float) -> float:
        if path == "vector":
            return vector_evidence(raw, background)
        return keyword_evidence(terms, record.text, raw, best=best, coverage=coverage)

    return calibrate


def relevant(hits: Sequence[MemorySearchResult], min_score: float | None) -> list[MemorySearchResult]:
    """The hits whose ``relevance`` reaches an explicit ``min_score``, in order; all of them for ``None``.

    The default cuts nothing: a weak hit is returned labelled not ``confident``,
    never withheld, because a stored answer shown weakly beats "nothing stored".
    """
    if min_score is None:
        return list(hits)
    return [hit for hit in hits if hit.relevance >= min_score]


Label = Callable[[str, str, float | None, float | None], tuple[float, bool]]
"""``(chunk id, text, vector score, keyword score) -> (relevance, confident)`` of a hit (see
:func:`labeller`)."""


def labeller(terms: Sequence[str], background: tuple[float, float] | None, coverage: Coverage, *,
             keyword_only: bool) -> Label:
    """What :func:`annotate_relevance` labels each hit with, as a function of its chunk id, text and raw
    scores.

    ``keyword_only``: no hit of the search has a vector score (the vector path is missing).
    A hit's cosine is evidence only when ``background`` measures it: not on a memory too small for a
    background, nor for a hit of a script group too small for one (``background.unmeasured``, see
    :class:`~langchain_md_memory.index.scoring.HitsBackground`). One model scores any text against any
    note alike (e5: 0.75-0.9), and a question's own language higher still, so such a cosine says
    nothing about answering: the label rests on the keyword evidence, less sure, never falsely sure.
    The ranking still orders by the cosine (:func:`calibration`).
    """
    unmeasured = background.unmeasured if isinstance(background, HitsBackground) else frozenset()

    def label(chunk_id: str, text: str, vector_score: float | None,
              keyword_score: float | None) -> tuple[float, bool]:
        covered = coverage(text) if terms else (keyword_score or 0.0)
        if keyword_only:
            relevance = (0.5 * covered + 0.5 * (keyword_score or 0.0)) if terms else (keyword_score or 0.0)
            return relevance, covered >= CONFIDENT_COVERAGE
        measured = _measured(background) and chunk_id not in unmeasured
        relevance = max(vector_evidence(vector_score, background) if measured else 0.0, covered)
        return relevance, relevance >= CONFIDENT_RELEVANCE

    return label


def annotate_relevance(
    hits: Iterable[MemorySearchResult], terms: Sequence[str], background: tuple[float, float] | None,
    weights: Mapping[str, float] | None = None, translations: Translations | None = None,
    coverage: Coverage | None = None,
) -> list[MemorySearchResult]:
    """``hits`` with :attr:`~MemorySearchResult.relevance` and ``confident`` filled in, order unchanged.

    With the vector path present, ``relevance = max(vector evidence, coverage)``, and a
    hit is confident at :data:`CONFIDENT_RELEVANCE`. Without it (keyword-only search) a
    hit's relevance is the mean of its coverage and its BM25 relative to the best hit,
    unscaled: with no vector to weigh the query's words, a word no note holds ("go") must
    not make the memory's best answer irrelevant; it is confident when its coverage
    reaches :data:`CONFIDENT_COVERAGE`.
    ``weights`` are the terms' idf and ``translations`` their held translations (see
    :func:`keyword_coverage`); ``coverage`` the query's :class:`Coverage`, when shared.
    """
    out = list(hits)
    label = labeller(terms, background, coverage or Coverage(terms, weights, translations),
                     keyword_only=all(hit.vector_score is None for hit in out))
    labelled = []
    for hit in out:
        relevance, confident = label(hit.chunk_id, hit.text, hit.vector_score, hit.keyword_score)
        labelled.append(hit.revised(relevance=relevance, confident=confident))
    return labelled
