"""The memory as a LangChain retriever: each hit a Document that cites the lines it came from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document

from langchain_md_memory import MarkdownMemory
from langchain_md_memory.errors import MemoryInputError
from tests.support.memories import write_files

NOTES = ("# Money rules\n\nBond ladder: five rungs of treasuries.\n\n"
         "Bond fund: only short duration.\n\nCash buffer: six months of expenses.\n")
GOALS = "# Goals\n\nRetire at sixty with a pension; keep a bond tent near retirement.\n"


@pytest.fixture
def mem(memory_dir: Path) -> MarkdownMemory:
    write_files(memory_dir, {"MEMORY.md": NOTES, "goals.md": GOALS})
    memory = MarkdownMemory(memory_dir, embeddings="none",
                            config={"chunking": {"chunk_tokens": 16, "chunk_overlap_tokens": 0}})
    yield memory
    memory.close()


def lines(memory_dir: Path, doc: Document) -> str:
    text = (memory_dir / doc.metadata["path"]).read_text(encoding="utf-8").splitlines()
    return "\n".join(text[doc.metadata["start_line"] - 1 : doc.metadata["end_line"]])


def test_each_document_is_a_chunk_with_its_id_and_citation(mem: MarkdownMemory, memory_dir: Path) -> None:
    docs = mem.as_retriever(k=5).invoke("cash buffer")
    assert docs and all(isinstance(d, Document) for d in docs)
    for doc in docs:
        path, start, end = doc.metadata["path"], doc.metadata["start_line"], doc.metadata["end_line"]
        assert doc.id == doc.metadata["chunk_id"] == f"{path}:{start}-{end}"
        assert doc.metadata["citation"] == f"{path}#L{start}-L{end}"
        assert doc.page_content.strip() in lines(memory_dir, doc)
        assert "text" not in doc.metadata  # the text is the page content, not repeated in metadata
    assert "Cash buffer: six months of expenses." in docs[0].page_content
    assert docs[0].metadata["path"] == "MEMORY.md"


def test_documents_match_the_memorys_own_search(mem: MarkdownMemory) -> None:
    docs = mem.as_retriever(k=3).invoke("bond")
    hits = mem.search("bond", max_results=3)
    assert [d.id for d in docs] == [h.chunk_id for h in hits]
    assert [d.page_content for d in docs] == [h.text for h in hits]
    assert [d.metadata["score"] for d in docs] == [h.score for h in hits]


def test_keyword_only_documents_come_from_the_keyword_path(mem: MarkdownMemory) -> None:
    docs = mem.as_retriever(k=3).invoke("bond")
    assert {d.metadata["path"] for d in docs} == {"MEMORY.md", "goals.md"}
    assert all(d.metadata["retrieved_by"] == "keyword" and d.metadata["vector_score"] is None for d in docs)


def test_source_is_the_file_path_as_in_langchain_loaders(mem: MarkdownMemory) -> None:
    docs = mem.as_retriever(k=3).invoke("bond")
    assert [d.metadata["source"] for d in docs] == [d.metadata["path"] for d in docs]
    assert {d.metadata["source"] for d in docs} == {"MEMORY.md", "goals.md"}


def test_k_caps_the_documents_and_invoke_can_override_it(mem: MarkdownMemory) -> None:
    retriever = mem.as_retriever(k=3)
    assert len(retriever.invoke("bond")) == 3
    one = retriever.invoke("bond", k=1)
    assert len(one) == 1
    assert one[0].id == retriever.invoke("bond")[0].id


def test_a_query_with_no_match_returns_no_documents(mem: MarkdownMemory) -> None:
    assert mem.as_retriever(k=3).invoke("zebra") == []


# -- what a VectorStore retriever accepts ------------------------------------------------------

LADDERS = "\n\n".join([
    "Bond ladder of treasuries: bond ladder, bond ladder.",
    "Bond ladder of treasuries: bond ladder, bond ladder!",
    "Bond ladder of treasuries: bond ladder; bond ladder.",
    "Bond fund with a short ladder of notes.",
    "Cash buffer: six months of expenses.",
]) + "\n"


@pytest.fixture
def ladders(memory_dir: Path) -> MarkdownMemory:
    write_files(memory_dir, {"MEMORY.md": LADDERS})
    memory = MarkdownMemory(memory_dir, embeddings="none",
                            config={"chunking": {"chunk_tokens": 16, "chunk_overlap_tokens": 0}})
    yield memory
    memory.close()


class RetrieverStarts(BaseCallbackHandler):
    """Records the tags and metadata of every retriever run it sees start."""

    def __init__(self) -> None:
        self.starts: list[tuple[list[str], dict[str, Any]]] = []

    def on_retriever_start(self, serialized: Any, query: str, *, tags: list[str] | None = None,
                           metadata: dict[str, Any] | None = None, **kwargs: Any) -> None:
        self.starts.append((list(tags or []), dict(metadata or {})))


def citations(docs: list[Document]) -> list[str]:
    return [d.metadata["citation"] for d in docs]


def test_search_kwargs_k_and_tags_work_as_on_a_vectorstore_retriever(mem: MarkdownMemory) -> None:
    retriever = mem.as_retriever(search_kwargs={"k": 2}, tags=["x"], metadata={"team": "memory"})
    handler = RetrieverStarts()
    docs = retriever.invoke("bond", config={"callbacks": [handler]})
    assert len(docs) == 2
    [(tags, metadata)] = handler.starts
    assert tags == ["x"] and metadata["team"] == "memory"


def test_tags_default_to_the_memorys_class_name_as_a_vectorstore_does(mem: MarkdownMemory) -> None:
    handler = RetrieverStarts()
    mem.as_retriever().invoke("bond", config={"callbacks": [handler]})
    assert handler.starts[0][0] == ["MarkdownMemory"]


async def test_tags_reach_callbacks_under_ainvoke_too(mem: MarkdownMemory) -> None:
    handler = RetrieverStarts()
    docs = await mem.as_retriever(search_kwargs={"k": 1}, tags=["y"]).ainvoke("bond",
                                                                              config={"callbacks": [handler]})
    assert len(docs) == 1 and handler.starts[0][0] == ["y"]


def test_similarity_turns_mmr_off_and_mmr_turns_it_on(ladders: MarkdownMemory) -> None:
    similar = ladders.as_retriever(search_type="similarity", search_kwargs={"k": 2}).invoke("bond ladder")
    diverse = ladders.as_retriever(search_type="mmr", search_kwargs={"k": 2, "lambda_mult": 0.3}
                                   ).invoke("bond ladder")
    # The near-duplicates lead by relevance; MMR swaps the second one for the different note.
    assert citations(similar) == ["MEMORY.md#L1-L1", "MEMORY.md#L3-L3"]
    assert citations(diverse) == ["MEMORY.md#L1-L1", "MEMORY.md#L7-L7"]
    plain = ladders.search("bond ladder", max_results=2)  # MMR on (the default) at lambda 0.7
    assert citations(ladders.as_retriever(k=2).invoke("bond ladder")) == [h.citation for h in plain]


def test_fetch_k_is_the_pool_mmr_chooses_from(ladders: MarkdownMemory) -> None:
    narrow = ladders.as_retriever(search_type="mmr", search_kwargs={"k": 2, "lambda_mult": 0.3, "fetch_k": 2})
    assert citations(narrow.invoke("bond ladder")) == ["MEMORY.md#L1-L1", "MEMORY.md#L3-L3"]
    wide = ladders.as_retriever(search_type="mmr", search_kwargs={"k": 2, "lambda_mult": 0.3, "fetch_k": 8})
    assert citations(wide.invoke("bond ladder")) == ["MEMORY.md#L1-L1", "MEMORY.md#L7-L7"]


def test_score_threshold_is_the_min_score(ladders: MarkdownMemory) -> None:
    # The threshold is compared with each hit's calibrated relevance, as min_score is.
    no_cut = {"k": 5, "ranking": {"min_score": 0.0}}
    similarity = ladders.as_retriever(search_type="similarity", search_kwargs=no_cut)
    everything = similarity.invoke("bond treasuries")
    assert min(d.metadata["relevance"] for d in everything) < 0.9
    strict = ladders.as_retriever(search_type="similarity_score_threshold",
                                  search_kwargs={"k": 5, "score_threshold": 0.9}).invoke("bond treasuries")
    assert strict and all(d.metadata["relevance"] >= 0.9 for d in strict)
    assert len(strict) == sum(d.metadata["relevance"] >= 0.9 for d in everything)


def test_similarity_score_threshold_needs_a_threshold(mem: MarkdownMemory) -> None:
    with pytest.raises(MemoryInputError, match=r"needs search_kwargs=.*score_threshold"):
        mem.as_retriever(search_type="similarity_score_threshold")


def test_unknown_search_type_names_the_allowed_ones(mem: MarkdownMemory) -> None:
    with pytest.raises(MemoryInputError, match="'similarity', 'mmr', 'similarity_score_threshold'"):
        mem.as_retriever(search_type="hybrid")


def test_unknown_keys_get_an_error_naming_the_allowed_ones(mem: MarkdownMemory) -> None:
    with pytest.raises(MemoryInputError, match=r"search_kwargs got unknown key\(s\) \['filter'\]; "
                                               r"allowed: k, score_threshold, lambda_mult, fetch_k, "
                                               r"as_of, or MemoryConfig fields "
                                               r"\(max_results, ranking, chunking"):
        mem.as_retriever(search_kwargs={"k": 2, "filter": {"path": "MEMORY.md"}})
    with pytest.raises(MemoryInputError, match=r"as_retriever\(\) got unknown key\(s\) \['top_k'\]; "
                                               r"allowed: k, search_type, search_kwargs, tags, metadata"):
        mem.as_retriever(top_k=2)
    with pytest.raises(MemoryInputError, match=r"invoke\(\) got unknown key\(s\) \['filter'\]"):
        mem.as_retriever().invoke("bond", filter={})


def test_config_fields_work_in_search_kwargs_and_at_invoke(mem: MarkdownMemory) -> None:
    def found(cut: float) -> int:
        retriever = mem.as_retriever(search_kwargs={"k": 3, "ranking": {"min_score": cut}})
        return len(retriever.invoke("bond ladder"))

    assert found(0.0) == 3
    assert found(0.99) < 3
    assert len(mem.as_retriever(k=3).invoke("bond ladder", score_threshold=0.99)) < 3


@pytest.mark.parametrize("kwargs", [
    {"k": 2, "search_kwargs": {"k": 3}},
    {"search_kwargs": {"k": 0}},
    {"search_kwargs": {"fetch_k": "many"}},
    {"search_type": "similarity_score_threshold", "search_kwargs": {"score_threshold": 1.5}},
])
def test_bad_values_are_refused_when_the_retriever_is_built(mem: MarkdownMemory,
                                                            kwargs: dict[str, Any]) -> None:
    with pytest.raises(MemoryInputError):
        mem.as_retriever(**kwargs)
