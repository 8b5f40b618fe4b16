"""``MemoryPrompts``: one value holding every text a model sees; checked when built."""

from __future__ import annotations

import dataclasses

import pytest

from langchain_md_memory import MemoryPrompts
from langchain_md_memory.errors import MemoryInputError
from langchain_md_memory.prompts import DEFAULT_PROMPTS, FINANCE_PROMPTS, MEMORY_FLUSH_TOKEN, flush_prompt


def test_default_prompts_speak_of_no_domain():
    for field in dataclasses.fields(DEFAULT_PROMPTS):
        text = getattr(DEFAULT_PROMPTS, field.name).lower()
        for word in ("financ", "portfolio", "stock", "risk tolerance", "position"):
            assert word not in text, (field.name, word)
    assert "personalised advice or decisions: the user's goals, preferences, constraints and past " \
           "decisions" in DEFAULT_PROMPTS.search_description


def test_finance_preset_keeps_the_specs_wording():
    assert "personalised financial advice" in FINANCE_PROMPTS.policy
    assert "risk tolerance" in FINANCE_PROMPTS.search_description
    assert "quotes, prices" in FINANCE_PROMPTS.update_description
    assert FINANCE_PROMPTS.get_description == DEFAULT_PROMPTS.get_description


def test_replace_changes_only_the_named_fields():
    coding = DEFAULT_PROMPTS.replace(policy="Search memory before changing code.")
    assert coding.policy == "Search memory before changing code."
    assert coding.search_description == DEFAULT_PROMPTS.search_description
    assert DEFAULT_PROMPTS.policy != coding.policy  # the default is untouched


def test_replace_with_an_unknown_field_names_the_fields():
    with pytest.raises(MemoryInputError, match=r"unknown MemoryPrompts field\(s\) \['polcy'\].*policy"):
        DEFAULT_PROMPTS.replace(polcy="x")


def test_a_flush_prompt_without_the_sentinel_is_refused():
    with pytest.raises(MemoryInputError, match=MEMORY_FLUSH_TOKEN):
        DEFAULT_PROMPTS.replace(flush="List the durable facts as bullets.")


@pytest.mark.parametrize("value", ["", "   "])
def test_an_empty_prompt_is_refused(value):
    with pytest.raises(MemoryInputError, match="recall_header must be non-empty"):
        DEFAULT_PROMPTS.replace(recall_header=value)


def test_prompts_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEFAULT_PROMPTS.policy = "x"  # type: ignore[misc]


def test_flush_prompt_lists_each_item_as_a_bullet_and_ends_with_the_sentinel_rule():
    text = flush_prompt(["coding conventions", "design decisions"], "build logs")
    assert "- coding conventions\n- design decisions\n" in text
    assert "Leave out: build logs, greetings and small talk" in text
    assert text.endswith(f"reply with exactly {MEMORY_FLUSH_TOKEN} and nothing else.")
    MemoryPrompts(**{**dataclasses.asdict(DEFAULT_PROMPTS), "flush": text})  # accepted
