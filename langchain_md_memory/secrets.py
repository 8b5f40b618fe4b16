"""Secrets out of everything the package writes, stores, logs or shows a model.

API keys, bearer tokens, passwords in URLs or assignments and private keys are
replaced by ``[redacted: secret]``. Session transcripts use a :class:`Redactor`; error
texts that may echo a credential (a provider's error body, say) go through
:func:`scrub` before they are logged, stored, printed or returned.

Example:
    .. code-block:: python

        from langchain_md_memory.secrets import scrub

        assert scrub("401: bad key sk-abcdefghijklmnopqrstu") == "401: bad key [redacted: secret]"
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

REDACTED = "[redacted: secret]"
"""The mark a transcript or an error text gets for a secret: the same ``[redacted: <kind>]`` style
as the Markdown writes (:mod:`langchain_md_memory.redaction`), so a reader meets one mark everywhere."""

# Names whose value is a secret in an assignment (``aws_secret_access_key = ...``, ``"db_password": ...``,
# ``export CLIENT_SECRET=...``): a word of the name (between ``_ . -``) is one of these. ``token`` alone
# is not one: ``max_tokens = 400`` is a setting.
_SECRET_WORD = (r"(?:password|passwd|pwd|passphrase|secret|api[_-]?key|access[_-]?key|private[_-]?key"
                r"|(?:access|auth|refresh|api|bearer|session|bot|client|id)[_-]?token|credentials?)")
# A value is a secret when it has a character that is not a letter or is long: ``password: rotate it``
# is prose, ``password: hunter22`` and ``"client_secret": "Xk29..."`` are not.
_VALUE_CHARS = r"[^\s\"'`,;)\]}<>]"
_SECRET_VALUE = (rf"(?P<secret>(?!\[redacted:|\[REDACTED\])(?={_VALUE_CHARS}*[^A-Za-z\s\"'`,;)\]}}<>]"
                 rf"|{_VALUE_CHARS}{{12}}){_VALUE_CHARS}+)")

LABELLED_SECRET_PATTERNS: tuple[tuple[str, str], ...] = (
    # The shapes gitleaks' default rules and detect-secrets' plugins look for, most specific first.
    # A block whose END line was cut off ends with its last base64 (or PEM header) line.
    ("private key", r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
                    r"(?:[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
                    r"|(?:\r?\n(?:[A-Za-z0-9+/=]{4,}|[A-Za-z-]+: [^\n]*"
                    r"(?:\r?\n(?=\r?\n[A-Za-z0-9+/=]{4,}))?))*)"),
    ("token", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),  # a JWT
    ("slack webhook", r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{16,}"),
    ("api key", r"\bsk-[A-Za-z0-9_-]{16,}"),  # OpenAI-style keys, sk-proj-... and sk-ant-... included
    ("stripe key", r"\b(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{16,}"),
    ("google api key", r"\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])"),
    ("github token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"),
    ("gitlab token", r"\bglpat-[A-Za-z0-9_-]{20,}"),
    ("hugging face token", r"\bhf_[A-Za-z0-9]{30,}"),
    ("npm token", r"\bnpm_[A-Za-z0-9]{36,}"),
    ("sendgrid key", r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}"),
    ("token", r"\bBearer\s+(?P<secret>(?!\[redacted:)[A-Za-z0-9._~+/=-]{8,})"),
    ("aws key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),  # AWS access key ids
    ("slack token", r"\bxox[abprs]-[A-Za-z0-9-]{10,}"),
    ("azure key", r"(?i)\b(?:AccountKey|SharedAccessKey|SharedAccessSignature)\s*=\s*"
                  r"(?P<secret>(?!\[redacted:)[^;\s\"'<>]{8,})"),
    ("password", rf"(?i)(?<![\w.-])(?:[A-Za-z0-9]+[_.-])*{_SECRET_WORD}(?:[_.-][A-Za-z0-9]+)*[\"']?"
                 rf"\s*(?::=|[:=])\s*[\"']?{_SECRET_VALUE}"),
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
            assert r.text("key sk-abcdefghijklmnopqrstu") == "key [redacted: secret]"
            assert r.args({"password": "hunter2", "n": 3}) == {"password": "[redacted: secret]", "n": 3}
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
URL_PASSWORD_PATTERN = (r"(?<![A-Za-z0-9+.-])(?P<scheme>[a-z][a-z0-9+.-]*://)(?P<user>[^\s:/@]+):"
                        r"(?P<secret>(?!\d+/)(?!\[redacted:)[^\s@]+)@")
"""A password inside a URL (``https://user:pw@host``); the group ``secret`` is the password."""
_URL_PASSWORD = re.compile(URL_PASSWORD_PATTERN)


def scrub(text: object) -> str:
    """``str(text)`` with anything that looks like a credential replaced by ``[redacted: secret]``."""
    cleaned = _DEFAULT.text(str(text))
    return _URL_PASSWORD.sub(lambda m: f"{m['scheme']}{m['user']}:{REDACTED}@", cleaned)
