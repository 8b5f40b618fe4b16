"""The three memory tools a model calls: ``memory_search``, ``memory_get``, ``memory_update``.

Each is a ``StructuredTool`` with a pydantic args schema and sync and async
implementations. Errors a model can fix (a bad path, text not found, an empty
``content``, invalid arguments) come back as the tool's output, prefixed
``Error:`` (a ``ToolMessage`` with ``status="error"`` inside a graph), never
as a traceback: memory errors are raised as ``ToolException`` and the tools
are built with ``handle_tool_error=True``; argument validation errors are
turned into the same kind of message. ``memory_search`` on a memory that
cannot answer (closed, broken index) returns ``memory disabled: <reason>``; when no hit
is labelled ``confident`` its first line says ``No strong match in memory; closest notes:``.

Example:
    .. code-block:: python

        from langchain_md_memory import MarkdownMemory, create_memory_tools

        mem = MarkdownMemory("memory", embeddings="none")
        memory_search, memory_get, memory_update = create_memory_tools(mem)
        memory_update.invoke({"content": "- Prefers meetings after 10am"})
        print(memory_search.invoke({"query": "meetings"}))
        # [1] MEMORY.md#L1-L1 (score 1.00)
        # - Prefers meetings after 10am
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from langchain_core.callbacks import BaseCallbackManager, dispatch_custom_event
from langchain_core.runnables import ensure_config
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import BaseModel, Field, ValidationError

from ..errors import MemoryPathError, MemoryStoreError
from ..files.facts import provenance_label
from ..files.paths import resolve_alias
from ..prompts import DEFAULT_PROMPTS, MemoryPrompts
from ..search.asof import as_of_date
from ..text.redaction import scrub
from ..types import ProgressCallback, ProgressEvent, Remembered
from .prompt_context import search_answer

if TYPE_CHECKING:
    from ..memory import MarkdownMemory

__all__ = [
    "MEMORY_TOOLS_POLICY",
    "PROGRESS_EVENT",
    "MemoryGetInput",
    "MemorySearchInput",
    "MemoryUpdateInput",
    "create_memory_tools",
    "run_memory_update",
]

logger = logging.getLogger(__name__)

MEMORY_TOOLS_POLICY = DEFAULT_PROMPTS.policy
"""The default system-prompt rule to pair with the tools (the middleware adds it for you)."""

PROGRESS_EVENT = "md_memory_progress"
"""The LangChain custom event ``memory_search`` dispatches while its sync reads files and embeds chunks
(``astream_events`` shows it; the MCP server turns it into progress notifications). Its data is a
:class:`~langchain_md_memory.types.ProgressEvent` as a dict: ``phase``, ``done``, ``total``, ``unit``."""

# Progress is dispatched at most this often within a phase (its first and last events always).
_PROGRESS_EVERY_S = 0.25


class MemorySearchInput(BaseModel):
    """Arguments of ``memory_search``."""

    query: str = Field(
        min_length=1,
        description="What to recall, in the user's words or as keywords, e.g. 'preferred meeting times'.",
    )
    max_results: int | None = Field(
        default=None, ge=1, le=50, description="How many passages to return (default: the memory's setting)."
    )
    as_of: str | None = Field(
        default=None,
        description="Only to ask what was true on a past day: that day as YYYY-MM-DD, e.g. '2025-03-31'. "
        "Returns the statements valid then, superseded ones included, each with the days it held.",
    )


class MemoryGetInput(BaseModel):
    """Arguments of ``memory_get``."""

    path: str = Field(
        description="A memory file relative to the memory folder, as memory_search shows it "
        "(e.g. 'MEMORY.md', '2026-11-20.md'); 'long_term' and 'daily' also work.",
    )
    start_line: int | None = Field(default=None, ge=1, description="First line to read (1-based).")
    end_line: int | None = Field(default=None, ge=1, description="Last line to read (inclusive).")


class MemoryUpdateInput(BaseModel):
    """Arguments of ``memory_update``."""

    content: str = Field(
        default="",
        description="The text to append (one Markdown bullet per fact), or the replacement text for 'edit'.",
    )
    action: Literal["append", "edit", "delete", "supersede"] = Field(
        default="append",
        description="'append' (default), 'edit' (old_text -> content), 'delete', or 'supersede' (content "
        "replaces the fact holding old_text, which is kept struck through under '## History').",
    )
    file: str = Field(
        default="long_term",
        description="'long_term' (MEMORY.md, default), 'daily' (today's log) or a relative .md path.",
    )
    old_text: str | None = Field(
        default=None,
        description="For 'edit', 'delete' and 'supersede': the exact text currently in the file.",
    )
    start_line: int | None = Field(
        default=None, ge=1,
        description="For 'edit' and 'delete' instead of old_text: the first line (1-based, from memory_get).",
    )
    end_line: int | None = Field(
        default=None, ge=1, description="With start_line: the last line (inclusive); default start_line."
    )
    expires: str | None = Field(
        default=None,
        description="For 'append' and 'supersede', optional: the last day the fact holds, as YYYY-MM-DD "
        "(e.g. '2027-01-31'); after it the fact no longer comes up in memory_search. Leave it out for "
        "facts that do not run out.",
    )
    section: str | None = Field(
        default=None,
        description="For 'append', optional: the title of the file's section on the fact's subject (e.g. "
        "'Preferences'); the fact goes at its end, or under a new '## <title>' at the end of the file. "
        "Without it, a fact goes to the file's '## Notes' section when the file ends in another section.",
    )


def _validation_message(tool_name: str) -> Callable[[Any], str]:
    def handle(error: Any) -> str:
        problems = []
        if isinstance(error, ValidationError):
            for item in error.errors():
                where = ".".join(str(part) for part in item.get("loc", ())) or "arguments"
                problems.append(f"{where}: {item.get('msg', 'invalid')}")
        detail = "; ".join(problems) or str(error)
        return (f"Error: invalid arguments for {tool_name}: {detail}. "
                f"Fix the arguments and call {tool_name} again.")

    return handle


def _display(file: str) -> str:
    try:
        return resolve_alias(file)
    except Exception:  # display only; the memory itself reports the real problem
        return file


def _as_tool_error(exc: Exception) -> ToolException:
    return ToolException(f"Error: {_for_the_model(exc)}")


def _for_the_model(exc: BaseException) -> str:
    """An error's text without credentials or the host's absolute paths."""
    text = scrub(exc)
    for path in {getattr(exc, "filename", None), getattr(exc, "filename2", None)}:
        if isinstance(path, str) and path:
            text = text.replace(path, os.path.basename(path))
    return text


def _shown(query: str, limit: int = 200) -> str:
    """The query as the reply repeats it: a pasted document is not sent back to the model whole."""
    return query if len(query) <= limit else f"{query[:limit]}... ({len(query)} characters)"


def _progress_events() -> ProgressCallback | None:
    """The sync's progress as :data:`PROGRESS_EVENT` custom events of this tool run, when the run has
    callbacks to receive them; ``None`` otherwise."""
    callbacks = ensure_config().get("callbacks")
    handlers = callbacks.handlers if isinstance(callbacks, BaseCallbackManager) else callbacks
    if not handlers:
        return None
    last: dict[str, float] = {}

    def send(event: ProgressEvent) -> None:
        now = time.monotonic()
        if (event.phase not in last or event.done >= event.total
                or now - last[event.phase] >= _PROGRESS_EVERY_S):
            last[event.phase] = now
            data = {"phase": event.phase, "done": event.done, "total": event.total, "unit": event.unit}
            try:
                dispatch_custom_event(PROGRESS_EVENT, data)
            except RuntimeError as exc:  # not inside a run after all: progress is never worth a failed search
                logger.debug("progress not dispatched: %s", exc)

    return send


def _search(mem: MarkdownMemory, query: str, max_results: int | None = None, as_of: str | None = None) -> str:
    try:
        ranked = mem.search_detailed(query, max_results=max_results, as_of=as_of_date(as_of),
                                     progress=_progress_events())
    except MemoryPathError as exc:
        raise _as_tool_error(exc) from exc
    except ValueError as exc:
        raise _as_tool_error(exc) from exc
    except (MemoryStoreError, OSError) as exc:
        logger.warning("memory_search: memory unavailable: %s", scrub(exc))
        return f"memory disabled: {_for_the_model(exc)}"
    if not ranked.hits:
        text = (
            f"No memory matched {_shown(query)!r}. Try other keywords (for example the user's own words) "
            "before concluding that nothing is stored."
        )
    else:
        text = search_answer(ranked.hits)
    if ranked.as_of is not None:
        chosen = "asked" if as_of else "the date the question names"
        text = (f"As of {ranked.as_of.isoformat()} ({chosen}): statements valid then, superseded ones "
                f"struck with the day they changed.\n\n{text}")
    if ranked.degraded:
        text += f"\n\nNote: {ranked.degraded}"
    return text


def _get(mem: MarkdownMemory, path: str, start_line: int | None = None, end_line: int | None = None) -> str:
    try:
        text = mem.get(path, start_line, end_line)
        if text or start_line is None:
            return text if text else f"{_display(path)} is empty."
        total = len(mem.get(path).splitlines())
    except (MemoryStoreError, ValueError, OSError) as exc:
        raise _as_tool_error(exc) from exc
    raise ToolException(
        f"Error: {_display(path)} has {total} line(s); start_line={start_line} is past the end. "
        "Call memory_get without start_line to read the whole file."
    )


def _not_found(mem: MarkdownMemory, file: str, action: str) -> ToolException:
    shown = _display(file)
    try:
        mem.get(file)
    except MemoryPathError:
        return ToolException(
            f"Error: {shown} does not exist, so there is nothing to {action}. Use memory_search to find "
            "the right file, or action='append' to create it."
        )
    return ToolException(
        f"Error: old_text was not found in {shown}; it must match the file exactly (spacing and "
        f"punctuation included). Read the exact text with memory_get(path={shown!r}) first, then call "
        f"memory_update again with old_text copied from it."
    )


def _tool_source() -> str:
    """Where a tool write comes from: the graph's thread (when run in one) and today's date."""
    configurable = ensure_config().get("configurable") or {}
    thread = configurable.get("thread_id")
    return provenance_label(via="memory_update", thread=None if thread is None else str(thread))


def _appended(done: Remembered) -> str:
    parts = []
    if done.written or not done.duplicates:
        parts.append(f"Appended to {done.path}.")
    if done.duplicates:
        where = "; ".join(f"{fact!r} at {at}" for fact, at in done.duplicates)
        lead = ("Already remembered (not added again)" if done.written
                else "Nothing written: already remembered")
        parts.append(f"{lead}: {where}.")
    if done.redacted:
        parts.append(f"{done.redacted} secret(s) were redacted before writing; never store credentials.")
    return " ".join(parts)


def _update(mem: MarkdownMemory, content: str = "", action: str = "append", file: str = "long_term",
            old_text: str | None = None, start_line: int | None = None, end_line: int | None = None,
            expires: str | None = None, section: str | None = None) -> str:
    try:
        if section is not None and action != "append":
            raise ToolException(
                f"Error: section applies to action='append', not {action!r}: edit, delete and supersede "
                "change the text where old_text (or start_line) already is."
            )
        if expires is not None and action not in ("append", "supersede"):
            raise ToolException(
                f"Error: expires applies to action='append' and 'supersede', not {action!r}: to give a "
                "remembered fact an end date, supersede it with the same text and expires='YYYY-MM-DD'."
            )
        if action == "append":
            if not content.strip():
                raise ToolException(
                    "Error: content is empty: give the text to remember, e.g. '- Prefers ETFs'."
                )
            return _appended(mem.remember(content, file=file, source=_tool_source(), expires=expires,
                                          section=section or None))
        if action in ("edit", "delete") and not old_text and start_line is not None:
            last = end_line if end_line is not None else start_line
            mem.replace_lines(file, start_line, last, content if action == "edit" else "")
            done = "Replaced" if action == "edit" else "Deleted"
            return f"{done} lines {start_line}-{last} of {_display(file)}."
        if not old_text:
            raise ToolException(
                f"Error: action={action!r} needs old_text, the exact text currently in the file (or "
                "start_line/end_line from memory_get). Read it "
                f"with memory_get(path={_display(file)!r}) first, then call memory_update again."
            )
        if action == "edit":
            if not content:
                raise ToolException(
                    "Error: action='edit' needs content, the replacement text; use action='delete' to remove "
                    "old_text instead."
                )
            if not mem.edit(old_text, content, file=file):
                raise _not_found(mem, file, "edit")
            return f"Replaced the text in {_display(file)}."
        if action == "delete":
            if not mem.delete_text(old_text, file=file):
                raise _not_found(mem, file, "delete")
            return f"Deleted the text from {_display(file)}."
        if action == "supersede":
            if not content.strip():
                raise ToolException(
                    "Error: action='supersede' needs content, the fact that replaces old_text."
                )
            if not mem.supersede(old_text, content, file=file, source=_tool_source(), expires=expires):
                raise _not_found(mem, file, "supersede")
            return (f"Superseded in {_display(file)}: the new fact replaces the old one, which is kept "
                    "struck through under '## History' and no longer found by memory_search.")
        raise ToolException(
            f"Error: unknown action {action!r}; use 'append', 'edit', 'delete' or 'supersede'."
        )
    except ToolException:
        raise
    except (MemoryStoreError, ValueError, OSError) as exc:
        raise _as_tool_error(exc) from exc


def run_memory_update(mem: MarkdownMemory, args: Mapping[str, Any]) -> str:
    """What ``memory_update`` does with the arguments ``args`` of a model's call, and its reply.

    The tool's own argument check and code; a refusal raises :class:`ToolException` with the text the
    model would read. Inside :func:`~langchain_md_memory.files.drafts.drafting` it writes nothing, and
    the draft holds what it would have written (:mod:`.approval` shows that to a person).
    """
    try:
        given = MemoryUpdateInput.model_validate(args)
    except ValidationError as exc:
        raise ToolException(_validation_message("memory_update")(exc)) from None
    return _update(mem, **given.model_dump(exclude_unset=True))


def _bind(fn: Callable[..., str], mem: MarkdownMemory) -> tuple[Callable[..., str], Callable[..., Any]]:
    def run(**kwargs: Any) -> str:
        return fn(mem, **kwargs)

    async def arun(**kwargs: Any) -> str:
        # Sync core in a worker thread (STYLE.md): the index is shared safely across threads.
        return await asyncio.to_thread(fn, mem, **kwargs)

    return run, arun


def create_memory_tools(mem: MarkdownMemory, *, prompts: MemoryPrompts = DEFAULT_PROMPTS) -> list[BaseTool]:
    """``[memory_search, memory_get, memory_update]`` over ``mem``, in that order.

    The descriptions come from ``prompts`` (domain-neutral by default; see
    :class:`~langchain_md_memory.prompts.MemoryPrompts` and ``FINANCE_PROMPTS``).

    Example:
        .. code-block:: python

            tools = create_memory_tools(mem, prompts=FINANCE_PROMPTS)
            agent = create_agent(model, tools=tools, system_prompt=FINANCE_PROMPTS.policy)
    """
    specs: list[tuple[str, str, type[BaseModel], Callable[..., str]]] = [
        ("memory_search", prompts.search_description, MemorySearchInput, _search),
        ("memory_get", prompts.get_description, MemoryGetInput, _get),
        ("memory_update", prompts.update_description, MemoryUpdateInput, _update),
    ]
    tools: list[BaseTool] = []
    for name, description, schema, fn in specs:
        run, arun = _bind(fn, mem)
        tools.append(
            StructuredTool.from_function(
                func=run,
                coroutine=arun,
                name=name,
                description=description,
                args_schema=schema,
                infer_schema=False,
                handle_tool_error=True,
                handle_validation_error=_validation_message(name),
            )
        )
    return tools
