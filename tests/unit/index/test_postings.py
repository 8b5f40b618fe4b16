"""Keyword recall from postings kept in memory: the exhaustive BM25 top k, kept right across writes."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langchain_md_memory.index.scoring import Postings, bm25_score, bm25_top_k, lucene_idf
from langchain_md_memory.index.sqlite import ChunkRow, FileState, MemoryIndex
from langchain_md_memory.index.sqlite.postings import KeywordPostings
from langchain_md_memory.text import SCRIPT_CJK, SCRIPT_OTHER, index_terms, match_expression, query_terms
from langchain_md_memory.types import ChunkRecord
from tests.support.keywords import keyword_hits

# Word frequencies spread from "in most chunks" to "in a handful", stop words included.
COMMON = ["alpha", "beta", "the", "of"]
FREQUENT = ["bond", "ladder", "cash", "fund"]
RARE = [f"rare{i}" for i in range(30)]
QUERIES = ["rare3 bond", "rare7 rare8 ladder cash", "bond ladder", "alpha rare1", "alpha beta", "the of",
           "alpha beta bond", "rare12 alpha beta fund", "cash", "rare29", "nothing-here rare2", "单只 仓位"]


def _corpus(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    texts = []
    for _ in range(n):
        words = [w for w in COMMON if rng.random() < 0.7]
        words += [w for w in FREQUENT for _ in range(rng.choice([0, 0, 0, 1, 2]))]
        words += rng.sample(RARE, rng.choice([0, 1, 1, 2]))
        words += [f"filler{rng.randrange(200)}" for _ in range(rng.randrange(1, 12))]
        words += ["单只个股不超过总仓位"] if rng.random() < 0.1 else []
        rng.shuffle(words)
        texts.append(" ".join(words))
    return texts


def _rows(path: str, texts: list[str]) -> list[ChunkRow]:
    records = [ChunkRecord(f"{path}:{i}", path, i + 1, i + 1, "", text, f"h{path}{i}", "evergreen", 0.0)
               for i, text in enumerate(texts)]
    return [ChunkRow(record, f"e{record.id}", index_terms(record.text)) for record in records]


def _write(idx: MemoryIndex, path: str, texts: list[str]) -> None:
    idx.replace_file(FileState(path, 1, 1, path), "evergreen", _rows(path, texts))


def _exhaustive(idx: MemoryIndex, query: str, limit: int) -> list[tuple[str, float]]:
    """Every chunk matching a term scored one by one with ``bm25_score``: ``(chunk id, score / best)``."""
    terms = query_terms(query)
    if not terms:
        return []
    with idx.snapshot():
        marks = ",".join("?" * len(terms))
        df = dict(idx.read(f"SELECT term, doc FROM chunks_vocab WHERE term IN ({marks})", terms))
        n_docs, avg_len = idx.corpus_stats()
        idf = {t: lucene_idf(n_docs, df.get(t, 0)) for t in terms}
        rows = idx.read("SELECT c.id, f.terms FROM chunks_fts f JOIN chunks c ON c.rowid = f.rowid "
                        "WHERE chunks_fts MATCH ? ORDER BY c.rowid", (match_expression(terms),))
    scored = [(bm25_score(terms, text.split(), idf, avg_len), i, cid) for i, (cid, text) in enumerate(rows)]
    scored = sorted(scored, key=lambda item: (-item[0], item[1]))[:limit]
    return [(cid, max(score / scored[0][0], 1e-6)) for score, _, cid in scored]


def _ids(hits: list[tuple[ChunkRecord, float]]) -> list[tuple[str, float]]:
    return [(record.id, score) for record, score in hits]


@pytest.fixture
def index(tmp_path: Path) -> MemoryIndex:
    idx = MemoryIndex.open(tmp_path / "index.sqlite")
    texts = _corpus(1_000, seed=5)
    for f in range(10):
        _write(idx, f"f{f}.md", texts[f * 100 : (f + 1) * 100])
    yield idx
    idx.close()


@pytest.mark.parametrize("query", QUERIES)
def test_keyword_search_is_the_exhaustive_bm25_top_k_to_the_last_bit(index: MemoryIndex, query: str) -> None:
    # Stop words alone included: every posting is scored, so no query is only close.
    assert _ids(keyword_hits(index, query, 8)) == _exhaustive(index, query, 8)


@pytest.fixture(params=["term by term", "all at once"])
def reads(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Postings read term by term, or all at once from the first term on."""
    import langchain_md_memory.index.sqlite.postings as postings

    monkeypatch.setattr(postings, "READS_BEFORE_RESIDENT", 0 if request.param == "all at once" else 10**9)
    return str(request.param)


