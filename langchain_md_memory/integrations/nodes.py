"""LangGraph nodes that bring memory into a conversation and save it before compaction.

Every factory returns a :class:`MemoryNode`: pass it to ``StateGraph.add_node``
(it runs natively under ``invoke`` and ``ainvoke``) or call it directly with a
state dict. Nodes read ``state["messages"]`` and return partial updates, so
they work on ``MessagesState``; the flush node also keeps ``memory_flushed``,
which you add to your state schema (or use :class:`MemoryState`).

- :func:`create_session_context_node`: one SystemMessage (id
  ``md-memory-session-context``) first in ``messages`` with
  ``mem.load_session_context()``, replaced, never duplicated, on later turns.
- :func:`create_recall_node`: on the first turn, searches memory with the
  first human message and injects the new hits (id ``md-memory-recall``)
  after the leading system messages, within a token budget.
- :func:`create_post_compaction_node`: after a summary replaced the history
  (and took the session context with it), re-injects the session context
  without the lines the summary already holds.
- :func:`create_memory_flush_node`: the pre-compaction flush
  (see :mod:`langchain_md_memory.features.flush` for the prompt and the cycle rule).

Example:
    .. code-block:: python

        from langgraph.graph import START, StateGraph
        from langchain_md_memory.integrations.nodes import (
            MemoryState, create_memory_flush_node, create_session_context_node,
        )

        graph = StateGraph(MemoryState)
        graph.add_node("memory", create_session_context_node(mem))
        graph.add_node("flush", create_memory_flush_node(mem, model, trigger_tokens=3000))
        graph.add_node("agent", call_model)
        graph.add_edge(START, "memory")
        graph.add_edge("memory", "flush")     # flush before anything trims or summarises
        graph.add_edge("flush", "agent")
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NotRequired

from langchain_core.language_models import LanguageModelLike
from langchain_core.messages import BaseMessage, RemoveMessage, SystemMessage, convert_to_messages
from langchain_core.runnables import Runnable, RunnableLambda
from langgraph.graph import MessagesState

from ..errors import MemoryInputError
from ..features.dream import dream
from ..features.flush import DEFAULT_TRIGGER_TOKENS, TokenCounter, aflush_update, flush_update
from ..prompts import DEFAULT_PROMPTS, MemoryPrompts
from .prompt_context import (
    RECALL_ID,
    SESSION_CONTEXT_ID,
    after_leading_system,
    first_human_text,
    has_ai_message,
    is_summary_message,
    message_text,
    place_messages,
    recall_text,
    session_context_text,
)

if TYPE_CHECKING:
    from ..memory import MarkdownMemory

__all__ = [
    "DEFAULT_RECALL_TOKENS",
    "MemoryNode",
    "MemoryState",
    "create_dream_node",
    "create_memory_flush_node",
    "create_post_compaction_node",
    "create_recall_node",
    "create_session_context_node",
]

logger = logging.getLogger(__name__)

DEFAULT_RECALL_TOKENS = 600
"""Default token budget of first-turn recall."""

_Update = dict[str, Any] | None


class MemoryState(MessagesState):
    """``MessagesState`` plus ``memory_flushed``, the flush node's once-per-cycle flag."""

    memory_flushed: NotRequired[bool]


class MemoryNode(RunnableLambda[Any, _Update]):
    """A graph node with native sync and async paths that can also be called directly.

    Example:
        .. code-block:: python

            node = create_session_context_node(mem)
            update = node({"messages": [HumanMessage("hi")]})     # direct call
            graph.add_node("memory", node)                        # or as a node
    """

    # The input is typed Any (a state mapping at run time) so that ``StateGraph.add_node`` type-checks
    # with any state schema.
    def __init__(self, func: Callable[[Any], _Update], afunc: Callable[[Any], Awaitable[_Update]],
                 name: str) -> None:
        super().__init__(func, afunc=afunc, name=name)
        self._sync = func
        self._async = afunc

    def __call__(self, state: Any) -> _Update:
        """Run the node on ``state`` and return its partial update (or ``None``)."""
        return self._sync(state)

    async def acall(self, state: Any) -> _Update:
        """Async twin of calling the node."""
        return await self._async(state)


