"""The namespace files of the LangGraph store: ``## <key>`` sections, parsed, rendered and planned.

An item is a ``## <key>`` heading directly followed by one ``<!-- md-memory: {...} -->``
line holding its timestamps and the fields that are not its text. The body is
``value["content"]`` as plain Markdown when that round-trips exactly, else the
whole value as a fenced ``json`` block. Anything before the first item (the
preamble) is the file's own notes and is kept as written; so is every item a
write does not touch. A ``## `` heading without the metadata line is just text
of the item above it, so a Markdown body may hold headings of its own.

A namespace has two files in this format: the visible one (``store.md``, indexed
and searchable) and a hidden sibling (``.store.unindexed.md``, never indexed) for
items put with ``index=False``. Which file holds an item is what says whether it
is indexed. A key lives in one of them; :func:`plan_changes` orders the writes of
a move so that a crash between them leaves the key in both, and readers
(:func:`find_item`, :func:`merged_items`) then take the visible file's copy,
which is the state before a move out of it or after a move into it.

Example:
    .. code-block:: python

        import datetime as dt
        from langchain_md_memory.integrations.store_sections import parse_sections, render_file, render_item

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

from ..errors import MemoryInputError

__all__ = [
    "Change",
    "FileChanges",
    "ParsedFile",
    "StoredItem",
    "apply_changes",
    "check_key",
    "find_item",
    "merged_items",
    "namespace_preamble",
    "parse_sections",
    "plan_changes",
    "render_file",
    "render_item",
]

logger = logging.getLogger(__name__)

_META_PREFIX = "<!-- md-memory: "
_META_RE = re.compile(r"^<!-- md-memory: (.*) -->[ \t]*$")
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
    keeping them in the hidden file instead).
    """

    key: str
    value: dict[str, Any]
    created_at: dt.datetime
    updated_at: dt.datetime
    indexed: bool
    start_line: int
    end_line: int
    source: str


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


@dataclass(frozen=True, slots=True)
class Change:
    """One put to apply: ``value=None`` deletes the key.

    ``indexed`` picks the file in :func:`plan_changes` (the visible namespace
    file, or the hidden unindexed one when False); :func:`apply_changes` ignores
    it. ``created_at``, when set, is the item's creation time whatever the file
    holds (an item moving in from the other file keeps its own).
    """

    key: str
    value: Mapping[str, Any] | None
    indexed: bool = True
    created_at: dt.datetime | None = None


@dataclass(frozen=True, slots=True)
class FileChanges:
    """One write of a plan: ``changes`` for the visible file (``indexed``) or the hidden one."""

    indexed: bool
    changes: tuple[Change, ...]


def check_key(key: str) -> str:
    """Return ``key`` when it can be a ``## <key>`` heading that reads back exactly.

    Raises:
        ValueError: for empty keys, control characters (newlines, tabs, NUL) or
            lone surrogates, surrounding whitespace, a leading ``#`` or a trailing `` #`` (Markdown
            would read those as part of the heading syntax).
    """
    if not isinstance(key, str) or not key:
        raise MemoryInputError("Store keys must be non-empty strings")
    if _CONTROL_RE.search(key) or _has_surrogates(key):
        raise MemoryInputError(f"Store key {key!r} contains a control character (newline, tab, NUL, ...)")
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
) -> str:
    """One item's section text (heading, metadata line, body), ending in a newline.

    Raises:
        ValueError: for a bad key or a value that is not a JSON object.
    """
    check_key(key)
    value = _check_value(value)
    meta: dict[str, Any] = {"created_at": created_at.isoformat(), "updated_at": updated_at.isoformat()}
    content = value.get("content")
    if isinstance(content, str) and _markdown_safe(content):
        fields = {k: v for k, v in value.items() if k != "content"}
        if fields:
            meta["fields"] = fields
        body = content
    else:
        meta["format"] = "json"
        body = f"```json\n{_dumps(value, indent=2)}\n```"
    head = f"## {key}\n{_META_PREFIX}{_escape_html(_dumps(meta))} -->\n"
    return f"{head}\n{body}\n" if body else head


def render_file(preamble: str, sections: Iterable[str]) -> str:
    """The whole file: the preamble, then each section, one blank line between them."""
    parts = [preamble.strip("\n")] if preamble.strip() else []
    parts.extend(section.rstrip("\n") for section in sections)
    return "\n\n".join(parts) + "\n" if parts else ""


