"""A search that runs on less than it should says so: in status, the tool, the retriever and the CLI."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings

from langchain_md_memory import MarkdownMemory, create_memory_tools
from langchain_md_memory.cli import main
from langchain_md_memory.embeddings import EmbeddingClient, providers
from langchain_md_memory.types import ProgressEvent

CONFIG = {"embedding": {"retries": 0}}


class Switchable(Embeddings):
    """Deterministic vectors; ``documents_down`` / ``queries_down`` make that side fail like an outage."""

    def __init__(self) -> None:
        self.healthy = DeterministicFakeEmbedding(size=16)
        self.documents_down = False
        self.queries_down = False

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if self.documents_down:
            raise ConnectionError("connection reset by peer")
        return self.healthy.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        if self.queries_down:
            raise ConnectionError("connection reset by peer")
        return self.healthy.embed_query(text)


def _seed(memory_dir: Path) -> None:
    (memory_dir / "MEMORY.md").write_text("- Bond ladder: five rungs, one a year\n", encoding="utf-8")


def test_a_failed_document_embedding_is_reported_everywhere(memory_dir: Path) -> None:
    _seed(memory_dir)
    emb = Switchable()
    with MarkdownMemory(memory_dir, embeddings=emb, config=CONFIG) as mem:
        mem.sync()
        emb.documents_down = True  # the provider rejects documents, still answers queries
        mem.append("- Bond fund: sold in March")
        ranked = mem.search_detailed("bond")
        assert ranked.degraded is not None and "keyword results only" in ranked.degraded
        assert mem.status()["waiting_for_embeddings"] == 1
        search = create_memory_tools(mem)[0]
        assert "keyword results only" in search.invoke({"query": "bond"}).split("Note:", 1)[1]
        docs = mem.as_retriever().invoke("bond")
        assert docs and "keyword results only" in docs[0].metadata["degraded"]

        emb.documents_down = False
        mem._indexer._embed_retry_at = 0.0  # skip the back-off a failed provider gets
        mem.sync()
        assert mem.status()["waiting_for_embeddings"] == 0
        assert mem.search_detailed("bond").degraded is None


def test_a_keyword_only_search_says_so_through_the_tool(memory_dir: Path) -> None:
    _seed(memory_dir)
    emb = Switchable()
    with MarkdownMemory(memory_dir, embeddings=emb, config=CONFIG) as mem:
        mem.sync()
        emb.queries_down = True
        out = create_memory_tools(mem)[0].invoke({"query": "bond ladder"})
    assert "Bond ladder" in out
    assert "keyword results only" in out.split("Note:", 1)[1]


@pytest.fixture
def local_model(memory_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Switchable:
    """``--embeddings local`` answered by a switchable fake (a remote model's stand-in), memory seeded."""
    _seed(memory_dir)
    emb = Switchable()
    monkeypatch.setattr(providers, "_local_client", lambda opts: EmbeddingClient(emb, provider="local",
                                                                                  model="switchable", **opts))
    return emb


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_a_keyword_only_search_says_so_on_the_cli(memory_dir: Path, local_model: Switchable) -> None:
    local_model.queries_down = True
    code, out, err = _cli("--dir", str(memory_dir), "--embeddings", "local", "search", "bond ladder")
    assert code == 0
    assert "Bond ladder" in out
    assert "keyword results only" in err


def test_an_index_run_that_leaves_chunks_unembedded_says_so(memory_dir: Path,
                                                             local_model: Switchable) -> None:
    local_model.documents_down = True
    code, _, err = _cli("--dir", str(memory_dir), "--embeddings", "local", "index")
    assert code == 0  # the index is usable: keyword search works
    last = err.strip().splitlines()[-1]  # after the retries the library logged
    assert last.startswith("md-memory: warning: 1 chunk(s) wait for embeddings")
    assert "connection reset by peer" in last


class Slow(Embeddings):
    """Deterministic vectors at ``seconds`` a text: a model slower than a search may wait for."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.vectors = DeterministicFakeEmbedding(size=16)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        time.sleep(self.seconds * len(texts))
        return self.vectors.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.vectors.embed_query(text)


def _backlog(memory_dir: Path, notes: int) -> None:
    _seed(memory_dir)
    for i in range(notes):
        note = f"- Note {i} about the garden, week {i}\n"
        (memory_dir / f"note-{i:03d}.md").write_text(note, encoding="utf-8")


def _waiting(mem: MarkdownMemory) -> int:
    return int(mem.status()["waiting_for_embeddings"])


def test_a_search_answers_from_what_is_indexed_while_a_backlog_is_embedded_behind_it(
        memory_dir: Path) -> None:
    _backlog(memory_dir, 150)  # 3 s of embedding; the search waits half a second of it
    events: list[ProgressEvent] = []
    config = {"embedding": {"retries": 0, "search_wait_s": 0.5}}
    with MarkdownMemory(memory_dir, embeddings=Slow(0.02), config=config) as mem:
        started = time.monotonic()
        ranked = mem.search_detailed("bond ladder", progress=events.append)
        took = time.monotonic() - started
        assert took < 2.0 and "Bond ladder" in ranked.hits[0].text
        assert ranked.degraded is not None and "not embedded yet" in ranked.degraded
        assert "found those by keywords only" in ranked.degraded
        embedding = [e for e in events if e.phase == "embed"]
        assert embedding and embedding[-1].done < embedding[-1].total  # the rest went to the background

        deadline = time.monotonic() + 60
        while _waiting(mem) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _waiting(mem) == 0 and mem.status()["embedded"] == mem.status()["chunks"]
        assert mem.search_detailed("bond ladder").degraded is None


def test_closing_stops_the_background_embedding_and_keeps_what_it_did(memory_dir: Path) -> None:
    _backlog(memory_dir, 150)  # 7.5 s of embedding
    config = {"embedding": {"retries": 0, "search_wait_s": 0.3}}
    with MarkdownMemory(memory_dir, embeddings=Slow(0.05), config=config) as mem:
        assert mem.search("bond ladder")
        time.sleep(0.5)
        started = time.monotonic()
        mem.close()
        assert time.monotonic() - started < 2.0
    with MarkdownMemory(memory_dir, embeddings="none") as again:
        info = again.status()
    assert 0 < info["embedded"] < info["chunks"]


def test_search_wait_none_makes_a_search_wait_for_every_chunk(memory_dir: Path) -> None:
    _backlog(memory_dir, 20)
    config = {"embedding": {"retries": 0, "search_wait_s": None}}
    with MarkdownMemory(memory_dir, embeddings=Slow(0.02), config=config) as mem:
        ranked = mem.search_detailed("bond ladder")
        assert ranked.degraded is None and _waiting(mem) == 0
