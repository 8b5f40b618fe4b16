"""The pre-compaction memory flush: before history is compacted, save its durable facts.

When the conversation reaches ``trigger_tokens`` and no flush happened in the
current compaction cycle, a chat model is asked (with the ``flush`` prompt of
:class:`~langchain_md_memory.prompts.MemoryPrompts`, domain-neutral by default)
for the durable facts and preferences as Markdown bullets, and its reply is
appended to today's log under ``## Pre-compaction memory flush``. The reply
``NO_MEMORY_TO_FLUSH`` (or an empty one) writes nothing; a model error is
logged and nothing is marked, so the next pass tries again.

The cycle rule (state key ``memory_flushed``): a flush sets it; it resets to
``False`` as soon as the conversation is back under ``trigger_tokens``, which
is what a compaction (summary, trim) does. So there is one flush per
compaction cycle, and a history that stays large is never flushed twice.

The graph node (:func:`~langchain_md_memory.integrations.nodes.create_memory_flush_node`)
and the ``create_agent`` middleware both call :func:`flush_update` /
:func:`aflush_update`.

Example:
    .. code-block:: python

        from langchain_md_memory.features.flush import run_memory_flush

        result = run_memory_flush(mem, chat_model, state["messages"])
        result.written, result.path  # (True, "2026-12-02.md")
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately, get_buffer_string
from langchain_core.runnables import Runnable, RunnableConfig, ensure_config
from langgraph.constants import TAG_NOSTREAM

from ..errors import MemoryPathError, MemoryStoreError
from ..files.facts import fact_lines, normalize_fact, provenance_label, strip_annotations
from ..prompts import DEFAULT_PROMPTS, MEMORY_FLUSH_TOKEN
from ..text.redaction import scrub
from ..types import MEMORY_MESSAGE_IDS

if TYPE_CHECKING:
    from ..memory import MarkdownMemory

__all__ = [
    "DEFAULT_TRIGGER_TOKENS",
    "FLUSHED_KEY",
    "FLUSH_HEADING",
    "MEMORY_FLUSH_PROMPT",
    "MEMORY_FLUSH_TOKEN",
    "FlushResult",
    "TokenCounter",
    "aflush_update",
    "arun_memory_flush",
    "flush_action",
    "flush_prompt_messages",
    "flush_source",
    "flush_transcript",
    "flush_update",
    "parse_flush_reply",
    "run_memory_flush",
]

logger = logging.getLogger(__name__)

FLUSH_HEADING = "## Pre-compaction memory flush"
"""Heading each flush is appended under in today's file."""

FLUSHED_KEY = "memory_flushed"
"""State key: ``True`` once this compaction cycle was flushed."""

DEFAULT_TRIGGER_TOKENS = 4000
"""Default flush trigger; keep it at or below your compaction trigger."""

TokenCounter = Callable[[Sequence[BaseMessage]], int]
"""Counts a conversation's tokens (default: ``count_tokens_approximately``)."""

MEMORY_FLUSH_PROMPT = DEFAULT_PROMPTS.flush
"""Default system prompt of the flush call (the transcript follows as the human message);
see :class:`~langchain_md_memory.prompts.MemoryPrompts` for others."""

_REPLACES_RE = re.compile(r"\s*\((?:replaces|supersedes):\s*(.+?)\)\s*$", re.IGNORECASE)
_FENCE_RE = re.compile(r"^```[\w-]*\n(.*?)\n?```$", re.DOTALL)
_TOKEN_LINE_RE = re.compile(rf"^[\s`*_\"'.]*{MEMORY_FLUSH_TOKEN}[\s`*_\"'.]*$")


@dataclass(frozen=True, slots=True)
class FlushResult:
    """What one flush did: ``written`` with the file ``path`` and ``content``, or ``error``."""

    written: bool
    path: str | None = None
    content: str = ""
    error: str | None = None


