"""Secrets out of everything the package writes, stores, logs or shows a model: one rule set, one mark.

API keys, tokens, private keys, ``password=...`` assignments and passwords inside URLs (the shapes
gitleaks' and detect-secrets' default rules look for) are replaced by ``[redacted: <kind>]``, so a
person reading a file, a transcript or an error sees that something was there and what kind of thing
it was. :class:`WriteRedactor` is what the memory applies to every Markdown write while
``MemoryConfig.redact_writes`` is on (the default), with, when asked, e-mail addresses, phone numbers
and payment-card numbers (the last only when the digits start as a card network's numbers do, have one
of its lengths and pass the Luhn check), plus patterns of your own. Session transcripts use a
:class:`Redactor` (the same rules, and tool arguments whose name says secret); error texts that may
echo a credential go through :func:`scrub` before they are logged, stored, printed or returned.

Example:
    .. code-block:: python

        from langchain_md_memory.text.redaction import WriteRedactor, scrub

        assert scrub("401: bad key sk-abcdefghijklmnopqrstu") == "401: bad key [redacted: api key]"
        r = WriteRedactor(kinds=("card",))
        assert r.redact("card 4111 1111 1111 1111") == "card [redacted: card number]"
        assert r.redact("order 1234 5678 9012 3456") == "order 1234 5678 9012 3456"  # not Luhn-valid
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DEFAULT_SECRET_ARG_NAMES",
    "DEFAULT_SECRET_PATTERNS",
    "LABELLED_SECRET_PATTERNS",
    "OPTIONAL_PATTERNS",
    "REDACTED",
    "URL_PASSWORD_PATTERN",
    "Redactor",
    "WriteRedactor",
    "card_number_like",
    "luhn_valid",
    "redaction_mark",
    "scrub",
]


def redaction_mark(label: str) -> str:
    """The text a redacted span becomes: ``[redacted: <label>]``."""
    return f"[redacted: {label}]"


REDACTED = redaction_mark("secret")
"""The mark of a secret without a kind: a secret-named tool argument, or a pattern of your own."""

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
"""The regexes of :data:`LABELLED_SECRET_PATTERNS` (only the group ``secret`` when a pattern has one)."""

URL_PASSWORD_PATTERN = (r"(?<![A-Za-z0-9+.-])(?P<scheme>[a-z][a-z0-9+.-]*://)(?P<user>[^\s:/@]+):"
                        r"(?P<secret>(?!\d+/)(?!\[redacted:)[^\s@]+)@")
"""A password inside a URL (``https://user:pw@host``); the group ``secret`` is the password."""

DEFAULT_SECRET_ARG_NAMES = (
    r"(?i)(?:^|[_-])(?:password|passwd|pwd|secret|token|auth|authorization|credentials?|cookie)(?:$|[_-])"
    r"|api[_-]?key|private[_-]?key|session[_-]?id"
)
"""Tool-argument names whose values are always redacted (``api_key``, ``access_token``, ...)."""


OPTIONAL_PATTERNS: dict[str, tuple[str, str]] = {
    "email": ("e-mail", r"(?<![\w.+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b"),
    "card": ("card number", r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])"),
    "phone": ("phone", r"(?<![\w+])(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?"
                       r"\d{2,4}(?:[ .-]?\d{2,4}){2,4}(?!\w)"),
}
"""Built-in personal data by kind: ``email``, ``card`` (Luhn-checked), ``phone``; each ``(label, regex)``."""


def luhn_valid(digits: str) -> bool:
    """True when the digits of ``digits`` (other characters ignored) pass the Luhn checksum."""
    numbers = [int(ch) for ch in digits if ch.isdigit()]
    if len(numbers) < 13:
        return False
    total = 0
    for i, n in enumerate(reversed(numbers)):
        if i % 2:
            n *= 2
            if n > 9:
                n -= 9
        total += n
    return total % 10 == 0


# Issuer prefixes of the card networks (ISO/IEC 7812) and the lengths each issues.
_CARD_NETWORKS = tuple((re.compile(prefix), lengths) for prefix, lengths in (
    (r"4", (13, 16, 19)),  # Visa
    (r"5[1-5]|222[1-9]|22[3-9]\d|2[3-6]\d\d|27[01]\d|2720", (16,)),  # Mastercard
    (r"3[47]", (15,)),  # American Express
    (r"3(?:0[0-5]|[689])", tuple(range(14, 20))),  # Diners Club
    (r"35(?:2[89]|[3-8]\d)", tuple(range(16, 20))),  # JCB
    (r"5[06-9]|6", tuple(range(13, 20))),  # Maestro, Discover, UnionPay, RuPay
))


def card_number_like(text: str) -> bool:
    """True when the digits of ``text`` could be a payment card: a network's prefix and length, Luhn-valid."""
    digits = "".join(ch for ch in text if ch.isdigit())
    return luhn_valid(digits) and any(
        prefix.match(digits) and len(digits) in lengths for prefix, lengths in _CARD_NETWORKS)


@dataclass(frozen=True, slots=True)
class _Rule:
    label: str
    pattern: re.Pattern[str]
    check: Callable[[str], bool] | None = None


def _phone_like(text: str) -> bool:
    digits = sum(ch.isdigit() for ch in text)
    # Dates (2026-12-03) and times are digit groups too; a phone number has at least 9 digits.
    return 9 <= digits <= 15


