"""Putting memory in front of a model: hit formatting, dedup, budgets and message placement.

Shared by the tools, the graph nodes and the ``create_agent`` middleware, so
every entry point (tool call, session context, first-turn recall,
post-compaction re-injection) shows memory the same way, never repeats text
the model already has, and stays inside a token budget.

Example:
    .. code-block:: python

        from langchain_md_memory.integrations.prompt_context import recall_text

        text = recall_text(mem, "Can I buy more NVDA?", already_seen=[], max_tokens=400)
        # "Recalled from long-term memory ...\\n\\n[1] MEMORY.md#L7-L9 (score 1.00)\\n..."
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage, SystemMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from ..errors import MemoryStoreError
from ..prompts import DEFAULT_PROMPTS
from ..search.relevance import NO_STRONG_MATCH
from ..text import estimate_tokens, heading_level
from ..types import MEMORY_MESSAGE_IDS, RECALL_ID, SESSION_CONTEXT_ID, MemorySearchResult

if TYPE_CHECKING:
    from ..memory import MarkdownMemory

__all__ = [
    "MEMORY_MESSAGE_IDS",
    "RECALL_HEADER",
    "RECALL_ID",
    "SESSION_CONTEXT_HEADER",
    "SESSION_CONTEXT_ID",
    "after_leading_system",
    "dedupe_lines",
    "first_human_text",
    "format_hits",
    "has_ai_message",
    "is_summary_message",
    "message_text",
    "place_messages",
    "recall_text",
    "select_hits",
    "session_context_text",
]

logger = logging.getLogger(__name__)

SESSION_CONTEXT_HEADER = DEFAULT_PROMPTS.session_context_header
RECALL_HEADER = DEFAULT_PROMPTS.recall_header

_SUMMARY_PREFIXES = ("here is a summary of the conversation",)


def format_hits(hits: Sequence[MemorySearchResult], *, start: int = 1) -> str:
    """Hits as compact blocks a model can cite: ``[n] path#Lstart-Lend (score 0.83)`` then the text.

    A hit not labelled ``confident`` says so (``(score 0.41, weak match)``) when others are:
    the model weighs it instead of taking it for the answer.
    """
    mixed = any(hit.confident for hit in hits)

    def label(hit: MemorySearchResult) -> str:
        weak = ", weak match" if mixed and not hit.confident else ""
        days = (("from", hit.valid_from), ("until", hit.valid_until))  # an as-of search: when it held
        held = "".join(f", valid {word} {day}" for word, day in days if day)
        return f"(score {hit.score:.2f}{weak}{held})"

    blocks = [
        f"[{n}] {hit.citation} {label(hit)}\n{hit.text.strip()}"
        for n, hit in enumerate(hits, start=start)
    ]
    return "\n\n".join(blocks)


def search_answer(hits: Sequence[MemorySearchResult]) -> str:
    """What a reader is shown for ``hits``: the hits, under :data:`NO_STRONG_MATCH` when none is confident."""
    text = format_hits(hits)
    return text if any(hit.confident for hit in hits) else f"{NO_STRONG_MATCH}\n\n{text}"


def message_text(message: BaseMessage) -> str:
    """The text of a message (string content or its text blocks)."""
    return message.text


def is_summary_message(message: BaseMessage) -> bool:
    """True for a message that replaced compacted history with a summary.

    Recognises LangChain's ``SummarizationMiddleware`` marker
    (``additional_kwargs["lc_source"] == "summarization"``) and the
    "Here is a summary of the conversation ..." wording LangChain and LangGraph
    summarisers use; pass your own predicate to the nodes for other summarisers.
    """
    if message.additional_kwargs.get("lc_source") == "summarization":
        return True
    return message_text(message).lstrip().lower().startswith(_SUMMARY_PREFIXES)


def first_human_text(messages: Sequence[BaseMessage]) -> str:
    """The text of the first human message, or ``""``."""
    for message in messages:
        if isinstance(message, HumanMessage) and not is_summary_message(message):
            return message_text(message).strip()
    return ""


def _norm(text: str) -> str:
    return " ".join(text.split())


def _haystack(texts: Iterable[str]) -> str:
    return "\n".join(_norm(t) for t in texts)


def _content_lines(text: str) -> list[str]:
    """Normalised non-blank lines that are not Markdown headings."""
    lines = (_norm(line) for line in text.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def _already_seen(text: str, haystack: str) -> bool:
    # A passage is a duplicate when every line with content is already in front of the model;
    # headings alone never count as new information.
    return all(line in haystack for line in _content_lines(text))


def dedupe_lines(text: str, already_seen: Iterable[str]) -> str:
    """``text`` without the content lines already present in ``already_seen``.

    Headings are kept only when some content remains under them; returns ``""``
    when nothing new is left.
    """
    haystack = _haystack(already_seen)
    kept: list[str] = []
    for line in text.splitlines():
        stripped = _norm(line)
        if stripped and not stripped.startswith("#") and stripped in haystack:
            continue
        kept.append(line)
    return _drop_empty_sections(kept)


def _drop_empty_sections(lines: list[str]) -> str:
    out: list[str] = []
    for i, line in enumerate(lines):
        level = heading_level(line)
        if level:
            # Keep a heading only if content comes before the next heading of the same or higher rank.
            has_content = False
            for later in lines[i + 1 :]:
                later_level = heading_level(later)
                if later_level and later_level <= level:
                    break
                if later.strip() and not later_level:
                    has_content = True
                    break
            if not has_content:
                continue
        out.append(line)
    text = "\n".join(out).strip()
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    return text if _content_lines(text) else ""


def select_hits(hits: Sequence[MemorySearchResult], already_seen: Iterable[str], max_tokens: int
                ) -> list[MemorySearchResult]:
    """Hits not already in front of the model, best first, while their blocks fit ``max_tokens``.

    Tokens are counted with the package's CJK-aware estimate (the same one the
    session-context budget uses); a hit that does not fit is skipped and
    smaller later ones are still tried.
    """
    haystack = _haystack(already_seen)
    chosen: list[MemorySearchResult] = []
    used = 0
    seen_chunks: set[str] = set()
    for hit in hits:
        key = hit.chunk_id or hit.citation
        if key in seen_chunks or _already_seen(hit.text, haystack):
            continue
        cost = estimate_tokens(format_hits([hit]))
        if used + cost > max_tokens:
            continue
        chosen.append(hit)
        seen_chunks.add(key)
        used += cost
    return chosen


def recall_text(mem: MarkdownMemory, query: str, *, already_seen: Iterable[str], max_tokens: int,
                max_results: int | None = None, header: str = RECALL_HEADER) -> str:
    """First-turn recall: search ``query``, keep new hits within the budget, format them; ``""`` if none.

    The hits follow ``header`` (the ``recall_header`` of :class:`~langchain_md_memory.prompts.MemoryPrompts`).
    Nobody weighs them there, so only ``confident`` hits are injected unless the memory's
    ``recall_confident_only`` is False.

    A memory that cannot answer (closed, broken index) logs a warning and yields ``""``.
    """
    if not query.strip() or max_tokens <= 0:
        return ""
    try:
        ranked = mem.search_detailed(query, max_results=max_results)
    except (MemoryStoreError, OSError) as exc:
        logger.warning("first-turn recall skipped: memory unavailable: %s", exc)
        return ""
    seen = list(already_seen)
    haystack = _haystack(seen)
    candidates = ([hit for hit in ranked.hits if hit.confident] if mem.config.session.recall_confident_only
                  else ranked.hits)
    new = [h for h in candidates if not _already_seen(h.text, haystack)]
    budget = max_tokens - estimate_tokens(header) - estimate_tokens(_left_out_note(len(new))) - 1
    if not new or budget < 0:  # no room even for the header and the note: recall is off
        return ""
    hits = select_hits(new, (), budget)  # ``new`` holds no hit already seen: no second check
    # As in the session context, hits that do not fit are named, never dropped silently.
    note = _left_out_note(len(new) - len(hits))
    return "\n\n".join(part for part in (header, format_hits(hits), note) if part)


def _left_out_note(count: int) -> str:
    if count <= 0:
        return ""
    return f"{count} more memory hit{'s' if count > 1 else ''} did not fit here; find them with memory_search"


def session_context_text(mem: MarkdownMemory, *, max_tokens: int | None = None,
                         already_seen: Iterable[str] | None = None,
                         header: str = SESSION_CONTEXT_HEADER) -> str:
    """``load_session_context()`` under ``header``, optionally without lines already seen; ``""`` if empty."""
    try:
        context = mem.load_session_context(max_tokens)
    except (MemoryStoreError, OSError) as exc:
        logger.warning("session context skipped: memory unavailable: %s", exc)
        return ""
    if already_seen is not None:
        context = dedupe_lines(context, already_seen)
    return f"{header}\n\n{context}" if context.strip() else ""


def place_messages(messages: Sequence[BaseMessage], new: BaseMessage,
                   position: Callable[[list[BaseMessage]], int]) -> list[Any]:
    """A ``messages`` update that puts ``new`` (with its fixed id) at ``position(others)``.

    ``others`` is ``messages`` without any message carrying ``new.id``. When the
    existing message already sits at that index, the update replaces it in
    place (``add_messages`` matches ids); otherwise the whole list is rewritten
    with ``RemoveMessage(REMOVE_ALL_MESSAGES)``, since ``add_messages`` would
    append a new id at the end.
    """
    others = [m for m in messages if m.id != new.id]
    index = position(others)
    if index < len(messages) and messages[index].id == new.id and len(others) == len(messages) - 1:
        return [new]
    return [RemoveMessage(id=REMOVE_ALL_MESSAGES), *others[:index], new, *others[index:]]


def after_leading_system(messages: list[BaseMessage]) -> int:
    """Index just after the leading run of SystemMessages."""
    for i, message in enumerate(messages):
        if not isinstance(message, SystemMessage):
            return i
    return len(messages)


def has_ai_message(messages: Sequence[BaseMessage]) -> bool:
    """True once the model has answered at least once."""
    return any(isinstance(m, AIMessage) for m in messages)
