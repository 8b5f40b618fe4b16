"""sections: a namespace file's ``## key`` items parse back to exactly what was rendered."""

from __future__ import annotations

import datetime as dt
import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langchain_md_memory.files.chunker import chunk_markdown
from langchain_md_memory.integrations.basestore.changes import (
    Change,
    FileChanges,
    apply_changes,
    find_item,
    merged_items,
    plan_changes,
)
from langchain_md_memory.integrations.basestore.sections import (
    ParsedFile,
    check_key,
    namespace_preamble,
    parse_sections,
    render_file,
    render_item,
)

T0 = dt.datetime(2026, 7, 14, 9, 30, tzinfo=dt.UTC)
T1 = dt.datetime(2026, 7, 15, 18, 0, 5, 123456, tzinfo=dt.UTC)
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def one_file(*sections: str, preamble: str = "# ns\n") -> str:
    return render_file(preamble, sections)


def parse(text: str) -> ParsedFile:
    return parse_sections(text, fallback_time=EPOCH)


# -- rendering ----------------------------------------------------------------------


def test_content_becomes_the_markdown_body_and_other_fields_the_comment() -> None:
    text = render_item("food", {"content": "Loves hotpot", "kind": "pref"}, created_at=T0, updated_at=T1)
    lines = text.split("\n")
    assert lines[0] == "## food"
    assert lines[1].startswith("<!-- md-memory: {") and lines[1].endswith("} -->")
    meta = json.loads(lines[1][len("<!-- md-memory: ") : -len(" -->")])
    assert meta == {"created_at": T0.isoformat(), "updated_at": T1.isoformat(), "fields": {"kind": "pref"}}
    assert lines[2:] == ["", "Loves hotpot", ""]


def test_value_without_string_content_is_a_fenced_json_body() -> None:
    text = render_item("profile", {"name": "Alice", "age": 30}, created_at=T0, updated_at=T0)
    assert "```json\n{\n  \"name\": \"Alice\",\n  \"age\": 30\n}\n```\n" in text
    assert '"format": "json"' in text.split("\n")[1]


def test_the_file_not_a_flag_says_unindexed_but_a_hand_written_flag_is_read() -> None:
    text = render_item("k", {"content": "x"}, created_at=T0, updated_at=T0)
    assert '"index"' not in text
    assert parse(one_file(text)).items[0].indexed is True
    flagged = text.replace('{"created_at"', '{"index": false, "created_at"')
    assert parse(one_file(flagged)).items[0].indexed is False


def test_the_hidden_file_preamble_says_it_is_not_indexed() -> None:
    hidden = namespace_preamble(("users", "alice"), indexed=False)
    assert hidden.startswith("# users / alice (not indexed)\n\n<!-- ")
    assert "index=False" in hidden and hidden.endswith("-->\n")
    assert parse(hidden).items == ()
    assert "not indexed" not in namespace_preamble(("users", "alice"))


def test_comment_terminator_inside_a_field_cannot_end_the_comment() -> None:
    text = render_item("k", {"content": "x", "note": "a --> b <!-- c"}, created_at=T0, updated_at=T0)
    meta_line = text.split("\n")[1]
    assert meta_line.count("-->") == 1 and meta_line.count("<!--") == 1
    assert parse(one_file(text)).items[0].value["note"] == "a --> b <!-- c"


def test_chinese_stays_readable_in_the_file() -> None:
    text = render_item("风险", {"content": "稳健型", "标签": "偏好"}, created_at=T0, updated_at=T0)
    assert "## 风险" in text and "稳健型" in text and "偏好" in text
    assert "\\u" not in text


@pytest.mark.parametrize(
    "value",
    [["not", "a", "dict"], {"when": dt.date(2026, 1, 1)}, {"x": float("nan")}, {1: "int key"}],
)
def test_values_that_are_not_json_objects_are_refused(value: object) -> None:
    with pytest.raises(ValueError):
        render_item("k", value, created_at=T0, updated_at=T0)  # type: ignore[arg-type]


# -- keys ---------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["food", "c#", "3f2b9c1e-8d4a-4a7e-9a43-0b7f5a1d2c3e", "a # b", "用户 偏好"])
def test_heading_safe_keys_pass(key: str) -> None:
    assert check_key(key) == key