def flush_transcript(messages: Sequence[BaseMessage]) -> str:
    """The conversation as plain text for the flush model.

    Memory this package injected and tool results are left out: tool output
    is transient (quotes, prices) or already in memory (``memory_search``).
    AI messages that only call tools are left out too.
    """
    kept: list[BaseMessage] = []
    for message in messages:
        if message.id in MEMORY_MESSAGE_IDS or isinstance(message, ToolMessage):
            continue
        if isinstance(message, AIMessage) and not message.text.strip():
            continue
        kept.append(message)
    return get_buffer_string(kept)


def flush_prompt_messages(messages: Sequence[BaseMessage], prompt: str = MEMORY_FLUSH_PROMPT
                          ) -> list[BaseMessage]:
    """The two messages sent to the flush model: the prompt (``prompt``) and the transcript."""
    transcript = flush_transcript(messages)
    return [
        SystemMessage(prompt),
        HumanMessage(f"<conversation>\n{transcript}\n</conversation>"),
    ]


def parse_flush_reply(reply: Any) -> str:
    """The text to write from a flush reply, or ``""`` for the sentinel or an empty reply."""
    text = reply.text if isinstance(reply, BaseMessage) else str(reply or "")
    text = text.strip()
    fenced = _FENCE_RE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    lines = [line for line in text.splitlines() if not _TOKEN_LINE_RE.match(line)]
    return "\n".join(lines).strip()


def flush_action(messages: Sequence[BaseMessage], *, flushed: bool, trigger_tokens: int,
                 token_counter: TokenCounter | None = None) -> Literal["flush", "reset", "skip"]:
    """``flush`` at/over the trigger when not yet flushed; ``reset`` back under it after a flush."""
    tokens = (token_counter or count_tokens_approximately)(messages)
    if tokens >= trigger_tokens:
        return "skip" if flushed else "flush"
    return "reset" if flushed else "skip"


def _config() -> RunnableConfig:
    # nostream keeps the flush reply out of a graph's streamed "messages".
    return {"tags": [TAG_NOSTREAM], "metadata": {"lc_source": "memory_flush"}, "run_name": "memory_flush"}


def flush_source(messages: Sequence[BaseMessage]) -> str:
    """The ``src:`` label of flushed facts: the graph's thread (when run in one), the last message, today."""
    configurable = ensure_config().get("configurable") or {}
    thread = configurable.get("thread_id")
    last = next((m.id for m in reversed(messages) if m.id and isinstance(m, HumanMessage | AIMessage)), None)
    return provenance_label(via="flush", thread=None if thread is None else str(thread), message=last)


def _write(mem: MarkdownMemory, content: str, source: str | None = None) -> FlushResult:
    try:
        content = _supersede_replaced(mem, content, source)
        if not content:
            return FlushResult(written=False)
        done = mem.remember(content, file="daily", source=source, heading=FLUSH_HEADING)
    except (MemoryStoreError, OSError) as exc:
        logger.warning("memory flush: could not write today's file: %s", exc)
        return FlushResult(written=False, content=content, error=f"{type(exc).__name__}: {exc}")
    if not done.written:
        logger.info("memory flush: every fact was already remembered (%d)", len(done.duplicates))
        return FlushResult(written=False, content=content)
    logger.info("memory flush: wrote %d fact(s) to %s", done.written, done.path)
    return FlushResult(written=True, path=done.path, content=content)


def _supersede_replaced(mem: MarkdownMemory, content: str, source: str | None) -> str:
    """Facts marked ``(replaces: old)`` supersede ``old`` in MEMORY.md; the rest is returned to append.

    A marked fact whose old wording is not found in MEMORY.md is appended like any other, without the mark.
    """
    kept = []
    for line in content.split("\n"):
        found = _REPLACES_RE.search(line)
        if found is None:
            kept.append(line)
            continue
        fact = line[: found.start()] + line[found.end() :]
        old = _live_line(mem, found[1])
        if old is None or not mem.supersede(old, fact.strip(), file="long_term", source=source):
            kept.append(fact.rstrip())
    return "\n".join(kept).strip()


