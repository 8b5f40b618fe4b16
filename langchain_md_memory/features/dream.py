"""Dream: consolidate raw session logs into the curated ``MEMORY.md``, safely.

A dream checks its gates (enabled, time since the last successful dream, how
many unprocessed ``sessions/*.md`` logs there are), takes an exclusive lock,
asks a chat model for the complete updated ``MEMORY.md``, validates the reply,
keeps the previous version in ``.history/``, writes the new one atomically and
only then deletes the logs it consumed that are old enough. Facts of MEMORY.md
past their ``<!-- expires: -->`` day move, struck, to its ``## History``: the model
never sees them as live, and its reply keeps none. Build the new
snapshot, commit it atomically, then collect the old inputs: a run that fails
anywhere before the commit changes nothing and can simply be retried.

The previous versions go to the hidden ``.history/`` folder rather than a
visible ``history/``: hidden folders are neither indexed (old facts would
otherwise compete with current ones in search) nor exported in archives, and
unlike a single ``MEMORY.md.bak`` it keeps several generations, so two bad but
valid dreams in a row still leave a good version to restore.

Example:
    .. code-block:: python

        from langchain.chat_models import init_chat_model
        from langchain_md_memory import MarkdownMemory

        with MarkdownMemory("memory") as mem:
            result = mem.dream(init_chat_model("openai:gpt-4o-mini"), min_sessions=3)
            print(result.status, result.reason, result.sessions_deleted)
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import PurePath, PurePosixPath
from typing import TYPE_CHECKING, Any, Literal

from langchain_core.language_models import LanguageModelLike
from langchain_core.messages import HumanMessage, SystemMessage

from ..errors import MemoryStoreError
from ..files.paths import HISTORY_DIR, LONG_TERM_FILE, SESSIONS_DIR
from ..files.sections import expire_in
from ..text import estimate_tokens
from ..text.redaction import scrub
from ..types import ProgressCallback, ProgressEvent
from .dream_reply import reply_text, validate_reply

if TYPE_CHECKING:
    from ..memory import MarkdownMemory

__all__ = [
    "DREAM_LOCK_FILE",
    "HISTORY_DIR",
    "DreamResult",
    "DreamStatus",
    "dream",
    "validate_reply",
]

logger = logging.getLogger(__name__)

DreamStatus = Literal["done", "skipped", "busy", "invalid", "error"]

DREAM_LOCK_FILE = ".dream.lock"
"""Hidden lock file in the memory folder; at most one dream runs per memory."""

# Keys of the memory's state file (not the index: deleting the index must not reset them).
STATE_LAST_RUN = "dream_last_run"
STATE_LAST_RESULT = "dream_last_result"
STATE_PROCESSED = "dream_processed"

SYSTEM_PROMPT = """\
You maintain a user's long-term memory file, MEMORY.md, for an assistant.
You receive the current MEMORY.md and recent session logs. Reply with the complete updated MEMORY.md.

