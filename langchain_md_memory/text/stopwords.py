"""Stop words: the English words, Chinese function characters and Chinese words a keyword query ignores.

They are dropped from queries only, never from the index: a note still holds
every word it was written with, and a query made only of stop words ("what is
it") keeps them, so it still finds what matches it.

Example:
    .. code-block:: python

        from langchain_md_memory.text.stopwords import content_terms

        assert content_terms(["what", "did", "i", "say", "about", "nvda"]) == ["say", "nvda"]
        assert content_terms(["what", "is", "it"]) == ["what", "is", "it"]
        assert content_terms(["我的", "仓位"]) == ["仓位"]
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "CHINESE_FUNCTION_CHARS", "CHINESE_STOP_BIGRAMS", "ENGLISH_STOP_WORDS", "content_terms", "is_stop_term",
]

# Function words only: pronouns, auxiliaries, determiners, prepositions, question words.
# Content words that often look common in questions ("like", "name", "time") stay searchable.
_ENGLISH = """
    a about above after again against all am an and any are aren as at be because been before being
    below between both but by can cannot could couldn did didn do does doesn doing don down during each
    few for from further had hadn has hasn have haven having he her here hers herself him himself his
    how i if in into is isn it its itself just let me more most my myself no nor not of off on once only
    or other ought our ours ourselves out over own s same shan she should shouldn so some such t than
    that the their theirs them themselves then there these they this those through to too under until
    up very was wasn we were weren what when where which while who whom why will with won would wouldn
    you your yours yourself yourselves ll re ve d m o y also ever tell know remember recall
    please anything something thing things much many
    now currently nowadays
"""
ENGLISH_STOP_WORDS = frozenset(_ENGLISH.split())

# Two-character words the English list holds in one word. A question about the present ("who
# insures the car now?", "我现在房租是多少") carries a time adverb the note stating the present fact
# does not: as a content term it would halve the note's coverage. Question words ("how much", "where",
# "which", "how", "why", "when") are stop words in English; their Chinese words are too.
CHINESE_STOP_BIGRAMS = frozenset({
    "现在", "目前", "如今",  # now, currently
    "多少", "哪里", "哪儿", "哪个", "哪些", "如何", "为何", "何时",  # how much, where, which, how, why, when
})

# Particles, pronouns, copulas and question words: alone they carry no topic.
CHINESE_FUNCTION_CHARS = frozenset(
    "的了吗呢吧啊呀哦嘛么是在和与及或也都就把被给"  # particles, copulas, prepositions
    "我你他她它们这那哪谁什怎个之其"  # pronouns, demonstratives, question words
)


def is_stop_term(term: str) -> bool:
    """Whether ``term`` (a folded word, a CJK character or a CJK bigram) carries no topic.

    A CJK bigram is a stop term only when both its characters are function
    characters (``我们``, ``什么``): ``仓位`` or ``目的`` keep their meaning.
    """
    if term in ENGLISH_STOP_WORDS or term in CHINESE_STOP_BIGRAMS:
        return True
    return bool(term) and len(term) <= 2 and all(ch in CHINESE_FUNCTION_CHARS for ch in term)


def content_terms(terms: Sequence[str]) -> list[str]:
    """``terms`` without stop terms; all of them when nothing else is left."""
    kept = [term for term in terms if not is_stop_term(term)]
    return kept if kept else list(terms)
