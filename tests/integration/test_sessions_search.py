"""Session transcripts on disk: searchable, one file per thread, no secrets, from a LangGraph node."""

import datetime as dt
import os
import time

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph

from langchain_md_memory.features.transcripts import awrite_session_log
from langchain_md_memory.langgraph import create_session_log_node, write_session_log
from tests.support.models import ToolAcceptingListModel

SECRET = "sk-live-9f8e7d6c5b4a39281706f5e4d3c2b1a0"


def conversation(extra=()):
    return [
        HumanMessage("We talked about the kayak trip to Lofoten next June, remember the budget?"),
        AIMessage("", tool_calls=[{"name": "fx_rates", "args": {"pair": "NOKEUR", "api_key": SECRET},
                                   "id": "call_9"}]),
        ToolMessage("NOKEUR 0.085", tool_call_id="call_9", name="fx_rates"),
        AIMessage("Budget stays at 4000 EUR for the Lofoten kayak trip."),
        *extra,
    ]


def all_bytes(folder):
    data = b""
    for dirpath, _, files in os.walk(folder):
        for name in files:
            with open(os.path.join(dirpath, name), "rb") as handle:
                data += handle.read()
    return data


def test_a_conversation_becomes_a_searchable_session_file(kw_memory):
    path = write_session_log(kw_memory, conversation(), "trip-42", day=dt.date.today())
    assert path == f"sessions/{dt.date.today().isoformat()}-trip-42.md"
    text = kw_memory.get(path)
    assert "## User" in text and "## Assistant" in text and "## Tool: fx_rates" in text
    hits = kw_memory.search("Lofoten kayak budget")
    assert hits and hits[0].path == path
    assert hits[0].file_kind == "session"
    assert "4000 EUR" in "".join(h.text for h in hits)


def test_session_hits_decay_by_index_time_not_by_file_name(kw_memory):
    # An old date in the name does not age a session: it was indexed just now.
    path = write_session_log(kw_memory, conversation(), "old", day=dt.date(2001, 1, 1))
    hit = next(h for h in kw_memory.search("Lofoten kayak") if h.path == path)
    assert hit.file_kind == "session"
    assert time.time() - hit.updated_at < 120
    assert hit.decay > 0.99


def test_rewriting_a_thread_updates_its_one_file(kw_memory):
    first = write_session_log(kw_memory, conversation(), "trip-42")
    second = write_session_log(kw_memory, conversation([HumanMessage("Add a drysuit rental to the plan.")]),
                               "trip-42")
    assert first == second
    sessions = sorted(p.name for p in (kw_memory.memory_dir / "sessions").iterdir() if p.suffix == ".md")
    assert sessions == [first.split("/")[1]]
    assert "drysuit rental" in kw_memory.get(second)
    assert kw_memory.get(second).count("Budget stays at 4000 EUR") == 1
    hits = kw_memory.search("drysuit rental")
    assert [h.path for h in hits].count(second) >= 1
    assert {h.path for h in kw_memory.search("Lofoten")} == {second}


def test_a_thread_started_yesterday_keeps_its_file_today(kw_memory):
    yesterday = dt.date.today() - dt.timedelta(days=1)
    started = write_session_log(kw_memory, conversation(), "long-thread", day=yesterday)
    again = write_session_log(kw_memory, conversation([HumanMessage("still here")]), "long-thread")
    assert again == started
    assert len(list((kw_memory.memory_dir / "sessions").glob("*long-thread*.md"))) == 1


def test_a_secret_in_a_tool_argument_never_reaches_disk(kw_memory):
    path = write_session_log(kw_memory, conversation([HumanMessage(f"also my key {SECRET}")]), "t")
    kw_memory.search("kayak")  # index it too
    assert SECRET not in kw_memory.get(path)
    assert "api_key=[redacted: secret]" in kw_memory.get(path)
    assert SECRET.encode() not in all_bytes(kw_memory.memory_dir)
    assert b"sk-live" not in all_bytes(kw_memory.memory_dir)


async def test_async_write_matches_the_sync_one(kw_memory):
    path = await awrite_session_log(kw_memory, conversation(), "async-thread")
    assert path.endswith("-async-thread.md")
    assert "Lofoten" in kw_memory.get(path)


def build_graph(mem, replies):
    model = ToolAcceptingListModel(responses=replies)

    def agent(state: MessagesState):
        return {"messages": [model.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("session_log", create_session_log_node(mem))
    graph.add_edge(START, "agent")
    graph.add_edge("agent", "session_log")
    graph.add_edge("session_log", END)
    return graph.compile(checkpointer=InMemorySaver())


def test_the_graph_node_logs_each_turn_into_the_threads_file(kw_memory):
    app = build_graph(kw_memory, [AIMessage("Your emergency fund target is six months of expenses."),
                                  AIMessage("Keep it in a high-yield savings account.")])
    config = {"configurable": {"thread_id": "chat-7"}}
    app.invoke({"messages": [HumanMessage("How big should my emergency fund be?")]}, config)
    app.invoke({"messages": [HumanMessage("Where should I keep it?")]}, config)
    files = list((kw_memory.memory_dir / "sessions").glob("*.md"))
    assert [f.name for f in files] == [f"{dt.date.today().isoformat()}-chat-7.md"]
    text = files[0].read_text(encoding="utf-8")
    assert text.count("## User") == 2 and text.count("## Assistant") == 2
    assert text.index("emergency fund be?") < text.index("six months") < text.index("high-yield")
    hits = kw_memory.search("emergency fund six months")
    assert hits[0].path == f"sessions/{files[0].name}" and hits[0].file_kind == "session"


async def test_the_graph_node_works_under_ainvoke(kw_memory):
    app = build_graph(kw_memory, [AIMessage("Index funds keep costs low.")])
    await app.ainvoke({"messages": [HumanMessage("Why index funds?")]},
                      {"configurable": {"thread_id": "async-chat"}})
    path = f"sessions/{dt.date.today().isoformat()}-async-chat.md"
    assert "Index funds keep costs low." in kw_memory.get(path)


def test_without_a_thread_id_the_node_writes_nothing(kw_memory, caplog):
    node = create_session_log_node(kw_memory)
    with caplog.at_level("WARNING"):
        assert node({"messages": [HumanMessage("hi")]}, {"configurable": {}}) == {}
    assert not (kw_memory.memory_dir / "sessions").exists()
    assert "thread_id" in caplog.text


@pytest.mark.parametrize("thread_id", ["../../etc/passwd", "a/b", ".hidden"])
def test_hostile_thread_ids_stay_inside_sessions(kw_memory, thread_id):
    path = write_session_log(kw_memory, conversation(), thread_id)
    assert path.startswith("sessions/") and path.count("/") == 1
    assert (kw_memory.memory_dir / path).is_file()
    assert kw_memory.search("Lofoten kayak")[0].path == path
