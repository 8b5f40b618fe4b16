"""Today's chunker and keyword terms as they were before the build was made faster: the reference.

A straightforward copy of ``files/chunker.py``, ``text._tokens`` / ``index_terms`` and
``facts.hidden_lines`` / ``strip_annotations`` before their fast paths (commit 90ccadf), so a test can
check that the fast code cuts the same chunks, with the same lines, headings, context and hashes, and
emits the same index terms, on any text. Terms are stemmed here as ``text`` stems them since
``TERMS_VERSION`` 2: each English word by a fresh Snowball call, no cache.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import accumulate

import snowballstemmer

from langchain_md_memory.files.facts import HISTORY_TITLES
from langchain_md_memory.text import CJK_CHAR_RE, estimate_tokens, normalize_text, script_group
from langchain_md_memory.types import Chunk

__all__ = [
    "reference_chunk_markdown", "reference_index_terms", "reference_stem", "reference_strip_annotations",
]

# -- text.py ------------------------------------------------------------------------------------------

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_TOKEN_RE = re.compile(rf"(?P<cjk>[{_CJK}]+)|(?P<word>[^\W_{_CJK}]+)")
_ASCII_WORD_RE = re.compile(r"[a-z0-9]+")


def _tokens(text: str, *, unigrams: bool) -> Iterator[str]:
    if text.isascii():
        yield from _ASCII_WORD_RE.findall(text.lower())
        return
    for match in _TOKEN_RE.finditer(normalize_text(text)):
        word = match.group("word")
        if word is not None:
            yield _fold(word)
            continue
        run = match.group("cjk")
        if len(run) == 1 or unigrams:
            yield from run
        for i in range(len(run) - 1):
            yield run[i : i + 2]


def _fold(word: str) -> str:
    if word.isascii():
        return word.lower()
    decomposed = unicodedata.normalize("NFKD", word.lower())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)) or word.lower()


def reference_stem(term: str) -> str:
    """An English word's Snowball stem; any other term as it is."""
    if term.isascii() and term.isalpha():
        return str(snowballstemmer.stemmer("english").stemWord(term))
    return term


def reference_index_terms(text: str) -> str:
    """``text.index_terms`` before its fast path."""
    return " ".join(map(reference_stem, _tokens(text, unigrams=True)))


def reference_query_tokens(text: str) -> list[str]:
    """``text._tokens(text, unigrams=False)`` before its fast path (what queries and MMR use), unstemmed."""
    return list(_tokens(text, unigrams=False))


# -- facts.py -----------------------------------------------------------------------------------------

_ANNOTATION_RE = re.compile(r"[ \t]*<!--[ \t]*(?:src|expires):[^\n]*?-->")
_FACT_HEADING_RE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t#]*$")
_FACT_FENCE_RE = re.compile(r"^ {0,3}(?:`{3,}|~{3,})")
_STRUCK_RE = re.compile(r"^\s*(?:(?:[-*+]|\d+[.)])\s+)?~~\S.*?~~")


def reference_strip_annotations(line: str) -> str:
    """``facts.strip_annotations`` before its fast path."""
    return _ANNOTATION_RE.sub("", line)


def _outline(lines: Sequence[str]) -> Iterator[tuple[bool, re.Match[str] | None]]:
    fence = False
    for line in lines:
        if _FACT_FENCE_RE.match(line):
            fence = not fence
            yield True, None
            continue
        yield fence, None if fence else _FACT_HEADING_RE.match(line)


def reference_hidden_lines(lines: list[str]) -> list[bool]:
    """``facts.hidden_lines`` before its fast path."""
    hidden: list[bool] = []
    history_level: int | None = None
    for line, (fence, heading) in zip(lines, _outline(lines), strict=True):
        if heading is not None:
            level = len(heading[1])
            if history_level is not None and level <= history_level:
                history_level = None
            if history_level is None and (heading[2] or "").strip().casefold() in HISTORY_TITLES:
                history_level = level
        hidden.append(history_level is not None or (not fence and _STRUCK_RE.match(line) is not None))
    return hidden


# -- files/chunker.py ---------------------------------------------------------------------------------

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

_BLANK, _HEADING, _SCAFFOLD, _CONTENT = range(4)


@dataclass(frozen=True, slots=True)
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


