"""Processes and threads appending, editing, rewriting and searching one memory at once.

Each process opens its own MarkdownMemory on the same folder. Nothing
acknowledged may be lost, no lock error may reach the caller, and a reader
must only ever see complete versions of a file being rewritten.
"""

from __future__ import annotations

import json
import multiprocessing
import re
import threading
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from langchain_md_memory import MarkdownMemory
from tests.support.embeddings import AxisEmbeddings
from tests.support.keywords import keyword_hits

PROCESSES = 3
APPENDS = 60  # per process
INCREMENTS = 25  # per process, on one counter all processes share
REWRITES = 30  # per process, of shared.md
READS = 120  # per process, of shared.md

_SHARED_RE = re.compile(r"# shared by (\w+) n(\d+)\n")


def shared_text(writer: str, n: int) -> str:
    """shared.md as ``writer`` wrote it the ``n``-th time: every line names both."""
    body = "".join(f"- line {k:02d} written by {writer} n{n}\n" for k in range(40))
    return f"# shared by {writer} n{n}\n\n{body}\nEND {writer} n{n}\n"


def _count(text: str) -> int:
    return int(re.search(r"count: (\d+)", text)[1])  # type: ignore[index]


def _guard(errors: list[str], fn: Callable[[], None]) -> Callable[[], None]:
    def run() -> None:
        try:
            fn()
        except BaseException as exc:  # recorded and asserted on by the parent
            errors.append(f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")

    return run


def _worker(root: str, w: int, out: str) -> None:
    """One process: an appender, an incrementer/rewriter and a reader thread on one memory."""
    errors: list[str] = []
    counts: Counter[str] = Counter()
    mem = MarkdownMemory(root, embeddings="none")

    def append() -> None:
        for i in range(APPENDS):
            token = f"p{w}f{i}tok"
            mem.append(f"- process {w} fact {i}: {token}")
            hits = mem.search(token)
            counts["searches"] += 1
            if not hits or token not in hits[0].text:
                errors.append(f"read-your-writes: {token} not found right after appending it")

    def increment_and_rewrite() -> None:
        for n in range(max(INCREMENTS, REWRITES)):
            if n < INCREMENTS:
                while True:  # compare-and-swap through the facade: edit fails when the value moved on
                    current = _count(mem.get("counter.md"))
                    counts["cas_attempts"] += 1
                    if mem.edit(f"count: {current}\n", f"count: {current + 1}\n", file="counter.md"):
                        break
            if n < REWRITES:
                mem.write("shared.md", shared_text(f"p{w}", n))

    def read() -> None:
        for _ in range(READS):
            text = mem.get("shared.md")
            match = _SHARED_RE.match(text)
            if match is None or text != shared_text(match[1], int(match[2])):
                errors.append(f"half-written shared.md seen: {text[:60]!r}... ({len(text)} chars)")
            counts["reads"] += 1
            mem.search("shared line written")
            counts["searches"] += 1

    threads = [threading.Thread(target=_guard(errors, fn)) for fn in (append, increment_and_rewrite, read)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    mem.close()
    Path(out).write_text(json.dumps({"errors": errors, "counts": counts}), "utf-8")


@pytest.mark.slow
def test_three_processes_with_three_threads_each_lose_nothing(memory_dir: Path) -> None:
    with MarkdownMemory(memory_dir, embeddings="none") as mem:
        mem.write("counter.md", "# Shared counter\n\ncount: 0\n")
        mem.write("shared.md", shared_text("init", 0))
        mem.sync()
    ctx = multiprocessing.get_context("spawn")
    outs = [memory_dir.parent / f"result-{w}.json" for w in range(PROCESSES)]
    procs = [ctx.Process(target=_worker, args=(str(memory_dir), w, str(outs[w]))) for w in range(PROCESSES)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=100)
    assert [proc.exitcode for proc in procs] == [0] * PROCESSES

    results = [json.loads(out.read_text("utf-8")) for out in outs]
    errors = [e for r in results for e in r["errors"]]
    assert not errors, "\n".join(errors[:5])
    assert not any("locked" in e for e in errors)
    totals: Counter[str] = Counter()
    for r in results:
        totals.update(r["counts"])
    assert totals["reads"] == PROCESSES * READS
    assert totals["searches"] == PROCESSES * (APPENDS + READS)

    with MarkdownMemory(memory_dir, embeddings="none") as mem:
        lines = [line for line in mem.get("MEMORY.md").splitlines() if line]
        expected = {f"- process {w} fact {i}: p{w}f{i}tok" for w in range(PROCESSES) for i in range(APPENDS)}
        assert len(lines) == PROCESSES * APPENDS and set(lines) == expected
        for w in range(PROCESSES):  # each process's appends stay in its order
            mine = [line for line in lines if line.startswith(f"- process {w} ")]
            assert mine == [f"- process {w} fact {i}: p{w}f{i}tok" for i in range(APPENDS)]
        assert _count(mem.get("counter.md")) == PROCESSES * INCREMENTS, "a lost update on counter.md"
        final = mem.get("shared.md")
        match = _SHARED_RE.match(final)
        assert match and final == shared_text(match[1], int(match[2]))
        report = mem.verify()
        assert report.ok, report
        for w in range(PROCESSES):
            token = f"p{w}f{APPENDS - 1}tok"
            assert token in mem.search(token)[0].text
    print(f"\nconcurrency: {PROCESSES} processes x 3 threads, {dict(totals)}, verify {report.summary()}")


def test_threads_sharing_one_memory_with_vectors_lose_nothing(memory_dir: Path) -> None:
    writers, per_writer, searchers, per_searcher = 3, 25, 2, 40
    errors: list[str] = []
    # Every note has the same axis vector, so the vector path cannot outrank the one keyword match.
    with MarkdownMemory(memory_dir, embeddings=AxisEmbeddings(["thread", "note"]),
                        config={"embedding": {"retries": 0}}) as mem:

        def write(t: int) -> Callable[[], None]:
            def run() -> None:
                for i in range(per_writer):
                    mem.append(f"- thread {t} note {i}: t{t}n{i}tok", file="daily" if i % 2 else "long_term")
            return run

        def search() -> None:
            for i in range(per_searcher):
                for hit in mem.search(f"thread note t0n{i % per_writer}tok"):
                    assert hit.score == hit.score  # not NaN

        fns = [write(t) for t in range(writers)] + [search] * searchers
        threads = [threading.Thread(target=_guard(errors, fn)) for fn in fns]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors, "\n".join(errors[:3])
        text = mem.get("MEMORY.md") + mem.get("daily")
        for t in range(writers):
            for i in range(per_writer):
                assert text.count(f"t{t}n{i}tok") == 1
        assert all(f"t{t}n{per_writer - 1}tok" in mem.search(f"t{t}n{per_writer - 1}tok")[0].text
                   for t in range(writers))
        chunks, embedded = mem.index.count_chunks()
        assert chunks == embedded > 0
        assert mem.verify(repair=False).consistent


def test_a_keyword_read_interleaved_with_an_index_write_is_not_aborted(tmp_path: Path) -> None:
    """Two threads on one shared connection, made deterministic: a read's rows are taken, a write
    lands, then the read is consumed. FTS5 aborts a half-read query when its table is written on the
    same connection ("query aborted"), so rows must be read whole under the index lock."""
    from langchain_md_memory.index.sqlite import ChunkRow, FileState, MemoryIndex
    from langchain_md_memory.text import index_terms
    from langchain_md_memory.types import ChunkRecord

    def row(path: str, i: int, text: str) -> ChunkRow:
        record = ChunkRecord(f"{path}:{i}", path, i, i, "", text, f"h{i}", "evergreen", 0.0)
        return ChunkRow(record, f"e{path}{i}", index_terms(text))

    idx = MemoryIndex.open(tmp_path / "index.sqlite")
    try:
        idx.replace_file(FileState("a.md", 1, 1, "x"), "evergreen",
                         [row("a.md", i, f"alpha beta gamma word{i}") for i in range(50)])
        pending = idx._db.query("SELECT term, doc FROM chunks_vocab")  # thread A: query started
        idx.replace_file(FileState("b.md", 1, 1, "y"), "evergreen",  # thread B: a sync writes
                         [row("b.md", i, f"delta word{i}") for i in range(50)])
        terms = dict(pending.fetchall())  # thread A: reads its rows
        assert terms["alpha"] == 50 and "delta" not in terms
        assert [r for r, _ in keyword_hits(idx, "delta", 5)]
    finally:
        idx.close()


def test_a_keyword_search_is_one_snapshot_while_another_process_resyncs_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process's sync lands between keyword_search's statements (made deterministic by
    hooking the point between them): the search must still answer from one consistent snapshot."""
    from langchain_md_memory.index.sqlite import ChunkRow, FileState, MemoryIndex
    from langchain_md_memory.text import index_terms
    from langchain_md_memory.types import ChunkRecord

    def rows(version: int) -> list[ChunkRow]:
        out = []
        for i in range(5):
            text = f"fact {i} of version {version}: needle{i}"
            record = ChunkRecord(f"MEMORY.md:{i}", "MEMORY.md", i + 1, i + 1, "", text, f"h{version}{i}",
                                 "evergreen", 0.0)
            out.append(ChunkRow(record, f"e{version}{i}", index_terms(text)))
        # Version 2 is written in the other order: SQLite reuses the freed rowids, so a rowid found
        # in the old snapshot names a different chunk in the new one.
        return out if version == 1 else out[::-1]

    db = tmp_path / "index.sqlite"
    mine, theirs = MemoryIndex.open(db), MemoryIndex.open(db)  # two processes' connections
    try:
        mine.replace_file(FileState("MEMORY.md", 1, 1, "v1"), "evergreen", rows(1))
        real_stats = mine._postings.corpus_stats
        resyncs: list[tuple[int, int]] = []

        def stats_after_a_foreign_resync() -> tuple[int, float]:
            if not resyncs:  # the other process rewrites MEMORY.md's chunks: new rowids, old ones gone
                resyncs.append(theirs.replace_file(FileState("MEMORY.md", 2, 2, "v2"), "evergreen", rows(2)))
            return real_stats()

        monkeypatch.setattr(mine._postings, "corpus_stats", stats_after_a_foreign_resync)
        hits = keyword_hits(mine, "needle3", 5)
        assert resyncs, "the hook did not run between the statements"
        assert [h.text for h, _ in hits] == ["fact 3 of version 1: needle3"]
        assert [h.text for h, _ in keyword_hits(mine, "needle3", 5)] == ["fact 3 of version 2: needle3"]
    finally:
        mine.close()
        theirs.close()


def test_a_vector_search_is_one_snapshot_while_another_process_resyncs_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import numpy as np

    from langchain_md_memory.index.sqlite import ChunkRow, FileState, MemoryIndex
    from langchain_md_memory.types import ChunkRecord

    def rows(version: int) -> list[ChunkRow]:
        out = []
        for i in range(4):
            record = ChunkRecord(f"MEMORY.md:{i}", "MEMORY.md", i + 1, i + 1, "", f"v{version} axis {i}",
                                 f"h{version}{i}", "evergreen", 0.0)
            out.append(ChunkRow(record, f"e{version}{i}", f"axis {i}", np.eye(4, dtype=np.float32)[i]))
        return out if version == 1 else out[::-1]

    db = tmp_path / "index.sqlite"
    mine, theirs = MemoryIndex.open(db), MemoryIndex.open(db)
    try:
        mine.replace_file(FileState("MEMORY.md", 1, 1, "v1"), "evergreen", rows(1))
        real_matrix = mine._vector_matrix
        resyncs: list[tuple[int, int]] = []

        def matrix_then_a_foreign_resync() -> object:
            matrix = real_matrix()
            if not resyncs:
                resyncs.append(theirs.replace_file(FileState("MEMORY.md", 2, 2, "v2"), "evergreen", rows(2)))
            return matrix

        monkeypatch.setattr(mine, "_vector_matrix", matrix_then_a_foreign_resync)
        top = mine.vector_search(np.eye(4, dtype=np.float32)[2], 1).hits
        assert resyncs
        assert [(r.text, round(s, 3)) for r, s in top] == [("v1 axis 2", 1.0)]
    finally:
        mine.close()
        theirs.close()


def test_searches_keep_answering_while_another_thread_rebuilds_the_index(memory_dir: Path) -> None:
    rebuilds, searchers, per_searcher = 6, 3, 40
    errors: list[str] = []
    with MarkdownMemory(memory_dir, embeddings="none") as mem:
        for i in range(20):
            mem.write(f"topic{i}.md", f"# Topic {i}\n\nunique word topic{i}word here\n")
        mem.sync()

        def rebuild() -> None:
            for _ in range(rebuilds):
                mem.rebuild()

        def search(s: int) -> Callable[[], None]:
            def run() -> None:
                for i in range(per_searcher):
                    word = f"topic{(s * 7 + i) % 20}word"
                    hits = mem.search(word)
                    if not hits or word not in hits[0].text:
                        errors.append(f"{word}: {[h.text for h in hits][:1]}")
            return run

        threads = [threading.Thread(target=_guard(errors, fn)) for fn in [rebuild] + [search(s) for s in
                                                                                      range(searchers)]]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors, "\n".join(errors[:3])
        assert mem.status()["index_fallback"] is None
        assert mem.verify(repair=False).consistent
