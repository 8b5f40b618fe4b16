"""The namespace files of the LangGraph store: ``## <key>`` sections, parsed and rendered.

An item is a ``## <key>`` heading directly followed by one ``<!-- md-memory: {...} -->``
line holding its timestamps and the fields that are not its text, and, for an item with a
TTL, its expiry in a comment after it (see :mod:`.expiry`). The body is
``value["content"]`` as plain Markdown when that round-trips exactly, else the
whole value as a fenced ``json`` block. Anything before the first item (the
preamble) is the file's own notes and is kept as written; so is every item a
write does not touch. A ``## `` heading without the metadata line is just text
of the item above it, so a Markdown body may hold headings of its own.

A namespace has two files in this format: the visible one (``store.md``, indexed
and searchable) and a hidden sibling (``.store.unindexed.md``, never indexed) for
items put with ``index=False``. Which file holds an item is what says whether it
is indexed (see :mod:`.changes` for how writes move a key between them).

Example:
    .. code-block:: python

        import datetime as dt
        from langchain_md_memory.integrations.basestore.sections import (
            parse_sections, render_file, render_item,
        )

        now = dt.datetime(2026, 7, 14, tzinfo=dt.UTC)
        text = render_file("# users / alice\\n", [render_item("food", {"content": "Loves hotpot"},
                                                             created_at=now, updated_at=now)])
        item = parse_sections(text, fallback_time=now).find("food")
        assert item is not None and item.value == {"content": "Loves hotpot"}
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...errors import MemoryInputError
from .expiry import Expiry, parse_expiry

__all__ = [
    "ParsedFile",
    "StoredItem",
    "check_key",
    "namespace_preamble",
    "parse_sections",
    "render_file",
    "render_item",
    "with_expiry",
]

logger = logging.getLogger(__name__)

_META_PREFIX = "<!-- md-memory: "
# JSON in the line escapes '<' and '>', so the first " -->" ends it; an expiry comment may follow.
_META_RE = re.compile(r"^<!-- md-memory: (.*?) -->([ \t]*<!--[ \t]*expires:.*?-->)?[ \t]*$")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")
_CLOSING_HASHES_RE = re.compile(r"(?:^|\s)#+$")
_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_LEADING_BLANK_RE = re.compile(r"\A(?:[ \t]*\n)+")
_TRAILING_BLANK_RE = re.compile(r"(?:\n[ \t]*)+\Z")


@dataclass(frozen=True, slots=True)
class StoredItem:
    """One item as found in a namespace file; lines are 1-based, inclusive.

    ``start_line`` is the heading, ``end_line`` the last line before the next
    item (blank separator lines included). ``source`` is those lines verbatim.
    ``indexed`` is False only for an item whose metadata line carries
    ``"index": false`` (written by hand: the store marks unindexed items by
    keeping them in the hidden file instead). ``expiry`` is ``None`` for an item
    that never expires.
    """

    key: str
    value: dict[str, Any]
    created_at: dt.datetime
    updated_at: dt.datetime
    indexed: bool
    start_line: int
    end_line: int
    source: str
    expiry: Expiry | None = None
    fields: tuple[str, ...] | None = None
    """The paths the item was put with (``put(..., index=[...])``), kept as ``"index": [...]`` in its
    metadata line; ``None``: the store's own."""


@dataclass(frozen=True, slots=True)
class ParsedFile:
    """A namespace file: its preamble and its items in file order (duplicates kept)."""

    preamble: str
    items: tuple[StoredItem, ...]

    def find(self, key: str) -> StoredItem | None:
        """The first item with ``key``, or ``None``."""
        return next((item for item in self.items if item.key == key), None)

    def unique(self) -> list[StoredItem]:
        """Items with duplicate keys dropped (the first one wins, as in :meth:`find`)."""
        seen: set[str] = set()
        out: list[StoredItem] = []
        for item in self.items:
            if item.key not in seen:
                seen.add(item.key)
                out.append(item)
        return out


