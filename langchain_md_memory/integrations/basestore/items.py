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

from langgraph.store.base import Item, SearchItem

from ...errors import MemoryInputError, check_write_size
from .sections import ParsedFile, StoredItem, parse_sections

__all__ = [
    "MemorySearchItem",
    "check_page",
    "check_put",
    "indexed_items",
    "only_preamble",
    "redacted_value",
    "to_item",
    "to_search_item",
]


class MemorySearchItem(SearchItem):
    """A store search result that also carries the memory's own ranking of it.

    ``score`` is what LangGraph's stores give (with a query: the cosine similarity of query and
    item); ``hybrid_score`` is the memory's calibrated hybrid score (vector and keyword evidence,
    as ``mem.search`` ranks), ``None`` when the query did not rank the item.
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


def check_page(limit: int, offset: int) -> None:
    """Refuse a negative ``limit`` or ``offset``."""
    if limit < 0 or offset < 0:
        raise MemoryInputError(f"limit and offset must be 0 or more, got limit={limit}, offset={offset}")


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
