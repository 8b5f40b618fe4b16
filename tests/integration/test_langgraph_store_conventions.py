"""The conventions LangGraph users rely on, as ``InMemoryStore`` and ``PostgresStore`` keep them.

Concurrent async calls run as one deduplicated batch; ``index_config`` names what embeds the items;
a query ranks and scores as the memory's own search (hybrid), or by the cosine similarity over the
``fields`` a store or a put chose (the memory's own score stays on ``hybrid_score``).
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import GetOp, Op, PutOp, Result, SearchOp

from langchain_md_memory import MarkdownMemory
from langchain_md_memory.errors import MemoryInputError
from langchain_md_memory.integrations.basestore import MarkdownBaseStore
from langchain_md_memory.integrations.basestore.items import MemorySearchItem
from tests.support.character_embeddings import CharacterEmbeddings

NS = ("users", "alice")


class CountingEmbeddings(CharacterEmbeddings):
    """LangGraph's character embedding, counting the texts it is asked to embed."""

    def __init__(self, dims: int = 64) -> None:
        super().__init__(dims=dims)
        self.documents: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.documents += texts
        return super().embed_documents(texts)


@pytest.fixture
def embeddings() -> CountingEmbeddings:
    return CountingEmbeddings()


@pytest.fixture
def mem(tmp_path: Path, embeddings: CountingEmbeddings) -> Iterator[MarkdownMemory]:
    with MarkdownMemory(tmp_path / "memory", embeddings=embeddings) as memory:
        yield memory


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / (math.hypot(*a) * math.hypot(*b))


@pytest.fixture
def store(mem: MarkdownMemory) -> MarkdownBaseStore:
    return MarkdownBaseStore(mem)


class SpiedStore(MarkdownBaseStore):
    """A store recording each ``batch`` call (the store has slots, so the spy is a subclass)."""

    def __init__(self, memory: MarkdownMemory) -> None:
        super().__init__(memory)
        self.calls: list[list[Op]] = []

    def batch(self, ops: Any) -> list[Result]:
        ops = list(ops)
        self.calls.append(ops)
        return super().batch(ops)


# -- concurrent async calls -------------------------------------------------------------------


async def test_concurrent_gets_run_as_one_batch_and_identical_ones_once(mem: MarkdownMemory) -> None:
    store = SpiedStore(mem)
    await asyncio.gather(store.aput(NS, "a", {"content": "A"}), store.aput(NS, "b", {"content": "B"}))
    store.calls.clear()

    first, again, other = await asyncio.gather(store.aget(NS, "a"), store.aget(NS, "a"), store.aget(NS, "b"))

    assert len(store.calls) == 1
    assert sorted(op.key for op in store.calls[0] if isinstance(op, GetOp)) == ["a", "b"]
    assert first == again and first is not None and first.value == {"content": "A"}
    assert other is not None and other.value == {"content": "B"}


async def test_concurrent_puts_to_one_key_write_once_and_the_last_wins(mem: MarkdownMemory) -> None:
    store = SpiedStore(mem)
    results = await asyncio.gather(store.aput(NS, "k", {"content": "one"}),
                                   store.aput(NS, "k", {"content": "two"}))

    assert results == [None, None]
    assert store.calls == [[PutOp(NS, "k", {"content": "two"})]]
    item = await store.aget(NS, "k")
    assert item is not None and item.value == {"content": "two"}
    assert (mem.memory_dir / "users/alice/store.md").read_text(encoding="utf-8").count("\n## k\n") == 1


async def test_identical_concurrent_searches_run_once_and_share_the_answer(mem: MarkdownMemory) -> None:
    store = SpiedStore(mem)
    await store.aput(NS, "k", {"content": "tea", "n": 2})
    store.calls.clear()

    one, two = await asyncio.gather(store.asearch(("users",), filter={"n": 2}),
                                    store.asearch(("users",), filter={"n": 2}))

    assert len(store.calls) == 1 and len(store.calls[0]) == 1 and isinstance(store.calls[0][0], SearchOp)
    assert one == two and [item.key for item in one] == ["k"]


async def test_a_failing_op_fails_only_its_own_caller(store: MarkdownBaseStore) -> None:
    good, bad = await asyncio.gather(store.aput(NS, "fine", {"content": "ok"}),
                                     store.aput(NS, "bad\nkey", {"content": "no"}), return_exceptions=True)

    assert good is None
    assert isinstance(bad, ValueError) and "control character" in str(bad)
    assert await store.aget(NS, "fine") is not None


# -- index_config -----------------------------------------------------------------------------


def test_index_config_names_the_memorys_embeddings_and_fields(mem: MarkdownMemory,
                                                              embeddings: CountingEmbeddings) -> None:
    assert mem.as_store().index_config == {"dims": 64, "embed": embeddings, "fields": ["$"]}
    assert mem.as_store(index={"fields": ["text"]}).index_config == {"dims": 64, "embed": embeddings,
                                                                     "fields": ["text"]}


def test_a_keyword_only_store_has_no_index_config(tmp_path: Path) -> None:
    with MarkdownMemory(tmp_path / "m", embeddings="none") as mem:
        assert mem.as_store().index_config is None


