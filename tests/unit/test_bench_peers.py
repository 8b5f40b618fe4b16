"""The pure parts of `python -m bench.peers` (the comparison needs memsearch, which CI never installs)."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

import pytest

import bench.peers as peers
from bench.peers import INSTALL_HINT, MemsearchProvider, SharedEmbeddings, edit_paragraph, ratio, summarize
from bench.synthetic import HashingEmbeddings, write_memory


def test_shared_embeddings_passes_vectors_through_and_counts_every_call() -> None:
    inner = HashingEmbeddings()
    shared = SharedEmbeddings(inner, "hashing-384")
    texts = ["bond ladder", "cash buffer"]
    assert shared.embed_documents(texts) == inner.embed_documents(texts)
    assert shared.embed_query("bond ladder") == inner.embed_query("bond ladder")
    assert (shared.documents_embedded, shared.queries_embedded) == (2, 1)
    assert shared.model == "hashing-384"


def test_shared_embeddings_adds_up_the_time_spent_in_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    ticks = itertools.count(step=0.25)  # every clock read is a quarter second later
    monkeypatch.setattr(peers.time, "perf_counter", lambda: next(ticks))
    shared = SharedEmbeddings(HashingEmbeddings(), "h")
    shared.embed_documents(["a"])
    shared.embed_documents(["b", "c"])
    shared.embed_query("d")
    assert shared.document_seconds == 0.5
    assert shared.query_seconds == 0.25


def test_provider_embeds_queries_only_inside_for_queries() -> None:
    inner = HashingEmbeddings()
    shared = SharedEmbeddings(inner, "hashing-384")
    provider = MemsearchProvider(shared, dimension=384)
    stored = asyncio.run(provider.embed(["bond ladder", "cash buffer"]))
    with provider.for_queries():
        asked = asyncio.run(provider.embed(["bond ladder"]))
    assert stored == inner.embed_documents(["bond ladder", "cash buffer"])
    assert asked == [inner.embed_query("bond ladder")]
    assert (shared.documents_embedded, shared.queries_embedded) == (2, 1)
    assert (provider.model_name, provider.dimension, provider.batch_size) == ("hashing-384", 384, 512)


def test_provider_leaves_query_mode_when_the_search_raises() -> None:
    provider = MemsearchProvider(SharedEmbeddings(HashingEmbeddings(), "h"), dimension=384)
    with pytest.raises(RuntimeError), provider.for_queries():
        raise RuntimeError("search failed")
    asyncio.run(provider.embed(["after"]))
    assert (provider.shared.documents_embedded, provider.shared.queries_embedded) == (1, 0)


def test_summarize_gives_interpolated_percentiles() -> None:
    assert summarize([float(i) for i in range(1, 101)]) == {
        "p50_ms": 50.5, "p95_ms": 95.05, "mean_ms": 50.5, "n": 100,
    }


@pytest.mark.parametrize(
    ("theirs", "ours", "shown"),
    [(120.0, 10.0, "12×"), (7500.0, 6.8, "1,103×"), (3.0, 2.0, "1.5×"), (10.0, 30.0, "0.333×"),
     (5.0, 0.0, "-")],
)
def test_ratio_is_theirs_over_ours(theirs: float, ours: float, shown: str) -> None:
    assert ratio(theirs, ours) == shown


def test_edit_paragraph_rewords_one_line_differently_per_version(tmp_path: Path) -> None:
    layout = write_memory(tmp_path / "mem", 9, sections_per_file=3)
    path = layout.root / layout.files[1]
    original = path.read_text(encoding="utf-8").split("\n")
    edit_paragraph(path, 0)
    first = path.read_text(encoding="utf-8").split("\n")
    edit_paragraph(path, 1)
    second = path.read_text(encoding="utf-8").split("\n")
    bullets = [i for i, line in enumerate(original) if line.startswith("- ")]
    middle = bullets[len(bullets) // 2]
    assert len(original) == len(first) == len(second)
    assert [i for i, (a, b) in enumerate(zip(original, first, strict=True)) if a != b] == [middle]
    assert first[middle].startswith("- edited 0:") and second[middle].startswith("- edited 1:")


def test_main_exits_2_with_one_install_line_without_memsearch(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = peers.importlib.util.find_spec
    monkeypatch.setattr(peers.importlib.util, "find_spec",
                        lambda name: None if name == "memsearch" else real(name))
    assert peers.main(["--files", "2"]) == 2
    err = capsys.readouterr().err
    assert err == INSTALL_HINT + "\n" and "pip install memsearch" in err
