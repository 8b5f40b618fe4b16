"""Secrets out of everything the package writes, stores, logs or shows a model.

API keys, bearer tokens, passwords in URLs or assignments and private keys are
replaced by ``[REDACTED]``. Session transcripts use a :class:`Redactor`; error
texts that may echo a credential (a provider's error body, say) go through
:func:`scrub` before they are logged, stored, printed or returned.

Example:
    .. code-block:: python

        from langchain_md_memory.secrets import scrub

        assert scrub("401: bad key sk-abcdefghijklmnopqrstu") == "401: bad key [REDACTED]"
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = [
    "DEFAULT_SECRET_ARG_NAMES",
    "DEFAULT_SECRET_PATTERNS",
    "LABELLED_SECRET_PATTERNS",
    "REDACTED",
    "URL_PASSWORD_PATTERN",
    "Redactor",
    "scrub",
]

REDACTED = "[REDACTED]"

LABELLED_SECRET_PATTERNS: tuple[tuple[str, str], ...] = (
    ("api key", r"\bsk-[A-Za-z0-9_-]{16,}"),  # OpenAI-style keys, sk-proj-... included
    ("token", r"\bBearer\s+(?P<secret>[A-Za-z0-9._~+/=-]{8,})"),
    ("aws key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),  # AWS access key ids
    ("github token", r"\bgh[pousr]_[A-Za-z0-9]{30,}\b"),
    ("slack token", r"\bxox[abprs]-[A-Za-z0-9-]{10,}"),
    ("private key", r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----"),
    ("password", r"(?i)\b(?:password|passwd|pwd|api[_-]?key|secret|access[_-]?token)\b\s*[:=]\s*"
                 r"(?P<secret>(?!\[REDACTED\]|\[redacted:)[^\s,;)]+)"),
)
"""The secret patterns with a label each (what a redaction mark in Markdown names)."""

DEFAULT_SECRET_PATTERNS: tuple[str, ...] = tuple(pattern for _, pattern in LABELLED_SECRET_PATTERNS)
"""Regexes redacted everywhere in a transcript (only the group ``secret`` when a pattern has one)."""

DEFAULT_SECRET_ARG_NAMES = (
    r"(?i)(?:^|[_-])(?:password|passwd|pwd|secret|token|auth|authorization|credentials?|cookie)(?:$|[_-])"
    r"|api[_-]?key|private[_-]?key|session[_-]?id"
)
"""Tool-argument names whose values are always redacted (``api_key``, ``access_token``, ...)."""



class Redactor:
    """Replaces secrets in text and in tool arguments.

    Args:
        patterns: regexes (strings or compiled) whose matches are redacted in
            any text; default :data:`DEFAULT_SECRET_PATTERNS`.
        secret_arg_names: a regex matched against argument (and nested dict)
            key names; matching values are redacted whole.

    Example:
        .. code-block:: python

            r = Redactor()
            assert r.text("key sk-abcdefghijklmnopqrstu") == "key [REDACTED]"
            assert r.args({"password": "hunter2", "n": 3}) == {"password": "[REDACTED]", "n": 3}
    """

    def __init__(self, patterns: Iterable[str | re.Pattern[str]] | None = None,
                 secret_arg_names: str | re.Pattern[str] | None = DEFAULT_SECRET_ARG_NAMES) -> None:
        chosen = DEFAULT_SECRET_PATTERNS if patterns is None else patterns
        self.patterns = [p if isinstance(p, re.Pattern) else re.compile(p) for p in chosen]
        self.secret_arg_names = (None if secret_arg_names is None else
                                 secret_arg_names if isinstance(secret_arg_names, re.Pattern)
                                 else re.compile(secret_arg_names))

    def text(self, text: str) -> str:
        """``text`` with every pattern match replaced."""
        for pattern in self.patterns:
            text = pattern.sub(_replacer(pattern), text)
        return text

    def is_secret_name(self, name: str) -> bool:
        """True when an argument called ``name`` holds a secret."""
        return self.secret_arg_names is not None and self.secret_arg_names.search(name) is not None

    def args(self, value: Any) -> Any:
        """A copy of tool arguments with secret-named values and secret-looking text redacted."""
        if isinstance(value, Mapping):
            return {k: REDACTED if self.is_secret_name(str(k)) else self.args(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.args(v) for v in value]
        if isinstance(value, str):
            return self.text(value)
        return value


def _replacer(pattern: re.Pattern[str]) -> str | Callable[[re.Match[str]], str]:
    if "secret" not in pattern.groupindex:
        return REDACTED

    def keep_label(match: re.Match[str]) -> str:
        start, end = match.span("secret")
        if start < 0:
            return match[0]
        offset = match.start()
        return match[0][: start - offset] + REDACTED + match[0][end - offset :]

    return keep_label


# -- rendering ------------------------------------------------------------------------


_DEFAULT = Redactor()
URL_PASSWORD_PATTERN = r"(?<![A-Za-z0-9+.-])(?P<scheme>[a-z][a-z0-9+.-]*://)(?P<user>[^\s:/@]+):(?P<secret>[^\s@/]+)@"
"""A password inside a URL (``https://user:pw@host``); the group ``secret`` is the password."""
_URL_PASSWORD = re.compile(URL_PASSWORD_PATTERN)


def scrub(text: object) -> str:
    """``str(text)`` with anything that looks like a credential replaced by ``[REDACTED]``."""
    cleaned = _DEFAULT.text(str(text))
    return _URL_PASSWORD.sub(lambda m: f"{m['scheme']}{m['user']}:{REDACTED}@", cleaned)
