"""Text edits on a file's content: cleaning caller text, cutting a span, line endings.

Example:
    .. code-block:: python

        from langchain_md_memory.files.edits import cut

        assert cut("a\nb\nc\n", 2, 4) == "a\nc\n"
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ..errors import MemoryInputError, MemoryPathError

__all__ = [
    "appended",
    "check_needle",
    "clean_text",
    "cut",
    "decode_lf",
    "encode_lf",
    "inserted_lines",
    "last_line_ending",
    "line_slice",
    "replace_first",
    "replaced_lines",
    "split_lf",
]

_SURROGATE_RE = re.compile("[\ud800-\udfff]")

def clean_text(text: str) -> str:
    """Caller text as LF-only, with lone surrogates (unwritable as UTF-8) replaced."""
    return _SURROGATE_RE.sub("\ufffd", text.replace("\r\n", "\n"))



def last_line_ending(data: bytes) -> bytes:
    """The file's last line break (``b"\\r\\n"`` or ``b"\\n"``): what appended lines should use."""
    last = data.rfind(b"\n")
    return b"\r\n" if last > 0 and data[last - 1 : last] == b"\r" else b"\n"


def check_needle(text: str, action: str) -> None:
    if not text:
        raise MemoryInputError(f"old_text is empty: give the exact text to {action}")
    if not text.strip():
        raise MemoryInputError(
            f"old_text is only whitespace: give the exact text to {action} (it would glue lines together)"
        )


def split_lf(text: str) -> list[str]:
    """Lines ending at ``"\\n"`` only, as the chunker counts them (``str.splitlines`` breaks on more)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def cut(text: str, start: int, end: int) -> str:
    """``text`` without ``text[start:end]``, tidying the newlines around the cut."""
    before, after = text[:start], text[end:]
    whole_lines = (not before or before.endswith("\n")) and (not after or after.startswith("\n"))
    if whole_lines and after:
        after = after[1:]
    if not before:
        return after.lstrip("\n")
    if not after:
        if not before.endswith("\n"):
            return before
        kept = before.rstrip("\n")
        return kept + "\n" if kept else ""
    seam = before.rstrip("\n"), after.lstrip("\n")
    newlines = (len(before) - len(seam[0])) + (len(after) - len(seam[1]))
    return seam[0] + "\n" * min(newlines, 2) + seam[1]


def decode_lf(raw: bytes, errors: str) -> tuple[str, bool]:
    """A document's text with CRLF read as LF, and whether it used CRLF throughout."""
    text = raw.decode("utf-8", errors=errors)
    crlf_count = text.count("\r\n")
    crlf = crlf_count > 0 and crlf_count == text.count("\n")
    return text.replace("\r\n", "\n"), crlf


def encode_lf(text: str, crlf: bool) -> bytes:
    """``text`` (LF) as the bytes to store: CRLF again for a document that used CRLF throughout."""
    return (text.replace("\n", "\r\n") if crlf else text).encode("utf-8", errors="surrogateescape")


def appended(old: bytes, content: str) -> bytes:
    """``old`` with ``content`` appended as new lines.

    A line break is added before it only when ``old`` does not end with one, and after it when
    ``content`` lacks one. The existing bytes are kept exactly; the new lines take the
    document's last line ending.
    """
    addition = clean_text(content)
    if not addition.endswith("\n"):
        addition += "\n"
    eol = last_line_ending(old)
    if old and not old.endswith(b"\n"):
        old += eol
    return old + addition.encode("utf-8", errors="surrogateescape").replace(b"\n", eol)


def inserted_lines(raw: bytes, after_line: int, new_text: str, rel: str) -> bytes:
    """``raw`` with ``new_text`` inserted as whole lines after line ``after_line`` (0: at the top).

    Every other byte is kept as it is (no decoding: a line that is not UTF-8 stays so). Only
    ``"\\n"`` ends a line, as :func:`split_lf` counts them. The new lines take the line ending of
    the line before them (of the first line at the top; the file's last one when that line has
    none) and end with one; a last line that had none gets one before them.

    Raises:
        MemoryPathError: ``after_line`` is outside ``0..`` the number of lines.
    """
    lines = raw.split(b"\n")
    lines = [line + b"\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
    if not 0 <= after_line <= len(lines):
        raise MemoryPathError(
            f"cannot insert after line {after_line} of {rel!r}, which has {len(lines)} line(s): "
            f"give 0 (the top) to {len(lines)} (the end)"
        )
    neighbour = lines[after_line - 1] if after_line else b"".join(lines[:1])
    eol = last_line_ending(neighbour if neighbour.endswith(b"\n") else raw)
    before, after = lines[:after_line], lines[after_line:]
    if before and not before[-1].endswith(b"\n"):
        before[-1] += eol
    text = clean_text(new_text)
    addition = (text if text.endswith("\n") else text + "\n").encode("utf-8", errors="surrogateescape")
    return b"".join([*before, addition.replace(b"\n", eol), *after])


def line_slice(text: str, start_line: int | None, end_line: int | None, path: str) -> str:
    """Lines ``start_line..end_line`` (1-based, inclusive) of ``text`` with their newlines.

    ``None`` means the first / last line; an ``end_line`` past the end is clamped, a
    ``start_line`` past it gives ``""``.

    Raises:
        MemoryPathError: ``start_line < 1`` or ``end_line < start_line``.
    """
    start = 1 if start_line is None else start_line
    if start < 1:
        raise MemoryPathError(f"start_line must be 1 or more (lines are 1-based), got {start_line}")
    if end_line is not None and end_line < start:
        raise MemoryPathError(f"end_line ({end_line}) is before start_line ({start}) in {path!r}")
    lines = split_lf(text)
    end = len(lines) if end_line is None else min(end_line, len(lines))
    return "".join(lines[start - 1 : end])


def replace_first(content: str, wanted: str, change: Callable[[str, int, int], str], rel: str) -> str | None:
    """``change`` applied around the one occurrence of ``wanted``; ``None`` when it is absent.

    Raises:
        MemoryInputError: ``wanted`` occurs more than once.
    """
    at = content.find(wanted)
    if at < 0:
        return None
    count = content.count(wanted)
    if count > 1:
        raise MemoryInputError(
            f"old_text occurs {count} times in {rel!r}; include more of the text around it (a whole "
            "line, or the line before) so that it matches exactly once"
        )
    return change(content, at, at + len(wanted))


def replaced_lines(raw: bytes, start_line: int, end_line: int, new_text: str, rel: str) -> tuple[bytes, str]:
    """``raw`` with lines ``start_line..end_line`` replaced by ``new_text``, and the old lines.

    Raises:
        MemoryPathError: the range is outside the document.
    """
    lines = raw.splitlines(keepends=True)
    if start_line < 1 or end_line < start_line or end_line > len(lines):
        raise MemoryPathError(
            f"lines {start_line}-{end_line} are not in {rel!r}, which has {len(lines)} line(s)"
        )
    old = b"".join(lines[start_line - 1 : end_line])
    eol = b"\r\n" if old.endswith(b"\r\n") else b"\n"
    replacement = clean_text(new_text).encode("utf-8", errors="surrogateescape").replace(b"\n", eol)
    if replacement and not replacement.endswith(b"\n") and old.endswith(b"\n"):
        replacement += eol
    data = b"".join([*lines[: start_line - 1], replacement, *lines[end_line:]])
    return data, old.decode("utf-8", "replace")