def test_kept_postings_follow_this_process_s_writes(tmp_path: Path, index: MemoryIndex, reads: str) -> None:
    for query in QUERIES:  # every term's postings kept
        keyword_hits(index, query, 8)
    _write(index, "f3.md", _corpus(60, seed=9))  # rewritten: old rowids gone, new ones at the end
    index.remove_file("f7.md")
    _write(index, "new.md", ["rare3 bond bond alpha", "单只个股不超过总仓位 alpha"])
    fresh = MemoryIndex.open(index.path)  # reads everything from the file
    try:
        for query in QUERIES:
            assert _ids(keyword_hits(index, query, 8)) == _ids(keyword_hits(fresh, query, 8))
            assert _ids(keyword_hits(index, query, 8)) == _exhaustive(index, query, 8)
        assert index.corpus_stats() == fresh.corpus_stats()
        terms = query_terms(" ".join(QUERIES))
        assert index.term_idf(terms) == fresh.term_idf(terms)
    finally:
        fresh.close()


def test_another_process_s_write_is_read_again(tmp_path: Path, index: MemoryIndex, reads: str) -> None:
    assert [r.text for r, _ in keyword_hits(index, "rare29", 50)]
    other = MemoryIndex.open(index.path)
    try:
        _write(other, "f0.md", ["rare29 only here now"])
    finally:
        other.close()
    assert keyword_hits(index, "rare29", 50)[0][0].text == "rare29 only here now"
    assert _ids(keyword_hits(index, "rare29 alpha", 8)) == _exhaustive(index, "rare29 alpha", 8)


def test_a_failed_write_forgets_the_kept_postings(index: MemoryIndex, reads: str) -> None:
    keyword_hits(index, "bond", 8)
    with pytest.raises(RuntimeError), index.writing():
        _write(index, "f1.md", ["bond nothing else"])  # applied in the transaction, then rolled back
        raise RuntimeError("the caller fails after the write")
    assert _ids(keyword_hits(index, "bond", 8)) == _exhaustive(index, "bond", 8)
    assert "bond nothing else" not in [r.text for r, _ in keyword_hits(index, "bond", 200)]


def test_keyword_search_answers_each_term_list_as_it_answers_it_alone(index: MemoryIndex) -> None:
    together = index.keyword_search([query_terms(q) for q in ("bond ladder", "单只 仓位", "")], 8).hits
    assert [_ids(hits) for hits in together] == [_ids(keyword_hits(index, q, 8)) for q in ("bond ladder",
                                                                                           "单只 仓位", "")]


def test_what_is_kept_stays_within_its_bound(index: MemoryIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    import langchain_md_memory.index.sqlite.postings as postings

    monkeypatch.setattr(postings, "_MIN_KEPT", 0)
    monkeypatch.setattr(postings, "POSTINGS_PER_CHUNK", 1)  # at most 1,000 postings: a few terms
    for query in QUERIES:
        keyword_hits(index, query, 8)
        kept = index._postings
        assert kept._held <= 1_000 or len(kept._terms) == 1
        assert kept._held == sum(len(p.rowids) for p, _ in kept._terms.values())
    assert _ids(keyword_hits(index, "alpha beta bond", 8)) == _exhaustive(index, "alpha beta bond", 8)


def test_the_index_says_which_scripts_its_terms_are_written_in(tmp_path: Path) -> None:
    idx = MemoryIndex.open(tmp_path / "index.sqlite")
    try:
        assert not idx.holds_script(SCRIPT_CJK) and not idx.holds_script(SCRIPT_OTHER)
        _write(idx, "a.md", ["prefers tea"])
        assert idx.holds_script(SCRIPT_OTHER) and not idx.holds_script(SCRIPT_CJK)
        _write(idx, "b.md", ["喜欢喝茶"])
        assert idx.holds_script(SCRIPT_CJK)
        idx.remove_file("a.md")
        assert not idx.holds_script(SCRIPT_OTHER)
    finally:
        idx.close()


def test_a_keyword_row_without_its_chunk_is_never_a_hit_but_counts(index: MemoryIndex) -> None:
    with index.writing() as conn:  # damage: a keyword row whose chunk is gone
        conn.execute("INSERT INTO chunks_fts(rowid, terms) VALUES (999999, 'rare5 orphan')")
    kept = KeywordPostings(index.read)
    orphan, df = kept.term("orphan")
    assert df == 1 and len(orphan.rowids) == 0  # FTS5's vocabulary counts it, as idf always did
    rare5, df = kept.term("rare5")
    assert 999999 not in rare5.rowids and df == len(rare5.rowids) + 1


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(1, 60), st.integers(1, 5)), min_size=0, max_size=40,
                         unique_by=lambda p: p[0]), min_size=1, max_size=5),
       st.integers(1, 10))
