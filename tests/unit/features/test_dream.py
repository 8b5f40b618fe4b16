"""Dream: gates, the model prompt, reply validation, atomic commit, log cleanup, the lock."""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from langchain_md_memory import MarkdownMemory
from langchain_md_memory.features.dream import (
    DREAM_LOCK_FILE,
    HISTORY_DIR,
    dream,
    validate_reply,
)
from langchain_md_memory.files.locks import LockFile
from langchain_md_memory.langgraph import create_dream_node
from tests.support.memories import write_dated
from tests.support.models import FailingModel, RecordingModel

NOW = dt.datetime(2026, 7, 14, 12, 0, tzinfo=dt.UTC)
CURRENT = "# Profile\n\n- Name: Ana\n\n## Goals\n\n- Retire at 55\n\n## Risk\n\n- Conservative\n"
GOOD = ("# Profile\n\n- Name: Ana\n\n## Goals\n\n- Retire at 55\n- Save for a house by 2030\n\n"
        "## Risk\n\n- Conservative; no single stock above 5%\n")


def _log(mem: MarkdownMemory, name: str, text: str, hours_ago: float) -> str:
    return write_dated(mem, f"sessions/{name}.md", text, NOW.timestamp() - hours_ago * 3600)


def _setup(mem: MarkdownMemory) -> list[str]:
    mem.write("MEMORY.md", CURRENT)
    return [
        _log(mem, "2026-07-10-a", "# Session\n\nUser wants to buy a house by 2030.\n", 96),
        _log(mem, "2026-07-11-b", "# Session\n\nAsked about the weather.\n", 72),
        _log(mem, "2026-07-12-c", "# Session\n\nNo single stock above 5%.\n", 48),
        _log(mem, "2026-07-14-d", "# Session\n\nStill talking.\n", 0.1),
    ]


def _snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.name.startswith(("index.sqlite", ".md-memory.lock", ".dream.lock"))
            and ".md-memory" not in p.relative_to(root).parts}


# -- a good dream -------------------------------------------------------------------


def test_good_reply_rewrites_memory_deletes_old_logs_and_keeps_backup(kw_memory: MarkdownMemory) -> None:
    logs = _setup(kw_memory)
    model = RecordingModel(responses=[GOOD])

    result = dream(kw_memory, model, min_sessions=3, now=NOW)

    assert result.status == "done", result.reason
    assert kw_memory.get("MEMORY.md") == GOOD
    assert result.sessions_used == tuple(logs)
    # The three old logs go; the newest (10 minutes old, inside the 1h recency guard) stays.
    assert result.sessions_deleted == tuple(logs[:3])
    assert [f for f in kw_memory.store.list_files() if f.startswith("sessions/")] == [logs[3]]
    assert result.backup is not None and result.backup.parent == kw_memory.memory_dir / HISTORY_DIR
    assert result.backup.read_text(encoding="utf-8") == CURRENT
    assert result.backup.name == "MEMORY-20260714T120000Z.md"
    # The backup is hidden: neither listed nor indexed, so old facts never compete in search.
    assert not any(f.startswith(HISTORY_DIR) for f in kw_memory.store.list_files())
    assert kw_memory.state.get("dream_last_run", 0) == NOW.timestamp()
    last = kw_memory.state.get("dream_last_result", {})
    assert last["status"] == "done" and last["sessions_deleted"] == logs[:3]
    assert "house by 2030" in kw_memory.search("house 2030")[0].text


def test_prompt_holds_current_memory_and_every_candidate_log(kw_memory: MarkdownMemory) -> None:
    _setup(kw_memory)
    model = RecordingModel(responses=[GOOD])
    dream(kw_memory, model, min_sessions=1, now=NOW)
    (system, human), = model.prompts
    assert system.type == "system" and "complete updated MEMORY.md" in system.content
    assert "- Retire at 55" in human.content
    for text in ("buy a house by 2030", "the weather", "No single stock", "Still talking"):
        assert text in human.content
    assert human.content.index("buy a house") < human.content.index("Still talking")  # oldest first