Rules:
- Output only the Markdown file: no preamble, no commentary, no code fence around it.
- Structure it with Markdown headings (# and ##); keep every existing heading unless it is truly obsolete.
- Keep every existing fact unless a newer session clearly corrects it; then state the corrected fact and
  move the old one to a `## History` section at the end as `- ~~old fact~~ (superseded YYYY-MM-DD)`.
- Keep `## History` and any `<!-- src: ... -->` or `<!-- expires: ... -->` comment exactly as written
  (facts past their expiry date are moved to History for you).
- Add durable facts from the logs: preferences, goals, constraints, decisions, important people and dates.
- Leave out small talk, one-off requests and anything only relevant to a single conversation.
- Merge duplicates; write short, specific bullet points; keep the language the facts were written in.
- If the logs hold nothing durable, reply with the current MEMORY.md unchanged."""


@dataclass(frozen=True, slots=True)
class DreamResult:
    """The outcome of one dream.

    ``status`` is ``done`` (MEMORY.md written), ``skipped`` (a gate said not
    now), ``busy`` (another dream holds the lock), ``invalid`` (the model's
    reply was refused) or ``error`` (the model or the disk failed). Only
    ``done`` changes anything.
    """

    status: DreamStatus
    reason: str
    sessions_used: tuple[str, ...] = ()
    sessions_deleted: tuple[str, ...] = ()
    backup: PurePath | None = None
    finished_at: str = field(default="")

    @property
    def ok(self) -> bool:
        """True when nothing went wrong (``done`` or ``skipped``)."""
        return self.status in ("done", "skipped")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, as stored in the index ``meta`` table."""
        data = asdict(self)
        data["sessions_used"] = list(self.sessions_used)
        data["sessions_deleted"] = list(self.sessions_deleted)
        data["backup"] = None if self.backup is None else str(self.backup)
        return data


@dataclass(frozen=True, slots=True)
class _Log:
    path: str
    stat: tuple[int, int]
    text: str


def dream(
    mem: MarkdownMemory,
    model: LanguageModelLike,
    *,
    enabled: bool = True,
    force: bool = False,
    min_interval: dt.timedelta | float = dt.timedelta(hours=24),
    min_sessions: int = 3,
    max_input_tokens: int = 24_000,
    max_output_chars: int = 12_000,
    keep_heading_ratio: float = 0.5,
    recency_guard: dt.timedelta | float = dt.timedelta(hours=1),
    keep_newest: int = 1,
    keep_backups: int = 10,
    now: dt.datetime | None = None,
    progress: ProgressCallback | None = None,
) -> DreamResult:
    """Consolidate unprocessed session logs into ``MEMORY.md`` with ``model``.

    Args:
        mem: the memory.
        model: any LangChain chat model; called once with a system and a human message.
        enabled: False skips at once (the feature switch).
        force: ignore ``min_interval`` and ``min_sessions`` (at least one log is still needed).
        min_interval: time (or seconds) since the last successful dream.
        min_sessions: unprocessed logs needed before dreaming.
        max_input_tokens: cap on the prompt (``text.estimate_tokens``); logs that
            do not fit wait for a later run.
        max_output_chars: a longer reply is refused.
        keep_heading_ratio: share of the current headings the reply must keep.
        recency_guard: logs modified more recently than this (or seconds) are used but never deleted.
        keep_newest: the newest this many logs are never deleted.
        keep_backups: previous versions kept in ``.history/``.
        now: the current time (tests); default UTC now.
        progress: receives ``dream`` events over 3 steps: the model answered, MEMORY.md written,
            session logs marked and cleaned up (the first event, 0 of 3, as the model is asked).

    Returns:
        A :class:`DreamResult`. Every run that got past the gates is recorded in
        the memory's state file (``.md-memory/state.json``, which survives
        deleting the index) under ``dream_last_result``; the time of the last
        successful one under ``dream_last_run``.

    Example:
        .. code-block:: python

            result = dream(mem, model, min_sessions=1)
            assert result.status in ("done", "skipped", "busy", "invalid", "error")
    """
    when = now or dt.datetime.now(dt.UTC)
    gate = _check_gates(mem, enabled=enabled, force=force, min_interval=_seconds(min_interval),
                        min_sessions=min_sessions, now=when)
    if gate is not None:
        return _record(mem, gate, when)
    lock = mem.job_lock(DREAM_LOCK_FILE)
    try:
        acquired = lock.acquire()
    except OSError as exc:
        return _record(mem, _result("error", f"cannot take the dream lock: {exc}", when), when)
    if not acquired:
        holder = lock.holder() or "holder unknown"
        return _record(mem, _result("busy", f"another dream is running ({holder})", when), when)
    try:
        # Re-check under the lock: a dream that finished while we waited may have consumed the logs.
        result = _check_gates(mem, enabled=enabled, force=force, min_interval=_seconds(min_interval),
                              min_sessions=min_sessions, now=when)
        if result is None:
            result = _run(mem, model, when=when, max_input_tokens=max_input_tokens,
                          max_output_chars=max_output_chars, keep_heading_ratio=keep_heading_ratio,
                          recency_guard_s=_seconds(recency_guard), keep_newest=keep_newest,
                          keep_backups=keep_backups, step=lambda done: progress and progress(
                              ProgressEvent("dream", done, 3, "steps")))
    except Exception as exc:  # a dream must never take the agent down; the lock is released below
        logger.warning("dream failed: %s", scrub(f"{type(exc).__name__}: {exc}"))
        result = _result("error", f"{type(exc).__name__}: {exc}", when)
    finally:
        lock.release()
    return _record(mem, result, when)


# -- the run ------------------------------------------------------------------------


def _check_gates(mem: MarkdownMemory, *, enabled: bool, force: bool, min_interval: float, min_sessions: int,
                 now: dt.datetime) -> DreamResult | None:
    if not enabled:
        return _result("skipped", "dream is disabled", now)
    if not force:
        last = _load_json(mem, STATE_LAST_RUN)
        if isinstance(last, (int, float)):
            elapsed = now.timestamp() - float(last)
            if elapsed < min_interval:
                return _result("skipped", f"last dream {elapsed / 3600:.1f}h ago, under min_interval "
                                          f"{min_interval / 3600:.1f}h", now)
    pending = _unprocessed(mem)
    needed = 1 if force else max(1, min_sessions)
    if len(pending) < needed:
        return _result("skipped", f"{len(pending)} unprocessed session log(s), need {needed}", now)
    return None


def _run(mem: MarkdownMemory, model: LanguageModelLike, *, when: dt.datetime, max_input_tokens: int,
         max_output_chars: int, keep_heading_ratio: float, recency_guard_s: float, keep_newest: int,
         keep_backups: int, step: Callable[[int], None]) -> DreamResult:
    current = mem.get(LONG_TERM_FILE) if mem.exists(LONG_TERM_FILE) else ""
    current_stat = mem.stat(LONG_TERM_FILE)
    # Facts past their expiry go to History before the model sees them, and again from its reply.
    shown, _ = expire_in(current, when.date())
    logs = _fit(shown, _read_logs(mem, _unprocessed(mem)), max_input_tokens)
    if not logs:
        base = estimate_tokens(SYSTEM_PROMPT + _human_prompt(shown, []))
        what = "MEMORY.md alone" if base > max_input_tokens else "no session log fits: the prompt"
        return _result("skipped", f"{what} exceeds max_input_tokens={max_input_tokens}", when)
    used = tuple(log.path for log in logs)
    step(0)
    try:
        reply = model.invoke([SystemMessage(SYSTEM_PROMPT), HumanMessage(_human_prompt(shown, logs))])
    except Exception as exc:
        logger.warning("dream: the model failed: %s", scrub(exc))
        return _result("error", f"the model failed: {type(exc).__name__}: {exc}", when, used)
    step(1)
    text = reply_text(reply)
    problem = validate_reply(text, shown, max_output_chars=max_output_chars,
                             keep_heading_ratio=keep_heading_ratio)
    if problem is not None:
        logger.warning("dream: reply refused: %s", problem)
        return _result("invalid", problem, when, used)
    new = expire_in(text, when.date())[0] + "\n"

    backup: PurePath | None = None
    with mem.locked():  # the same lock every writer takes: nobody appends between check and write
        if mem.stat(LONG_TERM_FILE) != current_stat:
            return _result("error", "MEMORY.md changed while the model was thinking; retry", when, used)
        if current_stat is not None and new != current:
            previous = mem.read_bytes(LONG_TERM_FILE)
            stamp = when.astimezone(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
            backup = mem.keep_version("MEMORY", previous, stamp, keep_backups)
        if new != current:
            mem.write(LONG_TERM_FILE, new)
    step(2)
    # Committed: a failure from here on only leaves logs behind, which the model merges again next time.
    deleted: tuple[str, ...] = ()
    try:
        _mark_processed(mem, logs)
        deleted = _delete_consumed(mem, logs, now=when, recency_guard_s=recency_guard_s,
                                   keep_newest=keep_newest)
    except Exception as exc:
        logger.warning("dream: MEMORY.md written, but cleaning up session logs failed: %s", exc)
    step(3)
    change = "updated" if new != current else "unchanged"
    return _result("done", f"MEMORY.md {change} from {len(logs)} session log(s), {len(deleted)} deleted",
                   when, used, deleted, backup)


def _unprocessed(mem: MarkdownMemory) -> list[tuple[str, tuple[int, int]]]:
    """Session logs not seen unchanged by an earlier dream, oldest first."""
    processed = _load_json(mem, STATE_PROCESSED)
    seen = processed if isinstance(processed, dict) else {}
    found = [(rel, st) for rel, st in _session_logs(mem) if seen.get(rel) != list(st)]
    found.sort(key=lambda item: (item[1][0], item[0]))
    return found


def _session_logs(mem: MarkdownMemory) -> list[tuple[str, tuple[int, int]]]:
    """Every ``sessions/**.md`` log with its ``(mtime_ns, size)``."""
    logs = []
    for rel in mem.list_files():
        if PurePosixPath(rel).parts[0] == SESSIONS_DIR and (st := mem.stat(rel)) is not None:
            logs.append((rel, st))
    return logs


def _read_logs(mem: MarkdownMemory, pending: Sequence[tuple[str, tuple[int, int]]]) -> list[_Log]:
    logs = []
    for rel, st in pending:
        try:
            logs.append(_Log(rel, st, mem.get(rel)))
        except Exception as exc:  # vanished or unreadable: leave it for a later run
            logger.warning("dream: skipping %s: %s", rel, exc)
    return logs


def _fit(current: str, logs: Sequence[_Log], max_input_tokens: int) -> list[_Log]:
    """Oldest logs first, each only when the whole prompt stays within the budget."""
    chosen: list[_Log] = []
    for log in logs:
        trial = [*chosen, log]
        if estimate_tokens(SYSTEM_PROMPT + _human_prompt(current, trial)) <= max_input_tokens:
            chosen = trial
        else:
            logger.info("dream: %s does not fit in max_input_tokens=%d; left for later", log.path,
                        max_input_tokens)
    return chosen


def _human_prompt(current: str, logs: Sequence[_Log]) -> str:
    parts = ["<current_memory_md>", current.strip() or "(empty: MEMORY.md does not exist yet)",
             "</current_memory_md>", "", f"<session_logs count=\"{len(logs)}\" order=\"oldest first\">"]
    for log in logs:
        parts += [f"<log path=\"{log.path}\">", log.text.strip(), "</log>"]
    parts += ["</session_logs>", "", "Reply with the complete updated MEMORY.md."]
    return "\n".join(parts)


def _mark_processed(mem: MarkdownMemory, logs: Sequence[_Log]) -> None:
    processed = _load_json(mem, STATE_PROCESSED)
    seen: dict[str, Any] = processed if isinstance(processed, dict) else {}
    live = set(mem.list_files())
    seen = {path: st for path, st in seen.items() if path in live}
    seen.update({log.path: list(log.stat) for log in logs})
    _store_json(mem, STATE_PROCESSED, seen)


def _delete_consumed(mem: MarkdownMemory, logs: Sequence[_Log], *, now: dt.datetime, recency_guard_s: float,
                     keep_newest: int) -> tuple[str, ...]:
    every = sorted(((st, rel) for rel, st in _session_logs(mem)), reverse=True)
    newest = {rel for _, rel in every[: max(keep_newest, 0)]}
    cutoff_ns = int((now.timestamp() - recency_guard_s) * 1e9)
    deleted: list[str] = []
    for log in logs:
        if log.path in newest or log.stat[0] > cutoff_ns:
            continue
        with mem.locked():
            # A session that wrote more since we read it still holds unconsolidated lines: keep it.
            if mem.stat(log.path) != log.stat:
                continue
            try:
                mem.delete_file(log.path)
            except MemoryStoreError as exc:
                logger.warning("dream: could not delete %s: %s", log.path, exc)
                continue
        deleted.append(log.path)
    if deleted:
        processed = _load_json(mem, STATE_PROCESSED)
        if isinstance(processed, dict):
            _store_json(mem, STATE_PROCESSED, {k: v for k, v in processed.items() if k not in deleted})
    return tuple(deleted)


# -- helpers ------------------------------------------------------------------------


def _result(status: DreamStatus, reason: str, when: dt.datetime, used: tuple[str, ...] = (),
            deleted: tuple[str, ...] = (), backup: PurePath | None = None) -> DreamResult:
    # A provider's error body may echo the key it was sent: never store or show it.
    return DreamResult(status, scrub(reason), used, deleted, backup, when.isoformat(timespec="seconds"))


def _record(mem: MarkdownMemory, result: DreamResult, when: dt.datetime) -> DreamResult:
    if result.status == "skipped":
        return result  # not a run: keep the last real outcome visible
    try:
        _store_json(mem, STATE_LAST_RESULT, result.to_dict())
        if result.status == "done":
            _store_json(mem, STATE_LAST_RUN, when.timestamp())
    except Exception as exc:  # bookkeeping only: a dream's outcome must not depend on it
        logger.warning("dream: could not record the run in the state file: %s", exc)
    return result


def _load_json(mem: MarkdownMemory, key: str) -> Any:
    return mem.state.get(key)


def _store_json(mem: MarkdownMemory, key: str, value: Any) -> None:
    mem.state.set(key, value)


def _seconds(value: dt.timedelta | float) -> float:
    return value.total_seconds() if isinstance(value, dt.timedelta) else float(value)