class WriteRedactor:
    """Replaces secrets (and optional personal data) with ``[redacted: <label>]`` marks.

    Args:
        kinds: built-in optional kinds to redact as well: ``"email"``, ``"phone"``, ``"card"``.
        patterns: extra patterns as ``{label: regex}``; a regex with a group named ``secret``
            redacts only that group (the label before it stays readable).
        secrets: ``(label, regex)`` pairs replacing the built-in secret shapes (default: all of them).

    Redacting twice changes nothing: marks are never matched again.
    """

    def __init__(self, kinds: Iterable[str] = (), patterns: Mapping[str, str] | None = None, *,
                 secrets: Iterable[tuple[str, str | re.Pattern[str]]] | None = None) -> None:
        chosen_secrets = (secrets if secrets is not None
                          else [*LABELLED_SECRET_PATTERNS, ("password", URL_PASSWORD_PATTERN)])
        rules = [_Rule(label, p if isinstance(p, re.Pattern) else re.compile(p))
                 for label, p in chosen_secrets]
        chosen = set(kinds)
        unknown = chosen - OPTIONAL_PATTERNS.keys()
        if unknown:
            raise ValueError(
                f"unknown redaction kind(s) {sorted(unknown)}; choose from {sorted(OPTIONAL_PATTERNS)}"
            )
        # Cards before phones: a card number would otherwise look like a long phone number.
        for kind in ("email", "card", "phone"):
            if kind in chosen:
                label, regex = OPTIONAL_PATTERNS[kind]
                check = card_number_like if kind == "card" else _phone_like if kind == "phone" else None
                rules.append(_Rule(label, re.compile(regex), check))
        for label, regex in (patterns or {}).items():
            rules.append(_Rule(label, re.compile(regex)))
        self._rules = tuple(rules)
        # Only a mark this redactor writes is left alone: a key pasted inside a hand-written
        # ``[redacted: sk-...]`` is still a key.
        labels = "|".join(sorted({re.escape(rule.label) for rule in rules}, key=len, reverse=True))
        self._mark_re = re.compile(rf"\[redacted: (?:{labels}|secret)\]")

    def redact(self, text: str) -> str:
        """``text`` with every secret replaced by its mark."""
        return self.redact_counted(text)[0]

    def redact_counted(self, text: str) -> tuple[str, int]:
        """``text`` redacted, and how many spans were replaced."""
        redacted, labels = self.redact_labelled(text)
        return redacted, len(labels)

    def redact_labelled(self, text: str) -> tuple[str, list[str]]:
        """``text`` redacted, and the label of each span replaced (``"api key"``, ``"email"``, ...)."""
        labels: list[str] = []
        for rule in self._rules:
            def replace(match: re.Match[str], rule: _Rule = rule) -> str:
                if rule.check is not None and not rule.check(match[0]):
                    return match[0]
                if _inside_mark(match, self._mark_re):
                    return match[0]
                labels.append(rule.label)
                mark = redaction_mark(rule.label)
                if "secret" in rule.pattern.groupindex and match.start("secret") >= 0:
                    start, end = match.start("secret") - match.start(), match.end("secret") - match.start()
                    return match[0][:start] + mark + match[0][end:]
                return mark

            text = rule.pattern.sub(replace, text)
        return text, labels


def _inside_mark(match: re.Match[str], marks: re.Pattern[str]) -> bool:
    """True when the match lies within an existing ``[redacted: ...]`` mark."""
    line_start = match.string.rfind("\n", 0, match.start()) + 1
    line_end = match.string.find("\n", match.end())
    line = match.string[line_start : None if line_end < 0 else line_end]
    offset = match.start() - line_start
    return any(m.start() <= offset < m.end() for m in marks.finditer(line))


class Redactor:
    """Replaces secrets in transcript text and in tool arguments, with the marks of :class:`WriteRedactor`.

    Args:
        patterns: regexes (strings or compiled) redacted in any text as ``[redacted: secret]``, instead
            of the built-in secret shapes (each marked with its kind).
        secret_arg_names: a regex matched against argument (and nested dict) key names; matching values
            are redacted whole.

    Example:
        .. code-block:: python

            r = Redactor()
            assert r.text("key sk-abcdefghijklmnopqrstu") == "key [redacted: api key]"
            assert r.args({"password": "hunter2", "n": 3}) == {"password": "[redacted: secret]", "n": 3}
    """

    def __init__(self, patterns: Iterable[str | re.Pattern[str]] | None = None,
                 secret_arg_names: str | re.Pattern[str] | None = DEFAULT_SECRET_ARG_NAMES) -> None:
        self._write = _DEFAULT if patterns is None else WriteRedactor(
            secrets=[("secret", p) for p in patterns])
        self.secret_arg_names = (None if secret_arg_names is None else
                                 secret_arg_names if isinstance(secret_arg_names, re.Pattern)
                                 else re.compile(secret_arg_names))

    def text(self, text: str) -> str:
        """``text`` with every secret replaced by its mark."""
        return self._write.redact(text)

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


_DEFAULT = WriteRedactor()


def scrub(text: object) -> str:
    """``str(text)`` with anything that looks like a credential replaced by its ``[redacted: <kind>]``."""
    return _DEFAULT.redact(str(text))
