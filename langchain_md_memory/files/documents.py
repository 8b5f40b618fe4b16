"""The Markdown operations of a memory: read, append, edit, delete, write, update, move, remove, list.

Every write goes through one guard (only Markdown memory files, within the size
limits, never a subfolder of a flat memory) and tells the memory that its index must sync.
:class:`Documents` is the part of a :class:`~langchain_md_memory.MarkdownMemory` that owns
them; the memory forwards its file methods here.

Example:
    .. code-block:: python

        mem.append("- Prefers ETFs")
        with mem.locked():
            if "ETFs" in mem.get("MEMORY.md"):
                mem.edit("ETFs", "index funds")
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Callable, Sequence
from pathlib import PurePath, PurePosixPath

from ..config import HygieneConfig, LimitsConfig
from ..errors import MemoryInputError, MemoryPathError, check_write_size
from ..text.redaction import WriteRedactor
from ..types import Remembered
from .base import DocumentStore, JobLock
from .drafts import active_draft
from .facts import (
    FactLine,
    expired,
    expiry_date,
    fact_lines,
    normalize_fact,
    provenance_label,
    same_fact,
    with_expiry,
    with_provenance,
)
from .moves import move_documents
from .paths import SESSIONS_DIR, is_managed_file, is_memory_file
from .sections import NOTES_SECTION, before_history, ending_section, into_section, supersede_in

__all__ = ["Documents", "Remembered"]

_FENCE_PREFIXES = ("```", "~~~")


class Documents:
    """A memory's Markdown files behind the write guard; ``on_change`` tells the index after each write.

    Example:
        .. code-block:: python

            docs = Documents(MarkdownStore("memory"), LimitsConfig(), HygieneConfig(), on_change=lambda: None)
            docs.append("- Prefers ETFs")
            assert "ETFs" in docs.get("MEMORY.md")
    """

    def __init__(self, store: DocumentStore, limits: LimitsConfig, hygiene: HygieneConfig,
                 on_change: Callable[[], None]) -> None:
        self._store = store
        self.limits = limits
        """What a write may bring in (``max_write_bytes``)."""
        self.hygiene = hygiene
        """Redaction, dedup and provenance of what is written."""
        self._mark_changed = on_change
        self._write_redactor: tuple[object, WriteRedactor] | None = None

    @property
    def store(self) -> DocumentStore:
        """The store; inside :func:`~.drafts.drafting`, its draft, which records writes and makes none."""
        draft = active_draft()
        return self._store if draft is None else draft.over(self._store)

    @property
    def backing_store(self) -> DocumentStore:
        """The store writes reach outside a draft: where the documents are, drafting or not."""
        return self._store

    def get(self, path: str, start_line: int | None = None, end_line: int | None = None) -> str:
        """Exact lines of a memory file (1-based, inclusive); the whole file by default.

        Only the memory's Markdown is readable (the same rule as writes): never the index, a lock,
        or any other file that happens to sit in the folder.
        """
        rel = self.store.relpath(path)
        if not is_memory_file(rel):
            raise MemoryPathError(
                f"Only Markdown memory files can be read: {path!r} is not a '.md' memory file. "
                "Search first, then read a path a hit gave (e.g. 'MEMORY.md')."
            )
        self._check_flat(rel)
        return self.store.read_lines(rel, start_line, end_line)

    def append(self, content: str, file: str = "long_term") -> str:
        """Append ``content`` to a memory file; returns the file's relative path.

        Written as given (secrets redacted while ``redact_writes`` is on), never deduplicated:
        :meth:`remember` is the append that checks what memory already says.
        """
        path = self._writable(file)
        if not content or not content.strip():
            raise MemoryInputError("content is empty: give the text to remember")
        self._check_size(content)  # first: never scan an oversized text for secrets
        content = self.redact(content)
        self._check_size(content)
        with self.locked():
            self._append(path, content)
        self._on_change()
        return path

    def remember(self, content: str, file: str = "long_term", *, source: str | None = None,
                 heading: str | None = None, expires: str | dt.date | None = None,
                 section: str | None = None) -> Remembered:
        """Append the facts of ``content`` that memory does not already state.

        Secrets are redacted first. With ``dedup`` on, each fact line equal (after normalising) or
        near-equal (``dedup_threshold``) to a live, unexpired fact of the target file
        (``dedup="memory"``: of any memory file but session logs) is left out and reported with
        where it stands. ``source`` (see :func:`~langchain_md_memory.files.facts.provenance_label`) ends
        each written fact as a ``<!-- src: ... -->`` comment, ``expires`` (the last day the facts
        hold, ``YYYY-MM-DD``, today or later) as ``<!-- expires: ... -->``; ``heading`` is written
        above the facts, only when some are. ``section`` (``"## Doctors"`` or a bare title) files
        them at the end of the file's section of that title instead, a new ``##`` one at the end
        of the file when it has none: a fact joins the chunk of its subject, not the last one.
        Given neither, facts (without a heading of their own) that would join a file's last ``##``
        section, a subject they may not share, go to its ``## Notes`` section instead (a new one at
        the end when it has none); a file ending outside any section gets them at its end.

        Example:
            .. code-block:: python

                mem.remember("- Prefers tea")
                done = mem.remember("- prefers TEA.")
                assert done.written == 0 and done.duplicates == (("- prefers TEA.", "MEMORY.md#L1"),)
        """
        path = self._writable(file)
        if not content or not content.strip():
            raise MemoryInputError("content is empty: give the text to remember")
        if heading and section:
            raise MemoryInputError("give heading (a new section) or section (an existing one), not both")
        until = None if expires is None else expiry_date(expires, dt.date.today())
        self._check_size(content)
        text, redacted = self._redact_counted(content)
        self._check_size(text)
        # The provenance, heading and section are written into the file too: the same redaction.
        source = self.redact(source) if source and self.hygiene.provenance else None
        heading = self.redact(heading) if heading else heading
        section = self.redact(section) if section else section
        with self.locked():
            known = self._known_facts(path) if self.hygiene.dedup != "off" else []
            kept: list[str] = []
            duplicates: list[tuple[str, str]] = []
            written, fence = 0, False
            for line in text.strip("\n").split("\n"):
                if line.lstrip().startswith(_FENCE_PREFIXES):
                    fence = not fence
                if fence or not normalize_fact(line) or line.lstrip().startswith("#"):
                    kept.append(line)
                    continue
                where = self._already_stated(line, known)
                if where is not None:
                    duplicates.append((line.strip(), where))
                    continue
                known.append((path, FactLine(0, line)))
                line = with_provenance(line, source) if source else line
                kept.append(with_expiry(line, until) if until is not None else line)
                written += 1
            if written == 0 and duplicates:
                return Remembered(path, 0, tuple(duplicates), redacted)
            body = "\n".join(kept).strip("\n")
            if not heading and not section and not any(line.lstrip().startswith("#") for line in kept):
                section = self._notes_section(path)
            current = self.store.read_lines(path) if section and self.store.exists(path) else ""
            placed = into_section(current, section, body) if section and current else None
            if placed is not None:
                self.store.write(path, placed)
                self._on_change()
                return Remembered(path, written, tuple(duplicates), redacted)
            if section:
                heading = section if section.lstrip().startswith("#") else f"## {section.strip()}"
            if heading:
                blank = "\n" if self.store.exists(path) and self.store.read_lines(path).strip() else ""
                body = f"{blank}{heading}\n{body}"
            self._append(path, body)
        self._on_change()
        return Remembered(path, written, tuple(duplicates), redacted)

    def supersede(self, old_text: str, new_text: str, file: str = "long_term", *, source: str | None = None,
                  today: dt.date | None = None, expires: str | dt.date | None = None) -> bool:
        """Replace the fact holding ``old_text`` by ``new_text``, keeping the old one struck under History.

        The old line(s) move to the file's ``## History`` section as ``- ~~old~~ (superseded <day>)``:
        a person still reads what was believed and when it changed, and search no longer finds it
        (superseded lines are not indexed). ``expires`` as in :meth:`remember`. False when
        ``old_text`` is not in the file. The new line ends with ``<!-- src: ... -->`` (``source``,
        or ``via=supersede <day>`` when none is given, unless ``provenance`` is off): the day it
        was written is what lets search rank it above an older log of the replaced fact.
        """
        path = self._writable(file)
        if not new_text.strip():
            raise MemoryInputError("new_text is empty: give the fact that replaces the old one")
        day = today or dt.date.today()
        until = None if expires is None else expiry_date(expires, day)
        self._check_size(new_text)
        new_text = self.redact(new_text)
        self._check_size(new_text)
        source = (self.redact(source) if source else provenance_label(via="supersede", when=day)) \
            if self.hygiene.provenance else None

        def change(current: str | None) -> str | None:
            return None if current is None else supersede_in(current, old_text, new_text, day, source, until)

        return self._changed(self.store.update(path, change))

    def edit(self, old_text: str, new_text: str, file: str = "long_term") -> bool:
        """Replace the first exact occurrence of ``old_text``; False when absent."""
        self._check_size(new_text)
        new_text = self.redact(new_text)
        self._check_size(new_text)
        return self._changed(self.store.edit(self._writable(file), old_text, new_text))

    def delete_text(self, text: str, file: str = "long_term") -> bool:
        """Remove the first exact occurrence of ``text``; False when absent."""
        return self._changed(self.store.delete_text(self._writable(file), text))

    def replace_lines(self, file: str, start_line: int, end_line: int, new_text: str) -> str:
        """Replace lines ``start_line..end_line`` (1-based, inclusive) by ``new_text``; returns the old lines.

        For lines that ``old_text`` cannot match (e.g. bytes that are not UTF-8); ``""`` deletes them.
        """
        self._check_size(new_text)
        new_text = self.redact(new_text)
        self._check_size(new_text)
        old = self.store.replace_lines(self._writable(file), start_line, end_line, new_text)
        self._on_change()
        return old

    def insert_lines(self, file: str, after_line: int, new_text: str) -> None:
        """Insert ``new_text`` as whole lines after line ``after_line`` (0: at the top).

        Only ``new_text`` is new (size-checked, secrets redacted): every byte of the file around it
        stays as it is, line endings and bytes that are not UTF-8 included.

        Raises:
            MemoryPathError: no such file, or ``after_line`` is not one of its lines (nor 0).
        """
        path = self._writable(file)
        self._check_size(new_text)
        new_text = self.redact(new_text)
        self._check_size(new_text)
        with self.locked():  # a move of the file (which takes this lock) waits for the insert
            self.store.insert_lines(path, after_line, new_text)
        self._on_change()

    def move_files(self, moves: Sequence[tuple[str, str]]) -> list[str]:
        """Move each file ``(old, new)`` to ``new`` byte for byte, all of them or none; the new paths.

        A rename: for a folder, pass every file under it, the hidden ``.<name>.unindexed.md`` ones
        too. Not redacted, not capped: the bytes are the memory's already. See
        :func:`~.moves.move_documents` for what is refused (before anything is written).
        """
        pairs = [(self._writable(old, hidden=True), self._writable(new, hidden=True)) for old, new in moves]
        move_documents(self.store, pairs)
        if pairs:
            self._on_change()
        return [new for _, new in pairs]

    def write(self, file: str, content: str) -> str:
        """Replace a memory file's whole content atomically; returns its relative path."""
        path = self._writable(file)
        self._check_size(content)
        content = self.redact(content)
        self._check_size(content)
        self.store.write(path, content)
        self._on_change()
        return path

    def update(self, file: str, fn: Callable[[str | None], str | None]) -> bool:
        """Read-modify-write one memory file under the lock; True when it was written.

        Not redacted: ``fn`` sees and returns whole files, so redact what it adds with :meth:`redact`.

        ``fn`` gets the current text (``None`` when the file does not exist) and
        returns the new text, or ``None`` to leave it. Hidden unindexed files
        (``.<name>.unindexed.md``) may be updated too.
        """
        return self._changed(self.store.update(self._writable(file, hidden=True), fn))

    def delete_file(self, file: str) -> bool:
        """Delete a memory file; False when it does not exist."""
        return self._changed(self.store.remove(self._writable(file, hidden=True)))

    def read_bytes(self, file: str) -> bytes:
        """A memory file's exact bytes (what a backup or an archive keeps)."""
        return self.store.read_bytes(file)

    def exists(self, file: str) -> bool:
        """True when ``file`` is an existing file of this memory (a refused path raises)."""
        return self.store.exists(self.store.relpath(file))  # the limits first: the OS's error names none

    def stat(self, file: str) -> tuple[int, int] | None:
        """``(mtime_ns, size)`` of a memory file, or ``None`` when it does not exist."""
        return self.store.stat(file)

    def list_files(self, *, include_unindexed: bool = False) -> list[str]:
        """Memory files as sorted relative POSIX paths (``include_unindexed``: hidden store files too)."""
        return self.store.list_files(include_unindexed=include_unindexed)

    def locked(self) -> contextlib.AbstractContextManager[None]:
        """The cross-process write lock every writer takes, for a read-check-write of your own.

        Re-entrant within a thread: the write methods above may be called inside it.
        """
        return self.store.locked()

    def job_lock(self, name: str) -> JobLock:
        """The exclusive, non-waiting lock of one long job (dream takes ``.dream.lock``).

        A lock file in a folder memory, an advisory lock on PostgreSQL (released by the server if
        the process dies). Not re-entrant; ``acquire()`` returns False while anyone holds it.
        """
        return self.store.job_lock(name)

    def keep_version(self, name: str, data: bytes, stamp: str, keep: int = 10) -> PurePath:
        """Keep ``data`` as ``.history/<name>-<stamp>.md`` (hidden: never listed or searched).

        Only the newest ``keep`` versions of ``name`` stay. Returns where it went: a file path in a
        folder memory, the document's relative path in a database.
        """
        return self.store.keep_version(name, data, stamp, keep)

    def redact(self, text: str) -> str:
        """``text`` with secrets replaced by ``[redacted: <kind>]`` (as is when ``redact_writes`` is off)."""
        return self._redact_counted(text)[0]

    def _redact_counted(self, text: str) -> tuple[str, int]:
        if not self.hygiene.redact_writes:
            return text, 0
        key = (self.hygiene.redact_kinds, tuple(self.hygiene.redact_patterns.items()))
        cached = self._write_redactor
        if cached is None or cached[0] != key:
            cached = (key, WriteRedactor(self.hygiene.redact_kinds, self.hygiene.redact_patterns))
            self._write_redactor = cached
        redacted, labels = cached[1].redact_labelled(text)
        draft = active_draft()
        if draft is not None:
            draft.redacted.update(labels)
        return redacted, len(labels)

    def _on_change(self) -> None:
        if active_draft() is None:  # a draft changed nothing the index reads
            self._mark_changed()

    def _known_facts(self, path: str) -> list[tuple[str, FactLine]]:
        """The live facts a new one is checked against: the target file's, or all memory files'.

        Expired facts are left out: a fact stated again after its old statement expired is news.
        """
        today = dt.date.today()
        if self.hygiene.dedup == "memory":
            files = [f for f in self.store.list_files() if PurePosixPath(f).parts[0] != SESSIONS_DIR]
        else:
            files = [path]
        found: list[tuple[str, FactLine]] = []
        for rel in files:
            if self.store.exists(rel):
                found += [(rel, fact) for fact in fact_lines(self.store.read_lines(rel))
                          if not expired(fact.text, today)]
        return found

    def _notes_section(self, path: str) -> str | None:
        """``## Notes`` when an append to ``path`` would join the last ``##`` section of another title."""
        ending = ending_section(self.store.read_lines(path)) if self.store.exists(path) else None
        return None if ending is None or ending.casefold() == NOTES_SECTION.casefold() else NOTES_SECTION

    def _already_stated(self, line: str, known: list[tuple[str, FactLine]]) -> str | None:
        if self.hygiene.dedup == "off":
            return None
        for rel, fact in known:
            if same_fact(line, fact.text, self.hygiene.dedup_threshold):
                return f"{rel}#L{fact.line}" if fact.line else f"{rel} (this update)"
        return None

    def _append(self, path: str, body: str) -> None:
        """Append ``body``, above a closing ``## History`` section when the file has one (under the lock)."""
        current = self.store.read_lines(path) if self.store.exists(path) else ""
        placed = before_history(current, body) if current else None
        if placed is None:
            self.store.append(path, body)
        else:
            self.store.write(path, placed)

    def _check_size(self, text: str | bytes) -> None:
        size = len(text) if isinstance(text, bytes) else len(text.encode("utf-8", "surrogatepass"))
        check_write_size(size, self.limits.max_write_bytes)

    def _changed(self, changed: bool) -> bool:
        if changed:
            self._on_change()
        return changed

    def _writable(self, file: str, *, hidden: bool = False) -> str:
        path = self.store.relpath(file)
        allowed = is_memory_file(path) if hidden else is_managed_file(path)
        if not allowed:
            raise MemoryPathError(
                f"Only Markdown memory files can be written: {file!r} is not a visible '.md' file. "
                "Use 'long_term', 'daily' or a relative path such as 'goals.md'."
            )
        self._check_flat(path)
        return path

    def _check_flat(self, path: str) -> None:
        # The global memory's subfolders are other projects' memories: never reach them through it.
        if not self.store.recursive and "/" in self.store.relpath(path):
            raise MemoryPathError(
                f"{path!r} is in a subfolder; this memory holds only top-level files such as 'MEMORY.md'"
            )
