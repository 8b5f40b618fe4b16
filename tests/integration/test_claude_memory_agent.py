"""``MarkdownClaudeMemoryMiddleware``: Claude's memory tool in real ``create_agent`` runs, scripted models."""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from pydantic import Field

from langchain_md_memory import MarkdownClaudeMemoryMiddleware, MemoryStoreError
from langchain_md_memory.integrations.claude_memory import CLAUDE_MEMORY_TOOL, create_claude_memory_tool
from tests.support.models import ScriptedChatModel, scripted

EMPTY_VIEW = ("Here're the files and directories up to 2 levels deep in /memories, excluding hidden items "
              "and node_modules:\n0B\t/memories")
PREFS = "# Preferences\n- Drinks tea every morning\n- Lives in Paris\n"


class RawToolsModel(ScriptedChatModel):
    """A scripted model that also keeps the tools exactly as ``bind_tools`` received them."""

    raw_tools: list[Any] = Field(default_factory=list)

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:  # type: ignore[override]
        self.raw_tools.extend(tools)
        return super().bind_tools(tools, **kwargs)


def memory_call(n: int, command: str, **args: Any) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": "memory", "args": {"command": command, **args}, "id": f"c{n}"}])


def run(mem: Any, *turns: AIMessage) -> tuple[RawToolsModel, list[ToolMessage]]:
    """An agent with the middleware whose model makes ``turns`` then answers; the tool replies in order."""
    model = RawToolsModel(messages=iter([*turns, AIMessage("Done.")]))
    agent = create_agent(model, middleware=[MarkdownClaudeMemoryMiddleware(mem)])
    out = agent.invoke({"messages": [HumanMessage("Remember my preferences.")]})
    return model, [m for m in out["messages"] if isinstance(m, ToolMessage)]


def test_claude_views_creates_edits_and_reads_a_memory_file_that_search_then_finds(kw_memory):
    model, replies = run(
        kw_memory,
        memory_call(1, "view", path="/memories"),
        memory_call(2, "create", path="/memories/prefs.md", file_text=PREFS),
        memory_call(3, "str_replace", path="/memories/prefs.md", old_str="Lives in Paris",
                    new_str="Lives in Berlin"),
        memory_call(4, "insert", path="/memories/prefs.md", insert_line=1,
                    insert_text="- Allergic to peanuts\n"),
        memory_call(5, "view", path="/memories/prefs.md"),
        AIMessage("", tool_calls=[{"name": "memory_search", "args": {"query": "allergic to peanuts"},
                                   "id": "c6"}]),
    )
    assert [r.status for r in replies] == ["success"] * 6
    view, create, replace, insert, read, search = (r.content for r in replies)
    assert view == EMPTY_VIEW
    assert create == "File created successfully at: /memories/prefs.md"
    assert replace.startswith("The memory file has been edited. Here is the snippet showing the change "
                              "(with line numbers):\n     1\t# Preferences\n")
    assert "     3\t- Lives in Berlin" in replace
    assert insert == "The file /memories/prefs.md has been edited."
    lines = read.split("\n")
    assert lines[0] == "Here's the content of /memories/prefs.md with line numbers:"
    assert lines[1] == "     1\t# Preferences"
    assert lines[2].startswith("     2\t- Allergic to peanuts <!-- src: via=claude_memory ")  # provenance
    assert lines[3].startswith("     3\t- Drinks tea every morning") and len(lines) == 5
    text = kw_memory.get("prefs.md")
    assert "- Lives in Berlin" in text and "Paris" not in text
    assert search.startswith("[1] prefs.md#L")
    assert kw_memory.search("peanuts")[0].path == "prefs.md"
    # Claude was sent its native tool declaration, and memory_search beside it.
    assert CLAUDE_MEMORY_TOOL in model.raw_tools
    assert [getattr(t, "name", None) for t in model.raw_tools[:2]] == ["memory_search", None]


