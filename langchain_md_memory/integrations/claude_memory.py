"""Anthropic's memory tool (``memory_20250818``) run on a Markdown memory: the six commands and their replies.

Claude is trained to keep its memory with one client-side tool whose commands
(``view``, ``create``, ``str_replace``, ``insert``, ``delete``, ``rename``) work
on paths under ``/memories``. :class:`ClaudeMemoryCommands` runs them on a
:class:`~langchain_md_memory.MarkdownMemory` (a folder or a PostgreSQL tenant)
with ``/memories`` standing for the memory's root (or ``folder`` inside it).
Every read and write goes through the memory's own methods, so its path guard,
``max_write_bytes``, secret redaction, provenance comments and lock apply, and
the index follows on the next search. What the model writes is checked and
redacted; what is there already is never rewritten: ``insert`` adds its lines
to the file's bytes as they are, and ``rename`` moves the bytes untouched, a
folder all at once or not at all. A folder's hidden ``.<name>.unindexed.md``
files (the LangGraph store's ``index=False`` items) go with it when it is
renamed or deleted. ``/memories`` itself is always there to view, and is never
deleted or renamed. Replies follow the texts Anthropic documents (and its SDK's
reference implementation writes); a refused command raises
:class:`~langchain_md_memory.errors.MemoryInputError` with the reply the model
reads, which the tool turns into a tool error.

Paths are refused unless they are ``/memories`` or under it, in every form:
as given and percent-decoded (``%2e%2e%2f`` is ``../``), with no ``..``,
backslash or NUL. The memory keeps Markdown: files are ``.md``.

Example:
    .. code-block:: python

        from langchain_md_memory.integrations.claude_memory import create_claude_memory_tool

        tool = create_claude_memory_tool(mem)
        tool.invoke({"command": "create", "path": "/memories/prefs.md", "file_text": "- Likes tea\\n"})
        tool.invoke({"command": "view", "path": "/memories"})
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import unquote

from langchain_core.runnables import ensure_config
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import BaseModel, Field, ValidationError

from ..errors import MemoryInputError, MemoryPathError, MemoryStoreError
from ..files.facts import provenance_label, with_provenance

if TYPE_CHECKING:
    from ..memory import MarkdownMemory

__all__ = ["CLAUDE_MEMORY_TOOL", "CLAUDE_MEMORY_TOOL_NAME", "ClaudeMemoryCommands", "ClaudeMemoryInput",
           "create_claude_memory_tool", "run_claude_memory"]

CLAUDE_MEMORY_TOOL_NAME = "memory"
CLAUDE_MEMORY_TOOL: dict[str, str] = {"type": "memory_20250818", "name": CLAUDE_MEMORY_TOOL_NAME}
"""The tool as declared to Anthropic's API (``model.bind_tools([CLAUDE_MEMORY_TOOL, ...])``)."""

_WIDTH = 6  # line numbers right-aligned in six columns, then a tab (Anthropic's format)
_ITEM_RE = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+\S")


