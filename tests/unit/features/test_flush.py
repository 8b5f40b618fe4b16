"""The pre-compaction flush: prompt, trigger, sentinel, once-per-cycle rule, errors."""

from __future__ import annotations

import logging

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately

from langchain_md_memory.features.flush import (
    FLUSH_HEADING,
    MEMORY_FLUSH_PROMPT,
    MEMORY_FLUSH_TOKEN,
    flush_action,
    flush_transcript,
    flush_update,
    parse_flush_reply,
    run_memory_flush,
)
from langchain_md_memory.files.facts import strip_annotations
from langchain_md_memory.files.paths import daily_file_name
from langchain_md_memory.integrations.prompt_context import RECALL_ID, SESSION_CONTEXT_ID
from langchain_md_memory.langgraph import create_memory_flush_node
from langchain_md_memory.prompts import FINANCE_PROMPTS
from tests.support.models import FailingModel, RecordingModel

FACTS = "- Wants to retire at 55.\n- Sold half of NVDA because it was over the 5% single-stock limit."


def conversation() -> list[BaseMessage]:
    return [
        HumanMessage("I've decided: I want to retire at 55, not 60. " + "Some context. " * 20),
        AIMessage("Noted. Let me check your holdings."),
        HumanMessage("Also, I sold half of NVDA because it was over my 5% single-stock limit."),
        AIMessage("Understood."),
    ]


def tokens(messages: list[BaseMessage]) -> int:
    return count_tokens_approximately(messages)


def test_default_prompt_targets_durable_facts_of_any_domain_and_excludes_transient_data():
    for wanted in ("goals", "preferences", "constraints", "decisions, with the reasons"):
        assert wanted in MEMORY_FLUSH_PROMPT
    assert "transient tool output" in MEMORY_FLUSH_PROMPT
    assert "financ" not in MEMORY_FLUSH_PROMPT.lower()
    assert f"reply with exactly {MEMORY_FLUSH_TOKEN}" in MEMORY_FLUSH_PROMPT


def test_finance_prompt_targets_financial_facts_and_excludes_quotes_and_prices():
    prompt = FINANCE_PROMPTS.flush
    for wanted in ("financial goals", "risk tolerance", "position and trading decisions",
                   "reasons", "account facts", "preferences"):
        assert wanted in prompt
    for excluded in ("transient tool output", "market quotes", "prices"):
        assert excluded in prompt
    assert f"reply with exactly {MEMORY_FLUSH_TOKEN}" in prompt


def test_run_memory_flush_sends_the_prompt_it_is_given(kw_memory):
    model = RecordingModel(responses=[FACTS])
    run_memory_flush(kw_memory, model, conversation(), prompt=FINANCE_PROMPTS.flush)
    assert model.prompts[0][0].content == FINANCE_PROMPTS.flush


@pytest.mark.parametrize("reply", [
    MEMORY_FLUSH_TOKEN, f"  {MEMORY_FLUSH_TOKEN}\n", f"`{MEMORY_FLUSH_TOKEN}`", f"**{MEMORY_FLUSH_TOKEN}**.",
    "", "   \n", None, AIMessage(MEMORY_FLUSH_TOKEN), AIMessage(""),
])
def test_sentinel_and_empty_replies_parse_to_nothing(reply):
    assert parse_flush_reply(reply) == ""


def test_reply_bullets_are_kept_and_a_code_fence_is_unwrapped():
    assert parse_flush_reply(AIMessage(f"\n{FACTS}\n")) == FACTS
    assert parse_flush_reply(f"```markdown\n{FACTS}\n```") == FACTS


def test_flush_action_flushes_at_the_trigger_and_resets_below_it():
    messages = conversation()
    count = tokens(messages)
    assert flush_action(messages, flushed=False, trigger_tokens=count) == "flush"
    assert flush_action(messages, flushed=False, trigger_tokens=count + 1) == "skip"
    assert flush_action(messages, flushed=True, trigger_tokens=count) == "skip"
    assert flush_action(messages, flushed=True, trigger_tokens=count + 1) == "reset"


def test_flush_action_uses_a_custom_token_counter():
    messages = conversation()
    assert flush_action(messages, flushed=False, trigger_tokens=4, token_counter=len) == "flush"
    assert flush_action(messages, flushed=False, trigger_tokens=5, token_counter=len) == "skip"


def test_transcript_leaves_out_tool_output_and_injected_memory():
    messages = [
        SystemMessage("MEMORY.md says stuff", id=SESSION_CONTEXT_ID),
        SystemMessage("recalled stuff", id=RECALL_ID),
        HumanMessage("What is NVDA trading at? I want to keep 10% cash."),
        AIMessage("", tool_calls=[{"name": "quote", "args": {"t": "NVDA"}, "id": "c1"}]),
        ToolMessage("NVDA 123.45 USD", tool_call_id="c1"),
        AIMessage("It trades at 123.45."),
    ]
    transcript = flush_transcript(messages)
    assert transcript == "Human: What is NVDA trading at? I want to keep 10% cash.\nAI: It trades at 123.45."