def test_the_file_claude_creates_is_a_markdown_file_in_the_memory_folder(kw_memory):
    run(kw_memory, memory_call(1, "create", path="/memories/people/anna.md", file_text="- Anna: my sister\n"))
    on_disk = (kw_memory.memory_dir / "people" / "anna.md").read_text(encoding="utf-8")
    assert on_disk.startswith("- Anna: my sister <!-- src: via=claude_memory ")


def test_paths_outside_memories_are_tool_errors_and_write_nothing(kw_memory):
    _, replies = run(
        kw_memory,
        memory_call(1, "create", path="/memories/../x.md", file_text="- escaped\n"),
        memory_call(2, "create", path="/memories/%2e%2e%2fx.md", file_text="- escaped\n"),
        memory_call(3, "create", path="/memories/notes/%2E%2E/%2e%2e/x.md", file_text="- escaped\n"),
        memory_call(4, "create", path="/etc/x.md", file_text="- escaped\n"),
        memory_call(5, "create", path="/memoriesx/x.md", file_text="- escaped\n"),
        memory_call(6, "view", path="/memories/../../etc/passwd"),
        memory_call(7, "rename", old_path="/memories/a.md", new_path="/tmp/a.md"),
    )
    assert [r.status for r in replies] == ["error"] * 7
    assert "would escape /memories" in replies[0].content and "would escape /memories" in replies[1].content
    assert "is outside /memories" in replies[3].content
    assert kw_memory.list_files() == []


def test_an_escaping_create_leaves_no_file_beside_the_memory_folder(kw_memory):
    run(kw_memory, memory_call(1, "create", path="/memories/../x.md", file_text="- escaped\n"),
        memory_call(2, "create", path="/memories/%2e%2e%2fx.md", file_text="- escaped\n"))
    outside = kw_memory.memory_dir.parent
    assert not (outside / "x.md").exists() and not list(kw_memory.memory_dir.glob("*x.md"))


def test_a_two_megabyte_create_is_refused_by_the_write_cap(kw_memory):
    _, replies = run(kw_memory, memory_call(1, "create", path="/memories/dump.md", file_text="x" * 2_000_000))
    assert replies[0].status == "error"
    assert "over max_write_bytes=1000000" in replies[0].content
    assert kw_memory.list_files() == []


def test_mistakes_come_back_as_errors_the_model_can_act_on(kw_memory):
    kw_memory.write("notes.md", "- a\n- a\n")
    _, replies = run(
        kw_memory,
        memory_call(1, "str_replace", path="/memories/notes.md", old_str="- a", new_str="- b"),
        memory_call(2, "str_replace", path="/memories/notes.md", old_str="- z", new_str="- b"),
        memory_call(3, "insert", path="/memories/notes.md", insert_line=9, insert_text="- c"),
        memory_call(4, "view", path="/memories/missing.md"),
        memory_call(5, "create", path="/memories/notes.md", file_text="- again\n"),
        memory_call(6, "create", path="/memories/notes.txt", file_text="- plain text\n"),
    )
    assert [r.status for r in replies] == ["error"] * 6
    assert [r.content for r in replies[:5]] == [
        "No replacement was performed. Multiple occurrences of old_str `- a` in lines: 1, 2. "
        "Please ensure it is unique",
        "No replacement was performed, old_str `- z` did not appear verbatim in /memories/notes.md.",
        "Invalid `insert_line` parameter: 9. It should be within the range of lines of the file: [0, 2]",
        "The path /memories/missing.md does not exist. Please provide a valid path.",
        "File /memories/notes.md already exists",
    ]
    assert "must end in '.md'" in replies[5].content
    assert kw_memory.get("notes.md") == "- a\n- a\n"


