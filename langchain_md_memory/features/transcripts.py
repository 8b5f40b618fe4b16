"""Session transcripts: a conversation as readable Markdown in ``sessions/``.

One file per thread, ``sessions/YYYY-MM-DD-<thread>.md``, rewritten
atomically each time the thread is saved (never duplicated). Each message is
a role heading and its text; a tool call is one line
``→ tool_name(arg=value, ...)``; secrets (API keys, bearer tokens, AWS keys,
and arguments named like ``api_key`` / ``password`` / ``token``) are
redacted before anything reaches disk. Session files are indexed with
``file_kind="session"`` and decay by index time, so past conversations can be
recalled without ever being saved as facts.

Example:
    .. code-block:: python

        from langchain_core.messages import AIMessage, HumanMessage
        from langchain_md_memory import MarkdownMemory
        from langchain_md_memory.features.transcripts import write_session_log

        with MarkdownMemory("memory", embeddings="none") as mem:
            path = write_session_log(mem, [HumanMessage("Rebalance to 60/40?"), AIMessage("Yes.")], "t-1")
            print(path)  # sessions/2026-07-14-t-1.md
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import json
import logging
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ..errors import MemoryInputError
from ..files.paths import SESSIONS_DIR
from ..text.redaction import DEFAULT_SECRET_ARG_NAMES, DEFAULT_SECRET_PATTERNS, REDACTED, Redactor

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig

    from ..memory import MarkdownMemory

__all__ = [
    "DEFAULT_OMITTED_TOOLS",
    "DEFAULT_SECRET_ARG_NAMES",
    "DEFAULT_SECRET_PATTERNS",
    "INJECTED_ID_PREFIX",
    "REDACTED",
    "Redactor",
    "awrite_session_log",
    "create_session_log_node",
    "render_transcript",
    "session_file_name",
    "write_session_log",
]

logger = logging.getLogger(__name__)

INJECTED_ID_PREFIX = "md-memory-"
"""Ids of messages this package puts into a conversation (session context, recall): memory already."""

DEFAULT_OMITTED_TOOLS: tuple[str, ...] = ("memory_search", "memory_get")
"""Tools whose results are memory already: copying them into a session would duplicate it."""

_MAX_VALUE_CHARS = 120
_MAX_TOOL_RESULT_CHARS = 600
_SLUG_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
_NAME_RE = re.compile(r"^(\d{4}-\d{2}-\d{2})-(.+)\.md$")


def _message_text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content.strip()
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, Mapping):
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif kind in ("image", "image_url", "audio", "video", "file"):
                parts.append(f"[{kind}]")
            # tool_use / reasoning blocks: tool calls are rendered from message.tool_calls
    return "\n\n".join(p.strip() for p in parts if p.strip())


def _format_value(value: Any) -> str:
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
    elif value is None or isinstance(value, bool | int | float):
        text = json.dumps(value)
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
        except (TypeError, ValueError):
            text = repr(value)
    text = " ".join(text.split())
    return text if len(text) <= _MAX_VALUE_CHARS else text[: _MAX_VALUE_CHARS - 1] + "…"


def _format_call(name: str, args: Any, redactor: Redactor) -> str:
    safe = redactor.args(args if isinstance(args, Mapping) else {"input": args})
    inner = ", ".join(f"{k}={v if v == REDACTED else _format_value(v)}" for k, v in safe.items())
    return f"→ {name or 'tool'}({inner})"


def _tool_result(message: ToolMessage, omitted: Collection[str], limit: int) -> str:
    name = message.name or "tool"
    text = _message_text(message)
    if name in omitted:
        return f"_{len(text)} characters of {name} output not copied (already in memory)._"
    if message.status == "error":
        text = f"Error: {text}"
    if len(text) > limit:
        text = text[:limit].rstrip() + f" … ({len(text) - limit} more characters)"
    return text or "_(empty)_"


def render_transcript(
    messages: Sequence[BaseMessage],
    *,
    thread_id: str,
    day: dt.date | None = None,
    redactor: Redactor | None = None,
    omitted_tools: Collection[str] = DEFAULT_OMITTED_TOOLS,
    skip_ids: Collection[str] = (),
    max_tool_result_chars: int = _MAX_TOOL_RESULT_CHARS,
) -> str:
    """The conversation as Markdown: a title, then one ``##`` section per message.

    Roles: ``User``, ``Assistant``, ``Tool: <name>``, ``System``. Tool calls
    are ``→ name(arg=value)`` lines under the assistant's text; tool results
    are cut to ``max_tool_result_chars``. Left out, as they would copy
    memory into the session: results of ``omitted_tools``, messages whose id
    is in ``skip_ids`` or starts with :data:`INJECTED_ID_PREFIX` (the session
    context and recall messages of this package). Everything passes the
    ``redactor``.
    """
    red = redactor or Redactor()
    lines = [f"# Session {red.text(thread_id)}", "",
             f"- thread: `{red.text(thread_id)}`", f"- date: {(day or dt.date.today()).isoformat()}"]
    sections: list[str] = []
    for message in messages:
        if message.id is not None and (message.id in skip_ids or message.id.startswith(INJECTED_ID_PREFIX)):
            continue
        body: list[str] = []
        if isinstance(message, HumanMessage):
            role = "User"
        elif isinstance(message, AIMessage):
            role = "Assistant"
        elif isinstance(message, ToolMessage):
            role = f"Tool: {message.name or 'tool'}"
        elif isinstance(message, SystemMessage):
            role = "System"
        else:
            role = (message.type or "message").capitalize()
        if isinstance(message, ToolMessage):
            body.append(_tool_result(message, omitted_tools, max_tool_result_chars))
        else:
            text = _message_text(message)
            if text:
                body.append(text)
        if isinstance(message, AIMessage):
            calls = [_format_call(c["name"], c.get("args", {}), red) for c in message.tool_calls]
            calls += [_format_call(c.get("name") or "tool", c.get("args") or "", red)
                      for c in message.invalid_tool_calls]
            if calls:
                body.append("\n".join(calls))
        if body:
            sections.append(f"## {role}\n\n" + red.text("\n\n".join(body)))
    lines.append(f"- messages: {len(sections)}")
    return "\n".join(lines) + "\n\n" + "\n\n".join(sections) + ("\n" if sections else "")


# -- files ----------------------------------------------------------------------------


def _thread_slug(thread_id: str) -> str:
    slug = re.sub(r"-{2,}", "-", _SLUG_UNSAFE.sub("-", thread_id)).strip("-_")[:64].rstrip("-_")
    if slug != thread_id:
        # Lossy slugs ("a/b" and "a-b") must not share a file.
        digest = hashlib.sha256(thread_id.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        slug = f"{slug}-{digest}" if slug else digest
    return slug


def session_file_name(thread_id: str, day: dt.date | None = None) -> str:
    """``sessions/YYYY-MM-DD-<thread>.md``; unsafe or long thread ids get a hash suffix."""
    if not str(thread_id).strip():
        raise MemoryInputError("thread_id is empty: a session log needs the conversation's thread id")
    return f"{SESSIONS_DIR}/{(day or dt.date.today()).isoformat()}-{_thread_slug(str(thread_id))}.md"


def _existing_log(mem: MarkdownMemory, slug: str) -> str | None:
    """The session file of this thread written on an earlier day, if any."""
    if mem.in_folder:  # one folder's listing, not a walk of the whole memory
        folder = mem.memory_dir / SESSIONS_DIR
        if not folder.is_dir():
            return None
        names = [p.name for p in folder.glob(f"????-??-??-{slug}.md")]
    else:  # a database lists every document in one query
        prefix = f"{SESSIONS_DIR}/"
        names = [rel[len(prefix):] for rel in mem.list_files() if rel.startswith(prefix)]
    found = sorted(name for name in names if (m := _NAME_RE.match(name)) is not None and m[2] == slug)
    return f"{SESSIONS_DIR}/{found[0]}" if found else None


def write_session_log(
    mem: MarkdownMemory,
    messages: Sequence[BaseMessage],
    thread_id: str,
    *,
    day: dt.date | None = None,
    redact_patterns: Iterable[str | re.Pattern[str]] | None = None,
    secret_arg_names: str | re.Pattern[str] | None = DEFAULT_SECRET_ARG_NAMES,
    omitted_tools: Collection[str] = DEFAULT_OMITTED_TOOLS,
    skip_ids: Collection[str] = (),
) -> str:
    """Write (or rewrite) the thread's transcript; returns its relative path.

    The same ``thread_id`` always lands in the same file: without ``day``, an
    existing ``sessions/*-<thread>.md`` is reused (its date is the day the
    thread started), else today's name is used. The file is replaced whole
    and atomically through ``mem.write``.

    Example:
        .. code-block:: python

            path = write_session_log(mem, state["messages"], "thread-42")
            assert mem.get(path).startswith("# Session thread-42")
    """
    path = session_file_name(thread_id, day)
    if day is None:
        path = _existing_log(mem, _thread_slug(str(thread_id))) or path
    match = _NAME_RE.match(path.rsplit("/", 1)[1])
    started = dt.date.fromisoformat(match[1]) if match else (day or dt.date.today())
    redactor = Redactor(redact_patterns, secret_arg_names)
    text = render_transcript(messages, thread_id=str(thread_id), day=started, redactor=redactor,
                             omitted_tools=omitted_tools, skip_ids=skip_ids)
    written = mem.write(path, text)
    logger.debug("session log %s: %d messages", written, len(messages))
    return written


async def awrite_session_log(mem: MarkdownMemory, messages: Sequence[BaseMessage], thread_id: str,
                             **kwargs: Any) -> str:
    """Async twin of :func:`write_session_log`."""
    return await asyncio.to_thread(write_session_log, mem, messages, thread_id, **kwargs)


def _messages_of(state: Any) -> Sequence[BaseMessage]:
    messages = state.get("messages") if isinstance(state, Mapping) else getattr(state, "messages", None)
    return [m for m in messages or [] if isinstance(m, BaseMessage)]


def create_session_log_node(
    mem: MarkdownMemory,
    **kwargs: Any,
) -> Callable[[Any, RunnableConfig], dict[str, Any]]:
    """A LangGraph node that saves the conversation to the thread's session log.

    The thread id comes from ``config["configurable"]["thread_id"]`` (the one
    a checkpointer uses); without one the node logs a warning and writes
    nothing. It returns no state update, so it can sit anywhere in a graph,
    typically last. ``kwargs`` go to :func:`write_session_log`.

    Example:
        .. code-block:: python

            from langgraph.graph import END, START, MessagesState, StateGraph

            graph = StateGraph(MessagesState)
            graph.add_node("agent", agent)
            graph.add_node("session_log", create_session_log_node(mem))
            graph.add_edge(START, "agent")
            graph.add_edge("agent", "session_log")
            graph.add_edge("session_log", END)
            app = graph.compile(checkpointer=InMemorySaver())
            app.invoke({"messages": [("user", "hi")]}, {"configurable": {"thread_id": "t-1"}})
    """

    def session_log(state: Any, config: RunnableConfig) -> dict[str, Any]:
        thread_id = (config.get("configurable") or {}).get("thread_id")
        if thread_id is None or not str(thread_id).strip():
            logger.warning("session log skipped: no configurable.thread_id in the graph config")
            return {}
        messages = _messages_of(state)
        if messages:
            write_session_log(mem, messages, str(thread_id), **kwargs)
        return {}

    return session_log