def _messages(state: Mapping[str, Any]) -> list[BaseMessage]:
    return convert_to_messages(state.get("messages") or [])


def _threaded(func: Callable[[Mapping[str, Any]], _Update]
              ) -> Callable[[Mapping[str, Any]], Awaitable[_Update]]:
    async def run(state: Mapping[str, Any]) -> _Update:
        return await asyncio.to_thread(func, state)

    return run


def create_session_context_node(mem: MarkdownMemory, *, max_tokens: int | None = None,
                                prompts: MemoryPrompts = DEFAULT_PROMPTS) -> MemoryNode:
    """A node keeping one SystemMessage with ``mem.load_session_context()`` first in ``messages``.

    The message has the fixed id ``md-memory-session-context``: on the first
    turn the history is rewritten to put it at index 0; later turns replace it
    in place (or return nothing when it is unchanged). An empty memory removes it.
    The context goes under ``prompts.session_context_header``.

    Example:
        .. code-block:: python

            graph.add_node("memory", create_session_context_node(mem, max_tokens=1500))
    """

    def run(state: Mapping[str, Any]) -> _Update:
        messages = _messages(state)
        content = session_context_text(mem, max_tokens=max_tokens, header=prompts.session_context_header)
        existing = next((m for m in messages if m.id == SESSION_CONTEXT_ID), None)
        if not content:
            return {"messages": [RemoveMessage(id=SESSION_CONTEXT_ID)]} if existing is not None else None
        if existing is not None and messages[0] is existing and existing.content == content:
            return None
        message = SystemMessage(content, id=SESSION_CONTEXT_ID)
        return {"messages": place_messages(messages, message, lambda others: 0)}

    return MemoryNode(run, _threaded(run), "memory_session_context")


def create_memory_flush_node(mem: MarkdownMemory, model: Runnable[Any, Any], *,
                             trigger_tokens: int = DEFAULT_TRIGGER_TOKENS,
                             token_counter: TokenCounter | None = None,
                             prompts: MemoryPrompts = DEFAULT_PROMPTS) -> MemoryNode:
    """A node that saves durable facts to today's file once per compaction cycle.

    At ``trigger_tokens`` or more (``token_counter``, default langchain-core's
    ``count_tokens_approximately``) and ``memory_flushed`` not set, asks
    ``model`` for durable facts (system prompt ``prompts.flush``) and appends them under
    ``## Pre-compaction memory flush``, then returns ``{"memory_flushed": True}``.
    Back under the trigger (after a compaction) it returns
    ``{"memory_flushed": False}``. ``NO_MEMORY_TO_FLUSH`` or an empty reply
    writes nothing; a model error is logged and the graph goes on. Place it
    before the node that trims or summarises; add ``memory_flushed: bool`` to
    your state (see :class:`MemoryState`), or it flushes on every pass over
    the trigger.

    Example:
        .. code-block:: python

            graph.add_node("flush", create_memory_flush_node(mem, ChatOpenAI(), trigger_tokens=6000))
    """
    if trigger_tokens < 1:
        raise MemoryInputError(f"trigger_tokens must be at least 1, got {trigger_tokens}")

    def run(state: Mapping[str, Any]) -> _Update:
        return flush_update(mem, model, state, trigger_tokens=trigger_tokens, token_counter=token_counter,
                            prompt=prompts.flush)

    async def arun(state: Mapping[str, Any]) -> _Update:
        return await aflush_update(mem, model, state, trigger_tokens=trigger_tokens,
                                   token_counter=token_counter, prompt=prompts.flush)

    return MemoryNode(run, arun, "memory_flush")