def test_the_memory_tool_runs_in_a_hand_built_graph_with_view_range_rename_and_delete(kw_memory):
    graph = StateGraph(MessagesState)
    graph.add_node("tools", ToolNode([create_claude_memory_tool(kw_memory)]))
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    app = graph.compile()

    def call(command: str, **args: Any) -> ToolMessage:
        message: ToolMessage = app.invoke({"messages": [memory_call(0, command, **args)]})["messages"][-1]
        return message

    kw_memory.write("MEMORY.md", "- rule one\n- rule two\n- rule three\n")
    kw_memory.write("projects/acme/plan.md", "- ship in May\n")
    listing = call("view", path="/memories").content.split("\n")
    assert listing[1:] == ["49B\t/memories", "35B\t/memories/MEMORY.md", "14B\t/memories/projects/",
                           "14B\t/memories/projects/acme/"]  # two levels: plan.md is one deeper
    assert call("view", path="/memories/MEMORY.md", view_range=[2, -1]).content.split("\n")[1:] == [
        "     2\t- rule two", "     3\t- rule three"]
    assert call("rename", old_path="/memories/projects", new_path="/memories/done").content == (
        "Successfully renamed /memories/projects to /memories/done")
    assert kw_memory.get("done/acme/plan.md") == "- ship in May\n"
    assert call("delete", path="/memories/done").content == "Successfully deleted /memories/done"
    assert call("delete", path="/memories").status == "error"
    assert kw_memory.list_files() == ["MEMORY.md"]
    assert kw_memory.search("ship May") == []


def test_memories_can_stand_for_a_subfolder_and_the_system_message_names_it(kw_memory):
    model = scripted(memory_call(1, "create", path="/memories/a.md", file_text="- from Claude\n"),
                     AIMessage("ok"))
    agent = create_agent(model, system_prompt="Be brief.",
                         middleware=[MarkdownClaudeMemoryMiddleware(kw_memory, folder="claude")])
    agent.invoke({"messages": [HumanMessage("hi")]})
    assert kw_memory.list_files() == ["claude/a.md"]
    system = model.prompts[0][0]
    assert isinstance(system, SystemMessage)
    assert system.content.startswith("Be brief.\n\nYour memory folder /memories ")
    assert "memory_search" in system.content


async def test_the_async_agent_runs_the_same_commands(kw_memory):
    model = scripted(memory_call(1, "create", path="/memories/a.md", file_text="- async\n"),
                     memory_call(2, "insert", path="/memories/a.md", insert_line=0, insert_text="# Top"),
                     AIMessage("ok"))
    agent = create_agent(model, middleware=[MarkdownClaudeMemoryMiddleware(kw_memory)])
    out = await agent.ainvoke({"messages": [HumanMessage("hi")]})
    assert [m.status for m in out["messages"] if isinstance(m, ToolMessage)] == ["success", "success"]
    assert kw_memory.get("a.md").startswith("# Top\n- async <!-- src: ")


# -- files written by hand: their bytes are the person's --------------------------------------------

HAND = (b'# Written by hand\r\n- Caf\xc3\xa9 au lait at 8\r\nexport CLIENT_SECRET="abcd1234efgh5678"\r\n'
        b"- no line break at the end")
GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def test_rename_and_insert_keep_a_hand_written_file_byte_for_byte(kw_memory):
    kw_memory.store.write_bytes("notes.md", HAND)  # as a person saved it: CRLF, a secret, no final newline
    _, replies = run(
        kw_memory,
        memory_call(1, "rename", old_path="/memories/notes.md", new_path="/memories/archive/notes.md"),
        memory_call(2, "insert", path="/memories/archive/notes.md", insert_line=1,
                    insert_text=f"- Deploy key {GITHUB_TOKEN}\n"),
        memory_call(3, "insert", path="/memories/archive/notes.md", insert_line=5, insert_text="- The end"),
    )
    assert [r.status for r in replies] == ["success"] * 3
    assert not kw_memory.exists("notes.md")
    lines = kw_memory.read_bytes("archive/notes.md").split(b"\r\n")
    kept = HAND.split(b"\r\n")
    assert lines[0] == kept[0] and lines[2:5] == kept[1:]  # untouched: not decoded, not redacted
    assert lines[1].startswith(b"- Deploy key [redacted: ") and GITHUB_TOKEN.encode() not in lines[1]
    assert lines[5].startswith(b"- The end <!-- src: via=claude_memory ") and lines[6] == b""