@pytest.mark.parametrize("index", [{"dims": 64, "fields": ["text"]}, {"fields": "text"}, {"fields": [""]}])
def test_a_store_refuses_index_settings_it_cannot_honour(mem: MarkdownMemory, index: dict[str, Any]) -> None:
    with pytest.raises(MemoryInputError, match=r"as_store|fields"):
        mem.as_store(index=index)


# -- scores -----------------------------------------------------------------------------------


def test_a_query_ranks_and_scores_as_the_memorys_own_search(store: MarkdownBaseStore,
                                                            embeddings: CountingEmbeddings) -> None:
    values = {"tea": {"content": "green tea in the morning"},
              "bike": {"content": "cycles to work on tuesdays"},
              "garden": {"content": "a green garden with tea roses"}}
    for key, value in values.items():
        store.put(NS, key, value)

    hits = store.search(NS, query="green tea")

    assert hits[0].key == "tea"
    assert all(isinstance(hit, MemorySearchItem) and hit.score == hit.hybrid_score for hit in hits)
    scored = [hit.score for hit in hits if hit.score is not None]
    assert scored == sorted(scored, reverse=True) and len(scored) >= 2
    # Not the bare cosine: the keyword evidence counts too.
    probe = embeddings
    bare = cosine(probe.embed_query("green tea"), probe.embed_documents(
        [json.dumps(values["tea"], sort_keys=True, ensure_ascii=False)])[0])
    assert hits[0].score != pytest.approx(bare, abs=1e-5)


def test_with_chosen_fields_the_score_is_the_cosine_over_them(mem: MarkdownMemory,
                                                              embeddings: CountingEmbeddings) -> None:
    store = mem.as_store(index={"fields": ["text"]})
    values = {"tea": {"text": "green tea in the morning"}, "bike": {"text": "cycles to work on tuesdays"}}
    for key, value in values.items():
        store.put(NS, key, value)
    query = "green tea"

    hits = store.search(NS, query=query)

    probe = embeddings  # its character projections are drawn on first sight: ask the same instance
    expected = {key: cosine(probe.embed_query(query), probe.embed_documents([value["text"]])[0])
                for key, value in values.items()}
    assert [hit.key for hit in hits] == sorted(expected, key=lambda key: -expected[key])
    for hit in hits:
        assert hit.score == pytest.approx(max(expected[hit.key], 0.0), abs=1e-5)
        assert isinstance(hit, MemorySearchItem) and hit.hybrid_score != hit.score  # the memory's own stays
    assert "hybrid_score" not in hits[0].dict()  # the item serialises as LangGraph's SearchItem does


def test_a_keyword_only_store_scores_by_the_memorys_ranking(tmp_path: Path) -> None:
    with MarkdownMemory(tmp_path / "m", embeddings="none") as mem:
        store = mem.as_store()
        store.put(NS, "tea", {"content": "green tea in the morning"})
        store.put(NS, "bike", {"content": "cycles to work"})
        hits = store.search(NS, query="green tea")
    assert [hit.key for hit in hits] == ["tea", "bike"]
    assert hits[0].score == hits[0].hybrid_score and hits[0].score is not None
    assert hits[1].score is None


def test_items_are_embedded_once_then_read_from_the_cache(store: MarkdownBaseStore,
                                                          embeddings: CountingEmbeddings) -> None:
    store.put(NS, "tea", {"text": "green tea"})
    store.search(NS, query="tea")
    embeddings.documents.clear()
    store.search(NS, query="coffee")
    assert '{"text": "green tea"}' not in embeddings.documents


# -- fields -----------------------------------------------------------------------------------


def test_store_fields_choose_what_a_query_meets(mem: MarkdownMemory) -> None:
    store = mem.as_store(index={"fields": ["title"]})
    store.put(NS, "a", {"title": "xxx", "notes": "yyy"})
    store.put(NS, "b", {"title": "zzz", "notes": "xxx"})

    hits = store.search(NS, query="xxx")

    assert [hit.key for hit in hits] == ["a", "b"]
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert hits[1].score is not None and hits[1].score < 0.9


def test_fields_given_to_a_put_are_kept_in_the_markdown_and_used(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    with MarkdownMemory(folder, embeddings=CharacterEmbeddings(dims=64)) as mem:
        mem.as_store().put(NS, "a", {"title": "zzz", "notes": "xxx"}, index=["notes"])
        mem.as_store().put(NS, "b", {"title": "xxx", "notes": "zzz"})
    text = (folder / "users/alice/store.md").read_text(encoding="utf-8")
    assert '"index": ["notes"]' in text

    with MarkdownMemory(folder, embeddings=CharacterEmbeddings(dims=64)) as mem:
        hits = mem.as_store(index={"fields": ["title"]}).search(NS, query="xxx")
    assert [hit.key for hit in hits] == [hits[0].key, hits[1].key]
    assert {hit.key for hit in hits} == {"a", "b"}
    assert hits[0].score == pytest.approx(hits[1].score, abs=1e-5)  # a by its notes, b by its title