def test_expired_facts_move_to_history_unseen_by_the_model_and_never_survive_its_reply(
        kw_memory: MarkdownMemory) -> None:
    _setup(kw_memory)
    kw_memory.write("MEMORY.md", CURRENT.replace(
        "- Conservative\n",
        "- Conservative\n- Parking permit A12 <!-- expires: 2026-07-13 -->\n"
        "- Cover letter due Friday <!-- expires: 2026-07-14 -->\n"))
    # A model that copies the expired fact back from somewhere (a log, its own memory) anyway.
    reply = GOOD + "- Parking permit A12 <!-- expires: 2026-07-13 -->\n"
    model = RecordingModel(responses=[reply])

    result = dream(kw_memory, model, min_sessions=1, now=NOW)

    assert result.status == "done", result.reason
    (_, human), = model.prompts
    live = human.content.split("## History")[0]
    assert "Parking permit" not in live and "Cover letter due Friday" in live  # due today: still live
    assert "~~Parking permit A12~~ (expired 2026-07-13)" in human.content
    written = kw_memory.get("MEMORY.md")
    assert written.endswith("## History\n- ~~Parking permit A12~~ (expired 2026-07-13)\n")
    assert written.count("Parking permit") == 1
    assert kw_memory.search("parking permit") == []  # History is not indexed


def test_reply_wrapped_in_a_markdown_fence_is_unwrapped(kw_memory: MarkdownMemory) -> None:
    _setup(kw_memory)
    result = dream(kw_memory, RecordingModel(responses=[f"```markdown\n{GOOD}```"]), min_sessions=1, now=NOW)
    assert result.status == "done"
    assert kw_memory.get("MEMORY.md") == GOOD


def test_first_dream_creates_memory_without_backup(kw_memory: MarkdownMemory) -> None:
    _log(kw_memory, "2026-07-10-a", "User prefers ETFs.\n", 48)
    _log(kw_memory, "2026-07-11-a", "User is 40.\n", 24)
    result = dream(kw_memory, RecordingModel(responses=["# Profile\n\n- Prefers ETFs\n- Age 40"]),
                   min_sessions=2, now=NOW)
    assert result.status == "done" and result.backup is None
    assert kw_memory.get("MEMORY.md") == "# Profile\n\n- Prefers ETFs\n- Age 40\n"
    # Both logs are older than the guard, but the newest is never deleted.
    assert result.sessions_deleted == ("sessions/2026-07-10-a.md",)


def test_unchanged_reply_writes_nothing_but_consumes_logs(kw_memory: MarkdownMemory) -> None:
    logs = _setup(kw_memory)
    before = (kw_memory.memory_dir / "MEMORY.md").stat().st_mtime_ns
    result = dream(kw_memory, RecordingModel(responses=[CURRENT]), min_sessions=1, now=NOW)
    assert result.status == "done" and "unchanged" in result.reason
    assert result.backup is None and (kw_memory.memory_dir / "MEMORY.md").stat().st_mtime_ns == before
    assert result.sessions_deleted == tuple(logs[:3])


def test_backups_are_rotated_to_keep_backups(kw_memory: MarkdownMemory) -> None:
    kw_memory.write("MEMORY.md", CURRENT)
    for i in range(4):
        _log(kw_memory, f"2026-07-0{i + 1}-x", f"fact {i}\n", 100)
        _log(kw_memory, f"2026-07-0{i + 1}-y", f"fact {i}b\n", 99)
        reply = CURRENT + f"\n## Run {i}\n\n- fact {i}\n"
        result = dream(kw_memory, RecordingModel(responses=[reply]), min_sessions=1, keep_backups=2,
                       now=NOW + dt.timedelta(seconds=i), force=True)
        assert result.status == "done"
    backups = sorted((kw_memory.memory_dir / HISTORY_DIR).glob("MEMORY-*.md"))
    assert [b.name for b in backups] == ["MEMORY-20260714T120002Z.md", "MEMORY-20260714T120003Z.md"]
    # Each backup is the version the next run replaced: run 3 saved what run 2 wrote.
    assert backups[-1].read_text(encoding="utf-8") == CURRENT + "\n## Run 2\n\n- fact 2\n"


# -- refusals change nothing ---------------------------------------------------------


@pytest.mark.parametrize("reply", [
    pytest.param("", id="empty"),
    pytest.param("   \n\n", id="blank"),
    pytest.param("NO_REPLY", id="no-reply"),
    pytest.param("Ana wants a house by 2030 and is conservative.", id="no-headings"),
    pytest.param("# Profile\n## Goals\n## Risk\n", id="headings-only"),
    pytest.param("# Profile\n\n" + "- a fact\n" * 2000, id="oversized"),
    pytest.param("# Shopping\n\n- Buy milk\n", id="drops-existing-headings"),
    pytest.param("# Notes\n\n```\n# Profile\n# Goals\n# Risk\n```\n", id="headings-only-in-code"),
])
def test_invalid_reply_changes_nothing_and_keeps_logs(kw_memory: MarkdownMemory, reply: str) -> None:
    _setup(kw_memory)
    before = _snapshot(kw_memory.memory_dir)

    result = dream(kw_memory, RecordingModel(responses=[reply]), min_sessions=1, now=NOW)

    assert result.status == "invalid", result.reason
    assert _snapshot(kw_memory.memory_dir) == before
    assert not (kw_memory.memory_dir / HISTORY_DIR).exists()
    assert kw_memory.state.get("dream_last_run") is None
    assert kw_memory.state.get("dream_last_result", {})["status"] == "invalid"
    assert LockFile(kw_memory.memory_dir / DREAM_LOCK_FILE).acquire()  # released


