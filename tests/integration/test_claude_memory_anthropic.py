"""What a real ``ChatAnthropic`` would send: the middleware's requests built by langchain-anthropic, offline.

Only the network call is replaced: ``_generate`` records the request payload ``ChatAnthropic`` builds
(the one its client would post) and answers from a script.
"""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain_anthropic import ChatAnthropic
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from langchain_md_memory import MarkdownClaudeMemoryMiddleware


class OfflineChatAnthropic(ChatAnthropic):
    """``ChatAnthropic`` that records each request payload and replies from ``script`` instead of calling."""

    script: list[AIMessage] = Field(default_factory=list)
    payloads: list[dict[str, Any]] = Field(default_factory=list)

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        self.payloads.append(self._get_request_payload(messages, stop=stop, **kwargs))
        return ChatResult(generations=[ChatGeneration(message=self.script.pop(0))])


def test_claude_gets_the_native_memory_tool_and_refusals_come_back_as_error_results(kw_memory):
    model = OfflineChatAnthropic(model="claude-sonnet-4-5", api_key="offline", script=[
        AIMessage("", tool_calls=[{"name": "memory", "id": "toolu_1",
                                   "args": {"command": "create", "path": "/memories/../x.md",
                                            "file_text": "x"}}]),
        AIMessage("", tool_calls=[{"name": "memory", "id": "toolu_2",
                                   "args": {"command": "create", "path": "/memories/me.md",
                                            "file_text": "- Lives in Berlin\n"}}]),
        AIMessage("Noted."),
    ])
    agent = create_agent(model, system_prompt="Be brief.",
                         middleware=[MarkdownClaudeMemoryMiddleware(kw_memory)])
    agent.invoke({"messages": [HumanMessage("I live in Berlin.")]})
    first, second, third = model.payloads
    assert first["tools"][1] == {"type": "memory_20250818", "name": "memory"}  # the native declaration
    assert first["tools"][0]["name"] == "memory_search" and "input_schema" in first["tools"][0]
    assert first["betas"] == ["context-management-2025-06-27"]  # what the memory tool requires
    assert "call memory_search" in first["system"]
    refused = second["messages"][-1]["content"][0]
    assert refused["type"] == "tool_result" and refused["tool_use_id"] == "toolu_1"
    assert refused["is_error"] is True and "would escape /memories" in refused["content"]
    created = third["messages"][-1]["content"][0]
    assert created.get("is_error") is not True
    assert created["content"] == "File created successfully at: /memories/me.md"
    assert kw_memory.search("Berlin")[0].path == "me.md"
