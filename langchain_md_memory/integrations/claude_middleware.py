"""``MarkdownClaudeMemoryMiddleware``: Claude's own memory tool on a Markdown memory, for ``create_agent``.

Needs the ``anthropic`` extra (``pip install langchain-md-memory[anthropic]``:
``langchain`` for ``create_agent`` and ``langchain-anthropic`` for ``ChatAnthropic``);
the package imports this module only when you ask for it.

On every model call the middleware declares Anthropic's memory tool
(``{"type": "memory_20250818", "name": "memory"}``) in place of the ``memory``
tool it registers, so Claude sees the tool it was trained on while the agent's
tool node runs the calls on the memory
(:mod:`langchain_md_memory.integrations.claude_memory`). It registers
``memory_search`` beside it, adds a short note on both to the system message,
and can add the session context.

Unlike langchain-anthropic's ``FilesystemClaudeMemoryMiddleware`` and
``StateClaudeMemoryMiddleware`` (a plain folder or the graph state), the files
are the memory's own: indexed and searchable, guarded, capped, redacted and
locked like every other write, and shared with a PostgreSQL tenant when the
memory lives there; ``insert`` reads ``insert_text`` as the API sends it.

Example:
    .. code-block:: python

        from langchain.agents import create_agent
        from langchain_anthropic import ChatAnthropic
        from langchain_md_memory import MarkdownClaudeMemoryMiddleware, MarkdownMemory

        mem = MarkdownMemory("memory")
        agent = create_agent(ChatAnthropic(model="claude-sonnet-4-5"),
                             middleware=[MarkdownClaudeMemoryMiddleware(mem)])
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain.agents.middleware.types import ExtendedModelResponse
from langchain_core.messages import AIMessage, SystemMessage

from ..prompts import DEFAULT_PROMPTS, MemoryPrompts
from .claude_memory import CLAUDE_MEMORY_TOOL, CLAUDE_MEMORY_TOOL_NAME, create_claude_memory_tool
from .prompt_context import session_context_text
from .tools import create_memory_tools

if TYPE_CHECKING:
    from ..memory import MarkdownMemory

__all__ = ["CLAUDE_MEMORY_PROMPT", "MarkdownClaudeMemoryMiddleware"]

CLAUDE_MEMORY_PROMPT = (
    "Your memory folder {root} keeps what you learn across conversations, as Markdown files ('.md'). "
    "To find something you stored, call memory_search with a few words before viewing files one by one."
)
"""Added to the system message (``{root}``: the virtual folder); Anthropic's API adds its memory protocol."""

ModelResult = ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]


class MarkdownClaudeMemoryMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Anthropic's memory tool (``memory_20250818``) and ``memory_search`` on a memory, for ``create_agent``.

    Args:
        mem: the memory (a folder or a PostgreSQL tenant).
        root: the virtual folder Claude sees (``/memories``).
        folder: the memory folder ``root`` stands for (``""``: the memory's root,
            so Claude's files sit beside ``MEMORY.md``; e.g. ``"claude"`` to keep them apart).
        search: register ``memory_search`` beside the memory tool (``False`` when
            ``MarkdownMemoryMiddleware`` in the same agent registers it already).
        system_prompt: added to the system message (``{root}`` is filled in); ``""`` adds nothing.
        session_context: also add ``load_session_context()`` to the system message.
        max_context_tokens: the session-context budget (default: the memory config).
        prompts: wording of ``memory_search`` and the session-context header.

    Example:
        .. code-block:: python

            agent = create_agent(ChatAnthropic(model="claude-sonnet-4-5"),
                                 middleware=[MarkdownClaudeMemoryMiddleware(mem, folder="claude")])
            agent.invoke({"messages": [("user", "Remember that I moved to Berlin.")]})
    """

    def __init__(self, mem: MarkdownMemory, *, root: str = "/memories", folder: str = "", search: bool = True,
                 system_prompt: str = CLAUDE_MEMORY_PROMPT, session_context: bool = False,
                 max_context_tokens: int | None = None, prompts: MemoryPrompts = DEFAULT_PROMPTS) -> None:
        super().__init__()
        self.mem = mem
        self.root = root
        self.system_prompt = system_prompt.replace("{root}", root)
        self.session_context = session_context
        self.max_context_tokens = max_context_tokens
        self.prompts = prompts
        memory_tool = create_claude_memory_tool(mem, root=root, folder=folder)
        # `tools` is the attribute create_agent reads to register middleware tools (run by its tool node).
        self.tools = [memory_tool, *(create_memory_tools(mem, prompts=prompts)[:1] if search else [])]

    def _sections(self) -> list[str]:
        sections = [self.system_prompt] if self.system_prompt else []
        if self.session_context:
            context = session_context_text(self.mem, max_tokens=self.max_context_tokens,
                                           header=self.prompts.session_context_header)
            if context:
                sections.append(context)
        return sections

    @staticmethod
    def _request(request: ModelRequest[Any], sections: list[str]) -> ModelRequest[Any]:
        # Claude gets its native tool declaration; the tool node keeps our BaseTool to run the calls.
        tools = [t for t in request.tools if getattr(t, "name", None) != CLAUDE_MEMORY_TOOL_NAME]
        tools.append(dict(CLAUDE_MEMORY_TOOL))
        if not sections:
            return request.override(tools=tools)
        extra = "\n\n".join(sections)
        current = request.system_message
        if current is None:
            message = SystemMessage(extra)
        elif isinstance(current.content, str):
            message = current.model_copy(update={"content": f"{current.content}\n\n{extra}".lstrip()})
        else:
            blocks = [*current.content, {"type": "text", "text": extra}]
            message = current.model_copy(update={"content": blocks})
        return request.override(tools=tools, system_message=message)

    def wrap_model_call(self, request: ModelRequest[Any],
                        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]]) -> ModelResult:
        """Call the model with the native memory tool declared and the memory note in the system message."""
        return handler(self._request(request, self._sections()))

    async def awrap_model_call(self, request: ModelRequest[Any],
                               handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]]
                               ) -> ModelResult:
        """Async twin of :meth:`wrap_model_call`."""
        sections = await asyncio.to_thread(self._sections)
        return await handler(self._request(request, sections))