def check_key(key: str) -> str:
    """Return ``key`` when it can be a ``## <key>`` heading that reads back exactly.

    Raises:
        ValueError: for empty keys, control characters (newlines, tabs, NUL) or
            lone surrogates, surrounding whitespace, a leading ``#`` or a trailing `` #`` (Markdown
            would read those as part of the heading syntax).
    """
    if not isinstance(key, str) or not key:
        raise MemoryInputError("Store keys must be non-empty strings")
    if _CONTROL_RE.search(key):
        raise MemoryInputError(f"Store key {key!r} contains a control character (newline, tab, NUL, ...)")
    if _has_surrogates(key):
        raise MemoryInputError(
            f"Store key {key!r} contains a lone surrogate (half of a UTF-16 pair), which UTF-8 cannot hold"
        )
    if key != key.strip():
        raise MemoryInputError(f"Store key {key!r} has leading or trailing whitespace")
    if key.startswith("#") or _CLOSING_HASHES_RE.search(key):
        raise MemoryInputError(
            f"Store key {key!r} starts with '#' or ends with ' #', which Markdown headings eat"
        )
    return key


def namespace_preamble(namespace: Sequence[str], *, indexed: bool = True) -> str:
    """The title and note written at the top of a new namespace file (``indexed=False``: the hidden one)."""
    labels = _escape_html(json.dumps(list(namespace), ensure_ascii=False))
    title = " / ".join(namespace)
    edit_note = "Edit the text under a heading freely; keep each heading and the md-memory line below it."
    if not indexed:
        return (
            f"# {title} (not indexed)\n\n"
            f"<!-- LangGraph store namespace {labels}: the items put with index=False, one '## key' "
            "section per item. This file is hidden so the memory never indexes or searches it; "
            f"store.get and filter searches still read it. {edit_note} -->\n"
        )
    return (
        f"# {title}\n\n"
        f"<!-- LangGraph store namespace {labels}: one '## key' section per item. {edit_note} -->\n"
    )


