"""MarkdownBaseStore: every BaseStore op over real Markdown files and the real SQLite index."""

from __future__ import annotations

import asyncio
import datetime as dt
import re
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
    TTLConfig,
)

from langchain_md_memory import MarkdownMemory
from langchain_md_memory.errors import MemoryInputError, MemoryPathError, MemoryStoreError
from langchain_md_memory.files.store import MarkdownStore
from langchain_md_memory.integrations.basestore import NAMESPACE_FILE, MarkdownBaseStore, unindexed_file_name
from langchain_md_memory.integrations.tools import create_memory_tools
from tests.support.embeddings import AxisEmbeddings

ALICE = ("users", "alice")
BOB = ("users", "bob")


@pytest.fixture
def store(kw_memory: MarkdownMemory) -> MarkdownBaseStore:
    return kw_memory.as_store()


def ns_file(mem: MarkdownMemory, namespace: tuple[str, ...]) -> Path:
    return mem.memory_dir.joinpath(*namespace, NAMESPACE_FILE)


def hidden_file(mem: MarkdownMemory, namespace: tuple[str, ...]) -> Path:
    return mem.memory_dir.joinpath(*namespace, unindexed_file_name())


def indexed_chunks_with(mem: MarkdownMemory, word: str) -> list[tuple[str, str]]:
    """``(path, text)`` of every chunk in the memory's SQLite index whose text holds ``word``."""
    mem.sync()
    conn = sqlite3.connect(f"file:{mem.index.path}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT path, text FROM chunks WHERE instr(text, ?) > 0", (word,)).fetchall()
    finally:
        conn.close()
    return [(str(path), str(text)) for path, text in rows]


# -- construction -------------------------------------------------------------------


def test_as_store_is_a_langgraph_base_store_over_the_memory(kw_memory: MarkdownMemory) -> None:
    store = kw_memory.as_store()
    assert isinstance(store, BaseStore)
    assert store.memory is kw_memory
    assert store.namespace_path(ALICE) == "users/alice/store.md"


@pytest.mark.parametrize("name", ["store.txt", ".hidden.md", "sub/store.md", "~store.md"])
def test_file_name_must_be_a_visible_markdown_name(kw_memory: MarkdownMemory, name: str) -> None:
    with pytest.raises(ValueError):
        kw_memory.as_store(file_name=name)


def test_custom_file_name_is_used(kw_memory: MarkdownMemory) -> None:
    store = kw_memory.as_store(file_name="memories.md")
    store.put(ALICE, "k", {"content": "v"})
    store.put(BOB, "k", {"content": "v"}, index=False)
    assert (kw_memory.memory_dir / "users/alice/memories.md").is_file()
    assert (kw_memory.memory_dir / "users/bob/.memories.unindexed.md").is_file()
    assert store.unindexed_path(BOB) == "users/bob/.memories.unindexed.md"
    assert store.list_namespaces() == [ALICE, BOB]


# -- get / put / delete -------------------------------------------------------------


def test_get_missing_namespace_or_key_is_none(store: MarkdownBaseStore) -> None:
    assert store.get(ALICE, "nope") is None
    store.put(ALICE, "food", {"content": "hotpot"})
    assert store.get(ALICE, "nope") is None
    assert store.get(BOB, "food") is None


def test_put_writes_a_readable_section_and_get_returns_it(store: MarkdownBaseStore) -> None:
    before = dt.datetime.now(dt.UTC)
    store.put(ALICE, "food", {"content": "Loves Sichuan hotpot", "kind": "preference"})
    text = ns_file(store.memory, ALICE).read_text()
    assert text.startswith("# users / alice\n")
    assert "\n## food\n<!-- md-memory: " in text
    assert "\n\nLoves Sichuan hotpot\n" in text
    item = store.get(ALICE, "food")
    assert item is not None
    assert (item.namespace, item.key) == (ALICE, "food")
    assert item.value == {"content": "Loves Sichuan hotpot", "kind": "preference"}
    assert before <= item.created_at == item.updated_at <= dt.datetime.now(dt.UTC)


def test_overwrite_replaces_value_and_keeps_created_at(store: MarkdownBaseStore) -> None:
    store.put(ALICE, "food", {"content": "hotpot"})
    first = store.get(ALICE, "food")
    store.put(ALICE, "food", {"content": "dumplings", "since": 2026})
    second = store.get(ALICE, "food")
    assert first is not None and second is not None
    assert second.value == {"content": "dumplings", "since": 2026}
    assert second.created_at == first.created_at
    assert second.updated_at > first.updated_at
    assert ns_file(store.memory, ALICE).read_text().count("## food") == 1


def test_delete_removes_the_section_and_only_it(store: MarkdownBaseStore) -> None:
    store.put(ALICE, "a", {"content": "alpha"})
    store.put(ALICE, "b", {"content": "beta"})
    store.delete(ALICE, "a")
    assert store.get(ALICE, "a") is None
    item_b = store.get(ALICE, "b")
    assert item_b is not None and item_b.value == {"content": "beta"}
    assert "alpha" not in ns_file(store.memory, ALICE).read_text()


def test_delete_of_missing_item_creates_no_file(store: MarkdownBaseStore) -> None:
    store.delete(ALICE, "ghost")
    assert not ns_file(store.memory, ALICE).exists()


def test_put_none_via_batch_deletes(store: MarkdownBaseStore) -> None:
    store.put(ALICE, "a", {"content": "alpha"})
    store.batch([PutOp(ALICE, "a", None)])
    assert store.get(ALICE, "a") is None


def test_structured_value_round_trips_through_a_json_block(store: MarkdownBaseStore) -> None:
    value = {"name": "Alice", "age": 30, "tags": ["a", "b"], "address": {"city": "成都"}, "ok": True,
             "x": None}
    store.put(ALICE, "profile", value)
    assert '"city": "成都"' in ns_file(store.memory, ALICE).read_text()
    item = store.get(ALICE, "profile")
    assert item is not None and item.value == value


def test_hand_edit_of_a_section_body_is_returned_by_the_next_get(store: MarkdownBaseStore) -> None:
    store.put(ALICE, "food", {"content": "Loves hotpot", "kind": "preference"})
    path = ns_file(store.memory, ALICE)
    path.write_text(path.read_text().replace("Loves hotpot", "Now prefers dim sum\n\n- no coriander"))
    item = store.get(ALICE, "food")
    assert item is not None
    assert item.value == {"content": "Now prefers dim sum\n\n- no coriander", "kind": "preference"}