def _live_line(mem: MarkdownMemory, old: str) -> str | None:
    """The live fact of MEMORY.md whose text holds ``old`` (compared normalised), as written."""
    wanted = normalize_fact(old)
    try:
        text = mem.get("long_term")
    except MemoryPathError:
        return None
    for fact in fact_lines(text):
        if wanted and wanted in normalize_fact(fact.text):
            return strip_annotations(fact.text).strip()
    return None


def _model_error(exc: Exception) -> FlushResult:
    error = scrub(f"{type(exc).__name__}: {exc}")
    logger.warning("memory flush: the model call failed, nothing written: %s", error)
    return FlushResult(written=False, error=error)


def _facts(reply: Any) -> str:
    content = parse_flush_reply(reply)
    if not content:
        logger.debug("memory flush: nothing durable to save")
    return content


def run_memory_flush(mem: MarkdownMemory, model: Runnable[Any, Any], messages: Sequence[BaseMessage], *,
                     prompt: str = MEMORY_FLUSH_PROMPT) -> FlushResult:
    """Ask ``model`` for the durable facts in ``messages`` and append them to today's file.

    ``prompt`` is the flush call's system prompt. Never raises for a model or write failure:
    it logs and returns ``FlushResult(written=False, error=...)``.
    """
    try:
        reply = model.invoke(flush_prompt_messages(messages, prompt), config=_config())
    except Exception as exc:
        return _model_error(exc)
    content = _facts(reply)
    return _write(mem, content, flush_source(messages)) if content else FlushResult(written=False)


async def arun_memory_flush(mem: MarkdownMemory, model: Runnable[Any, Any],
                            messages: Sequence[BaseMessage], *,
                            prompt: str = MEMORY_FLUSH_PROMPT) -> FlushResult:
    """Async twin of :func:`run_memory_flush` (the model is awaited, the write runs in a thread)."""
    try:
        reply = await model.ainvoke(flush_prompt_messages(messages, prompt), config=_config())
    except Exception as exc:
        return _model_error(exc)
    content = _facts(reply)
    if not content:
        return FlushResult(written=False)
    return await asyncio.to_thread(_write, mem, content, flush_source(messages))


_RUN: dict[str, Any] = {}  # sentinel of _plan: "ask the model"


def _plan(state: dict[str, Any] | Any, trigger_tokens: int, token_counter: TokenCounter | None
          ) -> tuple[list[Any], dict[str, Any] | None]:
    """The conversation, and the update to return without flushing (``_RUN`` when a flush is due)."""
    messages = list(state.get("messages") or [])
    action = flush_action(messages, flushed=bool(state.get(FLUSHED_KEY)), trigger_tokens=trigger_tokens,
                          token_counter=token_counter)
    if action == "reset":
        return messages, {FLUSHED_KEY: False}
    if action == "skip":
        return messages, None
    return messages, _RUN


def _after(result: FlushResult) -> dict[str, Any] | None:
    # A model error leaves the flag unset so the next pass retries; a write error is logged the same way.
    return None if result.error is not None else {FLUSHED_KEY: True}


def flush_update(mem: MarkdownMemory, model: Runnable[Any, Any], state: dict[str, Any] | Any, *,
                 trigger_tokens: int, token_counter: TokenCounter | None = None,
                 prompt: str = MEMORY_FLUSH_PROMPT) -> dict[str, Any] | None:
    """The state update of one flush check over ``state["messages"]`` (``None`` when nothing changes)."""
    messages, early = _plan(state, trigger_tokens, token_counter)
    if early is not _RUN:
        return early
    return _after(run_memory_flush(mem, model, messages, prompt=prompt))


async def aflush_update(mem: MarkdownMemory, model: Runnable[Any, Any], state: dict[str, Any] | Any, *,
                        trigger_tokens: int, token_counter: TokenCounter | None = None,
                        prompt: str = MEMORY_FLUSH_PROMPT) -> dict[str, Any] | None:
    """Async twin of :func:`flush_update`."""
    messages, early = _plan(state, trigger_tokens, token_counter)
    if early is not _RUN:
        return early
    return _after(await arun_memory_flush(mem, model, messages, prompt=prompt))
