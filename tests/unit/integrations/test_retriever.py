"""The memory as a LangChain retriever: each hit a Document that cites the lines it came from."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.documents import Document

from langchain_md_memory import MarkdownMemory
from tests.support.memories import write_files

NOTES = ("# Money rules\n\nBond ladder: five rungs of treasuries.\n\n"
         "Bond fund: only short duration.\n\nCash buffer: six months of expenses.\n")
GOALS = "# Goals\n\nRetire at sixty with a pension; keep a bond tent near retirement.\n"


@pytest.fixture
def mem(memory_dir: Path) -> MarkdownMemory:
    write_files(memory_dir, {"MEMORY.md": NOTES, "goals.md": GOALS})
    memory = MarkdownMemory(memory_dir, embeddings="none",
                            config={"chunk_tokens": 16, "chunk_overlap_tokens": 0})
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
    assert all(d.metadata["source"] == "keyword" and d.metadata["vector_score"] is None for d in docs)


def test_k_caps_the_documents_and_invoke_can_override_it(mem: MarkdownMemory) -> None:
    retriever = mem.as_retriever(k=3)
    assert len(retriever.invoke("bond")) == 3
    one = retriever.invoke("bond", k=1)
    assert len(one) == 1
    assert one[0].id == retriever.invoke("bond")[0].id


def test_a_query_with_no_match_returns_no_documents(mem: MarkdownMemory) -> None:
    assert mem.as_retriever(k=3).invoke("zebra") == []