def test_hand_written_notes_in_the_file_survive_puts(store: MarkdownBaseStore) -> None:
    store.put(ALICE, "a", {"content": "alpha"})
    path = ns_file(store.memory, ALICE)
    path.write_text(path.read_text().replace("# users / alice\n", "# users / alice\n\nMy own note.\n"))
    store.put(ALICE, "b", {"content": "beta"})
    store.put(ALICE, "a", {"content": "alpha 2"})
    text = path.read_text()
    assert "My own note." in text
    assert text.index("## a") < text.index("## b")


@pytest.mark.parametrize("key", ["two\nlines", "#hash", "", " padded"])
def test_put_with_a_key_that_cannot_be_a_heading_raises_and_get_is_none(
    store: MarkdownBaseStore, key: str
) -> None:
    with pytest.raises(ValueError):
        store.put(ALICE, key, {"content": "x"})
    assert store.get(ALICE, key) is None
    assert not ns_file(store.memory, ALICE).exists()


def test_non_json_value_raises_and_writes_nothing(store: MarkdownBaseStore) -> None:
    store.put(ALICE, "ok", {"content": "fine"})
    before = ns_file(store.memory, ALICE).read_text()
    with pytest.raises(ValueError):
        store.put(ALICE, "bad", {"when": dt.datetime.now()})
    assert ns_file(store.memory, ALICE).read_text() == before


# -- namespaces: validation and the path guard --------------------------------------


@pytest.mark.parametrize(
    "namespace",
    [("a/b",), ("a\\b",), ("..",), (".",), (".hidden",), ("v1.2",), ("",), ("nul\x00",), ("~tmp",), ("#x",),
     (" pad",), ("new\nline",), ("sur\udc80",)],
)
def test_bad_labels_are_refused_on_every_op(store: MarkdownBaseStore, namespace: tuple[str, ...]) -> None:
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp(namespace, "k", {"content": "x"})])
    with pytest.raises(InvalidNamespaceError):
        store.batch([GetOp(namespace, "k")])
    with pytest.raises(InvalidNamespaceError):
        store.batch([SearchOp(namespace)])
    assert [p for p in store.memory.memory_dir.rglob("*") if p.suffix == ".md"] == []


def test_empty_namespace_cannot_hold_items(store: MarkdownBaseStore) -> None:
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp((), "k", {"content": "x"})])
    with pytest.raises(InvalidNamespaceError):
        store.put((), "k", {"content": "x"})