def test_bm25_top_k_adds_each_chunk_s_parts_as_bm25_score_does(terms: list[list[tuple[int, int]]],
                                                              limit: int) -> None:
    # Term i occurs tf times in chunk rowid; chunk lengths vary with the rowid.
    lengths = {rowid: 30 + rowid % 17 for rowid in range(1, 61)}  # above any chunk's 25 query words
    postings, docs = [], {}
    for i, occurrences in enumerate(terms):
        rows = sorted(occurrences)
        postings.append(Postings(np.array([r for r, _ in rows], np.int64),
                                 np.array([tf for _, tf in rows], np.int32),
                                 np.array([lengths[r] for r, _ in rows], np.int32)))
        for rowid, tf in rows:
            docs.setdefault(rowid, []).extend([f"t{i}"] * tf)
    names = [f"t{i}" for i in range(len(terms))]
    idf = [lucene_idf(60, len(occ)) for occ in terms]
    weights = dict(zip(names, idf, strict=True))
    want = []
    for rowid, words in docs.items():
        text = words + ["pad"] * (lengths[rowid] - len(words))
        want.append((bm25_score(names, text, weights, avg_len=37.5), rowid))
    want.sort(key=lambda item: (-item[0], item[1]))
    assert bm25_top_k(postings, idf, 37.5, limit) == want[:limit]


def test_postings_of_a_term_no_chunk_holds_are_empty(index: MemoryIndex) -> None:
    kept = KeywordPostings(index.read)
    postings, df = kept.term("nothing-like-it")
    assert df == 0 and len(postings.rowids) == 0


def _counting(index: MemoryIndex) -> tuple[KeywordPostings, list[str]]:
    statements: list[str] = []

    def query(sql: str, params: object = ()) -> object:
        statements.append(sql)
        return index.read(sql, params)  # type: ignore[arg-type]

    return KeywordPostings(query), statements


def test_a_process_that_keeps_searching_reads_every_term_at_once(index: MemoryIndex,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import langchain_md_memory.index.sqlite.postings as postings

    monkeypatch.setattr(postings, "READS_BEFORE_RESIDENT", 3)
    with index.writing() as conn:  # a keyword row whose chunk is gone counts in df, never a hit
        conn.execute("INSERT INTO chunks_fts(rowid, terms) VALUES (999999, 'rare5 orphan')")
    kept, statements = _counting(index)
    one_by_one = KeywordPostings(index.read)
    vocabulary = [str(row[0]) for row in index.read("SELECT term FROM chunks_vocab")]
    for term in ["bond", "alpha", "rare3"]:  # read from FTS5 one by one
        kept.term(term)
    assert kept._resident is None
    kept.term("cash")  # the fourth: every term read at once
    assert kept._resident is not None
    before = len(statements)
    for term in [*vocabulary, "nothing-like-it"]:
        got, want = kept.term(term), one_by_one._read(term)
        assert got[1] == len(want[0].rowids) + want[1], term  # df: FTS5's rows, those without a chunk too
        for column, expected in zip(got[0], want[0], strict=True):
            assert column.tolist() == expected.tolist(), term
    assert len(statements) == before  # nothing more read from FTS5, an absent term included
    assert kept.term("orphan")[1] == 1 and kept.term("rare5")[1] == len(kept.term("rare5")[0].rowids) + 1


def test_a_memory_too_large_to_hold_is_read_term_by_term(index: MemoryIndex,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    import langchain_md_memory.index.sqlite.postings as postings

    monkeypatch.setattr(postings, "READS_BEFORE_RESIDENT", 0)
    monkeypatch.setattr(postings, "RESIDENT_INSTANCES", 10)
    kept = KeywordPostings(index.read)
    for term in ["bond", "alpha", "rare3", "cash"]:
        assert kept.term(term)[0].rowids.tolist() == kept._read(term)[0].rowids.tolist()
    assert kept._resident is None
