"""MarkdownMemoryRetriever: LangChain's standard retriever suite, kwargs, LCEL."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from langchain_core.callbacks import Callbacks
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.runnables import RunnableLambda
from langchain_tests.integration_tests import RetrieversIntegrationTests

from langchain_md_memory import MarkdownMemory, MarkdownMemoryRetriever
from tests.support.embeddings import AxisEmbeddings
from tests.support.hits import HIT_FIELDS

NOTES = (
    "\n\n".join(
        [
            "Bond ladder: five rungs of treasuries.",
            "Bond fund: only short duration.",
            "Bond rule: no junk bonds, ever.",
            "Cash buffer: six months of expenses.",
            "Retire at sixty with a pension.",
        ]
    )
    + "\n"
)


def _memory(tmp_path_factory: pytest.TempPathFactory) -> MarkdownMemory:
    path = tmp_path_factory.mktemp("memory")
    (path / "MEMORY.md").write_text(NOTES, encoding="utf-8")
    return MarkdownMemory(
        path,
        embeddings=AxisEmbeddings(["bond", "cash", "retire"]),
        config={"chunking": {"chunk_tokens": 16, "chunk_overlap_tokens": 0}},
    )


class TestMarkdownMemoryRetrieverStandard(RetrieversIntegrationTests):
    @pytest.fixture(autouse=True)
    def _memory(self, tmp_path_factory: pytest.TempPathFactory):
        self.mem = _memory(tmp_path_factory)
        yield
        self.mem.close()

    @property
    def retriever_constructor(self) -> type[MarkdownMemoryRetriever]:
        return MarkdownMemoryRetriever

    @property
    def retriever_constructor_params(self) -> dict:
        return {"memory": self.mem}

    @property
    def retriever_query_example(self) -> str:
        return "bond"


@pytest.fixture
def mem(tmp_path_factory):
    memory = _memory(tmp_path_factory)
    yield memory
    memory.close()


def test_documents_carry_the_hit_fields_and_the_chunk_id(mem):
    docs = mem.as_retriever(k=2).invoke("cash buffer")
    assert 1 <= len(docs) <= 2
    doc = docs[0]
    assert isinstance(doc, Document)
    assert doc.page_content == "Cash buffer: six months of expenses."
    assert doc.id == doc.metadata["chunk_id"] == "MEMORY.md:7-7"
    for key in HIT_FIELDS:
        assert key in doc.metadata
    assert doc.metadata["retrieved_by"] == "both"
    assert doc.metadata["source"] == "MEMORY.md"
    assert doc.metadata["citation"] == "MEMORY.md#L7-L7"


def test_k_and_config_overrides_apply_at_construction_and_invoke(mem):
    retriever = mem.as_retriever(k=3, ranking={"mmr": {"enabled": False}})
    assert len(retriever.invoke("bond")) == 3
    assert len(retriever.invoke("bond", k=1)) == 1
    # min_score cuts each hit's relevance. Five notes are too few for a background, so relevance is
    # the keyword coverage: the retire note holds "retire", in one note of five, most of the question's
    # weight (1.0); a bond note holds "bond", in three notes of five, less of it (0.42).
    loose = retriever.invoke("retire bond", ranking={"min_score": 0.4})
    relevance = {d.page_content: d.metadata["relevance"] for d in loose}
    assert len(loose) == 3 and relevance.pop("Retire at sixty with a pension.") == 1.0
    assert all(value == pytest.approx(0.42, abs=0.005) for value in relevance.values())
    strict = retriever.invoke("retire bond", ranking={"min_score": 0.99})
    assert [d.page_content for d in strict] == ["Retire at sixty with a pension."]


def test_invalid_override_fails_at_construction(mem):
    with pytest.raises(ValueError):
        mem.as_retriever(ranking={"min_score": -1})


async def test_ainvoke_matches_invoke(mem):
    retriever = mem.as_retriever(k=2)
    sync_ids = [d.id for d in retriever.invoke("bond")]
    async_ids = [d.id for d in await retriever.ainvoke("bond")]
    assert sync_ids == async_ids and len(sync_ids) == 2


def test_retriever_works_in_an_lcel_chain(mem):
    def format_docs(docs: list[Document]) -> str:
        return "\n".join(f"[{d.metadata['citation']}] {d.page_content}" for d in docs)

    chain = mem.as_retriever(k=1) | RunnableLambda(format_docs)
    assert chain.invoke("retire pension") == "[MEMORY.md#L9-L9] Retire at sixty with a pension."


class ScriptedReader(BaseDocumentCompressor):
    """Stands in for a cross-encoder reranker: a scripted score per note; keeps those at or above
    ``threshold``, best first, and passes each kept Document on as it came."""

    scores: dict[str, float]
    threshold: float = 0.5

    def compress_documents(self, documents: Sequence[Document], query: str,
                           callbacks: Callbacks | None = None) -> Sequence[Document]:
        kept = [doc for doc in documents if self.scores.get(doc.page_content, 0.0) >= self.threshold]
        return sorted(kept, key=lambda doc: -self.scores[doc.page_content])


def test_a_reader_reranks_the_retriever_inside_contextual_compression(mem):
    # langchain 1.x keeps ContextualCompressionRetriever in langchain-classic (a test dependency).
    from langchain_classic.retrievers import ContextualCompressionRetriever

    reader = ScriptedReader(scores={"Bond rule: no junk bonds, ever.": 0.9,
                                    "Bond ladder: five rungs of treasuries.": 0.6,
                                    "Bond fund: only short duration.": 0.2})
    retriever = mem.as_retriever(k=3, ranking={"mmr": {"enabled": False}})
    read = ContextualCompressionRetriever(base_compressor=reader, base_retriever=retriever)
    found = {doc.page_content: doc for doc in retriever.invoke("bond")}
    docs = read.invoke("bond")
    assert len(found) == 3
    assert [doc.page_content for doc in docs] == ["Bond rule: no junk bonds, ever.",
                                                  "Bond ladder: five rungs of treasuries."]
    for doc in docs:
        assert doc.id == found[doc.page_content].id
        assert doc.metadata == found[doc.page_content].metadata
        for key in ("citation", "relevance", "confident", "retrieved_by", "source"):
            assert key in doc.metadata
    assert docs[0].metadata["citation"] == "MEMORY.md#L5-L5" and docs[0].metadata["source"] == "MEMORY.md"
