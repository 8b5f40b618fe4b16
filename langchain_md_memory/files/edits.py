"""Text edits on a file's content: cleaning caller text, cutting a span, line endings.

Example:
    .. code-block:: python

        from langchain_md_memory.files.edits import cut

        assert cut("a\nb\nc\n", 2, 4) == "a\nc\n"
"""

from __future__ import annotations

import re

from ..errors import MemoryInputError

__all__ = ["check_needle", "clean_text", "cut", "last_line_ending", "split_lf"]

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