def create_recall_node(mem: MarkdownMemory, *, max_tokens: int = DEFAULT_RECALL_TOKENS,
                       max_results: int | None = None,
                       prompts: MemoryPrompts = DEFAULT_PROMPTS) -> MemoryNode:
    """A first-turn node: search memory with the first human message and inject the top hits.

    Runs only before the model has answered (no AIMessage yet) and only once
    (id ``md-memory-recall``). Hits whose lines are all already in the
    messages (the session context, say) are dropped; the rest are kept best
    first while they fit ``max_tokens``, as one SystemMessage after the
    leading system messages, under ``prompts.recall_header``. Nothing is
    injected when nothing new matches.

    Example:
        .. code-block:: python

            graph.add_edge(START, "memory")             # session context first
            graph.add_node("recall", create_recall_node(mem, max_tokens=400))
            graph.add_edge("memory", "recall")
    """

    def run(state: Mapping[str, Any]) -> _Update:
        messages = _messages(state)
        if any(m.id == RECALL_ID for m in messages) or has_ai_message(messages):
            return None
        text = recall_text(mem, first_human_text(messages), already_seen=_texts(messages),
                           max_tokens=max_tokens, max_results=max_results, header=prompts.recall_header)
        if not text:
            return None
        message = SystemMessage(text, id=RECALL_ID)
        return {"messages": place_messages(messages, message, after_leading_system)}

    return MemoryNode(run, _threaded(run), "memory_recall")


def create_post_compaction_node(mem: MarkdownMemory, *, max_tokens: int | None = None,
                                is_summary: Callable[[BaseMessage], bool] | None = None,
                                prompts: MemoryPrompts = DEFAULT_PROMPTS) -> MemoryNode:
    """A node that re-injects the session context after a summary replaced the history.

    Acts only when ``messages`` holds a summary message (``is_summary``,
    default :func:`~langchain_md_memory.integrations.prompt_context.is_summary_message`) and no
    session-context message survived the compaction. The context (capped at
    ``max_tokens``) loses every line already present in the messages, and
    goes first with the session-context id, so a later session-context node
    replaces rather than duplicates it.

    Example:
        .. code-block:: python

            graph.add_edge("summarize", "reinject")
            graph.add_node("reinject", create_post_compaction_node(mem))
    """
    summary = is_summary or is_summary_message

    def run(state: Mapping[str, Any]) -> _Update:
        messages = _messages(state)
        if any(m.id == SESSION_CONTEXT_ID for m in messages) or not any(summary(m) for m in messages):
            return None
        text = session_context_text(mem, max_tokens=max_tokens, already_seen=_texts(messages),
                                    header=prompts.session_context_header)
        if not text:
            return None
        message = SystemMessage(text, id=SESSION_CONTEXT_ID)
        return {"messages": place_messages(messages, message, lambda others: 0)}

    return MemoryNode(run, _threaded(run), "memory_post_compaction")


def _texts(messages: Sequence[BaseMessage]) -> list[str]:
    return [message_text(m) for m in messages]


def create_dream_node(mem: MarkdownMemory, model: LanguageModelLike, **dream_kwargs: Any) -> MemoryNode:
    """A LangGraph node that dreams when the gates allow, and returns no state update.

    Put it at the end of a session graph (spec: the session layer decides when and
    with which model to dream); the lock makes concurrent sessions safe, and a
    failed dream is logged, never raised. ``dream_kwargs`` go to
    :func:`~langchain_md_memory.features.dream.dream`.

    Example:
        .. code-block:: python

            graph.add_node("dream", create_dream_node(mem, model, min_sessions=3))
            graph.add_edge("agent", "dream")
    """
    def run(state: Mapping[str, Any]) -> None:
        result = dream(mem, model, **dream_kwargs)
        logger.info("dream node: %s (%s)", result.status, result.reason)

    async def arun(state: Mapping[str, Any]) -> None:
        result = await asyncio.to_thread(dream, mem, model, **dream_kwargs)
        logger.info("dream node: %s (%s)", result.status, result.reason)

    return MemoryNode(run, arun, name="dream")
