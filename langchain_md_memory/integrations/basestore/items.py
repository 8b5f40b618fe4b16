"""From the sections of a namespace file to LangGraph store items, and the checks around them.

Example:
    .. code-block:: python

        from langchain_md_memory.integrations.basestore.items import indexed_items, to_item

        items = [to_item(("users", "alice"), stored) for stored in indexed_items(parsed)]
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from typing import Any

from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    SearchItem,
    SearchOp,
    validate_op_namespace,
)

from ...errors import MemoryInputError, check_write_size
from .filters import check_filter
from .namespaces import check_labels
from .sections import ParsedFile, StoredItem, parse_sections

__all__ = [
    "MemorySearchItem",
    "check_count",
    "check_put",
    "indexed_items",
    "only_preamble",
    "redacted_value",
    "to_item",
    "to_search_item",
    "validate_op",
]


class MemorySearchItem(SearchItem):
    """A store search result that also carries the memory's own ranking of it.

    ``score`` is LangGraph's relevance score of a query search: the memory's hybrid score while
    items are embedded whole, the cosine similarity over the index fields a store or a put chose
    otherwise; ``hybrid_score`` is the memory's calibrated hybrid score (vector and keyword
    evidence, as ``mem.search`` ranks) either way, ``None`` when the query did not rank the item.
    """

    __slots__ = ("hybrid_score",)

    def __init__(self, item: Item, score: float | None, hybrid_score: float | None) -> None:
        super().__init__(namespace=item.namespace, key=item.key, value=item.value, created_at=item.created_at,
                         updated_at=item.updated_at, score=score)
        self.hybrid_score = hybrid_score


def only_preamble(text: str | None, preamble: str) -> bool:
    """True when ``text`` is a namespace file with no items and the store's own preamble only."""
    if text is None:
        return False
    parsed = parse_sections(text, fallback_time=dt.datetime.now(dt.UTC))
    return not parsed.items and parsed.preamble.strip() == preamble.strip()


def indexed_items(parsed: ParsedFile | None) -> list[StoredItem]:
    """The items of a visible namespace file that the index holds (not those marked ``"index": false``)."""
    return [stored for stored in parsed.unique() if stored.indexed] if parsed is not None else []


def validate_op(op: Op) -> None:
    """Refuse an op that cannot run, before the batch holding it reads or writes anything.

    Raises:
        InvalidNamespaceError: for an empty namespace where an item must live, or a bad label.
        MemoryInputError: for a search or listing whose query, filter, ``limit``, ``offset`` or
            ``max_depth`` is not one (see :func:`.filters.check_filter` and :func:`check_count`).
    """
    validate_op_namespace(op)
    if isinstance(op, GetOp | PutOp):
        if not op.namespace:
            raise InvalidNamespaceError("Namespace cannot be empty: items live in a namespace folder")
        check_labels(op.namespace)
    elif isinstance(op, SearchOp):
        check_labels(op.namespace_prefix)
        if op.query is not None and not isinstance(op.query, str):
            raise MemoryInputError(
                f"query must be a string (or None), got {type(op.query).__name__} {op.query!r:.80}"
            )
        check_filter(op.filter)
        check_count("limit", op.limit)
        check_count("offset", op.offset)
    elif isinstance(op, ListNamespacesOp):
        for condition in op.match_conditions or ():
            check_labels(tuple(label for label in condition.path if label != "*"))
        check_count("limit", op.limit)
        check_count("offset", op.offset)
        if op.max_depth is not None:
            check_count("max_depth", op.max_depth)


def check_count(name: str, value: object) -> int:
    """``value`` when it is a whole number, 0 or more (a page's ``limit`` or ``offset``, a ``max_depth``).

    Raises:
        MemoryInputError: for anything else (``1.5``, ``"3"``, ``True``, ``-1``), naming it.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise MemoryInputError(f"{name}={value!r} is refused: {name} must be a whole number, 0 or more")
    return value


def to_item(namespace: tuple[str, ...], stored: StoredItem) -> Item:
    """A stored section as a LangGraph ``Item``."""
    return Item(
        value=stored.value,
        key=stored.key,
        namespace=namespace,
        created_at=stored.created_at,
        updated_at=stored.updated_at,
    )


def to_search_item(item: Item, score: float | None, hybrid_score: float | None = None) -> MemorySearchItem:
    """An ``Item`` as a search result with ``score`` (``None``: not scored by a query)."""
    return MemorySearchItem(item, score, hybrid_score)


def redacted_value(value: Any, redact: Callable[[str], str]) -> Any:
    """``value`` with ``redact`` applied to every string in it, field names included.

    As every other write of the memory is: a field named after a secret (``{"ghp_...": true}``)
    is written into the Markdown as much as a value is.
    """
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact(key) if isinstance(key, str) else key: redacted_value(item, redact)
                for key, item in value.items()}
    if isinstance(value, list):
        return [redacted_value(item, redact) for item in value]
    return value


def check_put(key: str, value: Any, *, redact: Callable[[str], str], max_write_bytes: int) -> None:
    """The memory's write cap and redaction rules for one put, which every other write path keeps too.

    A key is how the caller finds the item again, so a secret-shaped key is refused, not rewritten
    (the message shows it redacted). The cap applies to the value's JSON, with the same message.
    """
    text = json.dumps(value, ensure_ascii=False, default=str)
    check_write_size(len(text.encode("utf-8", "surrogatepass")), max_write_bytes)
    if (shown := redact(key)) != key:
        raise MemoryInputError(
            f"Store key {shown!r} holds a secret; keys are written into the Markdown as headings: "
            "name the item (e.g. 'github-token') and keep the secret out of the memory"
        )
