"""Hostile input: generated Markdown, queries and paths (hypothesis), and absurd files.

Each property runs a bounded number of examples (``max_examples``) so the
suite stays fast; ``derandomize`` keeps CI runs repeatable.
"""

from __future__ import annotations

import datetime as dt
import math
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from langchain_md_memory import MarkdownMemory
from langchain_md_memory.config import MemoryConfig
from langchain_md_memory.errors import MemoryPathError, MemoryStoreError
from langchain_md_memory.files.chunker import chunk_markdown
from langchain_md_memory.files.paths import resolve_memory_path
from langchain_md_memory.index.sqlite import MemoryIndex
from langchain_md_memory.search import Recall, rank
from langchain_md_memory.types import ChunkRecord, FileKind
from tests.support.keywords import keyword_hits

FAST = settings(max_examples=150, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

# -- the chunker ----------------------------------------------------------------------

# Content lines carry a digit; no heading, fence or scaffold line below does, so "has a digit"
# means "the chunker must keep this line".
_content = st.builds(
    lambda words, n: f"{words} {n}",
    st.sampled_from(["fact", "仓位上限", "- bullet", "1. step", "> quote", "| a | b |", "`code`",
                     "dark-mode", "Café", "\t indented", "x" * 300, "退休" * 200]),
    st.integers(0, 999),
)
_other = st.sampled_from(["", " ", "# Title", "## Sub", "###### deep #", "#nospace", "```", "```python",
                          "~~~", "- [ ]", "TODO", "---", "***", "<!-- note -->", "|---|---|", ">", "\ufeff",
                          "\r"])
_lines = st.lists(st.one_of(_content, _other), max_size=60)


@FAST
@given(_lines, st.integers(16, 400), st.data(), st.booleans())
def test_chunker_covers_every_content_line_with_nonempty_chunks(
    lines: list[str], chunk_tokens: int, data: st.DataObject, crlf: bool
) -> None:
    overlap = data.draw(st.integers(0, chunk_tokens - 1))
    text = ("\r\n" if crlf else "\n").join(lines)
    chunks = chunk_markdown(text, chunk_tokens=chunk_tokens, overlap_tokens=overlap)
    file_lines = text.replace("\r\n", "\n").split("\n")
    if file_lines and file_lines[-1] == "":
        file_lines.pop()
    covered: set[int] = set()
    for chunk in chunks:
        assert chunk.text.strip(), "empty chunk"
        assert 1 <= chunk.start_line <= chunk.end_line <= len(file_lines)
        span = "\n".join(file_lines[chunk.start_line - 1 : chunk.end_line])
        # A chunk is its lines exactly, or one piece of a single over-long line.
        assert chunk.text == span or (chunk.start_line == chunk.end_line and chunk.text in span)
        covered.update(range(chunk.start_line, chunk.end_line + 1))
    for number, line in enumerate(file_lines, 1):
        if any(ch.isdigit() for ch in line):
            assert number in covered, f"line {number} {line[:40]!r} is in no chunk"


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.text(max_size=3000), st.integers(16, 64))
def test_chunker_terminates_and_never_raises_on_any_text(text: str, chunk_tokens: int) -> None:
    for chunk in chunk_markdown(text, chunk_tokens=chunk_tokens, overlap_tokens=chunk_tokens // 2):
        assert chunk.text.strip()


# -- FTS query escaping ---------------------------------------------------------------

_fts_syntax = st.sampled_from(['"', "'", "*", ":", "^", "(", ")", "NEAR(", "AND", "OR", "NOT", "-", "+",
                               "{", "}", "chunks_fts", "terms:", "\x00", "\ud800", "仓", "位", "仓位",
                               "dark-mode", " ", "\\", "%", "_", "..", "NEAR/3", "col:*"])
_queries = st.one_of(st.text(max_size=80), st.lists(_fts_syntax, max_size=12).map("".join),
                     st.lists(_fts_syntax, max_size=12).map(" ".join))


@pytest.fixture(scope="module")
def real_index(tmp_path_factory: pytest.TempPathFactory) -> MarkdownMemory:
    root = tmp_path_factory.mktemp("fts") / "memory"
    mem = MarkdownMemory(root, embeddings="none")
    mem.write("MEMORY.md", "# 风险\n\n- 单只个股不超过总仓位 5%\n- dark-mode on, NEAR the AND OR NOT\n")
    mem.write("notes.md", "Quotes \"inside\" and col:* and chunks_fts terms: (x) ^y\n")
    mem.sync()
    return mem


@FAST
@given(_queries)
def test_keyword_search_and_facade_search_accept_any_query(real_index: MarkdownMemory, query: str) -> None:
    hits = keyword_hits(real_index.index, query, 10)
    assert all(0.0 < score <= 1.0 for _, score in hits)
    for hit in real_index.search(query) if query.strip() else []:
        assert math.isfinite(hit.score)


def test_fts_operators_in_a_query_are_plain_words(real_index: MarkdownMemory) -> None:
    assert keyword_hits(real_index.index, "NEAR(", 5)[0][0].path == "MEMORY.md"
    assert keyword_hits(real_index.index, '"inside', 5)[0][0].path == "notes.md"
    assert keyword_hits(real_index.index, "仓位", 5)[0][0].path == "MEMORY.md"


# -- the path guard -------------------------------------------------------------------

_parts = st.sampled_from(["..", ".", "", "a", "b.md", "MEMORY.md", "out", "in", "loop", "chain", "~", "C:",
                          "\x00", "\\..\\", "é.md", "日本.md", " ", "...", "..\u2215etc", "%2e%2e", "sub",
                          "/"])
_paths = st.one_of(
    st.lists(_parts, min_size=1, max_size=6).map("/".join),
    st.lists(_parts, min_size=1, max_size=6).map("\\".join),
    st.text(max_size=40),
    st.lists(_parts, min_size=1, max_size=4).map(lambda p: "/" + "/".join(p)),
)


@pytest.fixture(scope="module")
def jail(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("jail")
    root, outside = base / "memory", base / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.md").write_text("outside secret\n")
    os.symlink(outside, root / "out")  # a folder link leaving the root
    os.symlink(root / "sub", root / "in")  # a folder link staying inside
    os.symlink(root / "out", root / "chain")  # a link to a link that leaves
    os.symlink(root / "loop", root / "loop")  # a link to itself
    os.symlink(outside / "secret.md", root / "sub" / "leak.md")
    return root, outside


@FAST
@given(_paths)
def test_no_generated_path_resolves_outside_the_root(jail: tuple[Path, Path], path: str) -> None:
    root, _ = jail
    try:
        target = resolve_memory_path(root, path)
    except MemoryPathError:
        return
    real_root = Path(os.path.realpath(root))
    assert target == real_root or real_root in Path(os.path.realpath(target)).parents


@settings(max_examples=120, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_paths)
def test_no_generated_path_reads_or_writes_outside_through_the_facade(
    jail: tuple[Path, Path], path: str
) -> None:
    root, outside = jail
    with MarkdownMemory(root, embeddings="none") as mem:
        actions: list[Callable[[], str]] = [lambda: mem.get(path), lambda: mem.write(path, "pwned\n"),
                                            lambda: mem.append("pwned", file=path)]
        for action in actions:
            try:
                result = action()
            except (MemoryStoreError, ValueError):
                continue
            assert "outside secret" not in str(result)
    assert sorted(p.name for p in outside.iterdir()) == ["secret.md"]
    assert (outside / "secret.md").read_text() == "outside secret\n"


def test_symlinks_out_of_the_root_are_refused(jail: tuple[Path, Path]) -> None:
    root, _ = jail
    for path in ("out/secret.md", "chain/secret.md", "sub/leak.md", "in/../out/secret.md"):
        with pytest.raises(MemoryPathError):
            resolve_memory_path(root, path)
    assert resolve_memory_path(root, "in/x.md") == Path(os.path.realpath(root / "sub" / "x.md"))
    with MarkdownMemory(root, embeddings="none") as mem:
        assert "sub/leak.md" not in mem.store.list_files()
        assert all("outside secret" not in h.text for h in mem.search("outside secret"))


# -- the ranking stages on hostile numbers ---------------------------------------------

NOW = dt.datetime(2026, 7, 14, 12, 0)
_floats01 = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
_vectors = st.one_of(
    st.none(),
    st.lists(st.floats(allow_nan=False, allow_infinity=False, width=32), min_size=4, max_size=4),
    st.just([0.0, 0.0, 0.0, 0.0]),
    st.just([1e30, -1e30, 1e30, 1.0]),
    st.just([1.0, 2.0]),  # another dimension
)


@st.composite
def _recalls(draw: st.DrawFn) -> Recall:
    n = draw(st.integers(0, 16))
    paths = ["MEMORY.md", "2026-07-14.md", "1970-01-01.md", "2999-12-31.md", "sessions/s.md", "a/b.md"]
    recs = []
    for i in range(n):
        path = draw(st.sampled_from(paths))
        kind: FileKind = "daily" if path[0].isdigit() else ("session" if "sessions" in path else "evergreen")
        recs.append(ChunkRecord(f"c{i}", path, 1, 2, "", draw(st.text(max_size=30)), str(i), kind,
                                draw(st.floats(min_value=0, max_value=4e9))))
    vector = [(r, draw(_floats01)) for r in recs if draw(st.booleans())]
    keyword = [(r, draw(st.floats(min_value=1e-6, max_value=1.0))) for r in recs if draw(st.booleans())]
    vectors = {}
    for r in recs:
        v = draw(_vectors)
        if v is not None:
            vectors[r.id] = np.asarray(v, dtype=np.float32)
    return Recall(vector, keyword, vectors)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(_recalls(), st.integers(1, 8), st.sampled_from([0.0, 0.3, 0.7, 1.0]),
       st.sampled_from([0.01, 1.0, 1e6]), st.sampled_from(["auto", "jaccard", "cosine"]))
def test_ranking_scores_are_finite_and_the_order_is_deterministic(
    recall: Recall, k: int, lam: float, half_life: float, similarity: str
) -> None:
    config = MemoryConfig(max_results=k, ranking={"mmr": {"lambda": lam, "similarity": similarity},
                                                  "temporal_decay": {"half_life_days": half_life}})
    first = rank(recall, config, now=NOW)
    again = rank(recall, config, now=NOW)
    assert [h.chunk_id for h in first.hits] == [h.chunk_id for h in again.hits]
    assert len(first.hits) <= k
    assert len({h.chunk_id for h in first.hits}) == len(first.hits)
    for hit in first.hits:
        assert math.isfinite(hit.score) and 0.0 <= hit.score <= 1.0 + 1e-9
        assert math.isfinite(hit.decay) and 0.0 <= hit.decay <= 1.0 + 1e-9


# -- absurd files ---------------------------------------------------------------------


def test_a_two_megabyte_single_line_is_indexed_and_found(memory_dir: Path) -> None:
    line = ("lorem ipsum dolor sit amet " * 80_000)[:2_000_000] + " needleword"
    (memory_dir / "huge.md").write_text(line + "\n", "utf-8")
    with MarkdownMemory(memory_dir, embeddings="none") as mem:
        stats = mem.sync()
        assert stats.files == 1 and stats.chunks_added > 1000
        hit = mem.search("needleword")[0]
        assert hit.path == "huge.md" and hit.start_line == hit.end_line == 1 and "needleword" in hit.text
        assert mem.get("huge.md", 1, 1) == line + "\n"
        assert mem.verify(repair=False).consistent


def test_nul_bytes_and_invalid_utf8_are_indexed_and_kept_byte_for_byte(memory_dir: Path) -> None:
    raw = b"# Bytes\n\nbefore\x00after nulword\n\nbad \xff\xfe \xc3\x28 utf8word here\n"
    (memory_dir / "bytes.md").write_bytes(raw)
    with MarkdownMemory(memory_dir, embeddings="none") as mem:
        assert mem.search("nulword")[0].path == "bytes.md"
        hit = mem.search("utf8word")[0]
        assert hit.path == "bytes.md" and "\ufffd" in hit.text
        assert "\ufffd" in mem.get("bytes.md", 5, 5)
        mem.append("- appended line", file="bytes.md")
        assert (memory_dir / "bytes.md").read_bytes() == raw + b"- appended line\n"
        assert mem.edit("appended", "edited", file="bytes.md")
        assert (memory_dir / "bytes.md").read_bytes() == raw + b"- edited line\n"
        report = mem.verify()  # the edit is not indexed until the next search or sync
        assert report.stale == ("bytes.md",) and report.ok
        assert mem.verify(repair=False).consistent


def test_three_thousand_tiny_files_sync_search_and_verify(memory_dir: Path) -> None:
    n = 3000
    for i in range(n):
        sub = memory_dir / f"d{i % 10}"
        sub.mkdir(exist_ok=True)
        (sub / f"f{i}.md").write_text(f"tiny note {i} word{i}\n", "utf-8")
    with MarkdownMemory(memory_dir, embeddings="none") as mem:
        stats = mem.sync()
        assert stats.files == n and stats.chunks_added == n
        for i in (0, 1234, n - 1):
            hit = mem.search(f"word{i}")[0]
            assert hit.path == f"d{i % 10}/f{i}.md"
        assert len(mem.search("tiny note", max_results=50)) == 50
        (memory_dir / "d3" / "f3.md").unlink()
        report = mem.verify()
        assert report.orphaned == ("d3/f3.md",) and report.ok and report.files == n - 1
        assert mem.status()["files"] == n - 1


def test_an_index_on_every_hostile_query_stays_consistent(real_index: MarkdownMemory) -> None:
    assert real_index.verify(repair=False).consistent


def test_memory_index_keyword_search_survives_a_query_of_only_operators(tmp_path: Path) -> None:
    idx = MemoryIndex.open(tmp_path / "index.sqlite")
    try:
        for query in ('"', "AND OR NOT", "NEAR(", "*", "\x00", "\ud800\udfff", "((((", "^"):
            assert keyword_hits(idx, query, 5) == []
    finally:
        idx.close()