def parse_sections(text: str, *, fallback_time: dt.datetime) -> ParsedFile:
    """Split a namespace file into its preamble and items.

    ``fallback_time`` stands in for a timestamp missing or unreadable in the
    metadata line (e.g. after a careless hand edit). Never raises.
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    starts = [
        i
        for i in range(len(lines) - 1)
        if lines[i].startswith("## ") and _META_RE.match(lines[i + 1]) is not None
    ]
    preamble = "\n".join(lines[: starts[0] if starts else len(lines)])
    items: list[StoredItem] = []
    for n, start in enumerate(starts):
        end = starts[n + 1] - 1 if n + 1 < len(starts) else len(lines) - 1
        items.append(_parse_item(lines, start, end, fallback_time))
    return ParsedFile(preamble=preamble, items=tuple(items))


def render_item(
    key: str,
    value: Mapping[str, Any],
    *,
    created_at: dt.datetime,
    updated_at: dt.datetime,
    expiry: Expiry | None = None,
    embed_fields: Sequence[str] | None = None,
) -> str:
    """One item's section text (heading, metadata line and ``expiry``, body), ending in a newline.

    ``embed_fields``: the paths to embed the item by (written as ``"index": [...]``), else the store's.

    Raises:
        ValueError: for a bad key or a value that is not a JSON object.
    """
    check_key(key)
    value = _check_value(value)
    meta: dict[str, Any] = {"created_at": created_at.isoformat(), "updated_at": updated_at.isoformat()}
    if embed_fields is not None:
        meta["index"] = list(embed_fields)
    content = value.get("content")
    if isinstance(content, str) and _markdown_safe(content):
        fields = {k: v for k, v in value.items() if k != "content"}
        if fields:
            meta["fields"] = fields
        body = content
    else:
        meta["format"] = "json"
        body = f"```json\n{_dumps(value, indent=2)}\n```"
    after = f" {expiry.comment()}" if expiry is not None else ""
    head = f"## {key}\n{_META_PREFIX}{_escape_html(_dumps(meta))} -->{after}\n"
    return f"{head}\n{body}\n" if body else head


def with_expiry(meta_line: str, expiry: Expiry | None) -> str:
    """An item's md-memory line with its expiry comment replaced by ``expiry``'s (none for ``None``)."""
    match = _META_RE.match(meta_line)
    if match is None:
        return meta_line
    return meta_line[: match.end(1)] + " -->" + (f" {expiry.comment()}" if expiry is not None else "")


def render_file(preamble: str, sections: Iterable[str]) -> str:
    """The whole file: the preamble, then each section, one blank line between them."""
    parts = [preamble.strip("\n")] if preamble.strip() else []
    parts.extend(section.rstrip("\n") for section in sections)
    return "\n\n".join(parts) + "\n" if parts else ""


# -- internals -----------------------------------------------------------------------


def _parse_item(lines: list[str], start: int, end: int, fallback_time: dt.datetime) -> StoredItem:
    key = lines[start][3:].strip()
    meta_match = _META_RE.match(lines[start + 1])
    meta: dict[str, Any] = {}
    if meta_match is not None:
        try:
            loaded = json.loads(meta_match[1])
        except ValueError:
            loaded = None
        if isinstance(loaded, dict):
            meta = loaded
        else:
            logger.warning("store item %r: unreadable md-memory line, using defaults", key)
    body = _trim("\n".join(lines[start + 2 : end + 1]))
    if meta.get("format") == "json":
        value = _parse_json_body(key, body)
    else:
        fields = meta.get("fields")
        value = {**(fields if isinstance(fields, dict) else {}), "content": body}
    return StoredItem(
        key=key,
        value=value,
        created_at=_parse_time(meta.get("created_at"), fallback_time),
        updated_at=_parse_time(meta.get("updated_at"), fallback_time),
        indexed=meta.get("index", True) is not False,
        start_line=start + 1,
        end_line=end + 1,
        source="\n".join(lines[start : end + 1]),
        expiry=parse_expiry(meta_match[2]) if meta_match is not None and meta_match[2] else None,
        fields=_fields(meta.get("index")),
    )


def _fields(raw: Any) -> tuple[str, ...] | None:
    return tuple(raw) if isinstance(raw, list) and all(isinstance(path, str) for path in raw) else None


def _parse_json_body(key: str, body: str) -> dict[str, Any]:
    inner = body
    body_lines = body.split("\n")
    if len(body_lines) >= 2 and _FENCE_RE.match(body_lines[0]) and _FENCE_RE.match(body_lines[-1]):
        inner = "\n".join(body_lines[1:-1])
    try:
        value = json.loads(inner)
    except ValueError:
        value = None
    if isinstance(value, dict):
        return value
    # A hand edit broke the JSON: keep the text reachable rather than losing the item.
    logger.warning("store item %r: its json body does not parse; returning it as 'content'", key)
    return {"content": body}


def _parse_time(raw: Any, fallback: dt.datetime) -> dt.datetime:
    if isinstance(raw, str):
        try:
            parsed = dt.datetime.fromisoformat(raw)
        except ValueError:
            return fallback
        return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=dt.UTC)
    return fallback


def _check_value(value: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise MemoryInputError(f"A store value must be a mapping (a JSON object), got {type(value).__name__}")
    out = dict(value)
    bad = [k for k in out if not isinstance(k, str)]
    if bad:
        raise MemoryInputError(f"Store value keys must be strings, got {bad[0]!r}")
    try:
        json.dumps(out, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise MemoryInputError(f"A store value must be JSON-serialisable: {exc}") from exc
    return out


def _markdown_safe(content: str) -> bool:
    """True when ``content`` as a Markdown body reads back exactly (else it goes in JSON)."""
    if "\r" in content or _trim(f"\n{content}\n") != content or _has_surrogates(content):
        return False
    fence: tuple[str, int] | None = None
    for line in content.split("\n"):
        if line.startswith(_META_PREFIX.rstrip()):
            return False
        match = _FENCE_RE.match(line)
        if match is None:
            continue
        if fence is None:
            fence = (match[1][0], len(match[1]))
        elif match[1][0] == fence[0] and len(match[1]) >= fence[1] and not match[2].strip():
            fence = None
    # An unclosed fence would swallow the following items' headings for Markdown readers.
    return fence is None


def _trim(text: str) -> str:
    """``text`` without blank lines at either end (inner blank lines kept)."""
    text = _LEADING_BLANK_RE.sub("", text)
    return _TRAILING_BLANK_RE.sub("", text)


def _has_surrogates(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _dumps(obj: Any, indent: int | None = None) -> str:
    text = json.dumps(obj, ensure_ascii=False, indent=indent, allow_nan=False)
    # The store would replace lone surrogates; escaped, they survive the round trip.
    return json.dumps(obj, indent=indent, allow_nan=False) if _has_surrogates(text) else text


def _escape_html(text: str) -> str:
    """JSON safe inside an HTML comment: ``-->`` in a string must not end it."""
    return text.replace("<", "\\u003c").replace(">", "\\u003e")