@pytest.mark.parametrize("key", ["", "two\nlines", "tab\there", "nul\x00", "#tag", "## h", " pad", "pad ",
                                 "ends #", "cr\r", "lone \udc80"])
def test_keys_that_cannot_be_a_heading_line_are_refused(key: str) -> None:
    with pytest.raises(ValueError):
        check_key(key)
    with pytest.raises(ValueError):
        render_item(key, {"content": "x"}, created_at=T0, updated_at=T0)


# -- parsing ------------------------------------------------------------------------


def test_round_trip_keeps_key_value_timestamps_and_line_ranges() -> None:
    text = one_file(
        render_item("a", {"content": "alpha\n\nsecond paragraph", "n": 1}, created_at=T0, updated_at=T1),
        render_item("b", {"list": [1, 2], "nested": {"x": None}}, created_at=T1, updated_at=T1),
    )
    parsed = parse(text)
    assert parsed.preamble == "# ns\n"  # verbatim, with the blank line before the first item
    a, b = parsed.items
    assert (a.key, a.created_at, a.updated_at) == ("a", T0, T1)
    assert a.value == {"content": "alpha\n\nsecond paragraph", "n": 1}
    assert (b.key, b.value) == ("b", {"list": [1, 2], "nested": {"x": None}})
    lines = text.split("\n")
    assert lines[a.start_line - 1] == "## a" and lines[b.start_line - 1] == "## b"
    assert a.end_line == b.start_line - 1
    assert b.end_line == len(text.rstrip("\n").split("\n"))


def test_heading_without_metadata_line_is_body_text_of_the_item_above() -> None:
    body = "Intro\n\n## A heading of my own\n\nmore"
    parsed = parse(one_file(render_item("k", {"content": body}, created_at=T0, updated_at=T0)))
    assert [item.key for item in parsed.items] == ["k"]
    assert parsed.items[0].value["content"] == body


def test_hand_edited_body_is_what_parses() -> None:
    text = one_file(render_item("k", {"content": "old text", "kind": "x"}, created_at=T0, updated_at=T0))
    edited = text.replace("old text", "new text\n- with a bullet\n\n\n")
    assert parse(edited).items[0].value == {"content": "new text\n- with a bullet", "kind": "x"}


def test_hand_edited_json_body_is_what_parses() -> None:
    text = one_file(render_item("p", {"age": 30}, created_at=T0, updated_at=T0))
    assert parse(text.replace('"age": 30', '"age": 31')).items[0].value == {"age": 31}


def test_broken_json_body_falls_back_to_its_text_as_content() -> None:
    text = one_file(render_item("p", {"age": 30}, created_at=T0, updated_at=T0))
    broken = text.replace('"age": 30', '"age": ')
    assert parse(broken).items[0].value == {"content": '```json\n{\n  "age": \n}\n```'}


def test_unreadable_metadata_uses_the_fallback_time() -> None:
    text = "## k\n<!-- md-memory: {not json} -->\n\nbody\n"
    item = parse_sections(text, fallback_time=T1).items[0]
    assert (item.key, item.value, item.created_at, item.updated_at) == ("k", {"content": "body"}, T1, T1)


def test_naive_timestamps_read_as_utc() -> None:
    stamp = "2026-07-14T09:30:00"
    text = f'## k\n<!-- md-memory: {{"created_at": "{stamp}", "updated_at": "{stamp}"}} -->\n'
    assert parse(text).items[0].created_at == T0


def test_duplicate_keys_resolve_to_the_first_section() -> None:
    text = one_file(
        render_item("k", {"content": "first"}, created_at=T0, updated_at=T0),
        render_item("k", {"content": "second"}, created_at=T0, updated_at=T0),
    )
    parsed = parse(text)
    assert len(parsed.items) == 2
    found = parsed.find("k")
    assert found is not None and found.value["content"] == "first"
    assert [item.value["content"] for item in parsed.unique()] == ["first"]


def test_file_without_items_is_all_preamble() -> None:
    parsed = parse("# Notes\n\n## Not an item\n\ntext\n")
    assert parsed.items == ()
    assert parsed.preamble == "# Notes\n\n## Not an item\n\ntext"


def test_crlf_content_is_stored_as_json_so_it_round_trips() -> None:
    text = render_item("k", {"content": "a\r\nb"}, created_at=T0, updated_at=T0)
    assert '"format": "json"' in text
    assert parse(one_file(text)).items[0].value == {"content": "a\r\nb"}