def _classify(lines: list[str]) -> tuple[list[int], list[str]]:
    """Each line's kind and the heading path in effect at it (fenced code is content)."""
    kinds: list[int] = []
    paths: list[str] = []
    stack: list[tuple[int, str]] = []
    path = ""
    fence: tuple[str, int] | None = None
    for index, raw_line in enumerate(lines):
        line = raw_line.lstrip("\ufeff") if index == 0 else raw_line
        fence_match = _FENCE_RE.match(line)
        if fence is not None:
            kinds.append(_CONTENT if line.strip() else _BLANK)
            char, length = fence
            closes = fence_match and fence_match[1][0] == char and len(fence_match[1]) >= length
            if closes and fence_match and not fence_match[2].strip():
                fence = None
        elif fence_match and not (fence_match[1][0] == "`" and "`" in fence_match[2]):
            kinds.append(_CONTENT)
            fence = (fence_match[1][0], len(fence_match[1]))
        elif not line.strip():
            kinds.append(_BLANK)
        elif (heading := _HEADING_RE.match(line)) is not None:
            kinds.append(_HEADING)
            level = len(heading[1])
            title = _CLOSING_HASHES_RE.sub("", heading[2].strip()).strip()
            while stack and stack[-1][0] >= level:
                stack.pop()
            if title:
                stack.append((level, f"{heading[1]} {title}"))
            path = " > ".join(item for _, item in stack)
        else:
            stripped = line.strip()
            kinds.append(_SCAFFOLD if _SCAFFOLD_RE.match(stripped) else _CONTENT)
        paths.append(path)
    return kinds, paths


class _Budget:
    """Exact ``estimate_tokens`` of any line range in O(1), via prefix sums."""

    def __init__(self, lines: list[str]) -> None:
        self._chars = [0, *accumulate(len(line) for line in lines)]
        self._cjk = [0, *accumulate(CJK_CHAR_RE.subn("", line)[1] for line in lines)]

    def tokens(self, start: int, end: int) -> int:
        """Tokens of ``"\\n".join(lines[start:end + 1])``; mirrors :func:`text.estimate_tokens`."""
        chars = self._chars[end + 1] - self._chars[start] + (end - start)
        cjk = self._cjk[end + 1] - self._cjk[start]
        return cjk + round((chars - cjk) / 3.5)


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
    blocks: list[tuple[int, int]] = []
    start: int | None = None
    for i, kind in enumerate(kinds):
        if kind in (_BLANK, _HEADING):
            if start is not None:
                blocks.append((start, i - 1))
            start = None
            if kind == _HEADING:
                blocks.append((i, i))
        elif start is None:
            start = i
    if start is not None:
        blocks.append((start, len(lines) - 1))

    units: list[_Unit] = []
    for first, last in blocks:
        if budget.tokens(first, last) <= chunk_tokens:
            spans = [(first, last)]
        else:
            spans = [(i, i) for i in range(first, last + 1)]
        for a, b in spans:
            content = _CONTENT in kinds[a : b + 1]
            heading = kinds[a] == _HEADING
            if a == b and budget.tokens(a, a) > chunk_tokens:
                pieces = _windows(lines[a], chunk_tokens)
                units.extend(_Unit(a, a, heading, content, piece) for piece in pieces)
            else:
                units.append(_Unit(a, b, heading, content))
    return units


def _make_chunk(text: str, start: int, end: int, heading: str) -> Chunk:
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return Chunk(text=text, start_line=start + 1, end_line=end + 1, heading=heading, hash=digest)


def _context(lines: list[str], kinds: list[int], budget: _Budget, start: int, end: int, tokens: int) -> str:
    """The nearest content lines around ``lines[start..end]``, in file order, within ``tokens``.

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


def reference_chunk_markdown(text: str, *, chunk_tokens: int = 400, overlap_tokens: int = 80,
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
    hidden_flags = reference_hidden_lines(lines)
    lines = ["" if hidden else line for line, hidden in zip(lines, hidden_flags, strict=True)]
    kinds, paths = _classify(lines)
    budget = _Budget(lines)
    units = _units(lines, kinds, budget, chunk_tokens)

    chunks: list[Chunk] = []
    i = 0
    while i < len(units):
        unit = units[i]
        if unit.piece is not None:
            if unit.content and unit.piece.strip():
                chunks.append(_make_chunk(unit.piece, unit.start, unit.end, paths[unit.start]))
            i += 1
            continue
        j, has_content = i + 1, unit.content
        # A heading opens a new chunk unless everything so far is headings/scaffolding.
        while (
            j < len(units)
            and units[j].piece is None
            and not (units[j].heading_start and has_content)
            and budget.tokens(unit.start, units[j].end) <= chunk_tokens
        ):
            has_content = has_content or units[j].content
            j += 1
        if has_content:
            end = units[j - 1].end
            body = "\n".join(lines[unit.start : end + 1])
            chunks.append(_make_chunk(body, unit.start, end, paths[unit.start]))
        if j >= len(units) or units[j].piece is not None or (units[j].heading_start and has_content):
            i = j
            continue
        # The budget ended this chunk: carry trailing units (never unit i, so we always advance).
        k = j
        while k - 1 > i and budget.tokens(units[k - 1].start, units[j - 1].end) <= overlap_tokens:
            k -= 1
        while k < j and budget.tokens(units[k].start, units[j].end) > chunk_tokens:
            k += 1
        i = k
    short = min(max(0, int(context_tokens)) // 2, chunk_tokens // 4)
    return [
        replace(c, context=_context(lines, kinds, budget, c.start_line - 1, c.end_line - 1, context_tokens))
        if budget.tokens(c.start_line - 1, c.end_line - 1) < short else c
        for c in chunks
    ]
