"""``MarkdownMemoryMiddleware``: memory for LangChain 1.x ``create_agent`` agents.

Needs the ``agents`` extra (``pip install langchain-md-memory[agents]``); the
package imports this module only when you ask for it.

What it does on every model call:

- ``before_model`` (sync and async): the pre-compaction flush (when
  ``flush_model`` is given) and, on the first model call of a thread, the
  first-turn recall, both through the same code as the graph nodes
  (:mod:`langchain_md_memory.features.flush`, :mod:`langchain_md_memory.integrations.prompt_context`).
  Recall hits are kept in private state (``memory_recall``), not in
  ``messages``.
- ``wrap_model_call`` / ``awrap_model_call``: appends to the system message the
  memory tool policy, ``load_session_context()`` (read fresh each call, so a
  ``memory_update`` shows at once) and the recalled hits. None of this lives
  in ``messages``, so summarisation can never drop it: after a compaction the
  next call gets the full session context back, which is the post-compaction
  re-injection for agents.
- ``tools``: the three memory tools, registered with the agent.

Ordering with ``SummarizationMiddleware``: both act in ``before_model``, and
``create_agent`` chains ``before_model`` hooks in list order, so list this
middleware first. Its flush then sees the full history, and only afterwards
does summarisation replace it (``tests/integration/test_middleware_agent.py``
checks both orders). Set ``trigger_tokens`` at or below the summarisation
trigger.

Example:
    .. code-block:: python

        from langchain.agents import create_agent
        from langchain.agents.middleware import SummarizationMiddleware
        from langchain_md_memory.integrations.middleware import MarkdownMemoryMiddleware

        agent = create_agent(
            model,
            middleware=[
                MarkdownMemoryMiddleware(mem, flush_model=model, trigger_tokens=6000),
                SummarizationMiddleware(model, trigger=("tokens", 8000)),
            ],
        )
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, NotRequired

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain.agents.middleware.types import ExtendedModelResponse, PrivateStateAttr
from langchain_core.messages import AIMessage, SystemMessage
from langchain_core.runnables import Runnable
from langgraph.runtime import Runtime

from ..errors import MemoryInputError
from ..features.flush import DEFAULT_TRIGGER_TOKENS, TokenCounter, aflush_update, flush_update
from ..prompts import DEFAULT_PROMPTS, MemoryPrompts
from .nodes import DEFAULT_RECALL_TOKENS
from .prompt_context import first_human_text, message_text, recall_text, session_context_text
from .tools import create_memory_tools

if TYPE_CHECKING:
    from ..memory import MarkdownMemory

__all__ = ["MarkdownMemoryMiddleware", "MemoryAgentState"]

RECALL_KEY = "memory_recall"

ModelResult = ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]


class MemoryAgentState(AgentState[Any]):
    """Agent state plus the middleware's private keys (flush flag, first-turn recall)."""

    memory_flushed: NotRequired[Annotated[bool, PrivateStateAttr]]
    memory_recall: NotRequired[Annotated[str, PrivateStateAttr]]


