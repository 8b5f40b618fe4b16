"""Memory hygiene through the tools: no secrets kept, no duplicates, superseded facts stay history."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from langchain_md_memory import MarkdownMemory, MemoryConfig, create_memory_tools
from langchain_md_memory.files.facts import expired, strip_annotations
from langchain_md_memory.files.paths import daily_file_name

API_KEY = "sk-proj-Zq8xW3vL0pR7tY2uI9oK4mN6"
CARD = "4111 1111 1111 1111"


@pytest.fixture
def mem(tmp_path: Path):
    with MarkdownMemory(tmp_path / "memory", embeddings="none") as memory:
        yield memory


def _every_byte(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


def test_api_key_and_card_number_in_memory_update_never_reach_disk(mem):
    _, _, update = create_memory_tools(mem)
    out = update.invoke({"content": f"- OpenAI key is {API_KEY}; pays with card {CARD}"})
    mem.sync()
    assert "redacted" in out
    data = _every_byte(mem.memory_dir)  # Markdown, index.sqlite and its WAL
    assert (mem.memory_dir / "index.sqlite").exists()
    assert API_KEY.encode() not in data and API_KEY[8:].encode() not in data
    assert CARD.encode() not in data and CARD.replace(" ", "").encode() not in data
    text = mem.get("MEMORY.md")
    assert "[redacted: api key]" in text and "[redacted: card number]" in text
    assert "pays with card" in text  # the rest of the fact stays


def test_redaction_switched_off_keeps_raw_notes(tmp_path):
    raw_notes = {"hygiene": {"redact_writes": False}}
    with MarkdownMemory(tmp_path / "m", embeddings="none", config=raw_notes) as raw:
        create_memory_tools(raw)[2].invoke({"content": f"- key {API_KEY}"})
        assert API_KEY in raw.get("MEMORY.md")


def test_edit_and_direct_append_are_redacted_too(mem):
    mem.append("- Wi-Fi: home network")
    assert mem.edit("home network", "home network, password=hunter22")
    mem.append("- DB at postgres://app:s3cretpw@db.local/prod")
    text = mem.get("MEMORY.md")
    assert "hunter22" not in text and "s3cretpw" not in text
    assert "password=[redacted: password]" in text
    assert "postgres://app:[redacted: password]@db.local/prod" in text


def test_same_preference_appended_three_times_is_one_line(mem):
    _, _, update = create_memory_tools(mem)
    first = update.invoke({"content": "- Prefers meetings after 10am"})
    second = update.invoke({"content": "- prefers  meetings after 10am."})
    third = update.invoke({"content": "* Prefers meetings after 10AM"})
    assert first == "Appended to MEMORY.md."
    for out in (second, third):
        assert out.startswith("Nothing written: already remembered")
        assert "MEMORY.md#L1" in out
    lines = [line for line in mem.get("MEMORY.md").splitlines() if "meetings" in line.lower()]
    assert len(lines) == 1


def test_a_changed_number_is_not_a_duplicate(mem):
    _, _, update = create_memory_tools(mem)
    update.invoke({"content": "- The user plans to retire at age 65 and move to the coast with family"})
    out = update.invoke({"content": "- The user plans to retire at age 67 and move to the coast with family"})
    assert out == "Appended to MEMORY.md."


def test_dedup_across_memory_files_when_asked(tmp_path):
    with MarkdownMemory(tmp_path / "m", embeddings="none", config={"hygiene": {"dedup": "memory"}}) as memory:
        memory.append("- Allergic to peanuts", file="health.md")
        out = create_memory_tools(memory)[2].invoke({"content": "- allergic to peanuts", "file": "daily"})
        assert "health.md#L1" in out
        assert not memory.exists(daily_file_name())


def test_superseded_retirement_age_never_outranks_the_new_one(mem):
    _, get, update = create_memory_tools(mem)
    update.invoke({"content": "- Retirement age: 65"})
    update.invoke({"content": "- Favourite cuisine: Sichuan"})
    out = update.invoke({"action": "supersede", "old_text": "Retirement age: 65",
                         "content": "- Retirement age: 67"})
    assert out.startswith("Superseded in MEMORY.md")
    text = get.invoke({"path": "MEMORY.md"})
    assert "## History" in text
    assert "- ~~Retirement age: 65~~ (superseded " in text  # still readable, with its date
    hits = mem.search("retirement age 65")
    assert hits and "67" in hits[0].text
    assert all("65" not in hit.text for hit in hits)


def test_supersede_of_unknown_text_asks_to_read_first(mem):
    _, _, update = create_memory_tools(mem)
    update.invoke({"content": "- Retirement age: 65"})
    out = update.invoke({"action": "supersede", "old_text": "Retirement age: 60", "content": "- Age 67"})
    assert out.startswith("Error: old_text was not found") and "memory_get" in out


def test_a_flushed_fact_shows_its_thread_in_memory_get_and_in_the_hit(mem):
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.messages import HumanMessage
    from langgraph.graph import START, MessagesState, StateGraph

    from langchain_md_memory.langgraph import create_memory_flush_node

    graph = StateGraph(MessagesState)
    graph.add_node("flush", create_memory_flush_node(
        mem, FakeListChatModel(responses=["- College fund goal: 80k by 2030"]), trigger_tokens=1))
    graph.add_edge(START, "flush")
    app = graph.compile()
    app.invoke({"messages": [HumanMessage("Save 80k for college by 2030", id="m-42")]},
               {"configurable": {"thread_id": "thread-7"}})
    _, get, _ = create_memory_tools(mem)
    assert "thread=thread-7 msg=m-42" in get.invoke({"path": "daily"})
    hit = mem.search("college fund")[0]
    assert any(src.startswith("via=flush thread=thread-7 msg=m-42 ") for src in hit.provenance)


def test_a_persons_own_line_without_provenance_stays_valid(mem):
    mem.store.write("MEMORY.md", "- Likes hiking\n")
    hit = mem.search("hiking")[0]
    assert hit.provenance == () and hit.text == "- Likes hiking"


def test_an_expired_fact_leaves_search_results(mem):
    mem.append("- Office closed for renovation <!-- expires: 2020-01-31 -->\n\n- Office plants need water")
    mem.append("- Gym membership renewal <!-- expires: 2999-01-31 -->", file="gym.md")
    texts = " ".join(hit.text for hit in mem.search("office renovation plants"))
    assert "plants" in texts and "renovation" not in texts
    assert "Gym" in mem.search("gym membership")[0].text


def test_provenance_comments_are_not_searchable_text(mem):
    search = create_memory_tools(mem)[0]
    update = create_memory_tools(mem)[2]
    update.invoke({"action": "append", "content": "- Prefers green tea in the afternoon"},
                  config={"configurable": {"thread_id": "zebra-thread"}})
    assert "zebra-thread" in (mem.memory_dir / "MEMORY.md").read_text(encoding="utf-8")
    assert mem.search("green tea")  # the fact is found by its words
    assert mem.search("zebra") == []  # not by its bookkeeping
    assert "No memory matched" in search.invoke({"query": "zebra thread src"})


def test_a_secret_put_through_the_langgraph_store_never_reaches_disk(mem):
    store = mem.as_store()
    store.put(("users", "alice"), "creds", {"content": f"Deploy key {API_KEY}", "tags": [f"card {CARD}"]})
    item = store.get(("users", "alice"), "creds")
    assert item is not None and "[redacted: " in item.value["content"]
    assert API_KEY not in str(item.value) and CARD not in str(item.value)
    raw = _every_byte(mem.memory_dir)
    assert API_KEY.encode() not in raw and CARD.encode() not in raw


def _lines_with(mem, word: str, file: str = "MEMORY.md") -> list[str]:
    return [line for line in mem.get(file).splitlines() if word in line]


def test_memory_update_with_an_expiry_marks_the_fact_until_that_day(mem):
    _, _, update = create_memory_tools(mem)
    until = dt.date.today() + dt.timedelta(days=30)
    out = update.invoke({"content": "- Working from Lisbon this month", "expires": until.isoformat()})
    assert out.startswith("Appended to MEMORY.md")
    [line] = _lines_with(mem, "Lisbon")
    assert line.endswith(f"<!-- expires: {until.isoformat()} -->")
    assert "Lisbon" in mem.search("Lisbon")[0].text  # found until then
    assert not expired(line, until) and expired(line, until + dt.timedelta(days=1))  # gone the day after


@pytest.mark.parametrize("expires", ["31/01/2027", "2027-02-30", "next week", "2020-01-31"])
def test_memory_update_refuses_a_malformed_or_past_expiry_and_writes_nothing(mem, expires):
    _, _, update = create_memory_tools(mem)
    out = update.invoke({"content": "- Working from Lisbon", "expires": expires})
    assert out.startswith(f"Error: expires={expires!r} is")
    assert "YYYY-MM-DD" in out
    assert not (mem.memory_dir / "MEMORY.md").exists() or not _lines_with(mem, "Lisbon")


def test_an_expiry_on_edit_is_refused_with_what_to_do_instead(mem):
    mem.append("- Working from Lisbon")
    _, _, update = create_memory_tools(mem)
    out = update.invoke({"action": "edit", "old_text": "Lisbon", "content": "Porto", "expires": "2999-01-01"})
    assert out.startswith("Error: expires applies to action='append' and 'supersede'")
    assert _lines_with(mem, "Lisbon") == ["- Working from Lisbon"]


def test_a_superseding_fact_can_carry_an_expiry(mem):
    _, _, update = create_memory_tools(mem)
    update.invoke({"content": "- Based in Lisbon"})
    out = update.invoke({"action": "supersede", "old_text": "Based in Lisbon", "content": "Based in Porto",
                         "expires": "2999-12-31"})
    assert out.startswith("Superseded")
    [current] = [line for line in _lines_with(mem, "Porto") if "~~" not in line]
    assert current.startswith("- Based in Porto") and current.endswith("<!-- expires: 2999-12-31 -->")
    assert any("~~Based in Lisbon~~" in line for line in _lines_with(mem, "Lisbon"))


def test_an_append_matching_only_an_expired_fact_is_written(mem):
    mem.append("- Office closed for renovation <!-- expires: 2020-01-31 -->")
    _, _, update = create_memory_tools(mem)
    out = update.invoke({"content": "- Office closed for renovation"})
    assert out.startswith("Appended to MEMORY.md") and "already remembered" not in out.lower()
    assert len(_lines_with(mem, "renovation")) == 2
    assert "renovation" in mem.search("office renovation")[0].text  # the new statement is live
    again = update.invoke({"content": "- office closed for renovation."})
    assert again.startswith("Nothing written: already remembered") and "MEMORY.md#L2" in again


def test_a_fact_appended_after_a_supersede_stays_live_above_the_history(mem):
    _, _, update = create_memory_tools(mem)
    update.invoke({"content": "- Based in Lisbon"})
    update.invoke({"action": "supersede", "old_text": "Based in Lisbon", "content": "Based in Porto"})
    update.invoke({"content": "- Runs on Tuesdays"})
    mem.append("- Drinks decaf")
    lines = mem.get("MEMORY.md").splitlines()
    history = lines.index("## History")
    assert [i for i, line in enumerate(lines) if line.startswith(("- Runs on Tuesdays", "- Drinks decaf"))] \
        == [history - 3, history - 2]
    assert "Tuesdays" in mem.search("runs Tuesdays")[0].text
    assert "decaf" in mem.search("decaf")[0].text


@pytest.mark.parametrize("provenance", [True, False])
def test_a_fact_superseded_today_outranks_a_month_old_log_of_the_old_value(tmp_path: Path, provenance: bool):
    # The log holds the old value as an event and matches the question a little better; the
    # superseding line carries the day it was written, so it is the newer statement and ranks
    # first. Without provenance nothing dates the new line and the log keeps its lead.
    config = MemoryConfig(hygiene={"provenance": provenance})
    with MarkdownMemory(tmp_path / "memory", embeddings="none", config=config) as mem:
        mem.append("# Memory\n\n## Gym\n- Prefers tea over coffee.\n- Lives in Lisbon with Tomás.\n"
                   "- Gym: Holmes Place Saldanha, weekday mornings.")
        log = daily_file_name(dt.date.today() - dt.timedelta(days=30))
        mem.write(log, "## 08:00 gym\n"
                       "- Joined a gym: Holmes Place Saldanha, weekday mornings. Gym bag packed.\n")
        assert mem.supersede("Gym: Holmes Place Saldanha, weekday mornings.",
                             "Gym: switched to Fitness Hut Arroios, weekday evenings.")
        assert ("via=supersede" in mem.get("MEMORY.md")) is provenance
        hits = mem.search("Which gym do I go to?")
    assert [hit.path for hit in hits] == (["MEMORY.md", log] if provenance else [log, "MEMORY.md"])
    if provenance:  # ordered, not buried: just below the new fact, the factor in its decay
        assert hits[1].score == pytest.approx(hits[0].score) and hits[1].decay < hits[0].decay


@pytest.mark.parametrize("rule", [True, False])
def test_an_old_log_restating_a_superseded_value_ranks_below_its_replacement(tmp_path: Path, rule: bool):
    # The log says the old value in the question's own words and far outscores the new fact, beyond
    # what "newer statements first" moves; it holds the value that changed (biweekly), so it is a
    # statement of the superseded fact and goes just below the replacement. newer_first=1.0 turns both off.
    config = MemoryConfig(ranking={"temporal_decay": {"newer_first": 0.8 if rule else 1.0}})
    old = "On-call: biweekly rotation, handover Mondays at 14:00; PagerDuty schedule risk-primary."
    with MarkdownMemory(tmp_path / "memory", embeddings="none", config=config) as mem:
        mem.write("work.md", f"# Work\n\n## Team\n- Manager: Priya Raman.\n- {old}\n"
                  "- Runbook index lives in Confluence space RISK.\n")
        log = daily_file_name(dt.date.today() - dt.timedelta(days=27))
        mem.write(log, "## 10:00 standup\n- Priya announced: on-call moves to a biweekly rotation.\n"
                       "- Rotation handover stays on Mondays at 14:00; the rotation sheet is pinned.\n")
        other = daily_file_name(dt.date.today() - dt.timedelta(days=20))
        mem.write(other, "## 09:00 standup\n- The on-call rotation handover moved to the small room; "
                         "on-call rotation notes are in the handover doc.\n")
        for name, note in (("home.md", "- Landlord: Sr. Almeida; rent due on the 1st."),
                           ("health.md", "- GP: Dr. Paulo Reis, Arroios clinic."),
                           ("travel.md", "- Kyoto in April: ryokan booked near Gion.")):
            mem.write(name, f"{note}\n")  # the rest of a memory: terms in every note are weak evidence
        assert mem.supersede(old, "On-call: every third week since the team grew, handover Mondays at 14:00; "
                             "PagerDuty schedule risk-primary.", file="work.md")
        hits = mem.search("on-call rotation handover")
    paths = [hit.path for hit in hits]
    if rule:  # the log of the old value follows work.md; the log without it (no "biweekly") keeps its place
        assert paths.index(log) == paths.index("work.md") + 1 and paths.index(other) < paths.index("work.md")
        assert hits[paths.index(log)].score < hits[paths.index("work.md")].score
    else:
        assert paths.index(log) < paths.index("work.md")


def test_a_replacement_takes_the_place_where_the_question_found_the_old_value(tmp_path: Path):
    # The log of the old rotation answers best, a runbook line next, the long team section holding
    # the rotation last. After the supersede the new rotation takes the log's place, above the
    # runbook: placed merely above the log, it would stay under the runbook.
    old = "On-call: biweekly rotation, handover Mondays at 14:00; PagerDuty schedule risk-primary."
    new = "On-call rotation: every third week since the team grew, handover Mondays at 14:00; " \
          "PagerDuty schedule risk-primary."
    question = "What is my on-call rotation?"
    with MarkdownMemory(tmp_path / "memory", embeddings="none") as mem:
        mem.write("work.md", "# Work\n\n## Team\n- Manager: Priya Raman.\n"
                  "- Teammates: Kwame, Sofia, Mateus.\n- Skip-level: Annika Vogt.\n"
                  "- Office: Lisbon, third floor, desk by the window.\n"
                  f"- Sprints of two weeks, retro on Fridays.\n- {old}\n\n"
                  "## Runbooks\n- Runbook: the on-call handbook; rotation swaps in PagerDuty.\n")
        log = daily_file_name(dt.date.today() - dt.timedelta(days=10))
        mem.write(log, "## 10:00 process\n- Priya announced: on-call moves to a biweekly rotation; "
                       "the on-call rotation sheet is pinned.\n")
        for name, note in (("home.md", "- Landlord: Sr. Almeida; rent due on the 1st."),
                           ("health.md", "- GP: Dr. Paulo Reis, Arroios clinic.")):
            mem.write(name, f"{note}\n")
        before = mem.search(question)
        assert [hit.path for hit in before] == [log, "work.md", "work.md"] and "Runbook" in before[1].text
        assert mem.supersede(old, new, file="work.md")
        hits = mem.search(question)
    assert "every third week" in hits[0].text and hits[1].path == log and "Runbook" in hits[2].text
    assert hits[0].score == pytest.approx(before[0].score) and hits[0].decay > 1.0  # the lift, recorded
    assert hits[0].score > hits[1].score > hits[2].score


def test_remember_files_a_fact_in_its_section_or_a_new_one(mem):
    mem.append("# Health\n\n## Doctors\n- GP: Dr. Paulo Reis.\n\n## 体检记录\n- 血压一直正常。\n",
               file="health.md")
    done = mem.remember("- Knee physio on Wednesdays at 18:30.", file="health.md", section="## Doctors")
    assert done.written == 1
    again = mem.remember("- knee physio on wednesdays at 18:30", file="health.md", section="Doctors")
    assert again.written == 0  # still deduplicated
    mem.remember("- Flu shot every October.", file="health.md", section="Vaccines")
    assert mem.get("health.md") == (
        "# Health\n\n## Doctors\n- GP: Dr. Paulo Reis.\n- Knee physio on Wednesdays at 18:30.\n\n"
        "## 体检记录\n- 血压一直正常。\n\n## Vaccines\n- Flu shot every October.\n")
    hit = mem.search("knee physio day")[0]
    assert "## Doctors" in hit.text and "Wednesdays" in hit.text and "体检" not in hit.text  # its chunk
    with pytest.raises(ValueError, match="not both"):
        mem.remember("- x", file="health.md", heading="## A", section="## B")


def test_deleting_a_remembered_fact_takes_its_provenance_with_it(mem):
    mem.write("MEMORY.md", "# Memory\n\n- Walks to work\n")
    mem.remember("- Likes green tea", source="via=memory_update 2026-12-01")
    mem.remember("- Reads on Sundays <!-- expires: 2999-01-31 -->", source="via=memory_update 2026-12-01")
    assert "src: via=memory_update" in mem.get("MEMORY.md")
    assert mem.delete_text("- Likes green tea")
    assert mem.delete_text("- Reads on Sundays")
    assert mem.get("MEMORY.md") == "# Memory\n\n- Walks to work\n"  # no stray comment line left
    assert mem.search("green tea") == []
    assert [hit.provenance for hit in mem.search("walks to work")] == [()]


def test_deleting_part_of_a_fact_keeps_its_provenance(mem):
    mem.remember("- Likes green tea and oolong", source="via=memory_update 2026-12-01")
    assert mem.delete_text(" and oolong")
    assert mem.get("MEMORY.md") == "- Likes green tea <!-- src: via=memory_update 2026-12-01 -->\n"


def test_an_appended_fact_does_not_join_the_subject_that_ends_the_file(mem):
    _, _, update = create_memory_tools(mem)
    mem.write("MEMORY.md", "# Memory\n\n## Preferences\n- Likes green tea\n\n## Accounts\n"
                           "- Brokerage account at Fidelity\n")
    assert update.invoke({"content": "- Prefers index funds"}) == "Appended to MEMORY.md."
    assert update.invoke({"content": "- Walks to work"}) == "Appended to MEMORY.md."
    filed = update.invoke({"content": "- Likes jasmine tea", "section": "Preferences"})
    assert filed == "Appended to MEMORY.md."
    text = mem.get("MEMORY.md")
    assert strip_annotations(text) == (
        "# Memory\n\n## Preferences\n- Likes green tea\n- Likes jasmine tea\n\n## Accounts\n"
        "- Brokerage account at Fidelity\n\n## Notes\n- Prefers index funds\n- Walks to work\n")
    hit = mem.search("index funds")[0]
    assert "Brokerage" not in hit.text and "## Accounts" not in hit.text


def test_an_appended_fact_still_ends_a_file_without_sections(mem):
    _, _, update = create_memory_tools(mem)
    mem.write("MEMORY.md", "# Memory\n\n- Likes green tea\n")
    update.invoke({"content": "- Prefers index funds"})
    assert strip_annotations(mem.get("MEMORY.md")) == "# Memory\n\n- Likes green tea\n- Prefers index funds\n"
