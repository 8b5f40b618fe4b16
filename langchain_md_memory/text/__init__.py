"""Text and language helpers: terms and tokens, stopwords, cross-language terms, redaction.

:mod:`.tokens` (re-exported here) turns text into index and query terms; :mod:`.stopwords` knows the
words that carry no subject; :mod:`.crosslingual` finds a term's translations the memory holds;
:mod:`.redaction` takes secrets out of what the package writes, logs or shows a model.

Example:
    .. code-block:: python

        from langchain_md_memory.text import estimate_tokens, token_set

        assert "etf" in token_set("Prefers ETFs")
"""

from .tokens import (
    CJK_CHAR_RE,
    SCRIPT_CJK,
    SCRIPT_OTHER,
    TERMS_VERSION,
    estimate_tokens,
    forget_token_sets,
    heading_level,
    index_terms,
    keep_token_sets,
    match_expression,
    normalize_text,
    query_term_forms,
    query_terms,
    script_group,
    token_set,
)

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
    "match_expression",
    "normalize_text",
    "query_term_forms",
    "query_terms",
    "script_group",
    "token_set",
]
