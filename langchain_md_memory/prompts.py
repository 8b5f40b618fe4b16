"""The words a model sees from this package: tool descriptions, the memory policy, the flush prompt, headers.

:class:`MemoryPrompts` holds them all in one frozen value. The tools, the graph
nodes and the ``create_agent`` middleware take ``prompts=`` and default to
:data:`DEFAULT_PROMPTS`, which speaks of no particular domain: personalised
advice or decisions, the user's goals, preferences, constraints and past
decisions. :data:`FINANCE_PROMPTS` is the specs' personal-finance wording
(risk tolerance, position limits, buy/sell decisions). For another domain,
replace the fields you need and keep the rest.

Example:
    .. code-block:: python

        from langchain_md_memory import DEFAULT_PROMPTS, MarkdownMemoryMiddleware, create_memory_tools

        coding = DEFAULT_PROMPTS.replace(
            policy="Before changing code, call memory_search for the user's conventions and past "
                   "decisions about this project; save new conventions with memory_update.",
        )
        tools = create_memory_tools(mem, prompts=coding)
        middleware = MarkdownMemoryMiddleware(mem, prompts=coding)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Self

from .errors import MemoryInputError

__all__ = [
    "DEFAULT_PROMPTS",
    "FINANCE_PROMPTS",
    "MEMORY_FLUSH_TOKEN",
    "MemoryPrompts",
    "flush_prompt",
]

MEMORY_FLUSH_TOKEN = "NO_MEMORY_TO_FLUSH"
"""The flush reply that means "nothing durable to save"; it writes nothing."""


def flush_prompt(look_for: Sequence[str], leave_out: str) -> str:
    """A pre-compaction flush prompt that asks for ``look_for`` (one bullet each) and not ``leave_out``.

    The prompt ends with the :data:`MEMORY_FLUSH_TOKEN` rule the flush relies on.

    Example:
        .. code-block:: python

            prompt = flush_prompt(["the project's coding conventions", "decisions and their reasons"],
                                  "build logs, stack traces and anything only true today")
    """
    wanted = "\n".join(f"- {item}" for item in look_for)
    return f"""\
The conversation below is about to be compacted: older messages will be replaced by a short \
summary and their details will be lost. Before that happens, extract what is worth remembering \
in future sessions.

Write Markdown bullets ("- ...") of durable facts and user preferences stated or confirmed in \
the conversation, most important first. Look for:
{wanted}

Leave out: {leave_out}, greetings and small talk, and anything already in the long-term memory.