@pytest.mark.parametrize(
    "content",
    ["\nleading blank line", "trailing newline\n", "```\nunclosed fence", "x\n<!-- md-memory: {} -->\ny",
     "lone \ud800 surrogate"],
)
def test_content_that_markdown_would_change_goes_to_json_and_round_trips(content: str) -> None:
    text = render_item("k", {"content": content}, created_at=T0, updated_at=T0)
    assert '"format": "json"' in text.split("\n")[1]
    assert parse(one_file(text)).items[0].value == {"content": content}


def test_closed_fence_in_content_stays_markdown() -> None:
    content = "Config:\n\n```yaml\nrisk: low\n```"
    text = render_item("k", {"content": content}, created_at=T0, updated_at=T0)
    assert '"format"' not in text
    assert parse(one_file(text)).items[0].value == {"content": content}


def test_each_chunk_of_the_index_overlaps_exactly_one_item() -> None:
    text = one_file(
        render_item("a", {"content": "alpha fact"}, created_at=T0, updated_at=T0),
        render_item("b", {"content": "beta fact"}, created_at=T0, updated_at=T0),
        preamble=namespace_preamble(("users", "alice")),
    )
    a, b = parse(text).items
    chunks = chunk_markdown(text)
    # The preamble (a title and a comment) has no content of its own, so it opens the first chunk.
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, a.end_line - 1), (b.start_line, b.end_line)]
    assert "alpha fact" in chunks[0].text and "beta" not in chunks[0].text
    assert chunks[1].heading == "# users / alice > ## b"


# -- applying changes ---------------------------------------------------------------


def test_put_into_a_missing_file_writes_preamble_and_item() -> None:
    out = apply_changes(None, [Change("k", {"content": "v"})], now=T0, preamble="# p\n", fallback_time=EPOCH)
    assert out is not None and out.startswith("# p\n\n## k\n<!-- md-memory: ")
    assert out.endswith("\n\nv\n")


def test_delete_from_a_missing_file_writes_nothing() -> None:
    assert apply_changes(None, [Change("k", None)], now=T0, preamble="# p", fallback_time=EPOCH) is None
    put_then_delete = [Change("k", {"content": "v"}), Change("k", None)]
    assert apply_changes(None, put_then_delete, now=T0, preamble="# p", fallback_time=EPOCH) is None


def test_overwrite_keeps_created_at_and_position_and_untouched_items_verbatim() -> None:
    hand_written = '## b\n<!-- md-memory: {"created_at": "2026-07-14T09:30:00+00:00"} -->\n\n  spaced   text'
    item_a = render_item("a", {"content": "one"}, created_at=T0, updated_at=T0)
    text = f"# My notes\n\nwritten by hand\n\n{item_a}\n{hand_written}\n"
    out = apply_changes(text, [Change("a", {"content": "uno"})], now=T1, preamble="-", fallback_time=EPOCH)
    assert out is not None
    assert out.startswith("# My notes\n\nwritten by hand\n\n## a\n")
    assert hand_written in out
    a, b = parse(out).items
    assert (a.key, a.value, a.created_at, a.updated_at) == ("a", {"content": "uno"}, T0, T1)
    assert b.key == "b"


def test_put_replaces_the_first_duplicate_and_drops_the_others_of_that_key_only() -> None:
    text = one_file(
        render_item("k", {"content": "1"}, created_at=T0, updated_at=T0),
        render_item("x", {"content": "x1"}, created_at=T0, updated_at=T0),
        render_item("x", {"content": "x2"}, created_at=T0, updated_at=T0),
        render_item("k", {"content": "2"}, created_at=T0, updated_at=T0),
    )
    out = apply_changes(text, [Change("k", {"content": "new"})], now=T1, preamble="", fallback_time=EPOCH)
    assert out is not None
    assert [(i.key, i.value["content"]) for i in parse(out).items] == [("k", "new"), ("x", "x1"), ("x", "x2")]


def test_delete_removes_every_section_of_the_key_and_missing_key_is_no_change() -> None:
    text = one_file(
        render_item("k", {"content": "1"}, created_at=T0, updated_at=T0),
        render_item("j", {"content": "keep"}, created_at=T0, updated_at=T0),
        render_item("k", {"content": "2"}, created_at=T0, updated_at=T0),
    )
    out = apply_changes(text, [Change("k", None)], now=T1, preamble="", fallback_time=EPOCH)
    assert out is not None and [i.key for i in parse(out).items] == ["j"]
    assert apply_changes(text, [Change("zz", None)], now=T1, preamble="", fallback_time=EPOCH) is None


