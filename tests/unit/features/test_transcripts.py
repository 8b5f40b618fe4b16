"""Rendering a conversation as Markdown: roles, tool-call lines, redaction, file names."""

import datetime as dt
import re

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from langchain_md_memory.features.transcripts import (
    REDACTED,
    Redactor,
    render_transcript,
    session_file_name,
)

DAY = dt.date(2026, 7, 14)


def conversation():
    return [
        SystemMessage("You are a careful financial assistant."),
        HumanMessage("Should I rebalance to 60/40 this quarter?"),
        AIMessage(
            "Let me check your saved limits.",
            tool_calls=[{"name": "memory_search", "args": {"query": "position limit", "max_results": 3},
                         "id": "call_1"}],
        ),
        ToolMessage("MEMORY.md#L3-L4: no single stock above 5%", tool_call_id="call_1", name="memory_search"),
        AIMessage("Yes: your rule caps single stocks at 5%, so rebalance to 60/40."),
    ]


def test_each_message_gets_a_role_heading_in_order():
    text = render_transcript(conversation(), thread_id="t-1", day=DAY)
    headings = re.findall(r"^## (.+)$", text, flags=re.M)
    assert headings == ["System", "User", "Assistant", "Tool: memory_search", "Assistant"]
    assert text.startswith("# Session t-1\n")
    assert "- date: 2026-07-14" in text
    assert "- messages: 5" in text
    assert "Should I rebalance to 60/40 this quarter?" in text


def test_a_tool_call_is_one_arrow_line_without_json_noise():
    text = render_transcript(conversation(), thread_id="t-1", day=DAY)
    assert '→ memory_search(query="position limit", max_results=3)' in text
    for noise in ('"tool_calls"', '"id": "call_1"', "call_1", '"args"', "'type'"):
        assert noise not in text


def test_memory_tool_results_are_not_copied_but_other_results_are():
    messages = [*conversation(), ToolMessage("quote: TLT 91.20", tool_call_id="c2", name="quotes")]
    text = render_transcript(messages, thread_id="t", day=DAY)
    assert "no single stock above 5%" not in text  # already in MEMORY.md
    assert "memory_search output not copied" in text
    assert "quote: TLT 91.20" in text


def test_long_tool_results_are_cut_with_a_count():
    messages = [ToolMessage("x" * 1000, tool_call_id="c", name="fetch")]
    text = render_transcript(messages, thread_id="t", day=DAY, max_tool_result_chars=100)
    assert "x" * 100 in text and "x" * 101 not in text
    assert "(900 more characters)" in text


def test_content_blocks_keep_text_and_mark_images():
    message = HumanMessage([{"type": "text", "text": "What is in this chart?"},
                            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}])
    text = render_transcript([message], thread_id="t", day=DAY)
    assert "What is in this chart?" in text
    assert "[image_url]" in text
    assert "base64" not in text


def test_messages_with_skipped_ids_are_left_out():
    context = SystemMessage("## MEMORY.md\n\nrisk: conservative", id="my-context")
    text = render_transcript([context, HumanMessage("hi")], thread_id="t", day=DAY, skip_ids={"my-context"})
    assert "risk: conservative" not in text
    assert re.findall(r"^## (.+)$", text, flags=re.M) == ["User"]


def test_memory_context_injected_by_this_package_is_not_copied():
    injected = [SystemMessage("## MEMORY.md\n\nrisk: conservative", id="md-memory-session-context"),
                SystemMessage("Relevant memories: retire at 55", id="md-memory-recall"),
                SystemMessage("You are terse.", id="app-prompt")]
    text = render_transcript([*injected, HumanMessage("hi")], thread_id="t", day=DAY)
    assert "risk: conservative" not in text and "retire at 55" not in text
    assert "You are terse." in text


def test_secret_named_tool_args_are_redacted_even_nested():
    call = {"name": "broker_login", "id": "c",
            "args": {"user": "bob", "password": "hunter2-xyz", "opts": {"api_key": "k-123456", "n": 2}}}
    text = render_transcript([AIMessage("", tool_calls=[call])], thread_id="t", day=DAY)
    assert "hunter2-xyz" not in text and "k-123456" not in text
    assert f"password={REDACTED}" in text
    assert f'"api_key":"{REDACTED}"' in text
    assert 'user="bob"' in text and '"n":2' in text


@pytest.mark.parametrize("secret", [
    "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123",
    "sk-abcdefghijklmnopqrstuvwxyz",
    "AKIAIOSFODNN7EXAMPLE",
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
])
def test_secret_looking_values_are_redacted_anywhere(secret):
    call = {"name": "http_get", "args": {"url": f"https://api.example.com/?q={secret}"}, "id": "c"}
    messages = [HumanMessage(f"my key is {secret}"), AIMessage("", tool_calls=[call]),
                ToolMessage(f"echo {secret}", tool_call_id="c", name="http_get")]
    text = render_transcript(messages, thread_id="t", day=DAY)
    assert secret not in text
    assert text.count("[redacted: ") == 3  # each marked with its kind, as in the Markdown


def test_bearer_tokens_and_password_assignments_keep_their_label():
    r = Redactor()
    assert r.text("Authorization: Bearer abc.def-123456") == "Authorization: Bearer [redacted: token]"
    assert r.text("password: hunter2, then") == "password: [redacted: password], then"
    assert r.text("max_tokens=400 and token count 12") == "max_tokens=400 and token count 12"


def test_arg_names_like_max_tokens_are_not_secrets():
    r = Redactor()
    assert r.args({"max_tokens": 400, "access_token": "abc", "token": "t", "secret_key": "s"}) == {
        "max_tokens": 400, "access_token": REDACTED, "token": REDACTED, "secret_key": REDACTED}


def test_the_pattern_list_is_configurable():
    r = Redactor(patterns=[r"ACCT-\d{6}"], secret_arg_names=None)
    assert r.text("account ACCT-123456 key sk-abcdefghijklmnopqrstu") == (
        f"account {REDACTED} key sk-abcdefghijklmnopqrstu")
    assert r.args({"password": "p"}) == {"password": "p"}


def test_session_file_name_is_dated_and_safe():
    assert session_file_name("thread-42", DAY) == "sessions/2026-07-14-thread-42.md"
    unsafe = session_file_name("user/42: ../etc", DAY)
    assert re.fullmatch(r"sessions/2026-07-14-user-42-etc-[0-9a-f]{8}\.md", unsafe)
    assert session_file_name("a/b", DAY) != session_file_name("a-b", DAY)
    assert len(session_file_name("x" * 500, DAY)) < 100
    with pytest.raises(ValueError, match="thread_id"):
        session_file_name("  ", DAY)
