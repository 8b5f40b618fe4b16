"""Tokenisation shared by the keyword index, FTS queries, MMR and budgets.

SQLite's ``unicode61`` tokenizer keeps a run of Chinese characters as one
token, so ``仓位`` would never match inside ``单只个股不超过总仓位``. We emit the
terms ourselves: ASCII (and other alphabetic) words whole and lower-cased, CJK
runs as overlapping bigrams plus single characters, and tokenise queries the
same way. SQLite's ``trigram`` tokenizer is no alternative: it cannot match
two-character Chinese words (SQLite 3.40).

English words are reduced to their Snowball (Porter2) stem in the index, in
queries and in the token sets alike, so ``painting`` finds ``paints`` and
``flights`` counts as ``flight``.
Stop words are dropped from a query before its words are stemmed.

Example:
    .. code-block:: python

        from langchain_md_memory.text import index_terms, match_expression, query_terms

        assert "仓位" in index_terms("单只个股不超过总仓位 5%").split()
        assert query_terms("What did I paint?") == index_terms("paintings").split() == ["paint"]
        assert match_expression(query_terms('dark-mode "AND" NEAR(')) == '"dark" OR "mode" OR "and" OR "near"'
"""

from __future__ import annotations

import functools
import re
import threading
import unicodedata
from collections.abc import Iterable, Sequence
from typing import cast

import snowballstemmer

from .stopwords import content_terms

__all__ = [
    "CJK_CHAR_RE",
    "SCRIPT_CJK",
    "SCRIPT_OTHER",
    "TERMS_VERSION",
    "estimate_tokens",
    "forget_token_sets",
    "heading_level",
    "index_terms",
    "keep_token_sets",
    "marked_terms",
    "match_expression",
    "normalize_text",
    "query_term_forms",
    "query_terms",
    "script_group",
    "token_set",
]

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_TOKEN_RE = re.compile(rf"([^\W_{_CJK}]+)|([{_CJK}]+)")  # (word, CJK run)
CJK_CHAR_RE = re.compile(rf"[{_CJK}]")
_LETTER_RE = re.compile(rf"[^\W\d_{_CJK}]")

SCRIPT_OTHER, SCRIPT_CJK = 0, 1
"""The script groups of :func:`script_group`."""

TERMS_VERSION = "2"
"""Bump when :func:`index_terms` changes: every file is then re-indexed (vectors come from the cache)."""


# Zero-width characters (space, joiners, word joiner, BOM) split words invisibly: dropped before tokenising.
_ZERO_WIDTH_RE = re.compile("[\u200b\u200c\u200d\u2060\ufeff\u00ad]")


def normalize_text(text: str) -> str:
    """NFKC (fullwidth ``ＮＶＤＡ`` is ``NVDA``) without zero-width characters; ASCII passes as is."""
    if text.isascii():
        return text
    text = _ZERO_WIDTH_RE.sub("", text)
    # The check costs a twentieth of normalising, and most text is already in NFKC.
    return text if unicodedata.is_normalized("NFKC", text) else unicodedata.normalize("NFKC", text)


# ASCII text has no CJK runs, nothing to normalise and nothing to fold but case: one table pass over
# its bytes (a C lookup per byte) gives the same terms as the general path (most notes are plain English).
_ASCII_GAPS = bytes(b if chr(b).isdigit() or chr(b).islower() else 32 for b in range(256))
_CJK_RUNS_RE = re.compile(f"([{_CJK}]+)")
# Folded words, by word: a memory repeats its vocabulary, and NFKD per word is the dear part.
_FOLDED: dict[str, str] = {}
_FOLDED_MAX = 50_000


def _ascii_words(text: str) -> str:
    """ASCII ``text`` lower-cased, every character but [a-z0-9] a space: ``.split()`` gives its words."""
    return text.encode().lower().translate(_ASCII_GAPS).decode()