def test_rename_and_insert_keep_bytes_that_are_not_utf8(kw_memory, memory_dir):
    (memory_dir / "cafe.md").write_bytes(b"- Caf\xe9 au lait\n- Cr\xe8me br\xfbl\xe9e\n")  # Latin-1
    _, replies = run(
        kw_memory,
        memory_call(1, "insert", path="/memories/cafe.md", insert_line=1, insert_text="- Tea at 5"),
        memory_call(2, "rename", old_path="/memories/cafe.md", new_path="/memories/food.md"),
    )
    assert [r.status for r in replies] == ["success"] * 2
    assert not (memory_dir / "cafe.md").exists()
    lines = (memory_dir / "food.md").read_bytes().split(b"\n")
    assert lines[0] == b"- Caf\xe9 au lait" and lines[2:] == [b"- Cr\xe8me br\xfbl\xe9e", b""]
    assert lines[1].startswith(b"- Tea at 5 <!-- src: via=claude_memory ")


def test_a_folder_rename_moves_a_large_hand_written_file_with_the_rest(kw_memory):
    big = b"# Log\n" + b"- an entry written by hand\n" * 60_000  # 1.6 MB, over max_write_bytes
    kw_memory.store.write_bytes("proj/big.md", big)
    kw_memory.write("proj/a.md", "- a\n")
    _, replies = run(kw_memory, memory_call(1, "rename", old_path="/memories/proj",
                                            new_path="/memories/proj2"))
    assert replies[0].status == "success", replies[0].content
    assert kw_memory.list_files() == ["proj2/a.md", "proj2/big.md"]
    assert kw_memory.read_bytes("proj2/big.md") == big and kw_memory.read_bytes("proj2/a.md") == b"- a\n"


def test_a_folder_rename_refused_for_one_file_moves_none(kw_memory):
    deep = "proj/" + "/".join(f"d{n}" for n in range(15)) + "/deep.md"  # 16 folders: the limit
    kw_memory.write("proj/a.md", "- a\n")
    kw_memory.write(deep, "- deep\n")
    before = {path: kw_memory.read_bytes(path) for path in kw_memory.list_files()}
    _, replies = run(kw_memory, memory_call(1, "rename", old_path="/memories/proj",
                                            new_path="/memories/x/y/proj"))
    assert replies[0].status == "error"
    assert "over max_path_depth=16" in replies[0].content  # 18 folders deep there
    assert {path: kw_memory.read_bytes(path) for path in kw_memory.list_files()} == before


def fail_writes_of(monkeypatch: Any, mem: Any, name: str) -> None:
    """Every write of the memory's store (folder or database) to a file ``name`` fails, as on a full disk."""
    store_class = type(mem.store)
    for method in ("write", "write_bytes"):
        real = getattr(store_class, method)

        def failing(self: Any, path: str, data: Any, real: Any = real) -> None:
            if path.rsplit("/", 1)[-1] == name:
                raise MemoryStoreError(f"simulated full disk writing {path}")
            real(self, path, data)

        monkeypatch.setattr(store_class, method, failing)


def test_a_folder_rename_whose_write_fails_half_way_moves_none(kw_memory, monkeypatch):
    kw_memory.write("proj/a.md", "- a\n")
    kw_memory.write("proj/b.md", "- b\n")
    fail_writes_of(monkeypatch, kw_memory, "b.md")
    _, replies = run(kw_memory, memory_call(1, "rename", old_path="/memories/proj",
                                            new_path="/memories/done"))
    assert replies[0].status == "error" and "simulated full disk writing done/b.md" in replies[0].content
    assert kw_memory.list_files() == ["proj/a.md", "proj/b.md"]