def test_run_memory_flush_appends_the_bullets_under_the_heading_to_todays_file(kw_memory):
    model = RecordingModel(responses=[FACTS])
    result = run_memory_flush(kw_memory, model, conversation())
    assert (result.written, result.path, result.error) == (True, daily_file_name(), None)
    assert result.content == FACTS
    assert strip_annotations(kw_memory.get("daily")) == f"{FLUSH_HEADING}\n{FACTS}\n"
    system, human = model.prompts[0]
    assert system.content == MEMORY_FLUSH_PROMPT
    assert "retire at 55" in human.content


def test_second_flush_is_separated_by_a_blank_line(kw_memory):
    kw_memory.append("# Today", file="daily")
    run_memory_flush(kw_memory, RecordingModel(responses=[FACTS]), conversation())
    assert strip_annotations(kw_memory.get("daily")) == f"# Today\n\n{FLUSH_HEADING}\n{FACTS}\n"


def test_flushed_fact_is_searchable_at_once(kw_memory):
    run_memory_flush(kw_memory, RecordingModel(responses=[FACTS]), conversation())
    hits = kw_memory.search("retire at 55")
    assert hits[0].path == daily_file_name()
    assert "Wants to retire at 55." in hits[0].text


def test_sentinel_reply_writes_nothing(kw_memory):
    result = run_memory_flush(kw_memory, RecordingModel(responses=[MEMORY_FLUSH_TOKEN]), conversation())
    assert (result.written, result.error) == (False, None)
    assert not (kw_memory.memory_dir / daily_file_name()).exists()


def test_model_error_is_logged_and_does_not_raise(kw_memory, caplog):
    with caplog.at_level(logging.WARNING, logger="langchain_md_memory.features.flush"):
        result = run_memory_flush(kw_memory, FailingModel(), conversation())
    assert result.written is False
    assert result.error == "RuntimeError: provider unavailable"
    assert "the model call failed" in caplog.text
    assert not (kw_memory.memory_dir / daily_file_name()).exists()


def test_flush_update_below_the_trigger_neither_calls_the_model_nor_writes(kw_memory):
    model = RecordingModel(responses=[FACTS])
    state = {"messages": conversation()}
    assert flush_update(kw_memory, model, state, trigger_tokens=tokens(state["messages"]) + 1) is None
    assert model.prompts == []
    assert not (kw_memory.memory_dir / daily_file_name()).exists()


def test_flush_node_writes_once_per_cycle_and_resets_after_compaction(kw_memory):
    model = RecordingModel(responses=[FACTS, "- Keeps 10% in cash."])
    messages = conversation()
    node = create_memory_flush_node(kw_memory, model, trigger_tokens=tokens(messages))

    assert node({"messages": messages}) == {"memory_flushed": True}
    assert node({"messages": messages, "memory_flushed": True}) is None  # same cycle: no second flush
    compacted = [HumanMessage("Here is a summary of the conversation to date: retiring at 55.")]
    assert node({"messages": compacted, "memory_flushed": True}) == {"memory_flushed": False}
    assert node({"messages": messages, "memory_flushed": False}) == {"memory_flushed": True}

    assert len(model.prompts) == 2
    saved = strip_annotations(kw_memory.get("daily"))
    assert saved == f"{FLUSH_HEADING}\n{FACTS}\n\n{FLUSH_HEADING}\n- Keeps 10% in cash.\n"


def test_flush_node_after_a_model_error_leaves_the_flag_unset_so_it_retries(kw_memory):
    messages = conversation()
    node = create_memory_flush_node(kw_memory, FailingModel(), trigger_tokens=tokens(messages))
    assert node({"messages": messages}) is None


def test_flush_node_on_the_sentinel_marks_the_cycle_flushed(kw_memory):
    messages = conversation()
    node = create_memory_flush_node(kw_memory, RecordingModel(responses=[MEMORY_FLUSH_TOKEN]),
                                    trigger_tokens=tokens(messages))
    assert node({"messages": messages}) == {"memory_flushed": True}
    assert not (kw_memory.memory_dir / daily_file_name()).exists()


def test_flush_node_rejects_a_non_positive_trigger(kw_memory):
    with pytest.raises(ValueError, match="trigger_tokens must be at least 1"):
        create_memory_flush_node(kw_memory, RecordingModel(responses=[]), trigger_tokens=0)