def _tokens(text: str, *, unigrams: bool) -> list[str]:
    if text.isascii():
        return _ascii_words(text).split()
    out: list[str] = []
    add, extend = out.append, out.extend
    # Split at CJK runs: the text between them is mostly ASCII (English around a Chinese term), and an
    # ASCII stretch gives its words at C speed; only the rest goes word by word.
    for n, piece in enumerate(_CJK_RUNS_RE.split(normalize_text(text))):
        if n % 2:  # a CJK run
            if len(piece) == 1:
                add(piece)
                continue
            if unigrams:
                extend(piece)
            extend([piece[i : i + 2] for i in range(len(piece) - 1)])
        elif piece.isascii():
            extend(_ascii_words(piece).split())
        else:
            for word, _ in _TOKEN_RE.findall(piece):
                folded = _FOLDED.get(word)
                if folded is None:
                    folded = _fold(word)
                    if len(_FOLDED) < _FOLDED_MAX:
                        _FOLDED[word] = folded
                add(folded)
    return out


# Stems by term: a memory repeats its vocabulary, and the pure-Python stemmer is slow per word (PyStemmer's
# C build, used when installed, is not). A stemmer object is not thread-safe.
_STEMMER = snowballstemmer.stemmer("english")
_STEMMER_LOCK = threading.Lock()
_STEMS: dict[str, str] = {}
_STEMS_MAX = 100_000


def _stem(term: str) -> str:
    stem = term
    if term.isascii() and term.isalpha():  # not numbers, identifiers' digit parts or CJK
        with _STEMMER_LOCK:
            stem = _STEMMER.stemWord(term)
        stem = term if stem == term else stem
    if len(_STEMS) < _STEMS_MAX:
        _STEMS[term] = stem
    return stem


def _stemmed(terms: list[str]) -> list[str]:
    out: list[str | None] = list(map(_STEMS.get, terms))  # one C-level pass when every term was seen
    if None in out:
        return [stem if stem is not None else _stem(term) for stem, term in zip(out, terms, strict=True)]
    return cast(list[str], out)  # no None left


def _fold(word: str) -> str:
    """Lower-case and strip diacritics, so ``Café`` and ``cafe`` are one term."""
    if word.isascii():
        return word.lower()
    decomposed = unicodedata.normalize("NFKD", word.lower())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)) or word.lower()


def index_terms(text: str) -> str:
    """The space-separated terms stored in the FTS column for ``text``.

    CJK runs yield bigrams and every single character, so a one-character
    query still finds its character.
    """
    # ASCII: every character but [a-z0-9] becomes a space; the words are what stays.
    terms = _ascii_words(text).split() if text.isascii() else _tokens(text, unigrams=True)
    try:
        return " ".join(map(_STEMS.__getitem__, terms))  # one C-level pass when every term was seen
    except KeyError:  # a term seen for the first time
        return " ".join(_stemmed(terms))


def query_terms(query: str) -> list[str]:
    """Distinct query terms in order: words, and bigrams of CJK runs, without stop words.

    A one-character CJK run yields that character. Stop words (``what``,
    ``the``, ``我们``) are dropped unless nothing else is left: see
    :mod:`langchain_md_memory.text.stopwords`. Words are stemmed after that
    (``does`` is a stop word, its stem ``doe`` would not be).
    """
    return list(dict.fromkeys(_stemmed(content_terms(_tokens(query, unigrams=False)))))


def query_term_forms(query: str) -> dict[str, str]:
    """Each of :func:`query_terms` with the word of ``query`` it came from (the first, before stemming).

    ``query_terms(form)`` gives the term back, so a few chosen forms joined by spaces are a query
    of those terms alone (a stem stemmed again could change).
    """
    forms: dict[str, str] = {}
    tokens = list(dict.fromkeys(content_terms(_tokens(query, unigrams=False))))
    for term, token in zip(_stemmed(tokens), tokens, strict=True):
        forms.setdefault(term, token)
    return forms


