import sqlite3

import numpy as np
import pytest

from langchain_md_memory.index.sqlite import SCHEMA_VERSION, ChunkRow, FileState, MemoryIndex
from langchain_md_memory.text import index_terms, query_terms
from langchain_md_memory.types import ChunkRecord
from tests.support.keywords import keyword_hits


def _row(path, n, text, vector=None):
    rec = ChunkRecord(f"{path}:{n}-{n}", path, n, n, "", text, f"h{n}", "evergreen", 0.0)
    return ChunkRow(rec, f"e-{path}-{n}", index_terms(text), vector)


def _fill(idx, path, texts, vectors=None):
    rows = [_row(path, i + 1, t, None if vectors is None else vectors[i]) for i, t in enumerate(texts)]
    idx.replace_file(FileState(path, 1, 1, "x"), "evergreen", rows)


@pytest.fixture
def idx(tmp_path):
    index = MemoryIndex.open(tmp_path / "index.sqlite")
    yield index
    index.close()


def test_bm25_ranks_the_more_relevant_chunk_first_with_scores_in_unit_interval(idx):
    _fill(
        idx,
        "a.md",
        [
            "bond ladder",
            "bond bond bond ladder ladder",
            "equity only",
            "cash reserve",
        ],
    )
    hits = keyword_hits(idx, "bond ladder", 10)
    assert [r.text for r, _ in hits][:2] == ["bond bond bond ladder ladder", "bond ladder"]
    scores = [s for _, s in hits]
    assert scores[0] == 1.0
    assert all(0 < s <= 1 for s in scores)
    assert scores[0] > scores[1]


def test_keyword_scores_are_the_bm25_keyword_search_ranks_by(idx):
    _fill(idx, "a.md", ["bond ladder", "bond bond bond ladder ladder", "equity only", "cash reserve"])
    hits = keyword_hits(idx, "bond ladder", 10)
    ids = [r.id for r, _ in hits] + ["a.md:3-3", "no-such-chunk"]
    raw = idx.keyword_scores(query_terms("bond ladder"), ids)
    assert set(raw) == {r.id for r, _ in hits}  # a chunk holding no query term, or none at all: absent
    best = raw[hits[0][0].id]
    assert all(raw[r.id] / best == pytest.approx(score) for r, score in hits)
    assert idx.keyword_scores(query_terms("bond"), []) == {}
    assert idx.keyword_scores(query_terms("the"), ["a.md:1-1"]) == {}
    fresh = MemoryIndex.open(idx.path)  # no record read yet: every id looked up in the table
    try:
        assert fresh.keyword_scores(query_terms("bond ladder"), ids) == raw
    finally:
        fresh.close()


def test_keyword_recall_returns_the_idf_it_weighed_the_first_term_list_by(idx):
    _fill(idx, "a.md", ["bond ladder", "bond bond", "equity only", "cash reserve"])
    first, second = query_terms("bond ladder walnut"), query_terms("equity")
    recall = idx.keyword_search([first, second], 10)
    found = [[r.text for r, _ in hits] for hits in recall.hits]
    assert found == [["bond ladder", "bond bond"], ["equity only"]]
    assert recall.idf == idx.term_idf(first)  # what a separate count gives, without one
    assert recall.idf["bond"] < recall.idf["ladder"] < recall.idf["walnut"]  # a term no chunk holds: the most
    assert idx.keyword_search([[]], 10).idf == {} and idx.keyword_search([], 10).hits == []


def test_vector_recall_returns_the_querys_background_over_the_stored_vectors(idx):
    rng = np.random.default_rng(2)
    query = rng.normal(size=6).astype(np.float32)
    assert idx.vector_search(query, 3).background is None  # nothing stored
    vectors = [rng.normal(size=6).astype(np.float32) for _ in range(12)]
    _fill(idx, "a.md", [f"note {i}" for i in range(12)], vectors)
    recall = idx.vector_search(query, 3)
    cosines = np.array([v @ query / (np.linalg.norm(v) * np.linalg.norm(query)) for v in vectors])
    assert [round(s, 5) for _, s in recall.hits] == [round(float(c), 5) for c in sorted(cosines)[::-1][:3]]
    assert recall.background == pytest.approx((cosines.mean(), cosines.std()), abs=1e-6)


def test_keyword_search_finds_chinese_word_inside_a_sentence(idx):
    _fill(idx, "MEMORY.md", ["单只个股不超过总仓位 5%", "退休目标年龄 60"])
    hits = keyword_hits(idx, "仓位", 5)
    assert [r.text for r, _ in hits] == ["单只个股不超过总仓位 5%"]


@pytest.mark.parametrize(
    "query",
    [
        '"',
        "AND",
        "OR NOT",
        "NEAR(",
        "a*",
        "col:value",
        "(((",
        "^",
        "",
        "   ",
        "'; DROP TABLE chunks; --",
    ],
)
def test_hostile_fts_queries_never_raise(idx, query):
    _fill(idx, "a.md", ["and or not near value col"])
    assert isinstance(keyword_hits(idx, query, 5), list)
    assert idx.count_chunks()[0] == 1


def test_replacing_a_file_removes_its_old_text_from_keyword_search(idx):
    _fill(idx, "a.md", ["old wording here"])
    _fill(idx, "a.md", ["new wording here"])
    assert keyword_hits(idx, "old", 5) == []
    assert len(keyword_hits(idx, "new", 5)) == 1


