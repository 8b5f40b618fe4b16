"""The three memory tools through ``invoke`` and tool-call dicts: output, errors, defaults."""

from __future__ import annotations

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import ToolMessage
from langchain_core.tools import StructuredTool

from langchain_md_memory import MarkdownMemory, create_memory_tools
from langchain_md_memory.errors import MemoryIndexError
from langchain_md_memory.files.facts import strip_annotations
from langchain_md_memory.files.paths import daily_file_name
from langchain_md_memory.integrations.tools import PROGRESS_EVENT, MemorySearchInput, MemoryUpdateInput
from langchain_md_memory.prompts import DEFAULT_PROMPTS, FINANCE_PROMPTS

MEMORY = """# Long-term memory

## Risk profile
- Risk tolerance: conservative. Max drawdown the user accepts: 15%.
- Position limit: no single stock above 5% of the total portfolio.
"""


@pytest.fixture
def mem(kw_memory: MarkdownMemory) -> MarkdownMemory:
    kw_memory.write("MEMORY.md", MEMORY)
    return kw_memory


@pytest.fixture
def tools(mem: MarkdownMemory):
    return create_memory_tools(mem)


def call(tool, args, call_id="call_1"):
    return tool.invoke({"name": tool.name, "args": args, "id": call_id, "type": "tool_call"})


def test_tools_are_search_get_update_in_order_with_schemas(tools):
    assert [t.name for t in tools] == ["memory_search", "memory_get", "memory_update"]
    assert all(isinstance(t, StructuredTool) for t in tools)
    assert all(t.coroutine is not None and t.func is not None for t in tools)
    assert set(tools[0].args) == {"query", "max_results", "as_of"}
    assert set(tools[1].args) == {"path", "start_line", "end_line"}
    assert set(tools[2].args) == {"content", "action", "file", "old_text", "start_line", "end_line",
                                  "expires", "section"}


def test_search_description_demands_a_search_before_personalised_advice(tools):
    description = tools[0].description
    assert "BEFORE" in description
    for topic in ("personalised advice or decisions", "goals", "preferences", "constraints",
                  "past decisions"):
        assert topic in description


def test_finance_prompts_give_the_finance_descriptions(mem):
    search, get, update = create_memory_tools(mem, prompts=FINANCE_PROMPTS)
    assert "BEFORE" in search.description
    for topic in ("buy/sell", "allocation", "stock picks", "position sizing", "risk tolerance"):
        assert topic in search.description
    assert (get.description, update.description) == (FINANCE_PROMPTS.get_description,
                                                      FINANCE_PROMPTS.update_description)


def test_custom_prompts_set_every_description(mem):
    prompts = DEFAULT_PROMPTS.replace(search_description="S.", get_description="G.", update_description="U.")
    assert [t.description for t in create_memory_tools(mem, prompts=prompts)] == ["S.", "G.", "U."]


def test_update_defaults_append_to_long_term_memory():
    args = MemoryUpdateInput(content="- x")
    assert (args.action, args.file, args.old_text) == ("append", "long_term", None)
    assert MemorySearchInput(query="q").max_results is None


def test_search_returns_citable_blocks_with_score_and_text(tools):
    out = tools[0].invoke({"query": "single stock position limit"})
    lines = out.splitlines()
    assert lines[0] == "[1] MEMORY.md#L1-L5 (score 1.00)"
    assert lines[1:] == MEMORY.strip().splitlines()


def test_search_reports_the_progress_of_its_sync_as_custom_events(tools):
    class Recorder(BaseCallbackHandler):
        def __init__(self) -> None:
            self.events: list[dict[str, object]] = []

        def on_custom_event(self, name, data, **kwargs):
            if name == PROGRESS_EVENT:
                self.events.append(data)

    recorder = Recorder()
    out = tools[0].invoke({"query": "position limit"}, config={"callbacks": [recorder]})
    assert out.startswith("[1] MEMORY.md")
    assert recorder.events[-1] == {"phase": "index", "done": 1, "total": 1, "unit": "files"}
    assert tools[0].invoke({"query": "position limit"}) == out  # no callbacks: nothing to report to


def test_search_respects_max_results(mem, tools):
    mem.write("goals.md", "# Goals\n\n- Retire at 60 with a conservative portfolio.\n")
    out = tools[0].invoke({"query": "conservative", "max_results": 1})
    assert out.count("(score ") == 1


def test_search_without_a_match_says_so_and_suggests_other_words(tools):
    out = tools[0].invoke({"query": "zebra"})
    assert out.startswith("No memory matched 'zebra'")


def test_search_when_the_index_fails_reports_memory_disabled_instead_of_failing(mem, tools, monkeypatch):
    def broken(*args, **kwargs):
        raise MemoryIndexError("index query failed on index.sqlite: disk I/O error")

    monkeypatch.setattr(mem, "search_detailed", broken)
    message = call(tools[0], {"query": "stock"})
    assert message.status == "success"
    assert message.content == "memory disabled: index query failed on index.sqlite: disk I/O error"


def test_search_tool_call_returns_tool_message_with_the_call_id(tools):
    message = call(tools[0], {"query": "drawdown"}, "call_42")
    assert isinstance(message, ToolMessage)
    assert message.tool_call_id == "call_42"
    assert message.name == "memory_search"
    assert "Max drawdown the user accepts: 15%" in message.content
    assert message.status == "success"


