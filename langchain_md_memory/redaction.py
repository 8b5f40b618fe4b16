"""Secrets out of the Markdown the package writes, each replaced by a visible mark.

A :class:`WriteRedactor` replaces what the transcripts module treats as a secret
(API keys, bearer tokens, AWS and GitHub keys, private keys, ``password=...``
assignments, passwords inside URLs) plus, when asked, e-mail addresses, phone
numbers and payment-card numbers (the last only when the digits start as a card
network's numbers do, have one of its lengths and pass the Luhn check, so an order
or a frequent-flyer number is left alone), plus patterns of your own. Each
redacted span becomes ``[redacted: <label>]``, so a person reading the file sees
that something was there and what kind of thing it was.

The memory applies it to every write of its text methods while
``MemoryConfig.redact_writes`` is on (the default); see :mod:`langchain_md_memory.files.documents`.

Example:
    .. code-block:: python

        from langchain_md_memory.redaction import WriteRedactor

        r = WriteRedactor(kinds=("card",))
        assert r.redact("key sk-abcdefghijklmnopqrstu") == "key [redacted: api key]"
        assert r.redact("card 4111 1111 1111 1111") == "card [redacted: card number]"
        assert r.redact("order 1234 5678 9012 3456") == "order 1234 5678 9012 3456"  # not Luhn-valid
        assert r.redact("miles 9920 1188 4471 035") == "miles 9920 1188 4471 035"  # no card network's
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from .secrets import LABELLED_SECRET_PATTERNS, URL_PASSWORD_PATTERN

__all__ = ["OPTIONAL_PATTERNS", "WriteRedactor", "card_number_like", "luhn_valid", "redaction_mark"]

OPTIONAL_PATTERNS: dict[str, tuple[str, str]] = {
    "email": ("e-mail", r"(?<![\w.+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b"),
    "card": ("card number", r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])"),
    "phone": ("phone", r"(?<![\w+])(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?"
                       r"\d{2,4}(?:[ .-]?\d{2,4}){2,4}(?!\w)"),
}
"""Built-in personal data by kind: ``email``, ``card`` (Luhn-checked), ``phone``; each ``(label, regex)``."""


def redaction_mark(label: str) -> str:
    """The text a redacted span becomes: ``[redacted: <label>]``."""
    return f"[redacted: {label}]"


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

    Redacting twice changes nothing: marks are never matched again.
    """

    def __init__(self, kinds: Iterable[str] = (), patterns: Mapping[str, str] | None = None) -> None:
        rules = [_Rule(label, re.compile(p)) for label, p in LABELLED_SECRET_PATTERNS]
        rules.append(_Rule("password", re.compile(URL_PASSWORD_PATTERN)))
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
        count = 0
        for rule in self._rules:
            def replace(match: re.Match[str], rule: _Rule = rule) -> str:
                nonlocal count
                if rule.check is not None and not rule.check(match[0]):
                    return match[0]
                if _inside_mark(match, self._mark_re):
                    return match[0]
                count += 1
                mark = redaction_mark(rule.label)
                if "secret" in rule.pattern.groupindex and match.start("secret") >= 0:
                    start, end = match.start("secret") - match.start(), match.end("secret") - match.start()
                    return match[0][:start] + mark + match[0][end:]
                return mark

            text = rule.pattern.sub(replace, text)
        return text, count


def _inside_mark(match: re.Match[str], marks: re.Pattern[str]) -> bool:
    """True when the match lies within an existing ``[redacted: ...]`` mark."""
    line_start = match.string.rfind("\n", 0, match.start()) + 1
    line_end = match.string.find("\n", match.end())
    line = match.string[line_start : None if line_end < 0 else line_end]
    offset = match.start() - line_start
    return any(m.start() <= offset < m.end() for m in marks.finditer(line))
