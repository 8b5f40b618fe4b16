"""Cut a Markdown file into overlapping, line-numbered chunks for the index.

Paragraphs (blocks between blank lines; an ATX heading is always its own
block) are packed greedily up to ``chunk_tokens``; a chunk that ends because
the budget ran out hands its trailing paragraphs (at most ``overlap_tokens``)
to the next one, so a fact on a boundary is whole in at least one chunk. A
heading starts a new chunk, so a section's body is never cut off from its
title, and every chunk records the heading path in effect at its first line.

A chunk too short to mean anything alone (a reply such as "Yes, last Tuesday"
in a transcript, a lone bullet under its own heading) also records its
*context*: the nearest non-blank lines before it and after it, up to the first
line written in another script (in a daily log, a short English entry beside a
Chinese one is another entry, and read with it would embed as a Chinese text),
which the embedding model reads with it (the keyword index and the search results do not).

Example:
    .. code-block:: python

        from langchain_md_memory.files.chunker import chunk_markdown

        chunks = chunk_markdown("# Goals\\n\\n## Retirement\\n\\nRetire at 55.\\n")
        assert [(c.start_line, c.end_line, c.heading) for c in chunks] == [
            (1, 5, "# Goals")
        ]
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from itertools import accumulate

# One CJK definition for the whole package, so chunk budgets match estimate_tokens exactly.
from ..text import CJK_CHAR_RE, TERMS_VERSION, estimate_tokens, script_group
from ..types import Chunk
from .facts import hidden_lines

__all__ = ["CHUNKER_VERSION", "chunk_markdown", "chunking_signature"]

CHUNKER_VERSION = "4"
"""Bumped whenever chunk boundaries change, or what the index derives from a chunk (its script group,
:attr:`~langchain_md_memory.index.rows.ChunkRow.script`), so indexes built by an older one are rebuilt."""

_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_HEADING_RE = re.compile(r"^ {0,3}(#{1,6})(?=[ \t]|$)(.*)$")
_CLOSING_HASHES_RE = re.compile(r"(?:^|[ \t])#+$")
_SCAFFOLD_RE = re.compile(
    "|".join(
        f"(?:{pattern})"
        for pattern in (
            r"^(?:[-*+]|\d+[.)])?\s*(?:\[[ x]?\])?$",  # bare bullet / empty checkbox
            r"^(?:[-*+]\s*)?(?:\[[ x]?\]\s*)?(?:todo|tbd|fixme|xxx|n/?a|\.\.\.|…)\s*:?$",
            r"^<!--.*-->$",
            r"^(?:-[ \t]*){3,}$|^(?:\*[ \t]*){3,}$|^(?:_[ \t]*){3,}$",  # thematic break / front matter
            r"^>+\s*$",
            r"^\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?$",  # table separator row
        )
    ),
    re.IGNORECASE,
)

# Every character a scaffolding line can hold, except a TODO-like word (at most five letters) and a comment.
_SCAFFOLD_CHARS = "-*+_|:>.)[]xX0123456789\u2026" + "".join(
    chr(c) for c in (*range(9, 14), *range(0x1C, 0x21), 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B),
                     0x2028, 0x2029, 0x202F, 0x205F, 0x3000)
)  # the whitespace ``\s`` matches


def _is_scaffold(stripped: str) -> bool:
    """True for a stripped line of template scaffolding (``_SCAFFOLD_RE``), the regex run only where it can
    match: most lines are content, and trying its six patterns on each cost more than the rest of chunking."""
    core = stripped.strip(_SCAFFOLD_CHARS)
    return (len(core) <= 5 or core.isdecimal() or stripped[:4] == "<!--") \
        and _SCAFFOLD_RE.match(stripped) is not None


_BLANK, _HEADING, _SCAFFOLD, _CONTENT = range(4)
_BLOCK_RE = re.compile(b"[\x02\x03]+|\x01")  # over bytes(kinds): a paragraph, or a heading on its own


@dataclass(slots=True)  # not frozen: a frozen dataclass's __init__ costs twice as much, and units are many
class _Unit:
    """Lines ``start..end`` (0-based, inclusive), or ``piece`` of one over-long line."""

    start: int
    end: int
    heading_start: bool
    content: bool
    piece: str | None = None


def _split_lines(text: str) -> list[str]:
    # Only "\n" ends a line, as in MarkdownStore.read_lines (which reads CRLF as LF); a final
    # newline does not open a new line.
    lines = text.replace("\r\n", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _classify(lines: list[str], fenced: bool = True) -> tuple[list[int], list[str]]:
    """Each line's kind and the heading path in effect at it (fenced code is content).

    ``fenced=False`` says no line holds a code fence (no ```` ``` ```` or ``~~~``): a faster path.
    """
    if lines and lines[0].startswith("\ufeff"):
        lines = [lines[0].lstrip("\ufeff"), *lines[1:]]
    if fenced:
        return _classify_fenced(lines)
    # No fence anywhere: a line is blank, a heading, scaffolding or content, each decided on its own.
    scaffold, heading_at = _is_scaffold, _HEADING_RE.match
    stripped = list(map(str.strip, lines))
    kinds = [(_SCAFFOLD if scaffold(text) else _CONTENT) if text else _BLANK for text in stripped]
    paths: list[str] = []
    stack: list[tuple[int, str]] = []
    path = ""
    for i in [i for i, text in enumerate(stripped) if text[:1] == "#"]:
        heading = heading_at(lines[i])
        if heading is None:
            continue
        paths.extend([path] * (i - len(paths)))
        kinds[i] = _HEADING
        path = _enter(stack, heading)
    paths.extend([path] * (len(lines) - len(paths)))
    return kinds, paths


def _enter(stack: list[tuple[int, str]], heading: re.Match[str]) -> str:
    """Push a heading on the path ``stack`` (popping its level and deeper); the path it makes."""
    level = len(heading[1])
    title = heading[2].strip()
    if title.endswith("#"):
        title = _CLOSING_HASHES_RE.sub("", title).strip()
    while stack and stack[-1][0] >= level:
        stack.pop()
    if title:
        stack.append((level, f"{heading[1]} {title}"))
    return " > ".join([item for _, item in stack])


def _classify_fenced(lines: list[str]) -> tuple[list[int], list[str]]:
    """:func:`_classify` for a text with code fences: lines inside a fence are content."""
    kinds: list[int] = []
    paths: list[str] = []
    stack: list[tuple[int, str]] = []
    path = ""
    fence: tuple[str, int] | None = None
    scaffold = _is_scaffold
    for line in lines:
        stripped = line.strip()
        # Fences and headings start within the first four characters (up to three spaces before):
        # the regexes run only on lines that start that way.
        first = line[:1]
        if first == " ":
            first = line[:4].lstrip(" ")[:1]
        fence_match = _FENCE_RE.match(line) if first == "`" or first == "~" else None
        if fence is not None:
            kinds.append(_CONTENT if stripped else _BLANK)
            char, length = fence
            closes = fence_match and fence_match[1][0] == char and len(fence_match[1]) >= length
            if closes and fence_match and not fence_match[2].strip():
                fence = None
        elif fence_match and not (fence_match[1][0] == "`" and "`" in fence_match[2]):
            kinds.append(_CONTENT)
            fence = (fence_match[1][0], len(fence_match[1]))
        elif not stripped:
            kinds.append(_BLANK)
        elif first == "#" and (heading := _HEADING_RE.match(line)) is not None:
            kinds.append(_HEADING)
            path = _enter(stack, heading)
        else:
            kinds.append(_SCAFFOLD if scaffold(stripped) else _CONTENT)
        paths.append(path)
    return kinds, paths


class _Budget:
    """Exact ``estimate_tokens`` of any line range in O(1), via prefix sums."""

    def __init__(self, lines: list[str]) -> None:
        chars = [0, *accumulate(map(len, lines))]
        if not all(map(str.isascii, lines)):
            per_line = [0] * len(lines)
            for i in [i for i, ascii_only in enumerate(map(str.isascii, lines)) if not ascii_only]:
                per_line[i] = len(CJK_CHAR_RE.findall(lines[i]))
            cjk = [0, *accumulate(per_line)]
        else:  # no CJK character in ASCII text
            cjk = [0] * (len(lines) + 1)

        def tokens(start: int, end: int) -> int:  # a closure: called for every unit, line and span
            wide = cjk[end + 1] - cjk[start]
            return wide + round((chars[end + 1] - chars[start] + end - start - wide) / 3.5)

        def fits(start: int, end: int, limit: int) -> bool:
            # No more tokens than characters (newlines included): a range that short fits uncounted.
            return chars[end + 1] - chars[start] + end - start <= limit or tokens(start, end) <= limit

        self.tokens = tokens
        """Tokens of ``"\\n".join(lines[start:end + 1])``; mirrors :func:`text.estimate_tokens`."""
        self.fits = fits
        """True when lines ``start..end`` hold at most ``limit`` tokens."""


def _windows(line: str, budget: int) -> list[str]:
    """Cut one over-long line into consecutive pieces of at most ``budget`` tokens."""
    pieces: list[str] = []
    pos = 0
    widest = int(budget * 3.5) + 1  # no piece of ASCII text within budget is longer
    while pos < len(line):
        size = min(len(line) - pos, widest)
        tokens = estimate_tokens(line[pos : pos + size])
        # Tokens grow about linearly with length, so scaling converges in a step or two; it
        # stops by `budget` characters at the latest, which always fit.
        while tokens > budget and size > budget:
            size = max(budget, min(size - 1, size * budget // tokens))
            tokens = estimate_tokens(line[pos : pos + size])
        pieces.append(line[pos : pos + size])
        pos += size
    return pieces


def _units(lines: list[str], kinds: list[int], budget: _Budget, chunk_tokens: int) -> list[_Unit]:
    """Paragraphs that fit the budget, else their lines, else pieces of a line."""
    code = bytes(kinds)  # one byte per line: paragraphs are runs of scaffolding and content, found in C
    blocks = [match.span() for match in _BLOCK_RE.finditer(code)]
    units: list[_Unit] = []
    fits = budget.fits
    for first, stop in blocks:
        last = stop - 1
        if fits(first, last, chunk_tokens):
            units.append(_Unit(first, last, kinds[first] == _HEADING, code.find(_CONTENT, first, stop) >= 0))
            continue
        for i in range(first, last + 1):  # line by line, and a line over the budget in pieces
            heading, content = kinds[i] == _HEADING, kinds[i] == _CONTENT
            if budget.tokens(i, i) > chunk_tokens:
                pieces = _windows(lines[i], chunk_tokens)
                units.extend(_Unit(i, i, heading, content, piece) for piece in pieces)
            else:
                units.append(_Unit(i, i, heading, content))
    return units


def _make_chunk(text: str, start: int, end: int, heading: str, context: str) -> Chunk:
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return Chunk(text, start + 1, end + 1, heading, digest, context)


def _context(lines: list[str], kinds: list[int], budget: _Budget, start: int, end: int, tokens: int) -> str:
    """The nearest content lines around ``lines[start..end]`` in its script, in file order, within ``tokens``.

    Two thirds of the budget go to the lines before (a reply's question), the rest
    to the lines after; a line longer than what is left is cut at the far end.
    """
    room_before = tokens * 2 // 3
    script = script_group("\n".join(lines[start:end + 1]))
    before = _nearest(lines, kinds, budget, range(start - 1, -1, -1), room_before, script, keep_end=True)
    after = _nearest(lines, kinds, budget, range(end + 1, len(lines)), tokens - room_before, script,
                     keep_end=False)
    return "\n".join([*reversed(before), *after])


def _nearest(lines: list[str], kinds: list[int], budget: _Budget, order: range, room: int,
             script: int, *, keep_end: bool) -> list[str]:
    taken: list[str] = []
    for i in order:
        if room <= 0:
            break
        if kinds[i] != _CONTENT:
            continue
        if script_group(lines[i]) != script:
            break
        line, cost = lines[i].strip(), budget.tokens(i, i) + 1
        if cost > room:
            size = int(room * 3.5)  # characters of ASCII text within the room left
            line = line[-size:] if keep_end else line[:size]
        taken.append(line)
        room -= cost
    return taken


def chunking_signature(chunk_tokens: int, overlap_tokens: int, context_tokens: int) -> str:
    """What stored chunks and their keyword terms depend on: when it changes, every file is re-indexed."""
    return f"{CHUNKER_VERSION}:{chunk_tokens}:{overlap_tokens}:{context_tokens}:terms={TERMS_VERSION}"


def chunk_markdown(text: str, *, chunk_tokens: int = 400, overlap_tokens: int = 80,
                   context_tokens: int = 128) -> list[Chunk]:
    """Split Markdown ``text`` into chunks of at most ``chunk_tokens`` estimated tokens.

    Line numbers are 1-based and inclusive, counted on ``"\\n"`` like
    :meth:`MarkdownStore.read_lines`; ``Chunk.text`` is exactly those lines
    joined by ``"\\n"``, except for the pieces of a line too long for one chunk
    (each piece is its own chunk on that line). Chunks holding nothing but
    headings, blank lines or template scaffolding (``-``, ``- [ ]``, ``TODO``,
    ``<!-- ... -->``, ``---``) are dropped. Superseded text (a ``## History`` section and
    struck-through ``~~...~~`` lines, see :mod:`langchain_md_memory.files.facts`) is blanked: it is
    never indexed, and line numbers still match the file. A chunk shorter than half of
    ``context_tokens`` and a quarter of ``chunk_tokens`` (short because a heading cut it, not
    because small chunks were asked for) gets up to ``context_tokens`` of its neighbouring
    lines as :attr:`Chunk.context` (0: none). Never raises; always terminates.

    Example:
        .. code-block:: python

            chunks = chunk_markdown("one\\n\\ntwo\\n\\nthree", chunk_tokens=3, overlap_tokens=1)
            assert [c.text for c in chunks] == ["one\\n\\ntwo", "two\\n\\nthree"]
    """
    chunk_tokens = max(1, int(chunk_tokens))
    overlap_tokens = max(0, int(overlap_tokens))
    lines = _split_lines(text)
    # Superseded facts (a History section, struck lines) stay in the file for people, out of the index.
    hidden = hidden_lines(lines)
    if any(hidden):
        lines = ["" if gone else line for line, gone in zip(lines, hidden, strict=True)]
    kinds, paths = _classify(lines, "```" in text or "~~~" in text)
    budget = _Budget(lines)
    units = _units(lines, kinds, budget, chunk_tokens)

    spans: list[tuple[str, int, int]] = []  # (text, first line, last line), 0-based
    tokens, fits, count, i = budget.tokens, budget.fits, len(units), 0
    while i < count:
        unit = units[i]
        if unit.piece is not None:
            if unit.content and unit.piece.strip():
                spans.append((unit.piece, unit.start, unit.end))
            i += 1
            continue
        j, has_content, first = i + 1, unit.content, unit.start
        # A heading opens a new chunk unless everything so far is headings/scaffolding.
        while j < count:
            after = units[j]
            if after.piece is not None or (after.heading_start and has_content) \
                    or not fits(first, after.end, chunk_tokens):
                break
            has_content = has_content or after.content
            j += 1
        if has_content:
            end = units[j - 1].end
            spans.append(("\n".join(lines[first : end + 1]), first, end))
        if j >= count or units[j].piece is not None or (units[j].heading_start and has_content):
            i = j
            continue
        # The budget ended this chunk: carry trailing units (never unit i, so we always advance).
        k = j
        while k - 1 > i and tokens(units[k - 1].start, units[j - 1].end) <= overlap_tokens:
            k -= 1
        while k < j and tokens(units[k].start, units[j].end) > chunk_tokens:
            k += 1
        i = k
    short = min(max(0, int(context_tokens)) // 2, chunk_tokens // 4)
    return [
        _make_chunk(body, start, end, paths[start],
                    _context(lines, kinds, budget, start, end, context_tokens)
                    if tokens(start, end) < short else "")
        for body, start, end in spans
    ]
