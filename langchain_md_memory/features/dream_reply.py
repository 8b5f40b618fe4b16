"""Reading a model's reply to a dream: strip a stray fence, then accept or refuse it.

A reply replaces MEMORY.md, so it is refused unless it looks like a whole
memory file: headings, text under them, within the size cap, and keeping most
of the headings the current file has.

Example:
    .. code-block:: python

        assert validate_reply("NO_REPLY", "", max_output_chars=100, keep_heading_ratio=0.5)
        assert reply_text("```markdown\n# Goals\n- x\n```") == "# Goals\n- x"
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import MemoryInputError

__all__ = ["reply_text", "validate_reply"]

_HEADING_RE = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
_FENCE_RE = re.compile(r"^ {0,3}(```|~~~)")
_OUTER_FENCE_RE = re.compile(r"\A```[A-Za-z]*[ \t]*\n(?P<body>.*?)\n```[ \t]*\Z", re.DOTALL)


def validate_reply(reply: str, current: str, *, max_output_chars: int,
                   keep_heading_ratio: float) -> str | None:
    """Why a model's MEMORY.md reply is refused, or None when it is acceptable.

    Example:
        .. code-block:: python

            assert validate_reply("NO_REPLY", "", max_output_chars=100, keep_heading_ratio=0.5)
            assert validate_reply("# Goals\\n- Retire at 55\\n", "# Goals\\n", max_output_chars=100,
                                  keep_heading_ratio=0.5) is None
    """
    text = reply.strip()
    if not text:
        return "the reply is empty"
    if text.strip("`* ").upper() == "NO_REPLY":
        return "the model replied NO_REPLY"
    if len(text) > max_output_chars:
        return f"the reply has {len(text)} characters, over max_output_chars={max_output_chars}"
    headings, body = _parse(text)
    if not headings:
        return "the reply has no Markdown heading"
    if not any(re.search(r"\w", line) for line in body):
        return "the reply has headings but no content under them"
    old = set(_parse(current)[0])
    if old:
        kept = len(old & set(headings)) / len(old)
        if kept < keep_heading_ratio:
            return (f"the reply keeps {kept:.0%} of the {len(old)} existing headings, "
                    f"under keep_heading_ratio={keep_heading_ratio:.0%}")
    return None


def reply_text(reply: Any) -> str:
    """The text of a chat model's reply (a message or a str), without one outer code fence."""
    return _unfence(_message_text(reply).strip())


def _parse(text: str) -> tuple[list[str], list[str]]:
    """Normalised ATX headings and the other non-blank lines, ignoring fenced code."""
    headings: list[str] = []
    body: list[str] = []
    in_fence = False
    for line in text.splitlines():
        if _FENCE_RE.match(line):
            in_fence = not in_fence
            continue
        match = None if in_fence else _HEADING_RE.match(line)
        if match is not None:
            headings.append(" ".join(match.group(2).split()).casefold())
        elif line.strip():
            body.append(line)
    return headings, body


def _unfence(text: str) -> str:
    """The reply without one outer ```markdown fence, which models add despite being told not to."""
    match = _OUTER_FENCE_RE.match(text)
    return match.group("body").strip() if match else text


def _message_text(reply: Any) -> str:
    if isinstance(reply, str):
        return reply
    text = getattr(reply, "text", None)
    if text is None:
        raise MemoryInputError(f"the model returned {type(reply).__name__}, not a message")
    return str(text() if callable(text) and not isinstance(text, str) else text)
