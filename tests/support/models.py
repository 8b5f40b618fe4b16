"""Scripted chat models for tests: replies from a list, prompts recorded, tools accepted, failures on cue.

``create_agent`` and ``bind_tools`` callers need a model that accepts tools; the
langchain fakes do not, so the tool-taking fakes here return themselves.
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models.fake_chat_models import (
    FakeListChatModel,
    FakeMessagesListChatModel,
    GenericFakeChatModel,
)
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field


class RecordingModel(FakeListChatModel):
    """Replies with the strings in ``responses`` in turn and keeps every prompt it was sent."""

    prompts: list[list[BaseMessage]] = Field(default_factory=list)

    def _call(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
              **kwargs: Any) -> str:
        self.prompts.append(list(messages))
        return super()._call(messages, stop, run_manager, **kwargs)


class FailingModel(FakeListChatModel):
    """A model whose every call raises ``error``, like a provider outage or a timeout."""

    responses: list[str] = Field(default_factory=list)
    error: Any = Field(default_factory=lambda: RuntimeError("provider unavailable"))

    def _call(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
              **kwargs: Any) -> str:
        raise self.error


class ScriptedChatModel(GenericFakeChatModel):
    """Replies with the scripted ``AIMessage``s (tool calls included), accepts tools, records prompts.

    ``bound_tools`` keeps each tool bound to it as the OpenAI tool schema a real model would be sent
    (name, description, parameters with their descriptions).
    """

    prompts: list[list[BaseMessage]] = Field(default_factory=list)
    bound_tools: list[dict[str, Any]] = Field(default_factory=list)

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:  # type: ignore[override]
        self.bound_tools.extend(convert_to_openai_tool(tool) for tool in tools)
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> Any:
        self.prompts.append(list(messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def scripted(*turns: AIMessage) -> ScriptedChatModel:
    """A model that answers its calls with ``turns``, in order."""
    return ScriptedChatModel(messages=iter(turns))


class ToolAcceptingListModel(FakeMessagesListChatModel):
    """``FakeMessagesListChatModel`` (replies cycle through ``responses``) that accepts tools."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ToolAcceptingListModel:  # type: ignore[override]
        return self