def test_changes_apply_in_order_and_last_put_wins() -> None:
    changes = [Change("k", {"content": "a"}), Change("j", {"content": "b"}), Change("k", {"content": "c"})]
    out = apply_changes(None, changes, now=T0, preamble="", fallback_time=EPOCH)
    assert out is not None
    assert [(i.key, i.value["content"]) for i in parse(out).items] == [("k", "c"), ("j", "b")]


def test_change_created_at_overrides_the_files_own() -> None:
    text = one_file(render_item("k", {"content": "old"}, created_at=T1, updated_at=T1))
    moved_in = [Change("k", {"content": "new"}, created_at=T0), Change("j", {"content": "j"}, created_at=T0)]
    out = apply_changes(text, moved_in, now=T1, preamble="", fallback_time=EPOCH)
    assert out is not None
    assert [(i.key, i.created_at, i.updated_at) for i in parse(out).items] == [("k", T0, T1), ("j", T0, T1)]


# -- the two files of a namespace: reading and planning ------------------------------


def files(**items: str) -> ParsedFile:
    """A parsed file of ``key=content`` items, all created at T0."""
    return parse(one_file(*(render_item(k, {"content": v}, created_at=T0, updated_at=T0)
                            for k, v in items.items())))


def steps(plan: list[FileChanges]) -> list[tuple[str, list[tuple[str, str | None]]]]:
    """The plan as ``(file, [(key, content or None), ...])``, file being "visible" or "hidden"."""
    return [("visible" if step.indexed else "hidden",
             [(c.key, None if c.value is None else c.value["content"]) for c in step.changes])
            for step in plan]


def test_readers_prefer_the_visible_file_for_a_key_in_both() -> None:
    visible, hidden = files(a="visible a", b="visible b"), files(a="hidden a", c="hidden c")
    found = find_item("a", visible, hidden)
    assert found is not None and found.value["content"] == "visible a"
    found_c = find_item("c", visible, hidden)
    assert found_c is not None and found_c.value["content"] == "hidden c"
    assert find_item("zz", visible, hidden) is None and find_item("a", None, None) is None
    assert [(i.key, i.value["content"]) for i in merged_items(visible, hidden)] == [
        ("a", "visible a"), ("b", "visible b"), ("c", "hidden c")]


def test_plan_without_moves_writes_each_file_at_most_once() -> None:
    visible, hidden = files(a="1"), files(h="2")
    plan = plan_changes([Change("a", {"content": "a2"}), Change("n", {"content": "new"}),
                         Change("h", {"content": "h2"}, indexed=False)], visible, hidden, now=T1)
    assert steps(plan) == [("visible", [("a", "a2"), ("n", "new")]), ("hidden", [("h", "h2")])]
    assert steps(plan_changes([Change("x", {"content": "x"})], None, None, now=T1)) == [
        ("visible", [("x", "x")])]
    # an unindexed put into a fresh namespace touches only the hidden file
    assert steps(plan_changes([Change("x", {"content": "x"}, indexed=False)], None, None, now=T1)) == [
        ("hidden", [("x", "x")])]


def test_plan_deletes_only_where_the_key_is_and_a_missing_key_plans_nothing() -> None:
    visible, hidden = files(a="1"), files(h="2")
    plan = plan_changes([Change("a", None), Change("h", None)], visible, hidden, now=T1)
    assert steps(plan) == [("visible", [("a", None)]), ("hidden", [("h", None)])]
    assert plan_changes([Change("ghost", None)], visible, hidden, now=T1) == []
    assert plan_changes([Change("ghost", None)], None, None, now=T1) == []


def test_a_move_writes_the_new_copy_before_removing_the_old() -> None:
    visible, hidden = files(a="1"), files(h="2")
    into_visible = plan_changes([Change("h", {"content": "h2"})], visible, hidden, now=T1)
    assert steps(into_visible) == [("visible", [("h", "h2")]), ("hidden", [("h", None)])]
    into_hidden = plan_changes([Change("a", {"content": "a2"}, indexed=False)], visible, hidden, now=T1)
    assert steps(into_hidden) == [("hidden", [("a", "a2")]), ("visible", [("a", None)])]