class MarkdownMemoryMiddleware(AgentMiddleware[MemoryAgentState, Any, Any]):
    """Session context, first-turn recall, memory tools and the pre-compaction flush for ``create_agent``.

    Args:
        mem: the memory.
        flush_model: chat model asked for durable facts before compaction;
            ``None`` disables the flush.
        trigger_tokens: flush when the messages reach this many tokens
            (keep it at or below the summarisation trigger).
        token_counter: counts tokens (default ``count_tokens_approximately``).
        session_context: add ``load_session_context()`` to the system message.
        max_context_tokens: session-context budget (default: the memory config).
        recall_first_turn: search with the first human message on a thread's
            first model call and add the new hits to the system message.
        recall_max_tokens / recall_max_results: budget and size of that recall.
        register_tools: register ``memory_search``, ``memory_get``,
            ``memory_update`` (and add the policy to call them before advice).
        prompts: the tool descriptions, policy, flush prompt and headers
            (default :data:`~langchain_md_memory.prompts.DEFAULT_PROMPTS`,
            domain-neutral; ``FINANCE_PROMPTS`` is the specs' finance wording).

    Example:
        .. code-block:: python

            agent = create_agent(model, middleware=[MarkdownMemoryMiddleware(mem)])
            agent.invoke({"messages": [("user", "Which editor setup did I settle on?")]})

            # The specs' finance wording instead of the domain-neutral default:
            advisor = create_agent(model, middleware=[MarkdownMemoryMiddleware(mem, prompts=FINANCE_PROMPTS)])
    """

    state_schema = MemoryAgentState

    def __init__(self, mem: MarkdownMemory, *, flush_model: Runnable[Any, Any] | None = None,
                 trigger_tokens: int = DEFAULT_TRIGGER_TOKENS, token_counter: TokenCounter | None = None,
                 session_context: bool = True, max_context_tokens: int | None = None,
                 recall_first_turn: bool = True, recall_max_tokens: int = DEFAULT_RECALL_TOKENS,
                 recall_max_results: int | None = None, register_tools: bool = True,
                 prompts: MemoryPrompts = DEFAULT_PROMPTS) -> None:
        super().__init__()
        if trigger_tokens < 1:
            raise MemoryInputError(f"trigger_tokens must be at least 1, got {trigger_tokens}")
        self.mem = mem
        self.flush_model = flush_model
        self.trigger_tokens = trigger_tokens
        self.token_counter = token_counter
        self.session_context = session_context
        self.max_context_tokens = max_context_tokens
        self.recall_first_turn = recall_first_turn
        self.recall_max_tokens = recall_max_tokens
        self.recall_max_results = recall_max_results
        self.register_tools = register_tools
        self.prompts = prompts
        # `tools` is the attribute create_agent reads to register middleware tools.
        self.tools = create_memory_tools(mem, prompts=prompts) if register_tools else []

    def _session_context(self) -> str:
        return session_context_text(self.mem, max_tokens=self.max_context_tokens,
                                    header=self.prompts.session_context_header)

    # -- before_model: flush, then first-turn recall ---------------------------------

    def _recall(self, state: Mapping[str, Any]) -> dict[str, Any]:
        if not self.recall_first_turn or state.get(RECALL_KEY) is not None:
            return {}
        messages = list(state.get("messages") or [])
        seen = [message_text(m) for m in messages]
        if self.session_context:
            seen.append(self._session_context())
        text = recall_text(self.mem, first_human_text(messages), already_seen=seen,
                           max_tokens=self.recall_max_tokens, max_results=self.recall_max_results,
                           header=self.prompts.recall_header)
        # "" marks the recall as done, so later calls on the thread do not search again.
        return {RECALL_KEY: text}

    def before_model(self, state: MemoryAgentState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Flush durable facts when over the trigger, then recall on the first call."""
        update: dict[str, Any] = {}
        if self.flush_model is not None:
            update |= flush_update(self.mem, self.flush_model, state, trigger_tokens=self.trigger_tokens,
                                   token_counter=self.token_counter, prompt=self.prompts.flush) or {}
        update |= self._recall(state)
        return update or None

    async def abefore_model(self, state: MemoryAgentState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Async twin of :meth:`before_model`."""
        update: dict[str, Any] = {}
        if self.flush_model is not None:
            update |= await aflush_update(self.mem, self.flush_model, state,
                                          trigger_tokens=self.trigger_tokens,
                                          token_counter=self.token_counter,
                                          prompt=self.prompts.flush) or {}
        update |= await asyncio.to_thread(self._recall, state)
        return update or None

    # -- wrap_model_call: memory into the system message ------------------------------

    def _memory_sections(self, state: Mapping[str, Any]) -> list[str]:
        sections = [self.prompts.policy] if self.register_tools else []
        if self.session_context:
            context = self._session_context()
            if context:
                sections.append(context)
        recalled = state.get(RECALL_KEY)
        if recalled:
            sections.append(recalled)
        return sections

    @staticmethod
    def _with_sections(request: ModelRequest[Any], sections: list[str]) -> ModelRequest[Any]:
        if not sections:
            return request
        extra = "\n\n".join(sections)
        current = request.system_message
        if current is None:
            message = SystemMessage(extra)
        elif isinstance(current.content, str):
            text = f"{current.content}\n\n{extra}" if current.content else extra
            message = current.model_copy(update={"content": text})
        else:
            blocks = [*current.content, {"type": "text", "text": extra}]
            message = current.model_copy(update={"content": blocks})
        return request.override(system_message=message)

    def wrap_model_call(self, request: ModelRequest[Any],
                        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]]) -> ModelResult:
        """Call the model with the policy, session context and recalled hits in the system message."""
        return handler(self._with_sections(request, self._memory_sections(request.state)))

    async def awrap_model_call(self, request: ModelRequest[Any],
                               handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]]
                               ) -> ModelResult:
        """Async twin of :meth:`wrap_model_call`."""
        sections = await asyncio.to_thread(self._memory_sections, request.state)
        return await handler(self._with_sections(request, sections))
