"""Consent to what an agent writes: a person approves, edits or rejects each memory write, seeing the change.

LangChain's ``HumanInTheLoopMiddleware(interrupt_on={...})`` pauses a tool call until a person decides
(with a checkpointer, the run resumes on ``Command(resume=...)``). :func:`memory_write_approval` is the
``interrupt_on`` entry for ``memory_update``, :func:`claude_memory_write_approval` the one for the write
commands of Claude's memory tool (``view`` runs unasked). The description a person reads is a dry run
of the call itself (:func:`~langchain_md_memory.files.drafts.drafting`): the tool's own code runs,
with the path guard, the size limits, redaction, dedup and provenance, and nothing is written. It
names each file that would change, the section of each change, the lines added (``+``) and removed
(``-``), the redactions applied, and what the tool would reply (a duplicate left out, an error).

Approve runs the call; edit runs the edited arguments (the text written is the edited one, checked
and redacted like any write); reject writes nothing, and the model reads that the call was rejected.

Example:
    .. code-block:: python

        from langchain.agents import create_agent
        from langchain.agents.middleware import HumanInTheLoopMiddleware
        from langgraph.checkpoint.memory import InMemorySaver

        agent = create_agent(model, tools=create_memory_tools(mem), checkpointer=InMemorySaver(),
                             middleware=[HumanInTheLoopMiddleware(interrupt_on=memory_write_approval(mem))])
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.messages import ToolCall
from langchain_core.tools import ToolException

from ..files.drafts import Draft, DraftedChange, drafting
from ..files.edits import decode_lf
from ..files.sections import heading_above
from ..text.redaction import scrub
from .claude_memory import CLAUDE_MEMORY_TOOL_NAME, ClaudeMemoryCommands, run_claude_memory
from .tools import run_memory_update

if TYPE_CHECKING:
    from langchain.agents.middleware import InterruptOnConfig
    from langchain.agents.middleware.human_in_the_loop import DecisionType

    from ..memory import MarkdownMemory

__all__ = ["WRITE_DECISIONS", "claude_memory_write_approval", "describe_write", "memory_write_approval"]

WRITE_DECISIONS: tuple[DecisionType, ...] = ("approve", "edit", "reject")
"""What a person may decide about a write. ``respond`` (answering in the tool's place) is left out: the
model would read a reply of a write that never happened."""

MAX_SHOWN_LINES = 200
"""Changed lines shown in one description; past them a note says how many more there are."""


def memory_write_approval(mem: MarkdownMemory, *, allowed_decisions: Sequence[DecisionType] = WRITE_DECISIONS
                          ) -> dict[str, InterruptOnConfig]:
    """``interrupt_on`` for ``memory_update`` on ``mem``: every call waits for a person, shown its diff.

    Example:
        .. code-block:: python

            HumanInTheLoopMiddleware(interrupt_on=memory_write_approval(mem))
            # with other gated tools: interrupt_on={**memory_write_approval(mem), "send_email": True}
    """
    def describe(tool_call: ToolCall, state: Any, runtime: Any) -> str:
        return describe_write("memory_update", lambda: run_memory_update(mem, tool_call["args"]))

    entry = _entry(allowed_decisions)
    entry["description"] = describe
    return {"memory_update": entry}


def claude_memory_write_approval(mem: MarkdownMemory, *, root: str = "/memories", folder: str = "",
                                 allowed_decisions: Sequence[DecisionType] = WRITE_DECISIONS
                                 ) -> dict[str, InterruptOnConfig]:
    """``interrupt_on`` for Claude's memory tool on ``mem``: each write command waits for a person.

    ``create``, ``str_replace``, ``insert``, ``delete`` and ``rename`` wait, shown their diff; ``view``
    runs unasked. ``root`` and ``folder`` as given to ``MarkdownClaudeMemoryMiddleware`` (or
    ``create_claude_memory_tool``), so the dry run reads the paths as the tool does.

    Example:
        .. code-block:: python

            approval = claude_memory_write_approval(mem, folder="claude")
            middleware = [MarkdownClaudeMemoryMiddleware(mem, folder="claude"),
                          HumanInTheLoopMiddleware(interrupt_on=approval)]
    """
    commands = ClaudeMemoryCommands(mem, root=root, folder=folder)

    def describe(tool_call: ToolCall, state: Any, runtime: Any) -> str:
        args = tool_call["args"]
        name = f"{CLAUDE_MEMORY_TOOL_NAME} {args.get('command')}" if isinstance(args, Mapping) \
            else CLAUDE_MEMORY_TOOL_NAME
        return describe_write(name, lambda: run_claude_memory(commands, args))

    def writes(request: Any) -> bool:
        args = request.tool_call["args"]
        return not (isinstance(args, Mapping) and args.get("command") == "view")

    entry = _entry(allowed_decisions)
    entry["description"] = describe
    entry["when"] = writes
    return {CLAUDE_MEMORY_TOOL_NAME: entry}


def describe_write(tool: str, call: Callable[[], str]) -> str:
    """What ``call`` (a write tool run on its arguments) would change, for a person to decide on.

    ``call`` runs inside :func:`~langchain_md_memory.files.drafts.drafting`: nothing is written.
    """
    with drafting() as draft:
        try:
            reply, failed = call(), False
        except ToolException as exc:
            reply, failed = str(exc), True
        except Exception as exc:  # the run still asks the person: say the preview is missing, and why
            return (f"{tool}: the dry run failed ({scrub(exc)}), so what it would change is not shown. "
                    "Reject unless you know what the call writes.")
    changes = draft.changes
    if failed:
        # A command refused half-way (a folder's files deleted one by one) may have written before it failed.
        done = "and write nothing" if not changes else f"after changing {', '.join(map(_named, changes))}"
        return f"{tool} would fail {done}. The model would read:\n{reply}"
    if not changes:
        return f"{tool} would write nothing. The model would read:\n{reply}"
    moved = _moves(changes)
    edits = [c for c in changes if c.path not in moved and c.path not in moved.values()]
    lines = [f"{tool} would " + "; ".join(
        ([f"change {', '.join(_named(change) for change in edits)}"] if edits else [])
        + [f"move {old} to {new}" for old, new in moved.items()]) + "."]
    if moved:
        lines.append("A moved file keeps its bytes as they are.")
    budget = MAX_SHOWN_LINES
    for change in edits:
        shown, budget = _diff(change, budget)
        lines += shown
    lines += _redactions(draft)
    lines.append(f"The model would read: {reply}")
    return "\n".join(lines)


def _entry(allowed: Sequence[DecisionType]) -> InterruptOnConfig:
    if not allowed:
        raise ValueError("allowed_decisions is empty: give at least one of 'approve', 'edit', 'reject'")
    unknown = [d for d in allowed if d not in ("approve", "edit", "reject", "respond")]
    if unknown:
        raise ValueError(f"unknown decision(s) {unknown} in allowed_decisions: use 'approve', 'edit', "
                         "'reject' (or 'respond')")
    return {"allowed_decisions": list(allowed)}


def _moves(changes: list[DraftedChange]) -> dict[str, str]:
    """Deleted files whose exact bytes a new file takes (a rename), as ``{old: new}``."""
    created = {change.after: change.path for change in changes if change.before is None}
    return {change.path: created.pop(change.before) for change in changes
            if change.after is None and change.before in created}


def _named(change: DraftedChange) -> str:
    if change.before is None:
        return f"{change.path} (new file)"
    if change.after is None:
        return f"{change.path} (deleted)"
    return change.path


def _lines(data: bytes | None) -> list[str]:
    return [] if data is None else decode_lf(data, "replace")[0].splitlines()


def _diff(change: DraftedChange, budget: int) -> tuple[list[str], int]:
    """The hunks of ``change`` as ``@@ path, line N, section "## Title" @@`` then ``-``/``+`` lines."""
    before, after = _lines(change.before), _lines(change.after)
    shown: list[str] = []
    hidden = 0
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        lines, at = (after, j1) if j2 > j1 else (before, i1)
        section = heading_above(lines, at)
        where = f"@@ {change.path}, line {at + 1}" + (f", section {section!r}" if section else "") + " @@"
        body = [f"- {line}" for line in before[i1:i2]] + [f"+ {line}" for line in after[j1:j2]]
        if budget <= 0:
            hidden += len(body)
            continue
        shown += [where, *body[:budget]]
        hidden += max(len(body) - budget, 0)
        budget -= len(body)
    if hidden:
        shown.append(f"... and {hidden} more changed line(s) of {change.path} not shown here.")
    return shown, budget


def _redactions(draft: Draft) -> list[str]:
    if not draft.redacted:
        return []
    kinds = ", ".join(f"{label} x{count}" for label, count in sorted(draft.redacted.items()))
    total = sum(draft.redacted.values())
    return [f"Redacted before writing: {total} span(s) ({kinds}), written as [redacted: <kind>]."]