def test_moves_both_ways_write_visible_hidden_visible() -> None:
    visible, hidden = files(a="1"), files(h="2")
    plan = plan_changes([Change("a", {"content": "a2"}, indexed=False), Change("h", {"content": "h2"})],
                        visible, hidden, now=T1)
    assert steps(plan) == [("visible", [("h", "h2")]), ("hidden", [("a", "a2"), ("h", None)]),
                           ("visible", [("a", None)])]


def test_a_key_left_in_both_files_loses_its_visible_copy_last() -> None:
    visible, hidden = files(k="before"), files(k="shadowed")
    assert steps(plan_changes([Change("k", None)], visible, hidden, now=T1)) == [
        ("hidden", [("k", None)]), ("visible", [("k", None)])]
    assert steps(plan_changes([Change("k", {"content": "v"})], visible, hidden, now=T1)) == [
        ("visible", [("k", "v")]), ("hidden", [("k", None)])]
    assert steps(plan_changes([Change("k", {"content": "v"}, indexed=False)], visible, hidden, now=T1)) == [
        ("hidden", [("k", "v")]), ("visible", [("k", None)])]


def test_plan_keeps_created_at_across_a_move_unless_the_batch_deleted_first() -> None:
    visible, hidden = files(), files(h="2")
    (moved, _) = plan_changes([Change("h", {"content": "h2"})], visible, hidden, now=T1)
    assert moved.changes[0].created_at == T0
    (fresh,) = plan_changes([Change("n", {"content": "n"})], visible, hidden, now=T1)
    assert fresh.changes[0].created_at == T1
    recreated = plan_changes([Change("h", None), Change("h", {"content": "again"}, indexed=False),
                              Change("h", {"content": "last"}, indexed=False)], visible, hidden, now=T1)
    assert steps(recreated) == [("hidden", [("h", "last")])]
    assert recreated[0].changes[0].created_at == T1


def test_last_change_of_a_key_in_a_batch_decides_its_file() -> None:
    plan = plan_changes([Change("k", {"content": "a"}, indexed=False), Change("k", {"content": "b"})],
                        None, None, now=T1)
    assert steps(plan) == [("visible", [("k", "b")])]
    assert plan_changes([Change("k", {"content": "a"}), Change("k", None)], None, None, now=T1) == []


def test_plan_refuses_a_bad_value_or_key_before_any_write() -> None:
    with pytest.raises(ValueError):
        plan_changes([Change("ok", {"content": "x"}), Change("bad", {"when": dt.date(2026, 1, 1)})],
                     None, None, now=T1)
    with pytest.raises(ValueError):
        plan_changes([Change("two\nlines", {"content": "x"})], None, None, now=T1)


# -- properties ---------------------------------------------------------------------

_json_leaf = st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text(max_size=20)
_json = st.recursive(_json_leaf, lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=8)


@settings(max_examples=150, deadline=None)
@given(
    content=st.text(max_size=80),
    extra=st.dictionaries(st.text(min_size=1, max_size=6).filter(lambda k: k != "content"), _json,
                          max_size=3),
)
def test_any_json_value_round_trips(content: str, extra: dict[str, object]) -> None:
    value = {"content": content, **extra}
    text = one_file(render_item("k", value, created_at=T0, updated_at=T1),
                    render_item("next", {"content": "after"}, created_at=T0, updated_at=T0))
    first, second = parse(text).items
    assert first.value == value
    assert (second.key, second.value) == ("next", {"content": "after"})


@settings(max_examples=200, deadline=None)
@given(key=st.text(min_size=1, max_size=30))
def test_every_key_check_key_accepts_reads_back_exactly(key: str) -> None:
    try:
        check_key(key)
    except ValueError:
        return
    text = one_file(render_item(key, {"content": "v"}, created_at=T0, updated_at=T0))
    assert [item.key for item in parse(text).items] == [key]


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("## <!-- md-memory: {}\"`\n\tab")), max_size=200))
def test_parsing_arbitrary_text_never_raises_and_covers_items_in_order(text: str) -> None:
    parsed = parse(text)
    ends = [(item.start_line, item.end_line) for item in parsed.items]
    assert all(start <= end for start, end in ends)
    assert all(prev[1] < nxt[0] for prev, nxt in itertools.pairwise(ends))