def test_a_folder_delete_or_rename_takes_the_stores_hidden_items_with_it(kw_memory):
    store = kw_memory.as_store()
    store.put(("users", "bob"), "hint", {"content": "password hint: tea"}, index=False)
    store.put(("users", "bob"), "city", {"content": "Lives in Oslo"})
    store.put(("users", "carol"), "hint", {"content": "hint: coffee"}, index=False)  # hidden items only
    _, replies = run(
        kw_memory,
        memory_call(1, "rename", old_path="/memories/users", new_path="/memories/people"),
        memory_call(2, "delete", path="/memories/people/carol"),
    )
    assert [r.status for r in replies] == ["success"] * 2, replies
    assert kw_memory.list_files(include_unindexed=True) == ["people/bob/.store.unindexed.md",
                                                            "people/bob/store.md"]
    hint = store.get(("people", "bob"), "hint")
    assert hint is not None and hint.value == {"content": "password hint: tea"}  # one namespace, whole
    _, replies = run(kw_memory, memory_call(3, "delete", path="/memories/people"))
    assert replies[0].content == "Successfully deleted /memories/people"
    assert kw_memory.list_files(include_unindexed=True) == []
    assert store.get(("people", "bob"), "hint") is None


def test_with_a_folder_the_virtual_root_is_listed_but_never_deleted_or_moved(kw_memory):
    model = scripted(
        memory_call(1, "view", path="/memories"),
        memory_call(2, "create", path="/memories/a.md", file_text="- from Claude\n"),
        memory_call(3, "delete", path="/memories"),
        memory_call(4, "rename", old_path="/memories", new_path="/memories/x"),
        memory_call(5, "rename", old_path="/memories/a.md", new_path="/memories"),
        memory_call(6, "create", path="/memories", file_text="- a file in place of the folder\n"),
        memory_call(7, "view", path="/memories"),
        memory_call(8, "delete", path="/memories/a.md"),
        memory_call(9, "view", path="/memories"),  # emptied again
        AIMessage("ok"))
    agent = create_agent(model, middleware=[MarkdownClaudeMemoryMiddleware(kw_memory, folder="claude")])
    out = agent.invoke({"messages": [HumanMessage("hi")]})
    replies = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert [r.status for r in replies] == ["success", "success"] + ["error"] * 4 + ["success"] * 3
    assert replies[0].content == EMPTY_VIEW and replies[8].content == EMPTY_VIEW
    assert replies[2].content == "Cannot delete the /memories directory itself"
    assert replies[3].content == "Cannot rename the /memories directory itself"
    assert replies[4].content == "The destination /memories already exists"
    assert replies[6].content.split("\n")[2].endswith("B\t/memories/a.md")
    assert kw_memory.list_files() == []


def test_a_name_over_the_limit_is_a_tool_error_naming_it(kw_memory):
    long = f"/memories/{'n' * 300}.md"
    kw_memory.write("a.md", "- a\n")
    _, replies = run(
        kw_memory,
        memory_call(1, "create", path=long, file_text="- x\n"),
        memory_call(2, "view", path=long),
        memory_call(3, "delete", path=long),
        memory_call(4, "str_replace", path=long, old_str="x", new_str="y"),
        memory_call(5, "insert", path=long, insert_line=0, insert_text="- x"),
        memory_call(6, "rename", old_path="/memories/a.md", new_path=long),
        memory_call(7, "rename", old_path=long, new_path="/memories/b.md"),
    )
    assert [r.status for r in replies] == ["error"] * 7
    assert all("over max_name_bytes=255" in r.content for r in replies), [r.content for r in replies]
    assert kw_memory.list_files() == ["a.md"]