def _size(n: int) -> str:
    """A size as Anthropic's listing writes it: ``0B``, ``512B``, ``1.5K``, ``4K``, ``2.1M``."""
    if n == 0:
        return "0B"
    unit = min((n.bit_length() - 1) // 10, 3)
    value = n / 1024**unit
    text = f"{int(value)}" if value == int(value) else f"{value:.1f}"
    return text + "BKMG"[unit]


def _lines(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _numbered(lines: list[str], start: int) -> str:
    return "\n".join(f"{str(n).rjust(_WIDTH)}\t{line}" for n, line in enumerate(lines, start=start))


class ClaudeMemoryCommands:
    """The six commands of Anthropic's memory tool on one memory; each returns the reply text.

    Args:
        mem: the memory.
        root: the virtual folder Claude sees (``/memories``).
        folder: the memory folder ``root`` stands for (``""``: the memory's root).
        source: the provenance label of the lines ``create`` and ``insert`` write
            (default: ``via=claude_memory``, the graph's thread and the day).
    """

    def __init__(self, mem: MarkdownMemory, *, root: str = "/memories", folder: str = "",
                 source: Callable[[], str] | None = None) -> None:
        if not root.startswith("/") or root.rstrip("/") != root or ".." in root:
            raise MemoryInputError(f"root must be an absolute virtual folder such as '/memories': {root!r}")
        self.mem = mem
        self.root = root
        self.folder = folder.strip("/")
        self.source = source or _default_source

    # -- paths ------------------------------------------------------------------------

    def relpath(self, path: str | None) -> str:
        """The memory path ``path`` names (``""`` for the root folder), or a refusal the model can act on."""
        if not path:
            raise MemoryPathError(f"No path given: every path starts with {self.root} ({self.root}/notes.md)")
        forms = dict.fromkeys([path, unquote(path), unquote(unquote(path))])
        for form in forms:
            if "\x00" in form or "\\" in form or ".." in form.split("/"):
                raise MemoryPathError(f"The path {path} would escape {self.root}: use a path such as "
                                      f"{self.root}/notes.md")
            if form != self.root and not form.startswith(self.root + "/"):
                raise MemoryPathError(f"The path {path} is outside {self.root}: every path starts with "
                                      f"{self.root}, e.g. {self.root}/notes.md")
        parts = [p for p in f"{self.folder}/{path[len(self.root):]}".split("/") if p not in ("", ".")]
        rel = "/".join(parts)
        if rel:
            self._is_file(rel)  # the memory's own guard: raises for a path it refuses
        return rel

    def _under(self, rel: str, *, hidden: bool = False) -> dict[str, int]:
        """Memory files under folder ``rel`` (``""``: the root) with their sizes, relative to it.

        ``hidden``: the unindexed files too, which a listing leaves out but a move or a delete takes.
        """
        prefix = f"{rel}/" if rel else ""
        found: dict[str, int] = {}
        for name in self.mem.list_files(include_unindexed=hidden):
            if name.startswith(prefix):
                stat = self.mem.stat(name)
                found[name[len(prefix):]] = stat[1] if stat else 0
        return found

    def _is_file(self, rel: str) -> bool:
        if self._is_root(rel):  # even when its folder is left empty on disk
            return False
        try:
            return self.mem.exists(rel)
        except MemoryPathError:
            if self._under(rel, hidden=True):  # a folder: the guard only answers for files
                return False
            raise

    def _is_root(self, rel: str) -> bool:
        """True for the folder ``root`` stands for: it is always there, and it is not Claude's to remove."""
        return rel == self.folder

    def _markdown(self, path: str, rel: str) -> None:
        if not rel.lower().endswith(".md"):
            raise MemoryPathError(f"This memory keeps Markdown files: {path} must end in '.md' "
                                  f"(e.g. {self.root}/notes.md)")

    def _missing(self, path: str) -> MemoryInputError:
        return MemoryInputError(f"The path {path} does not exist. Please provide a valid path.")

    def _label(self, text: str) -> str:
        if not self.mem.config.hygiene.provenance:
            return text
        source = self.source()
        return "\n".join(with_provenance(line, source) if _ITEM_RE.match(line) else line
                         for line in text.split("\n"))

    # -- commands ---------------------------------------------------------------------

    def run(self, command: str, args: dict[str, Any]) -> str:
        """Run ``command`` with the API's argument names; the reply, or a :class:`MemoryInputError`."""
        handlers: dict[str, Callable[..., str]] = {
            "view": self.view, "create": self.create, "str_replace": self.str_replace,
            "insert": self.insert, "delete": self.delete, "rename": self.rename}
        handler = handlers.get(command)
        if handler is None:
            raise MemoryInputError(f"Unknown command {command!r}: use view, create, str_replace, insert, "
                                   "delete or rename")
        try:
            return handler(**args)
        except TypeError as exc:  # a missing or unexpected argument
            raise MemoryInputError(f"Bad arguments for {command}: {exc}") from None

    def view(self, path: str, view_range: list[int] | None = None, **_: Any) -> str:
        """A folder's files and folders two levels deep with sizes, or a file's numbered lines."""
        rel = self.relpath(path)
        if self._is_file(rel):
            return self._view_file(path, rel, view_range)
        files = self._under(rel)
        if not files and not self._is_root(rel) and not self._under(rel, hidden=True):
            raise self._missing(path)
        items: dict[str, int] = {}
        for name, size in files.items():
            parts = name.split("/")
            for depth in range(1, min(len(parts), 2) + 1):
                key = "/".join(parts[:depth]) + ("/" if depth < len(parts) else "")
                items[key] = items.get(key, 0) + size
        lines = [f"{_size(sum(files.values()))}\t{path.rstrip('/')}"]
        lines += [f"{_size(size)}\t{path.rstrip('/')}/{name}" for name, size in sorted(items.items())]
        return (f"Here're the files and directories up to 2 levels deep in {path.rstrip('/')}, excluding "
                "hidden items and node_modules:\n" + "\n".join(lines))

    def _view_file(self, path: str, rel: str, view_range: list[int] | None) -> str:
        lines = _lines(self.mem.get(rel))
        start = 1
        if view_range is not None:
            if len(view_range) != 2:
                raise MemoryInputError(f"Invalid `view_range` parameter: {view_range}. It should be a list "
                                       "of two integers: [start_line, end_line] (end_line -1: to the end).")
            first, last = view_range
            last = len(lines) if last == -1 else last
            if not 1 <= first <= max(len(lines), 1) or last < first or last > len(lines):
                raise MemoryInputError(f"Invalid `view_range` parameter: {view_range}. The file has "
                                       f"{len(lines)} lines: give [start_line, end_line] within "
                                       f"[1, {len(lines)}] (end_line -1: to the end).")
            lines, start = lines[first - 1 : last], first
        return f"Here's the content of {path} with line numbers:\n{_numbered(lines, start)}"

    def create(self, path: str, file_text: str = "", **_: Any) -> str:
        """A new file holding ``file_text``; an existing file is refused."""
        rel = self.relpath(path)
        if self._is_root(rel):
            raise MemoryInputError(f"Cannot create {self.root} itself: give a file path such as "
                                   f"{self.root}/notes.md")
        self._markdown(path, rel)
        with self.mem.locked():
            if self._is_file(rel) or self._under(rel):
                raise MemoryInputError(f"File {path} already exists")
            self.mem.write(rel, self._label(file_text))
        return f"File created successfully at: {path}"

    def str_replace(self, path: str, old_str: str, new_str: str = "", **_: Any) -> str:
        """``old_str`` (once, verbatim) replaced by ``new_str``; the reply shows the lines around it."""
        rel = self.relpath(path)
        with self.mem.locked():
            if not self._is_file(rel):
                raise self._missing(path)
            content = self.mem.get(rel)
            at = [m.start() for m in re.finditer(re.escape(old_str), content)] if old_str else []
            if not at:
                raise MemoryInputError(f"No replacement was performed, old_str `{old_str}` did not appear "
                                       f"verbatim in {path}.")
            if len(at) > 1:
                found = ", ".join(str(content.count("\n", 0, i) + 1) for i in at)
                raise MemoryInputError(f"No replacement was performed. Multiple occurrences of old_str "
                                       f"`{old_str}` in lines: {found}. Please ensure it is unique")
            if not self.mem.edit(old_str, new_str, file=rel):  # e.g. line endings the store normalises
                raise MemoryInputError(f"No replacement was performed, old_str `{old_str}` did not appear "
                                       f"verbatim in {path}.")
            lines = self.mem.get(rel).split("\n")
        changed = content.count("\n", 0, at[0])
        first = max(changed - 2, 0)
        snippet = _numbered(lines[first : changed + 3 + new_str.count("\n")], first + 1)
        return ("The memory file has been edited. Here is the snippet showing the change "
                f"(with line numbers):\n{snippet}")

    def insert(self, path: str, insert_line: int, insert_text: str | None = None, new_str: str | None = None,
               **_: Any) -> str:
        """``insert_text`` after line ``insert_line`` (0: at the top).

        ``new_str`` is read when ``insert_text`` is absent, for callers that followed langchain-anthropic.
        """
        text = insert_text if insert_text is not None else new_str
        if text is None:
            raise MemoryInputError("insert needs insert_text: the text to insert after line insert_line")
        rel = self.relpath(path)
        with self.mem.locked():
            if not self._is_file(rel):
                raise self._missing(path)
            lines = _lines(self.mem.get(rel))
            if not 0 <= insert_line <= len(lines):
                raise MemoryInputError(f"Invalid `insert_line` parameter: {insert_line}. It should be within "
                                       f"the range of lines of the file: [0, {len(lines)}]")
            self.mem.insert_lines(rel, insert_line, self._label(text.rstrip("\n")))
        return f"The file {path} has been edited."

    def delete(self, path: str, **_: Any) -> str:
        """A file, or a folder with everything in it (hidden unindexed files too)."""
        rel = self.relpath(path)
        if self._is_root(rel):
            raise MemoryInputError(f"Cannot delete the {self.root} directory itself")
        with self.mem.locked():
            if self._is_file(rel):
                self.mem.delete_file(rel)
            else:
                files = self._under(rel, hidden=True)
                if not files:
                    raise MemoryInputError(f"The path {path} does not exist")
                for name in files:
                    self.mem.delete_file(f"{rel}/{name}")
        return f"Successfully deleted {path}"

    def rename(self, old_path: str, new_path: str, **_: Any) -> str:
        """A file or a folder (hidden unindexed files too) moved to ``new_path`` byte for byte, whole.

        An existing destination is refused, and so is any move the memory refuses for one of the
        files: then none has moved.
        """
        old, new = self.relpath(old_path), self.relpath(new_path)
        if self._is_root(old):
            raise MemoryInputError(f"Cannot rename the {self.root} directory itself")
        if self._is_root(new):
            raise MemoryInputError(f"The destination {new_path} already exists")
        with self.mem.locked():
            if self._is_file(new) or self._under(new, hidden=True):
                raise MemoryInputError(f"The destination {new_path} already exists")
            if self._is_file(old):
                self._markdown(new_path, new)
                moves = [(old, new)]
            else:
                moves = [(f"{old}/{name}", f"{new}/{name}") for name in self._under(old, hidden=True)]
            if not moves:
                raise MemoryInputError(f"The path {old_path} does not exist")
            self.mem.move_files(moves)
        return f"Successfully renamed {old_path} to {new_path}"


def _default_source() -> str:
    thread = (ensure_config().get("configurable") or {}).get("thread_id")
    return provenance_label(via="claude_memory", thread=None if thread is None else str(thread))


class ClaudeMemoryInput(BaseModel):
    """The memory tool's arguments, named as Anthropic's API sends them."""

    command: Literal["view", "create", "str_replace", "insert", "delete", "rename"]
    path: str | None = Field(None, description="A path under /memories (every command but rename).")
    view_range: list[int] | None = Field(None, description="view: [start_line, end_line], -1 for the end.")
    file_text: str | None = Field(None, description="create: the new file's content.")
    old_str: str | None = Field(None, description="str_replace: the text to replace (once in the file).")
    new_str: str | None = Field(None, description="str_replace: the replacement.")
    insert_line: int | None = Field(None, description="insert: the line after which to insert (0: the top).")
    insert_text: str | None = Field(None, description="insert: the text to insert.")
    old_path: str | None = Field(None, description="rename: the file or folder to move.")
    new_path: str | None = Field(None, description="rename: where to move it.")


def run_claude_memory(commands: ClaudeMemoryCommands, args: Mapping[str, Any]) -> str:
    """What the ``memory`` tool does with the arguments ``args`` of a model's call, and its reply.

    A refusal raises :class:`ToolException` with the text the model reads. Inside
    :func:`~langchain_md_memory.files.drafts.drafting` it writes nothing, and the draft holds what it
    would have written (:mod:`.approval` shows that to a person).
    """
    try:
        given = ClaudeMemoryInput.model_validate(args)
    except ValidationError as exc:
        raise ToolException(f"Bad arguments for the memory tool: {exc}") from None
    kept = {k: v for k, v in given.model_dump().items() if v is not None and k != "command"}
    try:
        return commands.run(given.command, kept)
    except MemoryStoreError as exc:
        raise ToolException(str(exc)) from None


def create_claude_memory_tool(mem: MarkdownMemory, *, root: str = "/memories", folder: str = "",
                              source: Callable[[], str] | None = None) -> BaseTool:
    """A tool named ``memory`` running Anthropic's memory-tool commands on ``mem`` (ToolNode-ready).

    Bind :data:`CLAUDE_MEMORY_TOOL` to a Claude model (so it uses the tool it was
    trained on) and put this tool in the ``ToolNode`` that executes its calls.
    A refused command comes back as a tool error (``status="error"``) whose text
    says what to fix.

    Example:
        .. code-block:: python

            model = ChatAnthropic(model="claude-sonnet-4-5").bind_tools([CLAUDE_MEMORY_TOOL, search_tool])
            tools = ToolNode([create_claude_memory_tool(mem), search_tool])
    """
    commands = ClaudeMemoryCommands(mem, root=root, folder=folder, source=source)

    def memory(command: str, **kwargs: Any) -> str:
        return run_claude_memory(commands, {"command": command, **kwargs})

    async def amemory(command: str, **kwargs: Any) -> str:
        return await asyncio.to_thread(memory, command, **kwargs)

    return StructuredTool.from_function(
        func=memory, coroutine=amemory, name=CLAUDE_MEMORY_TOOL_NAME, args_schema=ClaudeMemoryInput,
        description=(f"Your persistent memory folder {root}: view, create, str_replace, insert, delete and "
                     "rename Markdown (.md) files there; what you store stays across conversations."),
        handle_tool_error=True,
    )