def test_model_failure_changes_nothing_and_a_retry_succeeds(kw_memory: MarkdownMemory) -> None:
    _setup(kw_memory)
    before = _snapshot(kw_memory.memory_dir)
    failed = dream(kw_memory, FailingModel(error=TimeoutError("model timed out")), min_sessions=1, now=NOW)
    assert failed.status == "error" and "model timed out" in failed.reason
    assert _snapshot(kw_memory.memory_dir) == before

    retried = dream(kw_memory, RecordingModel(responses=[GOOD]), min_sessions=1, now=NOW)
    assert retried.status == "done" and kw_memory.get("MEMORY.md") == GOOD


def test_memory_edited_during_the_model_call_is_not_overwritten(kw_memory: MarkdownMemory) -> None:
    _setup(kw_memory)

    class EditingModel(RecordingModel):
        def _call(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> str:
            kw_memory.append("- Added by the agent meanwhile")
            return super()._call(messages, stop, run_manager, **kwargs)

    result = dream(kw_memory, EditingModel(responses=[GOOD]), min_sessions=1, now=NOW)
    assert result.status == "error" and "changed" in result.reason
    assert kw_memory.get("MEMORY.md") == CURRENT + "- Added by the agent meanwhile\n"
    assert len([f for f in kw_memory.store.list_files() if f.startswith("sessions/")]) == 4


def test_log_appended_during_the_model_call_is_not_deleted(kw_memory: MarkdownMemory) -> None:
    logs = _setup(kw_memory)

    class AppendingModel(RecordingModel):
        def _call(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> str:
            kw_memory.store.append(logs[0], "A late line.")
            os.utime(kw_memory.memory_dir / logs[0], (NOW.timestamp() - 90 * 3600,) * 2)
            return super()._call(messages, stop, run_manager, **kwargs)

    result = dream(kw_memory, AppendingModel(responses=[GOOD]), min_sessions=1, now=NOW)
    assert result.status == "done"
    assert result.sessions_deleted == tuple(logs[1:3])
    assert "A late line." in kw_memory.get(logs[0])


# -- gates --------------------------------------------------------------------------


def test_disabled_dream_is_skipped_without_calling_the_model(kw_memory: MarkdownMemory) -> None:
    _setup(kw_memory)
    model = RecordingModel(responses=[GOOD])
    result = dream(kw_memory, model, enabled=False, now=NOW)
    assert (result.status, result.reason) == ("skipped", "dream is disabled")
    assert model.prompts == []


def test_too_few_sessions_is_skipped(kw_memory: MarkdownMemory) -> None:
    _setup(kw_memory)
    model = RecordingModel(responses=[GOOD])
    result = dream(kw_memory, model, min_sessions=5, now=NOW)
    assert result.status == "skipped" and result.reason == "4 unprocessed session log(s), need 5"
    assert model.prompts == []
    assert kw_memory.state.get("dream_last_result") is None  # a skip is not a run


def test_min_interval_counts_from_the_last_successful_dream(kw_memory: MarkdownMemory) -> None:
    _setup(kw_memory)
    assert dream(kw_memory, RecordingModel(responses=[GOOD]), min_sessions=1, now=NOW).status == "done"
    _log(kw_memory, "2026-07-14-e", "new\n", 0)
    _log(kw_memory, "2026-07-14-f", "newer\n", 0)
    later = NOW + dt.timedelta(hours=23)
    skipped = dream(kw_memory, RecordingModel(responses=[GOOD]), min_sessions=1, now=later)
    assert skipped.status == "skipped" and "23.0h ago" in skipped.reason
    assert dream(kw_memory, RecordingModel(responses=[GOOD]), min_sessions=1, now=later, force=True).ok
    assert dream(kw_memory, RecordingModel(responses=[GOOD]), min_sessions=1, min_interval=60,
                 now=later + dt.timedelta(minutes=2)).reason.startswith("0 unprocessed")


def test_deleting_the_index_keeps_min_interval_and_does_not_resend_merged_logs(memory_dir: Path) -> None:
    with MarkdownMemory(memory_dir, embeddings="none") as mem:
        logs = _setup(mem)
        assert dream(mem, RecordingModel(responses=[GOOD]), min_sessions=1, now=NOW).status == "done"
    for index_file in memory_dir.glob("index.sqlite*"):
        index_file.unlink()
    with MarkdownMemory(memory_dir, embeddings="none") as mem:
        later = NOW + dt.timedelta(hours=1)
        model = RecordingModel(responses=[GOOD])
        skipped = dream(mem, model, min_sessions=1, now=later)
        assert skipped.status == "skipped" and "under min_interval" in skipped.reason
        # Forced past the interval: the kept newest log was merged already, so nothing is sent again.
        forced = dream(mem, model, min_sessions=1, now=later, force=True)
        assert forced.status == "skipped" and forced.reason == "0 unprocessed session log(s), need 1"
        assert model.prompts == []
        assert mem.list_files() == ["MEMORY.md", logs[3]]


def test_kept_recent_log_counts_again_only_after_it_changes(kw_memory: MarkdownMemory) -> None:
    logs = _setup(kw_memory)
    dream(kw_memory, RecordingModel(responses=[GOOD]), min_sessions=1, now=NOW)
    again = dream(kw_memory, RecordingModel(responses=[GOOD]), min_sessions=1, force=True, now=NOW)
    assert again.status == "skipped" and again.reason == "0 unprocessed session log(s), need 1"
    kw_memory.store.append(logs[3], "More talk.")
    model = RecordingModel(responses=[GOOD])
    third = dream(kw_memory, model, min_sessions=1, force=True, now=NOW)
    assert third.status == "done" and third.sessions_used == (logs[3],)
    assert "More talk." in model.prompts[0][1].content


def test_logs_over_the_input_budget_wait_for_a_later_run(kw_memory: MarkdownMemory) -> None:
    kw_memory.write("MEMORY.md", CURRENT)
    small = _log(kw_memory, "2026-07-10-a", "Small fact.\n", 50)
    big = _log(kw_memory, "2026-07-11-a", "word " * 4000, 49)
    newest = _log(kw_memory, "2026-07-12-a", "Another small fact.\n", 48)
    result = dream(kw_memory, RecordingModel(responses=[GOOD]), min_sessions=1, max_input_tokens=1500,
                   now=NOW)
    assert result.status == "done"
    assert result.sessions_used == (small, newest)
    assert result.sessions_deleted == (small,)
    assert kw_memory.store.exists(big)


def test_memory_over_the_input_budget_is_skipped_without_calling_the_model(kw_memory: MarkdownMemory) -> None:
    _setup(kw_memory)
    model = RecordingModel(responses=[GOOD])
    result = dream(kw_memory, model, min_sessions=1, max_input_tokens=100, now=NOW)
    assert (result.status, result.reason) == ("skipped", "MEMORY.md alone exceeds max_input_tokens=100")
    assert model.prompts == [] and kw_memory.get("MEMORY.md") == CURRENT


def test_busy_when_another_holder_has_the_lock(kw_memory: MarkdownMemory) -> None:
    _setup(kw_memory)
    holder = LockFile(kw_memory.memory_dir / DREAM_LOCK_FILE)
    assert holder.acquire()
    try:
        model = RecordingModel(responses=[GOOD])
        result = dream(kw_memory, model, min_sessions=1, now=NOW)
        assert result.status == "busy" and f"pid {os.getpid()}" in result.reason
        assert model.prompts == [] and kw_memory.get("MEMORY.md") == CURRENT
    finally:
        holder.release()
    assert dream(kw_memory, RecordingModel(responses=[GOOD]), min_sessions=1, now=NOW).status == "done"


# -- validation ---------------------------------------------------------------------


def test_validate_reply_measures_the_share_of_kept_headings() -> None:
    current = "# A\n\nx\n\n## B\n\ny\n\n## C\n\nz\n\n## D\n\nw\n"
    half = "# A\n\nx\n\n## b  \n\ny\n\n## New\n\nq\n"  # case and spacing do not matter
    assert validate_reply(half, current, max_output_chars=1000, keep_heading_ratio=0.5) is None
    problem = validate_reply(half, current, max_output_chars=1000, keep_heading_ratio=0.75)
    assert problem == "the reply keeps 50% of the 4 existing headings, under keep_heading_ratio=75%"
    assert validate_reply(half, current, max_output_chars=10, keep_heading_ratio=0.0) == (
        f"the reply has {len(half.strip())} characters, over max_output_chars=10")


def test_validate_reply_accepts_closing_hashes_and_rejects_no_reply_variants() -> None:
    assert validate_reply("## Goals ##\n- Retire\n", "## Goals\n", max_output_chars=100,
                          keep_heading_ratio=1.0) is None
    for reply in ("NO_REPLY", " `NO_REPLY` ", "no_reply\n"):
        problem = validate_reply(reply, "", max_output_chars=100, keep_heading_ratio=0.5)
        assert problem == "the model replied NO_REPLY"


# -- facade, node, CLI ---------------------------------------------------------------


def test_facade_dream_and_node_delegate(kw_memory: MarkdownMemory) -> None:
    _setup(kw_memory)
    node = create_dream_node(kw_memory, RecordingModel(responses=[GOOD]), min_sessions=1, now=NOW)
    assert node({"messages": []}) is None
    assert kw_memory.get("MEMORY.md") == GOOD
    assert kw_memory.dream(RecordingModel(responses=[GOOD]), now=NOW).status == "skipped"


async def test_adream_runs_the_same_dream(kw_memory: MarkdownMemory) -> None:
    _setup(kw_memory)
    result = await kw_memory.adream(RecordingModel(responses=[GOOD]), min_sessions=1, now=NOW)
    assert result.status == "done" and kw_memory.get("MEMORY.md") == GOOD


async def test_dream_node_async_path_dreams(kw_memory: MarkdownMemory) -> None:
    _setup(kw_memory)
    node = create_dream_node(kw_memory, RecordingModel(responses=[GOOD]), min_sessions=1, now=NOW)
    assert await node.acall({"messages": []}) is None
    assert kw_memory.get("MEMORY.md") == GOOD


def test_cli_dream_uses_the_model_spec(memory_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from langchain_md_memory import cli
    from langchain_md_memory.embeddings import providers

    with MarkdownMemory(memory_dir, embeddings="none") as mem:
        _setup(mem)
    specs: list[str] = []

    def fake_chat_model(spec: str) -> RecordingModel:
        specs.append(spec)
        return RecordingModel(responses=[GOOD])

    monkeypatch.setattr(providers, "chat_model", fake_chat_model)  # the CLI loads it when dream runs
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(["--dir", str(memory_dir), "--embeddings", "none", "dream",
                     "--model", "openai:gpt-4o-mini", "--min-sessions", "1", "--json"], out=out, err=err)
    assert code == 0, err.getvalue()
    assert specs == ["openai:gpt-4o-mini"]
    assert json.loads(out.getvalue())["status"] == "done"
    assert (memory_dir / "MEMORY.md").read_text(encoding="utf-8") == GOOD


def test_cli_dream_without_langchain_prints_one_line(memory_dir: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from langchain_md_memory import cli

    monkeypatch.setitem(sys.modules, "langchain.chat_models", None)
    out, err = io.StringIO(), io.StringIO()
    # openai models are built directly (langchain-openai is a dependency); others need langchain.
    code = cli.main(["--dir", str(memory_dir), "--embeddings", "none", "dream", "--model", "anthropic:x"],
                    out=out, err=err)
    assert code == 2
    assert err.getvalue() == ("md-memory: error: loading 'anthropic:x' needs the 'langchain' package "
                              "(pip install 'langchain-md-memory[agents]')\n")


def test_a_corrected_fact_goes_to_history_and_leaves_search(kw_memory: MarkdownMemory) -> None:
    _setup(kw_memory)
    _log(kw_memory, "2026-07-13-e", "# Session\n\nUser now wants to retire at 60, not 55.\n", 30)
    corrected = CURRENT.replace("- Retire at 55", "- Retire at 60") + (
        "\n## History\n\n- ~~Retire at 55~~ (superseded 2026-07-14)\n")
    model = RecordingModel(responses=[corrected])
    assert dream(kw_memory, model, min_sessions=1, now=NOW).status == "done"
    (system, _), = model.prompts
    assert "## History" in system.content and "superseded" in system.content  # the model is told how
    assert "~~Retire at 55~~" in kw_memory.get("MEMORY.md")  # a person still sees what changed
    assert [h.text for h in kw_memory.search("retire")] and all("55" not in h.text
                                                                 for h in kw_memory.search("retire"))