def test_get_returns_the_exact_lines(tools):
    assert tools[1].invoke({"path": "MEMORY.md", "start_line": 4, "end_line": 4}) == (
        "- Risk tolerance: conservative. Max drawdown the user accepts: 15%.\n"
    )
    assert tools[1].invoke({"path": "long_term"}) == MEMORY


def test_get_refuses_a_path_outside_the_memory_as_an_error_message(tools):
    message = call(tools[1], {"path": "../secrets.md"})
    assert message.status == "error"
    assert message.content.startswith("Error: Path is outside the memory directory")


def test_get_past_the_end_tells_how_many_lines_there_are(tools):
    out = tools[1].invoke({"path": "MEMORY.md", "start_line": 50})
    assert out.startswith("Error: MEMORY.md has 5 line(s)")


def test_get_of_a_missing_file_is_an_error_the_model_can_read(tools):
    assert "does not exist" in tools[1].invoke({"path": "nope.md"})


def test_invalid_arguments_come_back_as_an_error_string_not_an_exception(tools):
    out = tools[1].invoke({"path": "MEMORY.md", "start_line": 0})
    assert out.startswith("Error: invalid arguments for memory_get: start_line:")
    message = call(tools[0], {"max_results": 3})
    assert message.status == "error"
    assert "query: Field required" in message.content


def test_update_with_only_content_appends_to_memory_md(mem, tools):
    out = tools[2].invoke({"content": "- Keeps 10% of the portfolio in cash."})
    assert out == "Appended to MEMORY.md."
    last = mem.get("MEMORY.md").splitlines()[-1]
    assert last.startswith("- Keeps 10% of the portfolio in cash. <!-- src: via=memory_update ")


def test_update_appended_fact_is_searchable_at_once(tools):
    tools[2].invoke({"content": "- Emergency fund: six months of expenses."})
    out = tools[0].invoke({"query": "emergency fund"})
    assert out.startswith("[1] MEMORY.md#L7-L8 (score 1.00)\n## Notes\n")  # not in the risk profile's chunk
    assert out.splitlines()[-1].startswith("- Emergency fund: six months of expenses. <!-- src: ")


def test_update_files_an_appended_fact_under_the_section_it_names(mem, tools):
    filed = tools[2].invoke({"content": "- Max drawdown 10%", "section": "Risk profile"})
    assert filed == "Appended to MEMORY.md."
    assert strip_annotations(mem.get("MEMORY.md")) == MEMORY + "- Max drawdown 10%\n"
    out = tools[2].invoke({"action": "delete", "old_text": "- Max drawdown 10%", "section": "Risk profile"})
    assert out.startswith("Error: section applies to action='append'")
    assert "Max drawdown 10%" in mem.get("MEMORY.md")


def test_update_daily_appends_to_todays_file(mem, tools):
    out = tools[2].invoke({"content": "- Reviewed bonds", "file": "daily"})
    assert out == f"Appended to {daily_file_name()}."
    assert strip_annotations(mem.get("daily")) == "- Reviewed bonds\n"


def test_update_edit_replaces_old_text(mem, tools):
    out = tools[2].invoke({"action": "edit", "old_text": "above 5%", "content": "above 4%"})
    assert out == "Replaced the text in MEMORY.md."
    assert "no single stock above 4% of the total portfolio" in mem.get("MEMORY.md")


def test_update_delete_removes_the_line(mem, tools):
    line = "- Risk tolerance: conservative. Max drawdown the user accepts: 15%."
    assert tools[2].invoke({"action": "delete", "old_text": line}) == "Deleted the text from MEMORY.md."
    assert line not in mem.get("MEMORY.md")
    assert len(mem.get("MEMORY.md").splitlines()) == 4


@pytest.mark.parametrize("action", ["edit", "delete"])
def test_edit_or_delete_without_old_text_tells_the_model_to_read_with_memory_get(mem, tools, action):
    message = call(tools[2], {"action": action, "content": "x"})
    assert message.status == "error"
    assert "needs old_text" in message.content
    assert "memory_get(path='MEMORY.md')" in message.content
    assert mem.get("MEMORY.md") == MEMORY


@pytest.mark.parametrize("action", ["edit", "delete"])
def test_old_text_not_found_tells_the_model_to_read_the_exact_text_first(mem, tools, action):
    out = tools[2].invoke({"action": action, "old_text": "above 5 %", "content": "above 4%"})
    assert out.startswith("Error: old_text was not found in MEMORY.md")
    assert "memory_get(path='MEMORY.md')" in out
    assert mem.get("MEMORY.md") == MEMORY


def test_edit_of_a_missing_file_says_the_file_does_not_exist(tools):
    out = tools[2].invoke({"action": "edit", "old_text": "a", "content": "b", "file": "goals.md"})
    assert out.startswith("Error: goals.md does not exist")


def test_append_with_empty_content_is_an_error_and_writes_nothing(mem, tools):
    assert tools[2].invoke({"content": "   "}).startswith("Error: content is empty")
    assert mem.get("MEMORY.md") == MEMORY


def test_update_refuses_non_markdown_and_escaping_files(mem, tools):
    assert "not a visible '.md' file" in tools[2].invoke({"content": "x", "file": "notes.txt"})
    assert "outside the memory directory" in tools[2].invoke({"content": "x", "file": "../x.md"})
    assert not (mem.memory_dir.parent / "x.md").exists()


def test_unknown_action_is_a_validation_error(tools):
    out = tools[2].invoke({"action": "rename", "content": "x"})
    assert out.startswith("Error: invalid arguments for memory_update: action:")