def marked_terms(text: str, query: str) -> list[tuple[str, bool]]:
    """``text`` in pieces, each with whether it holds a term of ``query`` as the keyword index matches it.

    A word is marked when its term (folded, stemmed) is one of :func:`query_terms`; in a CJK run, each
    two characters that form one (and a character that is a one-character query term). The pieces
    joined give ``text`` back.

    Example:
        .. code-block:: python

            assert marked_terms("Position limits", "limit") == [("Position ", False), ("limits", True)]
    """
    terms = set(query_terms(query))
    hot = [False] * len(text)
    for match in _TOKEN_RE.finditer(text):
        start, end = match.span()
        if match[1] is not None:
            if set(index_terms(match[1]).split()) & terms:
                hot[start:end] = [True] * (end - start)
            continue
        for i in range(start, end):
            for width in (2, 1):
                if i + width <= end and text[i:i + width] in terms:
                    hot[i:i + width] = [True] * width
    pieces: list[tuple[str, bool]] = []
    at = 0
    for i in range(1, len(text) + 1):
        if i == len(text) or hot[i] != hot[at]:
            pieces.append((text[at:i], hot[at]))
            at = i
    return pieces


def match_expression(terms: Sequence[str]) -> str:
    """OR of double-quoted terms (a quote inside a term is doubled): the FTS5 form of ``fts_query``."""
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


# The token sets of the texts a memory keeps at hand (every chunk of one it keeps searching, see
# index.records), as their terms joined by spaces: a fraction of the frozenset's size. Splitting one
# costs a fraction of tokenizing the text again (stemming included, and worse just after a search's matrix
# product went through the caches). A term never holds whitespace (words are split at it, CJK runs hold
# none, and NFKC leaves no character whose decomposition holds one), so the split gives the set back.
_KEPT: dict[str, str] = {}
_KEPT_MAX = 300_000


def keep_token_sets(texts: Iterable[str]) -> None:
    """Work out the :func:`token_set` of each of ``texts`` now and keep it (compactly) for later calls.

    At most ``_KEPT_MAX`` texts are kept, all memories together: past that, those kept before are forgotten.
    """
    new = [text for text in dict.fromkeys(texts) if text not in _KEPT][:_KEPT_MAX]
    if len(_KEPT) + len(new) > _KEPT_MAX:
        _KEPT.clear()
    for text in new:
        _KEPT[text] = " ".join(_token_set(text))


def forget_token_sets(texts: Iterable[str]) -> None:
    """Stop keeping the token sets of ``texts`` (see :func:`keep_token_sets`)."""
    for text in texts:
        _KEPT.pop(text, None)


@functools.lru_cache(maxsize=4096)
def token_set(text: str) -> frozenset[str]:
    """Terms of ``text`` as a set, for Jaccard similarity (CJK-aware)."""
    kept = _KEPT.get(text)
    return frozenset(kept.split()) if kept is not None else _token_set(text)


def _token_set(text: str) -> frozenset[str]:
    return frozenset(_stemmed(_tokens(text, unigrams=False)))


def heading_level(line: str) -> int:
    """The level (1-6) of a Markdown ATX heading line (``## Goals`` → 2), 0 for any other line."""
    stripped = line.lstrip()
    level = len(stripped) - len(stripped.lstrip("#"))
    return level if 0 < level <= 6 and stripped[level : level + 1] in (" ", "") else 0


def estimate_tokens(text: str) -> int:
    """Approximate model tokens: ~1 per CJK character, ~3.5 characters otherwise."""
    cjk = len(CJK_CHAR_RE.findall(text))
    return cjk + round((len(text) - cjk) / 3.5)


def script_group(text: str) -> int:
    """``SCRIPT_CJK`` when CJK characters outweigh the other letters of ``text``, else ``SCRIPT_OTHER``.

    One CJK character weighs as much as a four-letter word: ``"Chen Weilin (陈蔚琳) likes tea"``
    is ``SCRIPT_OTHER``, ``"爸爸的生日是 3 月 8 日 (Dad)"`` is ``SCRIPT_CJK``.
    """
    if text.isascii():
        return SCRIPT_OTHER
    cjk = len(CJK_CHAR_RE.findall(text))
    return SCRIPT_CJK if cjk and cjk * 4 > len(_LETTER_RE.findall(text)) else SCRIPT_OTHER
