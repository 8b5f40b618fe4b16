"""A search's query embedding is computed while keyword recall reads the index, and still fails safe."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings

from langchain_md_memory import MarkdownMemory

QUESTION = "bond ladder rungs"


class WaitsForKeywordRecall(Embeddings):
    """Embeds the question only once keyword recall has read the index (``patience`` seconds at most),
    and records the thread it ran on."""

    def __init__(self, patience: float = 5.0) -> None:
        self.vectors = DeterministicFakeEmbedding(size=16)
        self.keyword_read = threading.Event()
        self.patience = patience
        self.threads: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.vectors.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        if text == QUESTION:
            self.threads.append(threading.current_thread().name)
            if not self.keyword_read.wait(self.patience):
                raise ConnectionError("keyword recall never ran while the query was being embedded")
        return self.vectors.embed_query(text)


def _memory(memory_dir: Path, emb: Any) -> MarkdownMemory:
    (memory_dir / "MEMORY.md").write_text("- Bond ladder: five rungs, one a year\n- Cash: six months\n",
                                          encoding="utf-8")
    return MarkdownMemory(memory_dir, embeddings=emb, config={"embedding": {"retries": 0}})


def test_keyword_recall_runs_while_the_query_is_embedded(memory_dir: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    emb = WaitsForKeywordRecall()
    with _memory(memory_dir, emb) as mem:
        index = mem.index
        reading = index.keyword_search

        def keyword_search(*args: Any, **kwargs: Any) -> Any:
            found = reading(*args, **kwargs)
            emb.keyword_read.set()
            return found

        monkeypatch.setattr(index, "keyword_search", keyword_search)
        ranked = mem.search_detailed(QUESTION)
    assert ranked.degraded is None  # the vector path ran: the embedding did not wait for the search
    assert ranked.hits[0].text.startswith("- Bond ladder") and ranked.hits[0].vector_score is not None
    assert emb.threads and emb.threads[0] != threading.current_thread().name


def test_an_embedding_that_fails_after_keyword_recall_leaves_a_keyword_answer(memory_dir: Path) -> None:
    emb = WaitsForKeywordRecall(patience=0.2)  # never told: the question's embedding fails
    with _memory(memory_dir, emb) as mem:
        ranked = mem.search_detailed(QUESTION)
    assert ranked.degraded is not None and "keyword results only" in ranked.degraded
    assert ranked.hits[0].text.startswith("- Bond ladder") and ranked.hits[0].vector_score is None