def test_same_text_in_two_files_is_two_hits(idx):
    _fill(idx, "a.md", ["same sentence"])
    _fill(idx, "b.md", ["same sentence"])
    assert sorted(r.path for r, _ in keyword_hits(idx, "same", 5)) == ["a.md", "b.md"]


def test_vector_search_orders_by_cosine_and_clips_to_unit_interval(idx):
    vecs = [
        np.array([1, 0, 0], np.float32),
        np.array([0.6, 0.8, 0], np.float32),
        np.array([-1, 0, 0], np.float32),
    ]
    _fill(idx, "a.md", ["x", "y", "z"], vecs)
    hits = idx.vector_search(np.array([2, 0, 0], np.float32), 3).hits
    assert [r.text for r, _ in hits] == ["x", "y", "z"]
    assert [round(s, 6) for _, s in hits] == [1.0, 0.6, 0.0]


def test_vector_matrix_follows_removals_without_a_reload(idx):
    _fill(idx, "a.md", ["x"], [np.array([1, 0], np.float32)])
    _fill(idx, "b.md", ["y"], [np.array([0, 1], np.float32)])
    assert len(idx.vector_search(np.array([1, 1], np.float32), 5).hits) == 2
    idx.remove_file("a.md")
    assert [r.path for r, _ in idx.vector_search(np.array([1, 1], np.float32), 5).hits] == ["b.md"]


def test_vector_matrix_sees_writes_from_another_connection(tmp_path):
    a = MemoryIndex.open(tmp_path / "i.sqlite")
    b = MemoryIndex.open(tmp_path / "i.sqlite")
    _fill(a, "a.md", ["x"], [np.array([1, 0], np.float32)])
    assert len(b.vector_search(np.array([1, 0], np.float32), 5).hits) == 1
    _fill(a, "b.md", ["y"], [np.array([0, 1], np.float32)])
    assert len(b.vector_search(np.array([1, 0], np.float32), 5).hits) == 2
    a.close()
    b.close()


def test_garbage_file_is_replaced_by_a_fresh_index(tmp_path):
    path = tmp_path / "index.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    idx = MemoryIndex.open(path)
    assert idx.count_chunks() == (0, 0)
    assert idx.get_meta("schema_version") == str(SCHEMA_VERSION)
    idx.close()


def test_foreign_database_is_replaced(tmp_path):
    path = tmp_path / "index.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE chunks (x)")
    conn.commit()
    conn.close()
    idx = MemoryIndex.open(path)
    _fill(idx, "a.md", ["works"])
    assert len(keyword_hits(idx, "works", 1)) == 1
    idx.close()


def test_other_schema_version_triggers_a_rebuild(tmp_path):
    path = tmp_path / "index.sqlite"
    idx = MemoryIndex.open(path)
    _fill(idx, "a.md", ["kept?"])
    idx.set_meta("schema_version", "0")
    idx.close()
    again = MemoryIndex.open(path)
    assert again.count_chunks() == (0, 0)
    assert again.get_meta("schema_version") == str(SCHEMA_VERSION)
    again.close()


def test_embedding_cache_is_keyed_by_hash_and_fingerprint(idx):
    v = np.array([0.5, 0.5], np.float32)
    idx.cache.store([("h1", v)], "p:m:2")
    assert set(idx.cache.lookup(["h1", "h2"], "p:m:2")) == {"h1"}
    assert idx.cache.lookup(["h1"], "other:m:2") == {}
    np.testing.assert_array_equal(idx.cache.lookup(["h1"], "p:m:2")["h1"], v)


@pytest.mark.parametrize("dtype", ["float16", "int8"])
def test_a_compact_vector_index_returns_the_float32_hits_and_scores(tmp_path, dtype):
    rng = np.random.default_rng(4)
    vectors = [rng.normal(size=32).astype(np.float32) for _ in range(300)]
    exact = MemoryIndex.open(tmp_path / "index.sqlite")
    _fill(exact, "a.md", [f"note {i}" for i in range(300)], vectors)
    compact = MemoryIndex.open(tmp_path / "index.sqlite", vector_dtype=dtype)
    try:
        assert compact.vector_dtype == dtype
        for _ in range(5):
            query = rng.normal(size=32)
            want = [(r.id, s) for r, s in exact.vector_search(query, 8).hits]
            got = [(r.id, s) for r, s in compact.vector_search(query, 8).hits]
            assert [i for i, _ in got] == [i for i, _ in want]
            assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-6)
    finally:
        compact.close()
        exact.close()


def test_records_kept_from_a_search_are_read_again_after_another_connection_rewrites_them(tmp_path):
    idx = MemoryIndex.open(tmp_path / "index.sqlite")
    other = MemoryIndex.open(tmp_path / "index.sqlite")
    try:
        _fill(idx, "a.md", ["bond ladder", "cash reserve"])
        assert [r.text for r, _ in keyword_hits(idx, "bond", 5)] == ["bond ladder"]
        rowid = next(iter(idx.records(list(range(1, 10)))))
        _fill(other, "a.md", ["bond ladder rungs", "cash reserve"])  # SQLite reuses the rowids
        assert [r.text for r, _ in keyword_hits(idx, "bond", 5)] == ["bond ladder rungs"]
        assert idx.records([rowid])[rowid].text == other.records([rowid])[rowid].text
    finally:
        idx.close()
        other.close()