def test_symlinked_namespace_folder_leading_outside_is_refused(
    store: MarkdownBaseStore, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (store.memory.memory_dir / "evil").symlink_to(outside, target_is_directory=True)
    with pytest.raises(MemoryPathError):
        store.put(("evil",), "k", {"content": "x"})
    with pytest.raises(MemoryPathError):
        store.get(("evil",), "k")
    assert list(outside.iterdir()) == []


def test_folders_the_store_did_not_make_are_not_namespaces(store: MarkdownBaseStore) -> None:
    mem = store.memory
    (mem.memory_dir / "v1.2").mkdir()
    (mem.memory_dir / "v1.2" / NAMESPACE_FILE).write_text(store_text_like("k"))
    (mem.memory_dir / NAMESPACE_FILE).write_text(store_text_like("root"))
    mem.append("- a plain memory")
    store.put(ALICE, "k", {"content": "x"})
    assert store.list_namespaces() == [ALICE]
    assert [item.key for item in store.search(())] == ["k"]


def test_a_colon_in_a_label_is_an_ordinary_folder_name(store: MarkdownBaseStore) -> None:
    user = ("u:42",)
    store.put(user, "food", {"content": "Loves Sichuan hotpot"})
    store.put(("C:", "x"), "k", {"content": "a label that looks like a drive"})
    assert store.namespace_path(user) == "u:42/store.md"
    item = store.get(user, "food")
    assert item is not None and item.value == {"content": "Loves Sichuan hotpot"}
    assert [(i.namespace, i.key) for i in store.search(user)] == [(user, "food")]
    assert [(i.namespace, i.key) for i in store.search(user, query="hotpot")] == [(user, "food")]
    assert store.list_namespaces() == [("C:", "x"), user]
    assert [h.path for h in store.memory.search("Sichuan hotpot")] == ["u:42/store.md"]
    store.delete(user, "food")
    assert store.get(user, "food") is None
    assert store.list_namespaces() == [("C:", "x")]


async def test_a_colon_in_a_label_works_async(store: MarkdownBaseStore) -> None:
    await store.aput(("u:42", "prefs"), "tea", {"content": "green tea"})
    item = await store.aget(("u:42", "prefs"), "tea")
    assert item is not None and item.value == {"content": "green tea"}
    assert [i.key for i in await store.asearch(("u:42",))] == ["tea"]
    assert await store.alist_namespaces(prefix=("u:42",)) == [("u:42", "prefs")]


def store_text_like(key: str) -> str:
    stamp = "2026-07-14T00:00:00+00:00"
    return f'## {key}\n<!-- md-memory: {{"created_at": "{stamp}", "updated_at": "{stamp}"}} -->\n\nbody\n'


# -- search without a query ---------------------------------------------------------


def put_people(store: MarkdownBaseStore) -> None:
    store.put(ALICE, "p1", {"content": "likes tea", "age": 30, "city": "Chengdu", "tags": ["a"]})
    store.put(ALICE, "p2", {"content": "likes coffee", "age": 41, "city": "Beijing", "meta": {"v": 1}})
    store.put(BOB, "p3", {"content": "likes water", "age": 25, "city": "Chengdu", "score": "7.5"})
    store.put(("teams", "x"), "p4", {"content": "likes juice", "age": 35})


def test_search_lists_items_under_the_prefix_newest_first(store: MarkdownBaseStore) -> None:
    put_people(store)
    assert [i.key for i in store.search(("users",))] == ["p3", "p2", "p1"]
    assert [i.key for i in store.search(ALICE)] == ["p2", "p1"]
    assert [i.key for i in store.search(())] == ["p4", "p3", "p2", "p1"]
    assert store.search(("nobody",)) == []
    assert all(i.score is None for i in store.search(()))


def test_search_orders_by_updated_at_after_an_overwrite(store: MarkdownBaseStore) -> None:
    put_people(store)
    store.put(ALICE, "p1", {"content": "likes green tea", "age": 31})
    assert [i.key for i in store.search(("users",))] == ["p1", "p3", "p2"]


@pytest.mark.parametrize(
    ("filter_", "keys"),
    [
        ({"city": "Chengdu"}, ["p3", "p1"]),
        ({"city": "Chengdu", "age": 30}, ["p1"]),
        ({"age": {"$eq": 41}}, ["p2"]),
        ({"age": {"$ne": 41}}, ["p4", "p3", "p1"]),
        ({"age": {"$gt": 30}}, ["p4", "p2"]),
        ({"age": {"$gte": 30}}, ["p4", "p2", "p1"]),
        ({"age": {"$lt": 30}}, ["p3"]),
        ({"age": {"$lte": 30}}, ["p3", "p1"]),
        ({"age": {"$gt": 26, "$lt": 40}}, ["p4", "p1"]),
        ({"score": {"$gt": 7}}, ["p3"]),  # a numeric string compares as a number
        ({"missing": {"$gt": 0}}, []),
        ({"city": {"$gt": "C"}}, ["p3", "p1"]),  # strings that are not numbers compare as strings
        ({"meta": {"v": 1}}, ["p2"]),
        ({"tags": ["a"]}, ["p1"]),
        ({"content": "likes tea"}, ["p1"]),
        ({"city": "Nowhere"}, []),
    ],
)
def test_search_filters_on_value_fields(
    store: MarkdownBaseStore, filter_: dict[str, object], keys: list[str]
) -> None:
    put_people(store)
    assert [i.key for i in store.search((), filter=filter_)] == keys


def test_unknown_filter_operator_raises(store: MarkdownBaseStore) -> None:
    put_people(store)
    with pytest.raises(ValueError, match=r"\$regex"):
        store.search((), filter={"age": {"$regex": "3"}})


def test_search_pages_with_limit_and_offset(store: MarkdownBaseStore) -> None:
    for n in range(7):
        store.put(ALICE, f"k{n}", {"content": f"item {n}", "n": n})
    newest_first = [f"k{n}" for n in reversed(range(7))]
    assert [i.key for i in store.search(ALICE, limit=3)] == newest_first[:3]
    assert [i.key for i in store.search(ALICE, limit=3, offset=3)] == newest_first[3:6]
    assert [i.key for i in store.search(ALICE, limit=3, offset=6)] == newest_first[6:]
    assert store.search(ALICE, limit=3, offset=7) == []
    assert store.search(ALICE, limit=0) == []
    assert [i.key for i in store.search(ALICE, filter={"n": {"$gte": 2}}, limit=2, offset=1)] == ["k5", "k4"]
    with pytest.raises(ValueError):
        store.search(ALICE, limit=-1)


def test_default_limit_is_ten(store: MarkdownBaseStore) -> None:
    store.batch([PutOp(ALICE, f"k{n}", {"content": str(n)}) for n in range(12)])
    assert len(store.search(ALICE)) == 10


@pytest.mark.parametrize("filter_", ["string", ["kind", "pref"], 42])
def test_a_filter_that_is_not_a_mapping_is_refused(store: MarkdownBaseStore, filter_: object) -> None:
    put_people(store)
    for query in (None, "tea"):
        with pytest.raises(MemoryInputError, match=r"filter must be a dict .* got " + type(filter_).__name__):
            store.search((), query=query, filter=filter_)  # type: ignore[arg-type]


def test_filters_compare_numbers_beyond_a_float_exactly(store: MarkdownBaseStore) -> None:
    put_people(store)
    store.put(("teams", "x"), "big", {"content": "a number no float holds", "age": 10**400})
    assert store.search((), filter={"age": {"$gt": 10**400}}) == []
    assert [i.key for i in store.search((), filter={"age": {"$gte": 10**400}})] == ["big"]
    assert [i.key for i in store.search((), filter={"age": {"$lt": -(10**400)}})] == []
    assert [i.key for i in store.search((), filter={"age": {"$gt": 40, "$lt": 10**400}})] == ["p2"]
    assert [i.key for i in store.search(("teams",), filter={"age": {"$gt": 10**300}})] == ["big"]


@pytest.mark.parametrize("query", [123, b"tea"])
def test_a_query_that_is_not_a_string_is_refused(store: MarkdownBaseStore, query: object) -> None:
    put_people(store)
    with pytest.raises(MemoryInputError, match="query must be a string .* got " + type(query).__name__):
        store.search((), query=query)  # type: ignore[arg-type]


@pytest.mark.parametrize(("arguments", "named"), [
    ({"limit": 1.5}, "limit=1.5"), ({"limit": "3"}, "limit='3'"), ({"limit": True}, "limit=True"),
    ({"offset": 0.5}, "offset=0.5"),
])
def test_a_page_that_is_not_a_whole_number_is_refused(store: MarkdownBaseStore, arguments: dict[str, object],
                                                      named: str) -> None:
    put_people(store)
    for call in (lambda: store.search((), **arguments), lambda: store.search((), query="tea", **arguments),
                 lambda: store.list_namespaces(**arguments)):
        with pytest.raises(MemoryInputError, match=re.escape(named) + ".*a whole number, 0 or more"):
            call()


@pytest.mark.parametrize("depth", [1.5, "1"])
def test_a_max_depth_that_is_not_a_whole_number_is_refused(store: MarkdownBaseStore, depth: object) -> None:
    put_people(store)
    with pytest.raises(MemoryInputError, match=re.escape(f"max_depth={depth!r}") + ".*a whole number"):
        store.list_namespaces(max_depth=depth)  # type: ignore[arg-type]


async def test_bad_search_arguments_are_refused_async_and_spare_the_calls_beside_them(
    store: MarkdownBaseStore,
) -> None:
    await store.aput(ALICE, "k", {"content": "tea", "n": 3})
    good, bad_filter, bad_limit, bad_depth = await asyncio.gather(
        store.asearch(ALICE), store.asearch(ALICE, filter="string"),  # type: ignore[arg-type]
        store.asearch(ALICE, limit=1.5), store.alist_namespaces(max_depth=1.5),  # type: ignore[arg-type]
        return_exceptions=True)
    assert [i.key for i in good] == ["k"]  # type: ignore[union-attr]
    assert isinstance(bad_filter, MemoryInputError) and "filter must be a dict" in str(bad_filter)
    assert isinstance(bad_limit, MemoryInputError) and "limit=1.5" in str(bad_limit)
    assert isinstance(bad_depth, MemoryInputError) and "max_depth=1.5" in str(bad_depth)
    assert [i.key for i in await store.asearch(ALICE, filter={"n": {"$lt": 10**400}})] == ["k"]


# -- search with a query ------------------------------------------------------------


def test_query_is_ranked_by_the_hybrid_pipeline_with_scores(store: MarkdownBaseStore) -> None:
    put_people(store)
    store.put(ALICE, "p5", {"content": "Drinks oolong tea every morning, tea tea"})
    hits = store.search(("users",), query="tea")
    scored = [h for h in hits if h.score is not None]
    assert {h.key for h in scored} == {"p1", "p5"} and {h.namespace for h in scored} == {ALICE}
    scores = [h.score for h in scored]
    assert all(s is not None and 0 < s <= 1 for s in scores)
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    # As in LangGraph's stores the query ranks and never cuts: the items it did not match follow,
    # newest first, unscored (this memory has no vectors to score them with).
    assert hits[:2] == scored
    assert [(h.key, h.score) for h in hits[2:]] == [("p3", None), ("p2", None)]
    ranked = store.memory.search("tea")
    assert max(scores) == pytest.approx(max(r.score for r in ranked))  # type: ignore[type-var]


def test_query_returns_every_item_passing_the_filter_however_weak_its_match(
    store: MarkdownBaseStore,
) -> None:
    store.memory.config = store.memory.config.merged(ranking={"min_score": 0.9})
    store.put(ALICE, "tea", {"content": "tea tea tea, oolong tea", "kind": "drink"})
    store.put(ALICE, "weak", {"content": "once had a cup of tea in 2019 with a lot of other words around it",
                              "kind": "drink"})
    store.put(ALICE, "food", {"content": "hotpot", "kind": "food"})
    hits = store.search(ALICE, query="tea", filter={"kind": "drink"})
    assert [h.key for h in hits] == ["tea", "weak"]
    assert hits[0].score is not None and hits[1].score is not None
    assert hits[0].score > hits[1].score
    assert hits[1].score < 0.9  # under the memory's min_score: the store's query does not cut
    assert [h.key for h in store.search(ALICE, query="tea", filter={"kind": "drink"}, limit=1)] == ["tea"]


def test_query_respects_prefix_filter_limit_and_offset(store: MarkdownBaseStore) -> None:
    put_people(store)
    assert {h.key for h in store.search(("users",), query="likes")} == {"p1", "p2", "p3"}
    assert [h.key for h in store.search(BOB, query="likes")] == ["p3"]
    assert {h.key for h in store.search((), query="likes", filter={"city": "Chengdu"})} == {"p1", "p3"}
    everything = store.search((), query="likes", limit=10)
    assert len(everything) == 4
    page = store.search((), query="likes", limit=2, offset=1)
    assert [h.key for h in page] == [h.key for h in everything[1:3]]


def test_query_ranks_index_false_items_last_and_never_scores_them(store: MarkdownBaseStore) -> None:
    store.put(ALICE, "secret", {"content": "password hint: tea"}, index=False)
    store.put(ALICE, "public", {"content": "favourite drink: tea"})
    # as in LangGraph's InMemoryStore: an unindexed item matches no query, yet the namespace holds it
    hits = store.search(ALICE, query="tea")
    assert [(h.key, h.score is None) for h in hits] == [("public", False), ("secret", True)]
    assert store.memory.search("password hint") == []
    # still readable and listed without a query
    assert {i.key for i in store.search(ALICE)} == {"secret", "public"}
    assert store.get(ALICE, "secret") is not None
    store.put(ALICE, "secret", {"content": "password hint: tea"})  # re-put with the default index
    assert {h.key for h in store.search(ALICE, query="tea")} == {"secret", "public"}


# -- index=False: the hidden unindexed file ---------------------------------------------


def test_index_false_item_lives_in_the_hidden_file_out_of_the_memory_index(store: MarkdownBaseStore) -> None:
    mem = store.memory
    store.put(ALICE, "public", {"content": "favourite drink: oolong"})
    store.put(ALICE, "secret", {"content": "password hint zanzibarquux", "kind": "hint"}, index=False)
    hidden = hidden_file(mem, ALICE)
    assert store.unindexed_path(ALICE) == "users/alice/.store.unindexed.md"
    text = hidden.read_text()
    assert text.startswith("# users / alice (not indexed)\n")
    assert "\n## secret\n<!-- md-memory: " in text and "\n\npassword hint zanzibarquux\n" in text
    assert "zanzibarquux" not in ns_file(mem, ALICE).read_text()
    # Nothing of it reaches the memory: not the file list, not a chunk, not a search hit, not the tool.
    assert mem.store.list_files() == ["users/alice/store.md"]
    assert indexed_chunks_with(mem, "zanzibarquux") == []
    assert [path for path, _ in indexed_chunks_with(mem, "oolong")] == ["users/alice/store.md"]
    assert "users/alice/.store.unindexed.md" not in mem.index.file_states()
    assert mem.search("zanzibarquux") == []
    memory_search = create_memory_tools(mem)[0]
    assert str(memory_search.invoke({"query": "zanzibarquux"})).startswith("No memory matched")
    # The store itself still reads it everywhere but in a query.
    item = store.get(ALICE, "secret")
    assert item is not None and item.value == {"content": "password hint zanzibarquux", "kind": "hint"}
    assert [i.key for i in store.search(ALICE)] == ["secret", "public"]
    assert [i.key for i in store.search(("users",), filter={"kind": "hint"})] == ["secret"]
    # A query never scores it (it comes last, as in InMemoryStore); nor the indexed item its words miss.
    assert {(h.key, h.score) for h in store.search(ALICE, query="zanzibarquux")} == {
        ("public", None), ("secret", None)}
    oolong = store.search(ALICE, query="oolong")
    assert [(h.key, h.score is None) for h in oolong] == [("public", False), ("secret", True)]


def test_flipping_index_moves_the_item_and_keeps_created_at(store: MarkdownBaseStore) -> None:
    mem = store.memory
    store.put(ALICE, "note", {"content": "quokkafish migration"}, index=False)
    created = store.get(ALICE, "note")
    assert created is not None and mem.search("quokkafish") == []
    store.put(ALICE, "note", {"content": "quokkafish migration", "v": 2})
    assert not hidden_file(mem, ALICE).exists()  # its last item left
    assert [r.path for r in mem.search("quokkafish")] == ["users/alice/store.md"]
    assert [path for path, _ in indexed_chunks_with(mem, "quokkafish")] == ["users/alice/store.md"]
    assert [h.key for h in store.search(ALICE, query="quokkafish")] == ["note"]
    moved = store.get(ALICE, "note")
    assert moved is not None and moved.value == {"content": "quokkafish migration", "v": 2}
    assert moved.created_at == created.created_at and moved.updated_at > created.updated_at
    store.put(ALICE, "note", {"content": "quokkafish migration", "v": 3}, index=False)
    assert mem.search("quokkafish") == [] and indexed_chunks_with(mem, "quokkafish") == []
    assert "quokkafish" not in ns_file(mem, ALICE).read_text()
    assert hidden_file(mem, ALICE).read_text().count("## note") == 1
    back = store.get(ALICE, "note")
    assert back is not None and back.value["v"] == 3 and back.created_at == created.created_at


def test_overwrite_and_delete_of_an_unindexed_item(store: MarkdownBaseStore) -> None:
    mem = store.memory
    store.put(ALICE, "a", {"content": "one"}, index=False)
    store.put(ALICE, "b", {"content": "two"}, index=False)
    first = store.get(ALICE, "a")
    store.put(ALICE, "a", {"content": "uno"}, index=False)
    second = store.get(ALICE, "a")
    assert first is not None and second is not None
    assert second.value == {"content": "uno"} and second.created_at == first.created_at
    assert hidden_file(mem, ALICE).read_text().count("## a") == 1
    assert not ns_file(mem, ALICE).exists()  # unindexed puts never create the indexed file
    store.delete(ALICE, "a")
    assert store.get(ALICE, "a") is None
    assert "uno" not in hidden_file(mem, ALICE).read_text()
    store.delete(ALICE, "b")
    assert not hidden_file(mem, ALICE).exists()
    assert store.list_namespaces() == []


def test_hidden_file_with_notes_of_its_own_is_kept_when_emptied(store: MarkdownBaseStore) -> None:
    store.put(ALICE, "a", {"content": "one"}, index=False)
    path = hidden_file(store.memory, ALICE)
    path.write_text(path.read_text().replace("(not indexed)\n", "(not indexed)\n\nMy own note.\n"))
    store.delete(ALICE, "a")
    assert path.read_text().startswith("# users / alice (not indexed)\n\nMy own note.\n")
    assert store.list_namespaces() == []


def test_hand_edit_of_the_hidden_file_is_returned_by_the_next_get(store: MarkdownBaseStore) -> None:
    store.put(ALICE, "food", {"content": "Loves hotpot"}, index=False)
    path = hidden_file(store.memory, ALICE)
    path.write_text(path.read_text().replace("Loves hotpot", "Allergic to peanuts"))
    item = store.get(ALICE, "food")
    assert item is not None and item.value == {"content": "Allergic to peanuts"}
    assert store.memory.search("peanuts") == []


def test_namespaces_with_only_unindexed_items_are_listed_and_searched(store: MarkdownBaseStore) -> None:
    mem = store.memory
    store.put(ALICE, "a", {"content": "x"})
    store.put(BOB, "b", {"content": "y"}, index=False)
    store.put(("teams", "x", "deep"), "c", {"content": "z"}, index=False)
    (mem.memory_dir / "v1.2").mkdir()
    (mem.memory_dir / "v1.2" / unindexed_file_name()).write_text(store_text_like("k"))
    (mem.memory_dir / unindexed_file_name()).write_text(store_text_like("root"))
    assert store.list_namespaces() == [("teams", "x", "deep"), ALICE, BOB]
    assert store.list_namespaces(max_depth=1) == [("teams",), ("users",)]
    assert [i.key for i in store.search(())] == ["c", "b", "a"]
    assert [(i.namespace, i.key) for i in store.search(("teams",))] == [(("teams", "x", "deep"), "c")]
    assert store.search(("teams", "y")) == []


def test_search_under_a_symlinked_prefix_finds_nothing(store: MarkdownBaseStore, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "alice").mkdir(parents=True)
    (outside / "alice" / unindexed_file_name()).write_text(store_text_like("k"))
    (store.memory.memory_dir / "evil").symlink_to(outside, target_is_directory=True)
    assert store.search(("evil",)) == []
    assert store.list_namespaces() == []


def failing_writes_to(monkeypatch: pytest.MonkeyPatch, name: str) -> list[str]:
    """Make every MarkdownStore write to a file called ``name`` fail like a crash; returns the log."""
    attempts: list[str] = []
    real_update, real_remove = MarkdownStore.update, MarkdownStore.remove

    def update(self: MarkdownStore, path: str, fn: Callable[[str | None], str | None]) -> bool:
        attempts.append(path)
        if path.endswith("/" + name):
            raise MemoryStoreError(f"simulated crash writing {path}")
        return real_update(self, path, fn)

    def remove(self: MarkdownStore, path: str) -> bool:
        attempts.append(path)
        if path.endswith("/" + name):
            raise MemoryStoreError(f"simulated crash removing {path}")
        return real_remove(self, path)

    monkeypatch.setattr(MarkdownStore, "update", update)
    monkeypatch.setattr(MarkdownStore, "remove", remove)
    return attempts


def test_a_move_into_the_index_cut_short_reads_as_done(store: MarkdownBaseStore,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    mem = store.memory
    store.put(ALICE, "k", {"content": "old hidden text"}, index=False)
    attempts = failing_writes_to(monkeypatch, unindexed_file_name())
    with pytest.raises(MemoryStoreError):
        store.put(ALICE, "k", {"content": "new visible wombatqux"})
    assert attempts == ["users/alice/store.md", "users/alice/.store.unindexed.md"]  # new copy first
    monkeypatch.undo()
    assert "old hidden text" in hidden_file(mem, ALICE).read_text()  # the in-between state: both files
    item = store.get(ALICE, "k")
    assert item is not None and item.value == {"content": "new visible wombatqux"}
    assert [(i.key, i.value["content"]) for i in store.search(ALICE)] == [("k", "new visible wombatqux")]
    assert [h.key for h in store.search(ALICE, query="wombatqux")] == ["k"]
    assert store.list_namespaces() == [ALICE]
    store.put(ALICE, "k", {"content": "again"})  # the next put leaves one copy
    assert not hidden_file(mem, ALICE).exists()
    assert ns_file(mem, ALICE).read_text().count("\n## k\n") == 1


def test_a_move_out_of_the_index_cut_short_reads_as_not_begun(store: MarkdownBaseStore,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    mem = store.memory
    store.put(ALICE, "k", {"content": "old visible text"})
    attempts = failing_writes_to(monkeypatch, NAMESPACE_FILE)
    with pytest.raises(MemoryStoreError):
        store.put(ALICE, "k", {"content": "new hidden text"}, index=False)
    assert attempts == ["users/alice/.store.unindexed.md", "users/alice/store.md"]  # new copy first
    monkeypatch.undo()
    assert "new hidden text" in hidden_file(mem, ALICE).read_text()  # the in-between state: both files
    item = store.get(ALICE, "k")
    assert item is not None and item.value == {"content": "old visible text"}
    assert [i.value["content"] for i in store.search(ALICE)] == ["old visible text"]
    store.delete(ALICE, "k")  # a delete clears both copies
    assert store.get(ALICE, "k") is None
    assert not hidden_file(mem, ALICE).exists() and "\n## k\n" not in ns_file(mem, ALICE).read_text()


def test_a_delete_cut_short_of_a_key_in_both_files_still_reads_as_before(
    store: MarkdownBaseStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.put(ALICE, "k", {"content": "visible"})
    store.put(ALICE, "other", {"content": "h"}, index=False)
    hidden = hidden_file(store.memory, ALICE)
    hidden.write_text(hidden.read_text() + "\n" + store_text_like("k"))  # as a crashed move leaves it
    failing_writes_to(monkeypatch, NAMESPACE_FILE)
    with pytest.raises(MemoryStoreError):
        store.delete(ALICE, "k")
    monkeypatch.undo()
    assert "\n## k\n" not in hidden.read_text()  # the hidden copy went first
    item = store.get(ALICE, "k")
    assert item is not None and item.value == {"content": "visible"}


def test_a_batch_moving_keys_both_ways_writes_visible_hidden_visible(
    store: MarkdownBaseStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.put(ALICE, "up", {"content": "u"}, index=False)
    store.put(ALICE, "keep", {"content": "h"}, index=False)
    store.put(ALICE, "down", {"content": "d"})
    attempts = failing_writes_to(monkeypatch, "no-such-file.md")
    store.batch([PutOp(ALICE, "up", {"content": "u2"}), PutOp(ALICE, "down", {"content": "d2"}, index=False)])
    assert attempts == ["users/alice/store.md", "users/alice/.store.unindexed.md", "users/alice/store.md"]
    u2 = store.search(ALICE, query="u2")
    assert u2[0].key == "up" and u2[0].score is not None
    assert {(h.key, h.score) for h in u2[1:]} == {("down", None), ("keep", None)}  # now hidden, unscored
    assert all(h.score is None for h in store.search(ALICE, query="d2"))  # "down" is hidden
    assert {i.key: i.value["content"] for i in store.search(ALICE)} == {"up": "u2", "down": "d2", "keep": "h"}


def test_concurrent_index_flips_leave_each_key_once_in_its_last_file(memory_dir: Path) -> None:
    mems = [MarkdownMemory(memory_dir, embeddings="none") for _ in range(2)]
    stores = [mem.as_store() for mem in mems]
    errors: list[BaseException] = []

    def flipper(worker: int) -> None:
        try:
            for n in range(8):
                for index in (False, None, False):  # None: the default, indexed
                    stores[worker % 2].put(ALICE, f"w{worker}-{n}", {"content": f"{worker}/{n}"}, index=index)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=flipper, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    keys = {f"w{w}-{n}" for w in range(4) for n in range(8)}
    hidden_text = hidden_file(mems[0], ALICE).read_text()
    assert all(hidden_text.count(f"## {key}\n") == 1 for key in keys)
    assert "\n## w" not in ns_file(mems[0], ALICE).read_text()
    assert {i.key for i in stores[0].search(ALICE, limit=100)} == keys
    for mem in mems:
        mem.close()


def test_query_sees_a_hand_edit_after_the_automatic_sync(store: MarkdownBaseStore) -> None:
    store.put(ALICE, "food", {"content": "Loves hotpot"})
    [before] = store.search(ALICE, query="hotpot")
    assert before.key == "food" and before.score is not None
    path = ns_file(store.memory, ALICE)
    path.write_text(path.read_text().replace("Loves hotpot", "Loves dumplings and noodles"))
    assert [(h.key, h.score) for h in store.search(ALICE, query="hotpot")] == [("food", None)]
    [after] = store.search(ALICE, query="dumplings")
    assert after.key == "food" and after.score is not None


def test_query_finds_store_items_among_many_other_memory_files(store: MarkdownBaseStore) -> None:
    mem = store.memory
    for n in range(40):
        mem.write(f"notes/n{n}.md", f"# Note {n}\n\nteapot tea tea tea tea record {n}\n")
    store.put(ALICE, "mine", {"content": "tea"})
    hits = store.search(ALICE, query="tea", limit=1)
    assert [h.key for h in hits] == ["mine"]


def test_query_maps_each_hit_to_the_section_it_covers(store: MarkdownBaseStore) -> None:
    store.put(ALICE, "a", {"content": "alpha apples"})
    store.put(ALICE, "b", {"content": "beta bananas"})
    store.put(ALICE, "c", {"content": "gamma cherries"})
    for query, key in (("bananas", "b"), ("cherries", "c"), ("apples", "a")):
        hits = store.search(ALICE, query=query)
        assert [h.key for h in hits if h.score is not None] == [key]
        assert hits[0].key == key


def test_query_with_vector_embeddings_scores_items(memory_dir: Path) -> None:
    # Vectors that mean something (word counts over a small vocabulary), so the ranking is stable.
    embeddings = AxisEmbeddings(["sichuan", "hotpot", "nurse", "works"])
    with MarkdownMemory(memory_dir, embeddings=embeddings) as mem:
        store = mem.as_store()
        store.put(ALICE, "food", {"content": "Loves Sichuan hotpot"})
        store.put(ALICE, "job", {"content": "Works as a nurse"})
        hits = store.search(ALICE, query="Loves Sichuan hotpot")
        assert hits[0].key == "food"
        assert hits[0].score is not None and hits[0].score > 0
        assert mem.search_detailed("Loves Sichuan hotpot").funnel["vector"] > 0


# -- list_namespaces ----------------------------------------------------------------


def put_tree(store: MarkdownBaseStore) -> None:
    for namespace in [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f"),
                      ("a", "c", "f"), ("x",)]:
        store.put(namespace, "k", {"content": "/".join(namespace)})


def test_list_namespaces_all_sorted(store: MarkdownBaseStore) -> None:
    put_tree(store)
    assert store.list_namespaces() == [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"),
                                       ("a", "b", "f"), ("a", "c", "f"), ("x",)]


def test_list_namespaces_prefix_and_max_depth_truncates(store: MarkdownBaseStore) -> None:
    put_tree(store)
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [("a", "b", "c"), ("a", "b", "d"),
                                                                     ("a", "b", "f")]
    assert store.list_namespaces(max_depth=1) == [("a",), ("x",)]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]


def test_list_namespaces_suffix_with_wildcards(store: MarkdownBaseStore) -> None:
    put_tree(store)
    assert store.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(suffix=("d", "*")) == [("a", "b", "d", "e"), ("a", "b", "d", "i")]
    assert store.list_namespaces(prefix=("a", "b"), suffix=("i",)) == [("a", "b", "d", "i")]
    assert store.list_namespaces(suffix=("a", "b", "c", "d", "e")) == []


def test_list_namespaces_limit_and_offset(store: MarkdownBaseStore) -> None:
    put_tree(store)
    everything = store.list_namespaces()
    assert store.list_namespaces(limit=2) == everything[:2]
    assert store.list_namespaces(limit=2, offset=2) == everything[2:4]
    assert store.list_namespaces(offset=10) == []
    (result,) = store.batch([ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("a",)),),
                                              max_depth=2, limit=1, offset=1)])
    assert result == [("a", "c")]


def test_namespace_whose_items_are_all_deleted_is_not_listed(store: MarkdownBaseStore) -> None:
    store.put(ALICE, "k", {"content": "x"})
    store.put(BOB, "k", {"content": "y"})
    store.delete(ALICE, "k")
    assert store.list_namespaces() == [BOB]
    assert ns_file(store.memory, ALICE).read_text().startswith("# users / alice")  # notes stay


# -- batch semantics ----------------------------------------------------------------


def test_batch_results_line_up_with_ops_and_see_earlier_puts(store: MarkdownBaseStore) -> None:
    results = store.batch([
        PutOp(ALICE, "a", {"content": "alpha"}),
        PutOp(BOB, "b", {"content": "beta"}),
        PutOp(ALICE, "a2", {"content": "alpha two"}),
        GetOp(ALICE, "a"),
        SearchOp(("users",)),
        ListNamespacesOp(),
        PutOp(ALICE, "a", None),
        GetOp(ALICE, "a"),
    ])
    assert results[0] is None and results[1] is None and results[2] is None and results[6] is None
    assert results[3] is not None and results[3].value == {"content": "alpha"}  # type: ignore[union-attr]
    assert {i.key for i in results[4]} == {"a", "a2", "b"}  # type: ignore[union-attr]
    assert results[5] == [ALICE, BOB]
    assert results[7] is None


def test_puts_in_one_batch_rewrite_each_namespace_file_once(store: MarkdownBaseStore,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    writes: list[str] = []
    real_update = MarkdownStore.update

    def counting(self: MarkdownStore, path: str, fn):  # type: ignore[no-untyped-def]
        writes.append(path)
        return real_update(self, path, fn)

    monkeypatch.setattr(MarkdownStore, "update", counting)
    ops = [PutOp(ALICE, f"k{n}", {"content": str(n)}) for n in range(5)]
    store.batch([*ops, PutOp(BOB, "k", {"content": "b"})])
    assert sorted(writes) == ["users/alice/store.md", "users/bob/store.md"]
    assert len(store.search(ALICE)) == 5


# -- concurrency ----------------------------------------------------------------------


def test_concurrent_puts_to_one_namespace_lose_nothing(memory_dir: Path) -> None:
    mems = [MarkdownMemory(memory_dir, embeddings="none") for _ in range(2)]  # two "processes"
    stores = [mem.as_store() for mem in mems]
    errors: list[BaseException] = []

    def writer(worker: int) -> None:
        try:
            for n in range(15):
                stores[worker % 2].put(ALICE, f"w{worker}-{n}", {"content": f"from {worker}: {n}"})
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    keys = {i.key for i in stores[0].search(ALICE, limit=100)}
    assert keys == {f"w{w}-{n}" for w in range(4) for n in range(15)}
    for mem in mems:
        mem.close()


# -- MarkdownStore.update (the locked read-modify-write the store builds on) --------------


def test_store_update_passes_none_for_a_missing_file_and_writes_the_result(tmp_path: Path) -> None:
    md = MarkdownStore(tmp_path / "m")
    seen: list[str | None] = []
    assert md.update("a/b.md", lambda old: seen.append(old) or "one\n")
    assert md.update("a/b.md", lambda old: seen.append(old) or (old or "") + "two\r\n")
    assert seen == [None, "one\n"]
    assert md.read("a/b.md") == "one\ntwo\n"


def test_store_update_returning_none_or_the_same_text_writes_nothing(tmp_path: Path) -> None:
    md = MarkdownStore(tmp_path / "m")
    assert md.update("x.md", lambda old: None) is False
    assert not (tmp_path / "m" / "x.md").exists()
    md.write("x.md", "same\n")
    before = (tmp_path / "m" / "x.md").stat().st_mtime_ns
    assert md.update("x.md", lambda old: old) is False
    assert (tmp_path / "m" / "x.md").stat().st_mtime_ns == before


def test_store_update_keeps_crlf_files_crlf_and_guards_the_path(tmp_path: Path) -> None:
    md = MarkdownStore(tmp_path / "m")
    (tmp_path / "m" / "c.md").write_bytes(b"a\r\nb\r\n")
    assert md.update("c.md", lambda old: (old or "").replace("b", "B"))
    assert (tmp_path / "m" / "c.md").read_bytes() == b"a\r\nB\r\n"
    with pytest.raises(MemoryPathError):
        md.update("../escape.md", lambda old: "x")


def test_store_update_holds_the_lock_for_the_whole_cycle(tmp_path: Path) -> None:
    md = MarkdownStore(tmp_path / "m")
    md.write("n.md", "0")

    def bump(_: int) -> None:
        for _ in range(20):
            md.update("n.md", lambda old: str(int(old or "0") + 1))

    threads = [threading.Thread(target=bump, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert md.read("n.md") == "80"


# -- expiries written by hand ---------------------------------------------------------


def hand_write_expiry(store: MarkdownBaseStore, namespace: tuple[str, ...], key: str, comment: str) -> None:
    """Put ``comment`` after ``key``'s md-memory line, as a person editing the file would."""

    def edit(old: str | None) -> str:
        assert old is not None
        lines = old.split("\n")
        meta = lines.index(f"## {key}") + 1
        lines[meta] = f"{lines[meta]} {comment}"
        return "\n".join(lines)

    store.memory.update(store.namespace_path(namespace), edit)


FOREVER = "<!-- expires: 9999-12-31 -->"


def test_an_expiry_on_the_last_representable_day_never_expires_and_breaks_nothing(
    store: MarkdownBaseStore,
) -> None:
    store.put(ALICE, "forever", {"content": "kept for good"})
    store.put(ALICE, "ttl", {"content": "refreshed by reads"}, ttl=60)
    hand_write_expiry(store, ALICE, "forever", FOREVER)
    for ttl in (None, TTLConfig(refresh_on_read=True, omit_expired=True)):
        view = store.memory.as_store(ttl=ttl)
        item = view.get(ALICE, "forever")
        assert item is not None and item.value == {"content": "kept for good"}
        assert [i.key for i in view.search(ALICE)] == ["ttl", "forever"]
        assert {i.key for i in view.search(ALICE, query="kept for good")} == {"forever", "ttl"}
        assert view.list_namespaces() == [ALICE]
        assert view.sweep_ttl() == 0
    store.put(ALICE, "other", {"content": "written beside it"})
    store.put(BOB, "k", {"content": "another namespace"})
    assert store.get(ALICE, "ttl", refresh_ttl=True) is not None
    assert store.memory.get(store.namespace_path(ALICE)).count(FOREVER) == 1  # kept as written
    assert store.memory.as_store(ttl=TTLConfig(omit_expired=True)).get(ALICE, "forever") is not None


async def test_an_expiry_on_the_last_representable_day_breaks_no_async_call(store: MarkdownBaseStore) -> None:
    await store.aput(ALICE, "forever", {"content": "kept for good"})
    hand_write_expiry(store, ALICE, "forever", FOREVER)
    item = await store.aget(ALICE, "forever")
    assert item is not None and item.value == {"content": "kept for good"}
    await store.aput(ALICE, "other", {"content": "written beside it"})
    assert [i.key for i in await store.asearch(ALICE)] == ["other", "forever"]
    assert await store.alist_namespaces() == [ALICE]
    assert await store.asweep_ttl() == 0


# -- async ----------------------------------------------------------------------------


async def test_async_ops_mirror_the_sync_ones(store: MarkdownBaseStore) -> None:
    await store.aput(ALICE, "food", {"content": "hotpot", "kind": "pref"})
    await store.aput(BOB, "food", {"content": "salad"}, index=False)
    item = await store.aget(ALICE, "food")
    assert item is not None and item.value == {"content": "hotpot", "kind": "pref"}
    assert await store.aget(ALICE, "missing") is None
    assert [i.key for i in await store.asearch(("users",), filter={"kind": "pref"})] == ["food"]
    assert [i.namespace for i in await store.asearch(("users",))] == [BOB, ALICE]
    hits = await store.asearch(("users",), query="hotpot")
    assert [(h.namespace, h.key) for h in hits] == [(ALICE, "food"), (BOB, "food")]
    assert hits[0].score is not None and hits[1].score is None  # Bob's salad is index=False
    salad = await store.asearch(("users",), query="salad")
    assert {(h.namespace, h.key, h.score) for h in salad} == {(ALICE, "food", None), (BOB, "food", None)}
    assert await store.memory.asearch("salad") == []
    assert await store.alist_namespaces(prefix=("users",)) == [ALICE, BOB]
    assert await store.alist_namespaces(max_depth=1) == [("users",)]
    await store.adelete(ALICE, "food")
    assert await store.aget(ALICE, "food") is None
    assert await store.alist_namespaces() == [BOB]


async def test_abatch_runs_ops_in_order(store: MarkdownBaseStore) -> None:
    results = await store.abatch(
        [PutOp(ALICE, "k", {"content": "v"}), GetOp(ALICE, "k"), SearchOp(ALICE, limit=1)]
    )
    assert results[0] is None
    assert results[1] is not None and results[1].value == {"content": "v"}  # type: ignore[union-attr]
    assert [i.key for i in results[2]] == ["k"]  # type: ignore[union-attr]


async def test_async_bad_input_raises_the_same_errors(store: MarkdownBaseStore) -> None:
    with pytest.raises(InvalidNamespaceError):
        await store.abatch([PutOp(("a/b",), "k", {"content": "x"})])
    with pytest.raises(ValueError):
        await store.aput(ALICE, "bad\nkey", {"content": "x"})


async def test_concurrent_async_puts_lose_nothing(store: MarkdownBaseStore) -> None:
    await asyncio.gather(*(store.aput(ALICE, f"k{n}", {"content": f"v{n}"}) for n in range(12)))
    assert {i.key for i in await store.asearch(ALICE, limit=50)} == {f"k{n}" for n in range(12)}
