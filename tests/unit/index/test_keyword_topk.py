"""Exact keyword top-k: the max-score search over FTS5 returns the exhaustive BM25 top k."""

from __future__ import annotations

import random

import pytest

from langchain_md_memory.index.keyword import bm25_score, lucene_idf
from langchain_md_memory.index.keyword_topk import fts5_idf, term_bound, top_k
from langchain_md_memory.index.sqlite import ChunkRow, FileState, MemoryIndex
from langchain_md_memory.text import index_terms, match_expression, query_terms
from langchain_md_memory.types import ChunkRecord

# Word frequencies spread from "in most chunks" to "in a handful", so every path of the search runs.
COMMON = ["alpha", "beta"]  # in most chunks: FTS5 clamps their idf
FREQUENT = ["bond", "ladder", "cash", "fund"]
RARE = [f"rare{i}" for i in range(30)]


def _corpus(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    texts = []
    for _ in range(n):
        words = [w for w in COMMON if rng.random() < 0.7]
        words += [w for w in FREQUENT for _ in range(rng.choice([0, 0, 0, 1, 2]))]
        words += rng.sample(RARE, rng.choice([0, 1, 1, 2]))
        words += [f"filler{rng.randrange(200)}" for _ in range(rng.randrange(1, 12))]
        rng.shuffle(words)
        texts.append(" ".join(words))
    return texts


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> MemoryIndex:
    idx = MemoryIndex.open(tmp_path_factory.mktemp("topk") / "index.sqlite")
    texts = _corpus(2_000, seed=5)
    for f in range(20):
        rows = []
        for i, text in enumerate(texts[f * 100 : (f + 1) * 100]):
            path = f"f{f}.md"
            rec = ChunkRecord(f"{path}:{i}", path, i + 1, i + 1, "", text, f"h{f}-{i}", "evergreen", 0.0)
            rows.append(ChunkRow(rec, f"e{f}-{i}", index_terms(text), None))
        idx.replace_file(FileState(f"f{f}.md", 1, 1, str(f)), "evergreen", rows)
    return idx


def _exhaustive(idx: MemoryIndex, query: str, limit: int) -> list[tuple[float, int]]:
    """Score every chunk matching any term: the answer the search must reproduce."""
    terms = query_terms(query)
    df = _df(idx, terms)
    n_docs, avg_len = idx._corpus_stats()
    idf = {t: lucene_idf(n_docs, df.get(t, 0)) for t in terms}
    sql = "SELECT rowid, terms FROM chunks_fts WHERE chunks_fts MATCH ?"
    rows = idx._db.query(sql, (match_expression(terms),))
    scored = [(bm25_score(terms, text.split(), idf, avg_len), rowid) for rowid, text in rows]
    return sorted(scored, key=lambda item: (-item[0], item[1]))[:limit]


def _df(idx: MemoryIndex, terms: list[str]) -> dict[str, int]:
    marks = ",".join("?" * len(terms))
    return dict(idx._db.query(f"SELECT term, doc FROM chunks_vocab WHERE term IN ({marks})", terms))


def _search(idx: MemoryIndex, query: str, limit: int, budget: int) -> list[tuple[float, int]]:
    terms = query_terms(query)
    n_docs, avg_len = idx._corpus_stats()
    df = _df(idx, terms)
    return top_k(idx._db.query, terms, df, n_docs=n_docs, avg_len=avg_len, limit=limit, budget=budget)


QUERIES = [
    "rare3 bond",
    "rare7 rare8 ladder cash",
    "bond ladder",
    "alpha rare1",
    "alpha beta",
    "alpha beta bond",
    "rare12 alpha beta fund",
    "cash",
    "rare29",
    "nothing-here rare2",
]


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("budget", [1, 60, 5_000])
def test_top_k_equals_the_exhaustive_bm25_top_k(index: MemoryIndex, query: str, budget: int) -> None:
    # budget=1 starts from the rarest term alone, so the bounds, the AND and the widening all decide.
    got = _search(index, query, 5, budget)
    want = _exhaustive(index, query, 5)
    assert [rowid for _, rowid in got] == [rowid for _, rowid in want]
    assert [score for score, _ in got] == pytest.approx([score for score, _ in want])


def test_keyword_search_returns_the_exhaustive_top_k_with_a_small_budget(index: MemoryIndex) -> None:
    index.postings_budget = 1
    try:
        hits = index.keyword_search("rare7 rare8 ladder cash", 8)
    finally:
        index.postings_budget = 5_000
    want = _exhaustive(index, "rare7 rare8 ladder cash", 8)
    rowid_of = dict(index._db.query("SELECT id, rowid FROM chunks"))
    assert [rowid_of[r.id] for r, _ in hits] == [rowid for _, rowid in want]
    assert hits[0][1] == 1.0


def test_fts5_bm25_is_fts5_idf_times_our_term_weight(index: MemoryIndex) -> None:
    # The bounds rest on this: for one term, FTS5's score is our score with FTS5's idf in place of ours.
    n_docs, avg_len = index._corpus_stats()
    for term in ("rare3", "bond", "alpha"):
        df = _df(index, [term])[term]
        rows = index._db.query(
            "SELECT rowid, -bm25(chunks_fts), terms FROM chunks_fts WHERE chunks_fts MATCH ?", (f'"{term}"',)
        )
        for _, fts_score, text in rows[:20]:
            ours = bm25_score([term], text.split(), {term: 1.0}, avg_len)
            assert fts_score == pytest.approx(fts5_idf(n_docs, df) * ours, rel=1e-9)


def test_fts5_idf_is_clamped_for_a_term_in_most_chunks() -> None:
    assert fts5_idf(100, 80) == 1e-6
    assert fts5_idf(100, 10) == pytest.approx(lucene_idf(100, 10) - 0.1, abs=0.1)


def test_a_term_never_adds_more_than_its_bound() -> None:
    idf = {"bond": 2.0}
    heavy = bm25_score(["bond"], ["bond"] * 50, idf, avg_len=40.0)
    assert heavy < term_bound(2.0)


def test_no_known_term_or_no_room_finds_nothing(index: MemoryIndex) -> None:
    assert _search(index, "zzz-unknown", 5, 5_000) == []
    assert _search(index, "bond", 0, 5_000) == []


@pytest.fixture(scope="module")
def stop_word_index(tmp_path_factory: pytest.TempPathFactory) -> MemoryIndex:
    """25,000 chunks, each query word in a large share of them: more postings than widening allows."""
    rng = random.Random(7)
    idx = MemoryIndex.open(tmp_path_factory.mktemp("stopwords") / "index.sqlite")
    share = {"a": 0.85, "the": 0.95, "we": 0.3, "of": 0.55}
    for f in range(25):
        rows = []
        for i in range(1_000):
            words = [w for w, p in share.items() for _ in range(rng.randrange(1, 4)) if rng.random() < p]
            words += [f"filler{rng.randrange(500)}" for _ in range(rng.randrange(1, 15))]
            rng.shuffle(words)
            text, path = " ".join(words), f"s{f}.md"
            rec = ChunkRecord(f"{path}:{i}", path, i + 1, i + 1, "", text, f"s{f}-{i}", "evergreen", 0.0)
            rows.append(ChunkRow(rec, f"s{f}-{i}", index_terms(text), None))
        idx.replace_file(FileState(f"s{f}.md", 1, 1, str(f)), "evergreen", rows)
    return idx


@pytest.mark.parametrize("query", ["a the", "a we", "the we of", "a the we of"])
def test_a_query_of_frequent_terms_only_finds_the_exhaustive_top_k(
    stop_word_index: MemoryIndex, query: str
) -> None:
    # No bound clears within budget here: the answer comes from one wide FTS5 ranking of all the terms,
    # whose order (one clamped idf for them all) differs from ours, rescored.
    got = _search(stop_word_index, query, 24, 5_000)
    want = _exhaustive(stop_word_index, query, 24)
    assert [rowid for _, rowid in got] == [rowid for _, rowid in want]
