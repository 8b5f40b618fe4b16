"""A provider that hangs, fails or answers garbage: keyword answers, nothing poisoned, then recovery.

The fake provider is healthy (deterministic 16-dimensional vectors) until a
test switches a fault on. After every fault the SQLite file is read directly:
each stored vector (``chunks.embedding`` and ``embedding_cache``) must be the
healthy vector of its own text, and the text embedded during the fault must
have no vector at all.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings

import langchain_md_memory.sync.indexer as indexer_module
from langchain_md_memory import MarkdownMemory
from langchain_md_memory.sync.indexer import embed_text
from tests.reliability.faults import raw_rows

DIM = 16
CONFIG = {"embedding": {"retries": 0, "timeout_s": 0.5}}
FAULTS = ["timeout", "exception", "wrong_dim", "mixed_dims", "nan", "inf", "zero", "fewer", "more",
          "not_numbers"]


class FaultyEmbeddings(Embeddings):
    """Healthy deterministic vectors until ``fault`` is set; then that fault on every call."""

    def __init__(self) -> None:
        self.healthy = DeterministicFakeEmbedding(size=DIM)
        self.model = "faulty-v1"
        self.fault: str | None = None
        self.calls = 0
        self.release = threading.Event()  # lets hung "timeout" calls finish at teardown

    def vector(self, text: str) -> list[float]:
        return self.healthy.embed_query(text)

    def _answer(self, texts: list[str]) -> Any:
        self.calls += 1
        fault = self.fault
        good = [self.vector(t) for t in texts]
        if fault is None:
            return good
        if fault == "timeout":
            self.release.wait(10)
            return good
        if fault == "exception":
            raise ConnectionError("provider unreachable: connection reset by peer")
        if fault == "wrong_dim":
            return [v[:8] for v in good]
        if fault == "mixed_dims":  # one text alone cannot mix: it gets the short vector
            if len(good) == 1:
                return [good[0][:8]]
            return [v if i % 2 == 0 else v[:8] for i, v in enumerate(good)]
        if fault == "nan":
            return [[math.nan] * DIM for _ in good]
        if fault == "inf":
            return [[math.inf, *v[1:]] for v in good]
        if fault == "zero":
            return [[0.0] * DIM for _ in good]
        if fault == "fewer":
            return good[:-1]
        if fault == "more":
            return [*good, good[0]]
        if fault == "not_numbers":
            return [["x"] * DIM for _ in good]
        raise AssertionError(fault)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._answer(list(texts))  # type: ignore[no-any-return]

    def embed_query(self, text: str) -> list[float]:
        answer = self._answer([text])
        return answer[0] if answer else []


@pytest.fixture
def provider() -> Iterator[FaultyEmbeddings]:
    emb = FaultyEmbeddings()
    yield emb
    emb.release.set()


@pytest.fixture(autouse=True)
def _no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    # Sync waits 30 s after a failure before asking the provider again; the tests "wait" it out.
    monkeypatch.setattr(indexer_module, "_EMBED_BACKOFF_S", 0.0)


def _unit(vector: list[float]) -> np.ndarray:
    arr = np.asarray(vector, dtype=np.float64)
    return arr / np.linalg.norm(arr)


def assert_nothing_poisoned(db: Path, provider: FaultyEmbeddings) -> dict[str, int]:
    """Every stored vector is the healthy vector of its text; returns counts seen."""
    # A chunk's vector is the cache's vector of its text under the index's embedding identity.
    chunks = raw_rows(
        db,
        "SELECT c.heading, c.text, e.vector, c.embed_hash FROM chunks c LEFT JOIN embedding_cache e ON "
        "e.hash = c.embed_hash AND e.fingerprint = (SELECT value FROM meta WHERE key = 'embedding_identity')",
    )
    by_hash: dict[str, np.ndarray] = {}
    embedded = 0
    for heading, text, blob, embed_hash in chunks:
        want = _unit(provider.vector(embed_text(str(heading), str(text))))
        by_hash[str(embed_hash)] = want
        if blob is None:
            continue
        got = np.frombuffer(blob, dtype=np.float32)
        assert got.shape == (DIM,) and np.isfinite(got).all()
        np.testing.assert_allclose(got / np.linalg.norm(got), want, atol=1e-5)
        embedded += 1
    cache = raw_rows(db, "SELECT hash, dim, vector FROM embedding_cache")
    for digest, dim, blob in cache:
        got = np.frombuffer(blob, dtype=np.float32)
        assert dim == DIM and got.shape == (DIM,) and np.isfinite(got).all(), "a bad vector was cached"
        if digest in by_hash:
            np.testing.assert_allclose(got / np.linalg.norm(got), by_hash[str(digest)], atol=1e-5)
    return {"chunks": len(chunks), "embedded": embedded, "cached": len(cache)}


def _seed(mem: MarkdownMemory) -> None:
    mem.write("MEMORY.md", "# Profile\n\n- Risk: conservative; no single stock above 5% of the portfolio\n")
    mem.write("goals.md", "# Goals\n\nRetire at 60 with a paid-off house.\n")
    mem.sync()


@pytest.mark.parametrize("fault", FAULTS)
def test_fault_mid_life_answers_from_keywords_poisons_nothing_and_heals(
    memory_dir: Path, provider: FaultyEmbeddings, fault: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    db = memory_dir / "index.sqlite"
    with MarkdownMemory(memory_dir, embeddings=provider, config=CONFIG) as mem:
        _seed(mem)
        healthy = assert_nothing_poisoned(db, provider)
        assert healthy["embedded"] == healthy["chunks"] > 0

        provider.fault = fault
        mem.append("- New fact: the bond ladder matures in 2031")
        ranked = mem.search_detailed("bond ladder")
        assert ranked.hits and ranked.hits[0].path == "MEMORY.md" and "bond ladder" in ranked.hits[0].text
        assert ranked.hits[0].retrieved_by == "keyword" and ranked.degraded
        assert mem.search("single stock")[0].path == "MEMORY.md"
        status = mem.status()
        assert status["embedding_error"], status
        during = assert_nothing_poisoned(db, provider)
        assert during["embedded"] < during["chunks"], "the fact written during the fault got a vector"
        assert any("embedding" in r.getMessage() or "embed" in r.getMessage() for r in caplog.records)

        provider.fault = None
        mem.sync()
        after = assert_nothing_poisoned(db, provider)
        assert after["embedded"] == after["chunks"]
        assert mem.status()["embedding_error"] is None
        healed = mem.search_detailed("bond ladder")
        assert healed.degraded is None
        assert healed.hits[0].path == "MEMORY.md" and healed.hits[0].retrieved_by == "both"
        assert mem.verify(repair=False).consistent


@pytest.mark.parametrize("fault", ["timeout", "exception", "nan"])
def test_fault_from_the_first_call_still_answers_and_a_later_sync_embeds(
    memory_dir: Path, provider: FaultyEmbeddings, fault: str
) -> None:
    provider.fault = fault
    db = memory_dir / "index.sqlite"
    with MarkdownMemory(memory_dir, embeddings=provider, config=CONFIG) as mem:
        _seed(mem)
        hits = mem.search("retire house")
        assert hits and hits[0].path == "goals.md" and hits[0].retrieved_by == "keyword"
        assert mem.status()["embedding_error"]
        assert assert_nothing_poisoned(db, provider)["embedded"] == 0
        assert raw_rows(db, "SELECT count(*) FROM embedding_cache") == [(0,)]

        provider.fault = None
        mem.sync()
        counts = assert_nothing_poisoned(db, provider)
        assert counts["embedded"] == counts["chunks"] > 0
        assert mem.search("retire house")[0].retrieved_by == "both"


def test_query_only_fault_degrades_search_but_keeps_stored_vectors(
    memory_dir: Path, provider: FaultyEmbeddings
) -> None:
    db = memory_dir / "index.sqlite"
    with MarkdownMemory(memory_dir, embeddings=provider, config=CONFIG) as mem:
        _seed(mem)
        before = assert_nothing_poisoned(db, provider)
        provider.fault = "timeout"
        ranked = mem.search_detailed("single stock")
        assert ranked.hits[0].path == "MEMORY.md" and "timed out" in (ranked.degraded or "")
        assert assert_nothing_poisoned(db, provider) == before
