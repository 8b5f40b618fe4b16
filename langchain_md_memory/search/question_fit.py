"""How well a hit fits what the question asks: an answer over a question, the period and the person it names.

Three multipliers, applied with the source weights (the pipeline's step 5, weigh) and recorded in a
hit's ``weight``:

- **a question is not an answer.** A hit whose text only asks something ("Where did you go on
  that road trip?", a user's question kept in a transcript) shares the words of a question about
  the same thing, and outranks the reply that holds the answer. It scores ``question_weight``.
- **the period a question names.** "What did I pay in March 2025?", "上个月买了什么": a hit dated
  outside that period (the first full date its text gives, or its log's day) scores
  ``period_weight``; a note dated up to :data:`~langchain_md_memory.search.periods.REPORTED_WITHIN_DAYS`
  after it still tells of it. Undated hits are left alone.
- **the person a question names.** A line of a conversation opens with who says it (``Ann (2:05 pm
  on 3 March, 2023): …``, ``Ann: …``). When the question names one of the speakers among the hits
  ("What did Ann paint?"), a line another speaker says scores ``speaker_weight``: Ann's answer is in
  what Ann said, while her name is in half the lines of the conversation and weighs little as a
  keyword. A question naming two speakers, or none, weighs nothing; lines without a speaker neither.

On conversations (the quality harness's LoCoMo, ``bench/QUALITY.md``) the reply below a matching
question is the answer many misses lacked, a named date the only thing that tells one session's
turns from another's, and the answer to a question naming one speaker is nearly always among that
speaker's lines.

Example:
    .. code-block:: python

        from langchain_md_memory.search.question_fit import asks_only, speaker

        assert asks_only("Maria (2:05 pm on 3 March, 2023): Wow! Where did you go?\\n[image: a lake]")
        assert not asks_only("- Should I refinance? Decided: keep the fixed rate.")
        assert speaker("Maria (2:05 pm on 3 March, 2023): Wow!") == "Maria"
        assert speaker("- Rent: 1,650 EUR") is None
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..text import CJK_CHAR_RE
from ..types import MemorySearchResult
from .decay import hit_day
from .periods import REPORTED_WITHIN_DAYS, Period, text_day
from .weighting import reweighted

__all__ = ["QuestionFit", "apply_question_fit", "asks_only", "dated_outside", "named_speaker",
           "outside_period", "speaker"]

_NOT_PROSE = re.compile(r"^\s*(?:#|\[[^\]]*\]\s*$|<!--)")
_COMMENT = re.compile(r"<!--.*?-->", re.S)
# One to three words, an optional parenthesised stamp (when it was said), a colon and a space.
_CJK_NAME_CHARS = 4
_SPEAKER = re.compile(r"\s*([^\W\d_][\w'’.-]*(?: [^\W\d_][\w'’.-]*){0,2})"
                      r"[ \t]*(?:\([^()\n]{0,80}\))?[ \t]*(?::\s|：)")


@functools.lru_cache(maxsize=4096)  # asked of every hit of every search: its text, once
def asks_only(text: str) -> bool:
    """True when ``text`` ends on a question: its last line of prose (not a heading, an
    ``[image: ...]`` line or a comment) ends with a question mark."""
    if "?" not in text and "？" not in text:  # most notes: no line to read
        return False
    prose = [line for line in _COMMENT.sub("", text).splitlines()
             if line.strip() and not _NOT_PROSE.match(line)]
    return bool(prose) and prose[-1].rstrip().endswith(("?", "？"))


@functools.lru_cache(maxsize=4096)  # asked of every hit of every search that names a question
def speaker(text: str) -> str | None:
    """Who says ``text`` when it opens as a line of a conversation, ``Ann (2:05 pm …): …`` or ``Ann: …``
    (up to three capitalised words, or four Chinese characters, before the colon); else ``None``."""
    match = _SPEAKER.match(text)
    if match is None:
        return None
    name = match[1]
    if CJK_CHAR_RE.search(name):  # a Chinese name or kin term, not a clause ending on a colon
        return name if len(name) <= _CJK_NAME_CHARS else None
    return name if all(word[0].isupper() for word in name.split()) else None


def named_speaker(question: str, hits: Iterable[MemorySearchResult]) -> str | None:
    """The one speaker of ``hits`` (see :func:`speaker`) that ``question`` names; ``None`` when it
    names none of them or several."""
    return _one_named(question, (speaker(hit.text) for hit in hits))


def _one_named(question: str, speakers: Iterable[str | None]) -> str | None:
    named = {name for name in set(speakers) if name is not None and _names(question, name)}
    return named.pop() if len(named) == 1 else None


def _names(question: str, name: str) -> bool:
    if CJK_CHAR_RE.search(name):  # no spaces between Chinese words: the name anywhere
        return name in question
    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", question) is not None


def outside_period(hit: MemorySearchResult, period: Period) -> bool:
    """True when ``hit`` is dated (its text's first full date, its log's day) and no date of it
    falls in ``period`` or the days just after it."""
    return dated_outside(hit.text, hit_day(hit), period)


def dated_outside(text: str, day: dt.date | None, period: Period) -> bool:
    """:func:`outside_period` of a hit of that text and :func:`~.decay.hit_day`."""
    days = [found for found in (text_day(text), day) if found is not None]
    return bool(days) and not any(period.holds(found, within=REPORTED_WITHIN_DAYS) for found in days)


@dataclass(frozen=True, slots=True)
class QuestionFit:
    """The multipliers of :func:`apply_question_fit` for one question over one set of hits.

    ``who`` is the one speaker of the hits the question names (:func:`named_speaker`), if any.
    """

    question_weight: float
    period: Period | None
    period_weight: float
    who: str | None
    speaker_weight: float

    @classmethod
    def asked(cls, question: str, speakers: Iterable[str | None], *, question_weight: float,
              period: Period | None, period_weight: float, speaker_weight: float) -> QuestionFit:
        """The fit to ``question`` over hits said by ``speakers`` (:func:`speaker` of each hit)."""
        return cls(question_weight, period, period_weight, _one_named(question, speakers), speaker_weight)

    @property
    def dated(self) -> bool:
        """Whether :meth:`factor` reads the hit's day: a period weighs hits dated outside it."""
        return self.period is not None and self.period_weight != 1.0

    def factor(self, text: str, said: str | None, day: dt.date | None) -> float:
        """What a hit of ``text``, said by ``said`` (:func:`speaker`), of day ``day`` (read only when
        :attr:`dated`), scores times."""
        factor = 1.0
        if self.question_weight != 1.0 and asks_only(text):
            factor *= self.question_weight
        if self.period is not None and self.period_weight != 1.0 and dated_outside(text, day, self.period):
            factor *= self.period_weight
        if self.who is not None and said not in (None, self.who):
            factor *= self.speaker_weight
        return factor


def apply_question_fit(
    hits: Iterable[MemorySearchResult], *, period: Period | None, question_weight: float,
    period_weight: float, question: str = "", speaker_weight: float = 1.0,
) -> list[MemorySearchResult]:
    """Multiply the score (and ``weight``) of question-only hits, of hits dated outside ``period``
    and of lines another speaker than the one ``question`` names says.

    Hits come back unchanged (same objects, same order) when no multiplier applies; otherwise
    re-sorted by the new scores.
    """
    hits = list(hits)
    said_by = {hit.chunk_id: speaker(hit.text) for hit in hits} if question and speaker_weight != 1.0 else {}
    fit = QuestionFit.asked(question, said_by.values(), question_weight=question_weight, period=period,
                            period_weight=period_weight, speaker_weight=speaker_weight)
    return reweighted(hits, lambda hit: fit.factor(hit.text, said_by.get(hit.chunk_id),
                                                   hit_day(hit) if fit.dated else None))
