"""A person approves what the agent writes: ``create_agent``, ``HumanInTheLoopMiddleware``, a checkpointer.

The scripted models call ``memory_update`` (or Claude's memory tool); the run stops at the interrupt,
whose description is a dry run of the call (the diff, its section, the redactions), and resumes with
the person's decision: approve writes it, edit writes the edited text, reject leaves every byte of
the memory folder as it was and tells the model.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from langchain_md_memory import (
    MarkdownClaudeMemoryMiddleware,
    MarkdownMemory,
    claude_memory_write_approval,
    create_memory_tools,
    memory_write_approval,
)
from tests.support.models import ScriptedChatModel

PROFILE = "# Profile\n\n## Preferences\n- Drinks coffee\n\n## Work\n- Works in Lyon\n"
KEY = "sk-proj-Fake0123456789abcdefGHIJ"
CONFIG: Any = {"configurable": {"thread_id": "t1"}}


def update_call(**args: Any) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": "memory_update", "args": args, "id": "u1"}])


def claude_call(n: int, command: str, **args: Any) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": "memory", "args": {"command": command, **args}, "id": f"c{n}"}])


def every_byte(mem: MarkdownMemory) -> dict[str, bytes]:
    """Every memory document, byte for byte; in a folder, every file under it (index, lock, hidden files)."""
    found = {f"doc:{f}": mem.read_bytes(f) for f in mem.list_files(include_unindexed=True)}
    if mem.in_folder:
        folder = mem.memory_dir
        found |= {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    return found


class Run:
    """An agent paused at its first interrupt: what the person is shown, and how to answer."""

    def __init__(self, agent: Any, model: ScriptedChatModel) -> None:
        self.agent, self.model = agent, model
        out = agent.invoke({"messages": [HumanMessage("Remember this.")]}, CONFIG)
        [self.interrupt] = out["__interrupt__"]
        [self.request] = self.interrupt.value["action_requests"]
        self.description: str = self.request["description"]

    def decide(self, decision: dict[str, Any]) -> list[ToolMessage]:
        out = self.agent.invoke(Command(resume={"decisions": [decision]}), CONFIG)
        assert "__interrupt__" not in out
        return [m for m in out["messages"] if isinstance(m, ToolMessage)]


def update_run(mem: MarkdownMemory, *turns: AIMessage) -> Run:
    model = ScriptedChatModel(messages=iter([*turns, AIMessage("Done.")]))
    agent = create_agent(model, tools=create_memory_tools(mem), checkpointer=InMemorySaver(),
                         middleware=[HumanInTheLoopMiddleware(interrupt_on=memory_write_approval(mem))])
    return Run(agent, model)


def claude_run(mem: MarkdownMemory, *turns: AIMessage, folder: str = "") -> Run:
    model = ScriptedChatModel(messages=iter([*turns, AIMessage("Done.")]))
    agent = create_agent(model, checkpointer=InMemorySaver(), middleware=[
        MarkdownClaudeMemoryMiddleware(mem, folder=folder),
        HumanInTheLoopMiddleware(interrupt_on=claude_memory_write_approval(mem, folder=folder))])
    return Run(agent, model)


@pytest.fixture
def profile(kw_memory: MarkdownMemory) -> MarkdownMemory:
    kw_memory.write("MEMORY.md", PROFILE)
    return kw_memory


# -- memory_update ------------------------------------------------------------------------------


def test_the_interrupt_shows_the_file_the_section_and_the_lines_and_nothing_is_written_yet(
        profile: MarkdownMemory) -> None:
    before = every_byte(profile)
    run = update_run(profile, update_call(action="edit", old_text="- Drinks coffee", content="- Drinks tea"))
    assert run.request["name"] == "memory_update"
    assert run.description.splitlines()[:4] == [
        "memory_update would change MEMORY.md.",
        "@@ MEMORY.md, line 4, section '## Preferences' @@",
        "- - Drinks coffee",
        "+ - Drinks tea",
    ]
    assert run.description.endswith("The model would read: Replaced the text in MEMORY.md.")
    assert every_byte(profile) == before  # the dry run wrote nothing, not even to the index


def test_approve_writes_what_the_person_was_shown(profile: MarkdownMemory) -> None:
    run = update_run(profile, update_call(action="edit", old_text="- Drinks coffee", content="- Drinks tea"))
    [reply] = run.decide({"type": "approve"})
    assert reply.content == "Replaced the text in MEMORY.md." and reply.status == "success"
    assert profile.get("MEMORY.md") == PROFILE.replace("coffee", "tea")
    assert profile.search("tea")[0].path == "MEMORY.md"


def test_edit_writes_the_edited_text(profile: MarkdownMemory) -> None:
    run = update_run(profile, update_call(action="edit", old_text="- Drinks coffee", content="- Drinks tea"))
    [reply] = run.decide({"type": "edit", "edited_action": {"name": "memory_update", "args": {
        "action": "edit", "old_text": "- Drinks coffee", "content": "- Drinks green tea, no sugar"}}})
    assert reply.status == "success" and reply.content.endswith("Replaced the text in MEMORY.md.")
    assert profile.get("MEMORY.md") == PROFILE.replace("- Drinks coffee", "- Drinks green tea, no sugar")


def test_reject_leaves_every_file_byte_identical_and_tells_the_model(profile: MarkdownMemory) -> None:
    before = every_byte(profile)
    run = update_run(profile, update_call(content="- Believes the moon is cheese"))
    assert "+ - Believes the moon is cheese <!-- src: via=memory_update thread=t1 " in run.description
    [reply] = run.decide({"type": "reject", "message": "That was a joke."})
    assert every_byte(profile) == before
    assert reply.status == "error"
    assert reply.content == "User rejected the tool call for `memory_update` with reason: That was a joke."
    assert reply in run.model.prompts[-1]  # the model read it before its last answer


async def test_approve_under_ainvoke_writes_it(profile: MarkdownMemory) -> None:
    model = ScriptedChatModel(messages=iter([update_call(content="- Owns a bike"), AIMessage("Done.")]))
    agent = create_agent(model, tools=create_memory_tools(profile), checkpointer=InMemorySaver(),
                         middleware=[HumanInTheLoopMiddleware(interrupt_on=memory_write_approval(profile))])
    out = await agent.ainvoke({"messages": [HumanMessage("Remember this.")]}, CONFIG)
    [request] = out["__interrupt__"][0].value["action_requests"]
    assert "\n+ - Owns a bike <!-- src: via=memory_update thread=t1 " in request["description"]
    assert "bike" not in profile.get("MEMORY.md")
    await agent.ainvoke(Command(resume={"decisions": [{"type": "approve"}]}), CONFIG)
    assert "- Owns a bike <!-- src: " in profile.get("MEMORY.md")


def test_the_interrupt_shows_the_redaction_the_write_will_apply(profile: MarkdownMemory) -> None:
    run = update_run(profile, update_call(content=f"- Deploy key {KEY}", file="ops.md"))
    assert run.description.startswith("memory_update would change ops.md (new file).\n"
                                      "@@ ops.md, line 1 @@\n+ - Deploy key [redacted: api key] <!-- src: ")
    assert ("Redacted before writing: 1 span(s) (api key x1), written as [redacted: <kind>]."
            in run.description)
    assert KEY not in run.description
    run.decide({"type": "approve"})
    assert "[redacted: api key]" in profile.get("ops.md") and KEY not in profile.get("ops.md")


def test_an_append_shows_the_section_it_lands_in_before_history(profile: MarkdownMemory) -> None:
    profile.supersede("Works in Lyon", "- Works in Paris", today=None)
    run = update_run(profile, update_call(content="- Walks to work"))
    lines = run.description.splitlines()
    # A fact without a section goes under ## Notes, not into the last section (## Work), and above History.
    assert lines[1] == "@@ MEMORY.md, line 8, section '## Notes' @@"
    assert lines[2] == "+ ## Notes"
    assert lines[3].startswith("+ - Walks to work <!-- src: ")
    run.decide({"type": "approve"})
    text = profile.get("MEMORY.md")
    assert text.index("## Work") < text.index("## Notes\n- Walks to work") < text.index("## History")


def test_a_call_that_would_fail_or_change_nothing_says_so(profile: MarkdownMemory) -> None:
    describe = memory_write_approval(profile)["memory_update"]["description"]
    assert callable(describe)
    missing = describe({"name": "memory_update", "args": {"action": "delete", "old_text": "tennis"},
                        "id": "1"}, {}, None)
    assert missing.startswith("memory_update would fail and write nothing. The model would read:\n"
                              "Error: old_text was not found in MEMORY.md")
    again = describe({"name": "memory_update", "args": {"content": "- drinks coffee."}, "id": "2"}, {}, None)
    assert again == ("memory_update would write nothing. The model would read:\nNothing written: already "
                     "remembered: '- drinks coffee.' at MEMORY.md#L4.")
    bad = describe({"name": "memory_update", "args": {"action": "shout"}, "id": "3"}, {}, None)
    assert bad.startswith("memory_update would fail and write nothing. The model would read:\n"
                          "Error: invalid arguments for memory_update: action: ")
    assert profile.get("MEMORY.md") == PROFILE


# -- Claude's memory tool -----------------------------------------------------------------------


def test_claude_views_unasked_and_its_str_replace_waits_with_the_diff(profile: MarkdownMemory) -> None:
    before = every_byte(profile)
    run = claude_run(profile, claude_call(1, "view", path="/memories/MEMORY.md"),
                     claude_call(2, "str_replace", path="/memories/MEMORY.md", old_str="Works in Lyon",
                                 new_str="Works in Berlin"))
    assert run.request["name"] == "memory" and run.request["args"]["command"] == "str_replace"
    [view] = [m for m in run.agent.get_state(CONFIG).values["messages"] if isinstance(m, ToolMessage)]
    assert view.content.startswith("Here's the content of /memories/MEMORY.md with line numbers:")
    assert run.description.splitlines()[:4] == [
        "memory str_replace would change MEMORY.md.",
        "@@ MEMORY.md, line 7, section '## Work' @@",
        "- - Works in Lyon",
        "+ - Works in Berlin",
    ]
    assert every_byte(profile) == before
    [_, reply] = run.decide({"type": "approve"})
    assert reply.content.startswith("The memory file has been edited.")
    assert profile.get("MEMORY.md") == PROFILE.replace("Lyon", "Berlin")


def test_claude_create_edited_by_the_person_writes_the_edited_text(profile: MarkdownMemory) -> None:
    run = claude_run(profile, claude_call(1, "create", path="/memories/people/anna.md",
                                          file_text="- Anna: my sister\n"), folder="claude")
    assert run.description.startswith("memory create would change claude/people/anna.md (new file).\n"
                                      "@@ claude/people/anna.md, line 1 @@\n+ - Anna: my sister <!-- src: ")
    [reply] = run.decide({"type": "edit", "edited_action": {"name": "memory", "args": {
        "command": "create", "path": "/memories/people/anna.md", "file_text": "- Anna: my cousin\n"}}})
    assert reply.status == "success"
    text = profile.get("claude/people/anna.md")
    assert text.startswith("- Anna: my cousin") and "sister" not in text


def test_claude_rename_rejected_leaves_every_byte_and_tells_the_model(profile: MarkdownMemory) -> None:
    profile.write("notes/a.md", "- a\n")
    profile.write("notes/b.md", "- b\n")
    before = every_byte(profile)
    run = claude_run(profile, claude_call(1, "rename", old_path="/memories/notes", new_path="/memories/done"))
    assert run.description.splitlines() == [
        "memory rename would move notes/a.md to done/a.md; move notes/b.md to done/b.md.",
        "A moved file keeps its bytes as they are.",
        "The model would read: Successfully renamed /memories/notes to /memories/done",
    ]
    [reply] = run.decide({"type": "reject"})
    assert reply.status == "error" and "User rejected the tool call for `memory`" in reply.content
    assert "The tool was not executed" in reply.content
    assert every_byte(profile) == before


def test_claude_delete_approved_deletes_what_the_person_saw(profile: MarkdownMemory) -> None:
    run = claude_run(profile, claude_call(1, "delete", path="/memories/MEMORY.md"))
    assert run.description.splitlines()[:2] == ["memory delete would change MEMORY.md (deleted).",
                                                "@@ MEMORY.md, line 1, section '# Profile' @@"]
    assert "- - Works in Lyon" in run.description
    run.decide({"type": "approve"})
    assert profile.list_files() == []


def test_a_long_change_is_cut_with_a_note_that_says_how_much_is_not_shown(profile: MarkdownMemory) -> None:
    profile.write("log.md", "".join(f"- entry {n}\n" for n in range(250)))
    describe = claude_memory_write_approval(profile)["memory"]["description"]
    assert callable(describe)
    shown = describe({"name": "memory", "id": "1", "args": {"command": "delete", "path": "/memories/log.md"}},
                     {}, None).splitlines()
    assert shown[:3] == ["memory delete would change log.md (deleted).", "@@ log.md, line 1 @@",
                         "- - entry 0"]
    assert shown[201] == "- - entry 199"
    assert shown[202] == "... and 50 more changed line(s) of log.md not shown here."


def test_an_approval_without_decisions_is_refused_by_name(profile: MarkdownMemory) -> None:
    with pytest.raises(ValueError, match="allowed_decisions is empty"):
        memory_write_approval(profile, allowed_decisions=[])
    with pytest.raises(ValueError, match=r"unknown decision\(s\) \['aprove'\]"):
        claude_memory_write_approval(profile, allowed_decisions=["aprove"])