Each bullet is one self-contained sentence in the language the user used. No heading, no preamble.
When a statement contradicts something already remembered, write the new fact and end the bullet \
with " (replaces: <the remembered wording>)", so the old fact is superseded rather than kept beside it.
Never write passwords, API keys or other credentials.
If there is nothing durable to save, reply with exactly {MEMORY_FLUSH_TOKEN} and nothing else."""


@dataclass(frozen=True, slots=True)
class MemoryPrompts:
    """Every text this package puts in front of a model; build a variant with :meth:`replace`.

    Attributes:
        policy: the system-prompt rule that pairs with the tools (when to search, when to save).
        search_description: the ``memory_search`` tool description.
        get_description: the ``memory_get`` tool description.
        update_description: the ``memory_update`` tool description.
        flush: the system prompt of the pre-compaction flush; it must tell the model to reply
            :data:`MEMORY_FLUSH_TOKEN` when there is nothing to save (see :func:`flush_prompt`).
        session_context_header: the heading above the session context (MEMORY.md, today, yesterday).
        recall_header: the heading above the passages recalled for the first user message.
    """

    policy: str
    search_description: str
    get_description: str
    update_description: str
    flush: str
    session_context_header: str
    recall_header: str

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if not isinstance(value, str) or not value.strip():
                raise MemoryInputError(f"MemoryPrompts.{field.name} must be non-empty text, got {value!r}")
        if MEMORY_FLUSH_TOKEN not in self.flush:
            raise MemoryInputError(
                f"MemoryPrompts.flush must tell the model to reply {MEMORY_FLUSH_TOKEN} when nothing is "
                "worth saving (otherwise a reply like 'Nothing to save.' is written to memory); "
                "build it with flush_prompt(...)"
            )

    def replace(self, **changes: Any) -> Self:
        """A copy with the named fields changed, e.g. ``DEFAULT_PROMPTS.replace(policy="...")``."""
        unknown = sorted(set(changes) - {f.name for f in dataclasses.fields(self)})
        if unknown:
            allowed = ", ".join(f.name for f in dataclasses.fields(self))
            raise MemoryInputError(f"unknown MemoryPrompts field(s) {unknown}; the fields are: {allowed}")
        return dataclasses.replace(self, **changes)


_GET_DESCRIPTION = (
    "Read exact lines of a memory file: to verify a memory_search hit in context, or to copy the exact "
    "text before a memory_update edit or delete. Lines are 1-based and inclusive; omit both to read the "
    "whole file. The text is returned exactly as stored."
)
_SESSION_CONTEXT_HEADER = (
    "# Long-term memory\n"
    "Loaded from the user's Markdown memory files (MEMORY.md, today's and yesterday's logs). "
    "Treat it as what you know about the user; cite the file when you rely on it."
)
_RECALL_HEADER = (
    "# Recalled memory\n"
    "Passages recalled from long-term memory for the user's first message "
    "(cite them as path#Lstart-Lend):"
)
_SEARCH_RESULTS = (
    "Returns the best passages as '[n] path#Lstart-Lend (score s)' followed by the text; cite the "
    "path#lines you rely on, and use memory_get to read more of a file. When no passage is a strong "
    "match the result begins 'No strong match in memory; closest notes:' (and weak passages among "
    "strong ones say 'weak match'): check that such a note really answers before relying on it."
)

DEFAULT_PROMPTS = MemoryPrompts(
    policy=(
        "Before giving personalised advice or making decisions for the user, call memory_search to "
        "recall what they told you before: the user's goals, preferences, constraints and past "
        "decisions, and respect them. When the user states a durable fact or preference, save it with "
        "memory_update."
    ),
    search_description=(
        "Search the user's long-term memory: Markdown notes of the user's goals, preferences, "
        "constraints, facts about them and past decisions with their reasons. ALWAYS call this BEFORE "
        "giving personalised advice or decisions: the user's goals, preferences, constraints and past "
        "decisions, so that your answer respects what the user told you before. " + _SEARCH_RESULTS
    ),
    get_description=_GET_DESCRIPTION,
    update_description=(
        "Save to the user's long-term memory. To remember a durable fact or preference (a goal, a "
        "preference, a constraint or rule, a decision and its reason, a fact about the user), pass only "
        "`content`: it is appended to MEMORY.md. Use file='daily' for notes about today, or a relative "
        ".md path for a topic file. action='edit' replaces `old_text` with `content`; action='delete' "
        "removes `old_text`. When the user changes a remembered fact, use action='supersede' with "
        "`old_text` (the remembered wording) and `content` (the new fact): the old fact is kept as history "
        "and no longer found. `old_text` must match the file exactly, so read it with memory_get first. "
        "A fact already remembered is not written twice. Never store passwords or keys. "
        "Do not store transient data (tool output, search results, anything only true today)."
    ),
    flush=flush_prompt(
        [
            "goals, with targets and dates",
            "preferences: how the user likes things done and how they want to be helped",
            "constraints and rules the user set",
            "decisions, with the reasons given for them",
            "lasting facts about the user and their situation (people, places, tools, commitments)",
        ],
        "transient tool output, search results, figures and anything only true today",
    ),
    session_context_header=_SESSION_CONTEXT_HEADER,
    recall_header=_RECALL_HEADER,
)
"""Domain-neutral prompts: what the tools, nodes and middleware use unless given ``prompts=``."""

FINANCE_PROMPTS = MemoryPrompts(
    policy=(
        "Before giving any personalised financial advice (buy or sell decisions, portfolio allocation, "
        "stock picks, position sizing), call memory_search to recall the user's goals, risk tolerance, "
        "position limits and past decisions, and respect them. When the user states a durable fact or "
        "preference, save it with memory_update."
    ),
    search_description=(
        "Search the user's long-term memory: Markdown notes of financial goals, risk tolerance, position "
        "limits, account facts, preferences and past decisions with their reasons. ALWAYS call this BEFORE "
        "giving any personalised financial advice (buy/sell decisions, allocation, stock picks, position "
        "sizing) so the advice respects what the user told you before. " + _SEARCH_RESULTS
    ),
    get_description=_GET_DESCRIPTION,
    update_description=(
        "Save to the user's long-term memory. To remember a durable fact or preference (a goal, risk "
        "tolerance, a position rule, a decision and its reason, an account fact), pass only `content`: it "
        "is appended to MEMORY.md. Use file='daily' for notes about today, or a relative .md path for a "
        "topic file. action='edit' replaces `old_text` with `content`; action='delete' removes `old_text`. "
        "When the user changes a remembered fact, use action='supersede' with `old_text` (the remembered "
        "wording) and `content` (the new fact). "
        "`old_text` must match the file exactly, so read it with memory_get first. Do not store quotes, "
        "prices or other transient data."
    ),
    flush=flush_prompt(
        [
            "financial goals, with target amounts and dates",
            "risk tolerance, position limits and other rules the user set",
            "position and trading decisions, with the reasons given for them",
            "account facts (account types, contributions, what an account is for)",
            "lasting preferences about how the user wants to be advised",
        ],
        "transient tool output, market quotes, prices, index levels, news and search results, "
        "anything only true today",
    ),
    session_context_header=_SESSION_CONTEXT_HEADER,
    recall_header=_RECALL_HEADER,
)
"""The specs' personal-finance wording: advice on buying, selling, allocation and position sizing."""