def apply_changes(
    text: str | None,
    changes: Sequence[Change],
    *,
    now: dt.datetime,
    preamble: str,
    fallback_time: dt.datetime,
) -> str | None:
    """The file after ``changes`` in order, or ``None`` when nothing changes.

    A put replaces the first section of its key in place (keeping ``created_at``
    unless the change sets one) and drops later duplicates, or appends a new
    section; a delete removes every section of the key. ``preamble`` heads a
    file that did not exist.
    """
    parsed = parse_sections(text, fallback_time=fallback_time) if text is not None else None
    head = parsed.preamble if parsed is not None else preamble
    # (key, section text, created_at) in file order; duplicates of untouched keys stay as written.
    entries = [(item.key, item.source, item.created_at) for item in (parsed.items if parsed else ())]
    changed = False
    for change in changes:
        positions = [i for i, entry in enumerate(entries) if entry[0] == change.key]
        if change.value is None:
            if positions:
                entries = [entry for entry in entries if entry[0] != change.key]
                changed = True
            continue
        created = change.created_at or (entries[positions[0]][2] if positions else now)
        section = render_item(change.key, change.value, created_at=created, updated_at=now)
        if positions:
            entries[positions[0]] = (change.key, section, created)
            entries = [entry for i, entry in enumerate(entries) if i not in positions[1:]]
        else:
            entries.append((change.key, section, created))
        changed = True
    if not changed or (parsed is None and not entries):
        return None
    return render_file(head, (entry[1] for entry in entries))


def find_item(key: str, *files: ParsedFile | None) -> StoredItem | None:
    """The item ``key`` from the first of ``files`` holding it (visible file first), or ``None``."""
    for parsed in files:
        found = parsed.find(key) if parsed is not None else None
        if found is not None:
            return found
    return None


def merged_items(*files: ParsedFile | None) -> list[StoredItem]:
    """Every key of ``files`` once, taken from the first file holding it (visible file first)."""
    seen: set[str] = set()
    out: list[StoredItem] = []
    for parsed in files:
        for item in parsed.unique() if parsed is not None else ():
            if item.key not in seen:
                seen.add(item.key)
                out.append(item)
    return out


def plan_changes(
    changes: Sequence[Change], visible: ParsedFile | None, hidden: ParsedFile | None, *, now: dt.datetime
) -> list[FileChanges]:
    """The writes that apply ``changes`` to a namespace's two files, in the order to make them.

    Each key ends up in one file: the visible one for a put with ``indexed``,
    the hidden one otherwise, neither for a delete (its last change wins, and it
    keeps the ``created_at`` it has in either file unless the batch deleted it
    first). A key's new copy is always written before its old one is removed,
    and a key in both files loses its visible copy last, so a crash between two
    writes leaves every key as it was or as the batch makes it, as readers that
    prefer the visible copy see it. Writes that would change nothing are left
    out: a batch without moves gives at most one write per file, one moving keys
    both ways gives visible, hidden, visible.

    Raises:
        ValueError: for a bad key or value, before anything is written.
    """
    final: dict[str, tuple[Change, bool]] = {}  # key -> (last change, a delete came before it)
    for change in changes:
        if change.value is not None:
            render_item(change.key, change.value, created_at=now, updated_at=now)  # validates key and value
        prev = final.get(change.key)
        final[change.key] = (change, prev is not None and (prev[0].value is None or prev[1]))
    in_visible = {item.key for item in visible.items} if visible is not None else set()
    in_hidden = {item.key for item in hidden.items} if hidden is not None else set()
    to_visible: list[Change] = []
    to_hidden: list[Change] = []
    deleted: list[str] = []
    for key, (change, recreated) in final.items():
        if change.value is None:
            deleted.append(key)
            continue
        existing = None if recreated else find_item(key, visible, hidden)
        placed = Change(key, change.value, change.indexed, existing.created_at if existing else now)
        (to_visible if change.indexed else to_hidden).append(placed)
    moved_in = [c.key for c in to_visible if c.key in in_hidden]
    moved_out = [c.key for c in to_hidden if c.key in in_visible]
    # A key in both files (an earlier crash) shows its visible copy: that one goes last.
    deleted_last = [k for k in deleted if k in in_visible and k in in_hidden]
    deleted_first = [k for k in deleted if k in in_visible and k not in in_hidden]
    visible_first = [*to_visible, *(Change(k, None) for k in deleted_first)]
    hidden_step = [*to_hidden, *(Change(k, None) for k in [*deleted, *moved_in] if k in in_hidden)]
    visible_last = [Change(k, None) for k in [*moved_out, *deleted_last]]
    if visible_last and not moved_in:
        # Nothing waits on the visible file: write the hidden copies, then the visible file once.
        steps = [(False, hidden_step), (True, [*visible_first, *visible_last])]
    else:
        steps = [(True, visible_first), (False, hidden_step), (True, visible_last)]
    return [FileChanges(indexed, tuple(step)) for indexed, step in steps if step]


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
    )


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
