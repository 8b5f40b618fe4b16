"""Writes to a namespace's files, planned: which file each put goes to, and the new text of each.

A key lives in one of the namespace's two files (visible and indexed, or hidden
and unindexed). :func:`plan_changes` orders the writes of a move so that a crash
between them leaves the key in both, and readers (:func:`find_item`,
:func:`merged_items`) then take the visible file's copy, which is the state
before a move out of it or after a move into it.

Example:
    .. code-block:: python

        import datetime as dt
        from langchain_md_memory.integrations.basestore.changes import Change, apply_changes

        now = dt.datetime(2026, 7, 14, tzinfo=dt.UTC)
        text = apply_changes(None, [Change("food", {"content": "Loves hotpot"})], now=now,
                             preamble="# users / alice\n", fallback_time=now)
        assert "## food" in text
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .expiry import Expiry
from .sections import ParsedFile, StoredItem, parse_sections, render_file, render_item, with_expiry

__all__ = ["Change", "FileChanges", "apply_changes", "find_item", "merged_items", "plan_changes",
           "refresh_expiries"]


@dataclass(frozen=True, slots=True)
class Change:
    """One put to apply: ``value=None`` deletes the key.

    ``indexed`` picks the file in :func:`plan_changes` (the visible namespace
    file, or the hidden unindexed one when False); :func:`apply_changes` ignores
    it. ``created_at``, when set, is the item's creation time whatever the file
    holds (an item moving in from the other file keeps its own). ``ttl`` (minutes) makes the
    item expire that long after the write; ``None`` never. ``fields``: the paths to embed the item
    by (``put(..., index=[...])``), ``None`` for the store's.
    """

    key: str
    value: Mapping[str, Any] | None
    indexed: bool = True
    created_at: dt.datetime | None = None
    ttl: float | None = None
    fields: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class FileChanges:
    """One write of a plan: ``changes`` for the visible file (``indexed``) or the hidden one."""

    indexed: bool
    changes: tuple[Change, ...]


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
        expiry = Expiry.after(change.ttl, now) if change.ttl is not None else None
        section = render_item(change.key, change.value, created_at=created, updated_at=now, expiry=expiry,
                              embed_fields=change.fields)
        if positions:
            entries[positions[0]] = (change.key, section, created)
            entries = [entry for i, entry in enumerate(entries) if i not in positions[1:]]
        else:
            entries.append((change.key, section, created))
        changed = True
    if not changed or (parsed is None and not entries):
        return None
    return render_file(head, (entry[1] for entry in entries))


def refresh_expiries(text: str | None, keys: Collection[str], *, now: dt.datetime,
                     fallback_time: dt.datetime) -> str | None:
    """``text`` with the expiry of each item of ``keys`` that has a TTL pushed to ``now`` plus it.

    Only those items' md-memory lines change (their timestamps stay: a read is no update);
    ``None`` when nothing changes.
    """
    if text is None:
        return None
    lines = text.split("\n")
    changed = False
    for item in parse_sections(text, fallback_time=fallback_time).items:
        if item.key not in keys or item.expiry is None:
            continue
        refreshed = item.expiry.refreshed(now)
        if refreshed == item.expiry:
            continue
        meta = item.start_line  # the line below the heading, 0-based
        lines[meta] = with_expiry(lines[meta], refreshed)
        changed = True
    return "\n".join(lines) if changed else None


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
        placed = Change(key, change.value, change.indexed, existing.created_at if existing else now,
                        change.ttl, change.fields)
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
