"""The benchmark: build synthetic memories through :class:`MarkdownMemory`, time sync and search.

Run from the repository root::

    python -m bench --quick                  # CI smoke: 1k and 12k chunks, few queries
    python -m bench                          # 1k, 10k, 100k through the facade + matrix-only 1M
    python -m bench --sizes 1000,50000 --json out.json
    python -m bench --sizes 100000 --sections-per-file 50,5   # 2,000 files, then 20,000 files
    python -m bench --mixes                  # query mixes a user has at 12k and 100k (bench.mixes)

Every speed is reported next to baselines measured in the same run on the same
vectors (see :mod:`bench.baselines`), as ratios. Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from langchain_md_memory import MarkdownMemory, MemoryConfig
from langchain_md_memory.index.sqlite.handle import IndexHandle
from langchain_md_memory.index.sqlite.vectors import VectorMatrix
from langchain_md_memory.sync.indexer import Indexer

from .baselines import (
    NumpyFloor,
    SqliteVecKNN,
    read_vectors,
    spec_linear_scan,
    spec_linear_scan_numpy,
    sqlite_vec_status,
)
from .keyword_baselines import (
    agreement,
    bounded_keyword_before,
    exhaustive_keyword,
    index_keyword,
    top_rowids,
)
from .mixes import FILES, bench_mixes, mixes_table, mixes_targets, probe_mixes
from .synthetic import DIM, HashingEmbeddings, edit_one_paragraph, make_queries, write_memory
from .timing import summarize

__all__ = ["bench_matrix", "bench_size", "main"]

QUICK_SIZES = (1_000, 12_000)
MIXES_SIZES = (12_000, 100_000)
FULL_SIZES = (1_000, 10_000, 100_000)
FULL_MATRIX_SIZES = (1_000_000,)
# Sections (chunks) per daily file: 50 is the long-standing layout (100k chunks in 2,000 files); 5 puts
# the same chunks in ten times as many files (20,000 at 100k), past every per-file cap (the freshness walk).
QUICK_LAYOUTS = (50,)
FULL_LAYOUTS = (50, 5)
_PROBE_CONFIG: dict[str, Any] = {}  # the defaults: every cost a user pays


def _rss_mb() -> float:
    """Current resident set size (Linux ``/proc``), else the peak."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return _peak_rss_mb()


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _timed(fn: Callable[..., object], *args: Any) -> float:
    t0 = time.perf_counter()
    fn(*args)
    return (time.perf_counter() - t0) * 1000


def _stats(ms: Sequence[float]) -> dict[str, float]:
    return summarize(ms, digits=3)


def _ratio(a: float, b: float) -> float | None:
    return round(a / b, 2) if b > 0 else None


def _overlap(a: Sequence[tuple[int, float]], b: Sequence[tuple[int, float]]) -> float:
    top_a, top_b = {r for r, _ in a}, {r for r, _ in b}
    return len(top_a & top_b) / max(len(top_a), 1)


def _disk_mb(path: str) -> float:
    return sum(os.path.getsize(path + s) for s in ("", "-wal", "-shm") if os.path.exists(path + s)) / 1e6


def probe(root: str) -> dict[str, float]:
    """In a fresh process: RSS after opening a memory and after its first hybrid search."""
    base = _rss_mb()
    t0 = time.perf_counter()
    mem = MarkdownMemory(root, embeddings=HashingEmbeddings(), config=_PROBE_CONFIG)
    opened = _rss_mb()
    open_ms = (time.perf_counter() - t0) * 1000
    first_ms = _timed(lambda: mem.search("what did i decide about the bond ladder"))
    searched = _rss_mb()
    mem.close()
    return {
        "rss_start_mb": round(base, 1),
        "rss_after_open_mb": round(opened, 1),
        "rss_after_first_search_mb": round(searched, 1),
        "peak_rss_mb": round(_peak_rss_mb(), 1),
        "open_ms": round(open_ms, 1),
        "first_search_ms": round(first_ms, 1),
    }


def _run_probe(root: Path) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "bench", "--probe", str(root)]
    done = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
        check=False,
        timeout=1800,
    )
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "probe failed"}
    return dict(json.loads(done.stdout))


def bench_size(n: int, workdir: Path, *, queries: int, spec_queries: int,
               sections_per_file: int = 50) -> dict[str, Any]:
    """Everything measured for one synthetic memory of ``n`` chunks, ``sections_per_file`` per daily file."""
    root = workdir / f"mem-{n}-{sections_per_file}"
    t0 = time.perf_counter()
    layout = write_memory(root, n, sections_per_file=sections_per_file)
    write_s = time.perf_counter() - t0
    emb = HashingEmbeddings()
    # The default config, freshness walk included: what a user's search costs without a watcher.
    cfg = MemoryConfig()
    out: dict[str, Any] = {
        "chunks": n,
        "sections_per_file": sections_per_file,
        "files": len(layout.files),
        "markdown_mb": round(layout.markdown_bytes / 1e6, 2),
        "write_markdown_s": round(write_s, 2),
    }
    with MarkdownMemory(root, embeddings=emb, config=cfg) as mem:
        t0 = time.perf_counter()
        built = mem.sync()
        build_s = time.perf_counter() - t0
        chunks, embedded = mem.index.count_chunks()
        out.update(
            build_s=round(build_s, 2),
            chunks_per_s=round(chunks / build_s),
            indexed_chunks=chunks,
            embedded_chunks=embedded,
            build_texts_embedded=built.embedded,
        )
        out["first_search_ms"] = round(_timed(lambda: mem.search("bond ladder")), 1)

        before = emb.documents_embedded
        edit_one_paragraph(layout)
        t0 = time.perf_counter()
        edited = mem.sync()
        out["edit_sync"] = {
            "ms": round((time.perf_counter() - t0) * 1000, 1),
            "texts_embedded": emb.documents_embedded - before,
            "chunks_rewritten": edited.chunks_added,
            "files_changed": edited.files_changed,
        }
        before = emb.documents_embedded
        t0 = time.perf_counter()
        forced = mem.sync(force=True)
        out["forced_sync"] = {
            "s": round(time.perf_counter() - t0, 2),
            "texts_embedded": emb.documents_embedded - before,
            "from_cache": forced.cached,
        }

        qs = make_queries(layout, queries)
        qvecs = [emb.embed_array(q) for q in qs]
        pool = cfg.ranking.candidate_multiplier * cfg.max_results
        index_path = mem.index.path
        for q in qs[:3]:  # warm caches, as a long-running agent would have them
            mem.search(q)
        # The same memory opened a second time with its watcher running (a healthy watcher lets a
        # search skip the freshness walk); searched in the same loop as the unwatched one.
        with MarkdownMemory(root, embeddings=emb, config=cfg, watch=True) as watched:
            for q in qs[:3]:
                watched.search(q)
            search, baselines = _interleaved(
                mem, index_path, workdir / f"vec-{n}.sqlite", qs, qvecs, pool, spec_queries, watched
            )
            search["watcher_healthy"] = bool(watched.status()["watcher_healthy"])
        # The freshness walk a search without a watcher makes; timed alone too.
        checker = Indexer(mem.store, IndexHandle.of(mem.index), None, MemoryConfig())
        checker.sync()
        search["stat_check_default"] = _stats(
            [_timed(checker.sync_if_needed) for _ in range(max(5, queries // 4))]
        )
        search["hybrid_plus_stat_check_p50_ms"] = round(
            search["hybrid"]["p50_ms"] + search["stat_check_default"]["p50_ms"], 3
        )
        out["search"] = search
        out["text_mb"] = round(
            mem.index.read("SELECT sum(length(text)) FROM chunks").fetchone()[0] / 1e6, 1
        )

    out["index_disk_mb"] = round(_disk_mb(index_path), 1)
    out["matrix_mb"] = round(n * DIM * 4 / 1e6, 1)
    out["probe"] = _run_probe(root)
    out["baselines"] = b = baselines
    hybrid = search["hybrid"]["p50_ms"]
    out["ratios"] = {
        "a_over_hybrid": _ratio(b["a_spec_scan"]["p50_ms"], hybrid),
        "a_numpy_over_hybrid": _ratio(b["a_spec_scan_numpy"]["p50_ms"], hybrid),
        "a_over_vector_index": _ratio(b["a_spec_scan"]["p50_ms"], search["vector_index"]["p50_ms"]),
        "hybrid_over_b": _ratio(hybrid, b["b_numpy"]["p50_ms"]),
        "hybrid_watched_over_b": _ratio(search["hybrid_watched"]["p50_ms"], b["b_numpy"]["p50_ms"]),
        "vector_index_over_b": _ratio(search["vector_index"]["p50_ms"], b["b_numpy"]["p50_ms"]),
        "c_over_b": _ratio(b["c_sqlite_vec"]["p50_ms"], b["b_numpy"]["p50_ms"])
        if "p50_ms" in b["c_sqlite_vec"]
        else None,
        "keyword_index_over_before": _ratio(
            search["keyword_index"]["p50_ms"], search["keyword_before"]["p50_ms"]
        ),
        "keyword_index_over_before_mean": _ratio(
            search["keyword_index"]["mean_ms"], search["keyword_before"]["mean_ms"]
        ),
    }
    out["peak_rss_mb_so_far"] = round(_peak_rss_mb(), 1)
    return out


def _interleaved(
    mem: MarkdownMemory,
    index_path: str,
    vec_path: Path,
    qs: list[str],
    qvecs: list[np.ndarray],
    pool: int,
    spec_queries: int,
    watched: MarkdownMemory,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Time every path and baseline query by query, so load from other processes hits all alike."""
    client = mem.embedder
    assert client is not None
    ids, matrix = read_vectors(index_path)
    floor = NumpyFloor.from_arrays(ids, matrix)
    reason = sqlite_vec_status()
    knn: SqliteVecKNN | None = None
    vec_build_s = 0.0
    if reason is None:
        vec_path.unlink(missing_ok=True)
        t0 = time.perf_counter()
        knn = SqliteVecKNN(str(vec_path), ids, matrix)
        vec_build_s = time.perf_counter() - t0
    names = (
        "keyword_index",
        "keyword_before",
        "keyword_exhaustive",
        "vector_index",
        "embed_query",
        "vector_with_embed",
        "hybrid",
        "hybrid_watched",
        "a",
        "a_np",
        "b",
        "c",
    )
    times: dict[str, list[float]] = {name: [] for name in names}
    agree: dict[str, list[float]] = {"a": [], "b": [], "c": [], "keyword_index": [], "keyword_before": []}
    keyword_paths: dict[str, Callable[[Any, str, int], list[Any]]] = {
        "keyword_index": index_keyword,
        "keyword_before": bounded_keyword_before,
    }
    walks = _walk_times(mem)
    for i, (q, v) in enumerate(zip(qs, qvecs, strict=True)):
        # Ours and the recall it replaced take turns going first: the first pays for cold pages.
        kw_order = ("keyword_index", "keyword_before") if i % 2 else ("keyword_before", "keyword_index")
        for name in kw_order:
            times[name].append(_timed(keyword_paths[name], mem.index, q, pool))
        times["keyword_exhaustive"].append(_timed(exhaustive_keyword, mem.index, q, pool))
        times["vector_index"].append(_timed(mem.index.vector_search, v, pool))
        times["embed_query"].append(_timed(client.embed_query, q))
        times["vector_with_embed"].append(_timed(_vector_with_embed, mem, q, pool))
        # Unwatched and watched take turns going first. A periodic walk the unwatched search found due
        # starts once it has answered; it is waited for here, untimed, so it runs into no other
        # measurement (the other memory's search, the floor), and timed on its own (below).
        for name, memory in (("hybrid", mem), ("hybrid_watched", watched))[:: 1 if i % 2 else -1]:
            times[name].append(_timed(memory.search, q))
            memory._indexer.freshness.wait()
        times["b"].append(_timed(floor.top_k, v, pool))
        # Exactness against the baselines: plain cosines (a two-script memory's search offsets them).
        ours = mem.index.nearest(v, pool)
        agree["b"].append(_overlap(floor.top_k(v, pool), ours))
        exact = {rowid for _, rowid in exhaustive_keyword(mem.index, q, pool)}
        for name in ("keyword_index", "keyword_before"):
            found = top_rowids(mem.index, keyword_paths[name](mem.index, q, pool))
            agree[name].append(agreement(found, exact))
        if knn is not None:
            times["c"].append(_timed(knn.top_k, v, pool))
            agree["c"].append(_overlap(knn.top_k(v, pool), ours))
        if i < spec_queries:
            times["a"].append(_timed(spec_linear_scan, index_path, v, pool))
            times["a_np"].append(_timed(spec_linear_scan_numpy, index_path, v, pool))
            agree["a"].append(_overlap(spec_linear_scan(index_path, v, pool), ours))
    if knn is not None:
        knn.close()
        vec_path.unlink(missing_ok=True)
    search = {name: _stats(times[name]) for name in names[:8]}
    search["hybrid"]["background_walks"] = {"count": len(walks), "mean_ms": round(float(np.mean(walks)), 2)
                                            if walks else None}
    for name in ("keyword_index", "keyword_before"):
        search[name]["agreement_with_exhaustive"] = round(float(np.mean(agree[name])), 3)
    baselines: dict[str, Any] = {
        "a_spec_scan": _stats(times["a"]),
        "a_spec_scan_numpy": _stats(times["a_np"]),
        "b_numpy": _stats(times["b"]),
    }
    baselines["c_sqlite_vec"] = (
        {"skipped": reason}
        if knn is None
        else {**_stats(times["c"]), "build_s": round(vec_build_s, 2), "version": knn.version}
    )
    for key, name in (("a_spec_scan", "a"), ("b_numpy", "b"), ("c_sqlite_vec", "c")):
        if agree[name]:
            baselines[key]["agreement_with_ours"] = round(float(np.mean(agree[name])), 3)
    return search, baselines


def _walk_times(mem: MarkdownMemory) -> list[float]:
    """The durations (ms) of the folder walks ``mem`` makes from now on, in a list filled as they happen."""
    check, times = mem._indexer.freshness, []
    walk = check.walk

    def timed() -> dict[str, tuple[int, int]]:
        started = time.perf_counter()
        try:
            return walk()
        finally:
            times.append((time.perf_counter() - started) * 1000)

    check.walk = timed  # type: ignore[method-assign]
    return times


def _vector_with_embed(mem: MarkdownMemory, query: str, pool: int) -> list[Any]:
    """Vector recall as the facade does it: embed the query through the client, then search the matrix."""
    assert mem.embedder is not None
    return mem.index.vector_search(mem.embedder.embed_query(query), pool).hits


def _sqlite_vec(
    path: Path,
    ids: np.ndarray,
    matrix: np.ndarray,
    qvecs: list[np.ndarray],
    pool: int,
    ours: list[list[Any]] | None,
) -> dict[str, Any]:
    reason = sqlite_vec_status()
    if reason is not None:
        return {"skipped": reason}
    path.unlink(missing_ok=True)
    t0 = time.perf_counter()
    knn = SqliteVecKNN(str(path), ids, matrix)
    build_s = time.perf_counter() - t0
    try:
        out: dict[str, Any] = _stats([_timed(knn.top_k, v, pool) for v in qvecs])
        out.update(build_s=round(build_s, 2), version=knn.version)
        if ours is not None:
            out["agreement_with_ours"] = round(
                float(np.mean([_overlap(knn.top_k(v, pool), o) for v, o in zip(qvecs, ours, strict=True)])), 3
            )
    finally:
        knn.close()
        path.unlink(missing_ok=True)
    return out


def bench_matrix(n: int, workdir: Path, *, queries: int, with_vec: bool) -> dict[str, Any]:
    """Vector search alone at ``n`` random unit vectors: the index's matrix vs (b) and (c)."""
    rng = np.random.default_rng(3)
    matrix = rng.standard_normal((n, DIM), dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    ids = np.arange(1, n + 1, dtype=np.int64)
    qvecs = [rng.standard_normal(DIM).astype(np.float32) for _ in range(queries)]
    ours = VectorMatrix()
    t0 = time.perf_counter()
    for start in range(0, n, 50):  # one daily file's chunks at a time, as sync adds them
        ours.add(list(range(start + 1, min(start + 51, n + 1))), list(matrix[start : start + 50]))
    add_s = time.perf_counter() - t0
    floor = NumpyFloor(ids, matrix)
    top = [ours.top_k(v, 24) for v in qvecs]
    out: dict[str, Any] = {
        "chunks": n,
        "matrix_mb": round(n * DIM * 4 / 1e6, 1),
        "incremental_add_s": round(add_s, 2),
        "vector_index": _stats([_timed(ours.top_k, v, 24) for v in qvecs]),
        "b_numpy": _stats([_timed(floor.top_k, v, 24) for v in qvecs]),
    }
    out["c_sqlite_vec"] = (
        _sqlite_vec(workdir / f"vec-matrix-{n}.sqlite", ids, matrix, qvecs, 24, top)
        if with_vec
        else {"skipped": "not requested"}
    )
    out["vector_index_over_b"] = _ratio(out["vector_index"]["p50_ms"], out["b_numpy"]["p50_ms"])
    if "p50_ms" in out["c_sqlite_vec"]:
        out["c_over_b"] = _ratio(out["c_sqlite_vec"]["p50_ms"], out["b_numpy"]["p50_ms"])
    out["peak_rss_mb_so_far"] = round(_peak_rss_mb(), 1)
    return out


def machine() -> dict[str, Any]:
    """Where the numbers came from."""
    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "sqlite": sqlite3.sqlite_version,
        "nproc": os.cpu_count(),
        "platform": platform.platform(),
        "processor": _cpu_model(),
        "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE"),
        "sqlite_vec": sqlite_vec_status() or "available",
    }


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _targets(sizes: list[dict[str, Any]]) -> dict[str, Any]:
    def near(n: int) -> dict[str, Any] | None:
        close = [s for s in sizes if 0.5 * n <= s["chunks"] <= 2 * n]
        return min(close, key=lambda s: abs(s["chunks"] - n)) if close else None

    out: dict[str, Any] = {}
    small, large = near(12_000), near(100_000)
    if small is not None:
        r = small["ratios"]["a_over_hybrid"]
        out["hybrid_20x_faster_than_a_at_12k"] = {
            "chunks": small["chunks"],
            "ratio": r,
            "met": r is not None and r >= 20,
        }
    for big in (s for s in sizes if 50_000 <= s["chunks"] <= 200_000):
        for key, label in (("hybrid_over_b", "no_watcher"), ("hybrid_watched_over_b", "watcher")):
            r = big["ratios"][key]
            out[f"hybrid_p50_within_3x_of_b_at_100k_{big['files']}_files_{label}"] = {
                "chunks": big["chunks"],
                "files": big["files"],
                "ratio": r,
                "met": r is not None and r <= 3,
            }
    if large is not None:
        agreement = large["search"]["keyword_index"]["agreement_with_exhaustive"]
        out["keyword_top24_agrees_with_exhaustive_bm25_at_100k"] = {
            "chunks": large["chunks"],
            "agreement": agreement,
            "before": large["search"]["keyword_before"]["agreement_with_exhaustive"],
            "met": agreement == 1.0,
        }
    edits = [s["edit_sync"]["texts_embedded"] for s in sizes]
    forced = [s["forced_sync"]["texts_embedded"] for s in sizes]
    out["edit_reembeds_at_most_3"] = {"texts_embedded": edits, "met": all(e <= 3 for e in edits)}
    out["forced_resync_embeds_0"] = {"texts_embedded": forced, "met": all(f == 0 for f in forced)}
    return out


def _table(result: dict[str, Any]) -> str:
    rows = [
        (
            "chunks",
            "files",
            "build s",
            "chunks/s",
            "edit ms (emb)",
            "force s (emb)",
            "kw p50/p95",
            "vec p50/p95",
            "hybrid p50/p95",
            "watched p50",
            "stat chk p50",
            "(a) p50",
            "(a-np) p50",
            "(b) p50",
            "(c) p50",
            "a/hyb",
            "a-np/hyb",
            "hyb/b",
            "watched/b",
            "vec/b",
            "c/b",
            "disk MB",
            "RSS open+1st MB",
        )
    ]
    for s in result["sizes"]:
        se, b, r = s["search"], s["baselines"], s["ratios"]
        c = b["c_sqlite_vec"]
        rows.append(
            (
                f"{s['chunks']:,}",
                f"{s['files']:,}",
                f"{s['build_s']:.1f}",
                f"{s['chunks_per_s']:,}",
                f"{s['edit_sync']['ms']:.0f} ({s['edit_sync']['texts_embedded']})",
                f"{s['forced_sync']['s']:.1f} ({s['forced_sync']['texts_embedded']})",
                f"{se['keyword_index']['p50_ms']:.2f}/{se['keyword_index']['p95_ms']:.2f}",
                f"{se['vector_index']['p50_ms']:.2f}/{se['vector_index']['p95_ms']:.2f}",
                f"{se['hybrid']['p50_ms']:.2f}/{se['hybrid']['p95_ms']:.2f}",
                f"{se['hybrid_watched']['p50_ms']:.2f}",
                f"{se['stat_check_default']['p50_ms']:.2f}",
                f"{b['a_spec_scan']['p50_ms']:.1f}",
                f"{b['a_spec_scan_numpy']['p50_ms']:.1f}",
                f"{b['b_numpy']['p50_ms']:.3f}",
                f"{c['p50_ms']:.2f}" if "p50_ms" in c else "skip",
                str(r["a_over_hybrid"]),
                str(r["a_numpy_over_hybrid"]),
                str(r["hybrid_over_b"]),
                str(r["hybrid_watched_over_b"]),
                str(r["vector_index_over_b"]),
                str(r["c_over_b"]),
                f"{s['index_disk_mb']:.0f}",
                str(s["probe"].get("rss_after_first_search_mb", "?")),
            )
        )
    for m in result["matrix_only"]:
        c = m["c_sqlite_vec"]
        rows.append(
            (
                f"{m['chunks']:,} (matrix only)",
                "-",
                "-",
                "-",
                "-",
                "-",
                "-",
                f"{m['vector_index']['p50_ms']:.2f}/{m['vector_index']['p95_ms']:.2f}",
                "-",
                "-",
                "-",
                "-",
                "-",
                f"{m['b_numpy']['p50_ms']:.3f}",
                f"{c['p50_ms']:.2f}" if "p50_ms" in c else "skip",
                "-",
                "-",
                "-",
                "-",
                str(m["vector_index_over_b"]),
                str(m.get("c_over_b")),
                "-",
                "-",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "| " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) + " |" for row in rows
    ]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point of ``python -m bench``."""
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="CI smoke: 1k and 12k chunks, few queries")
    parser.add_argument("--sizes", help="comma-separated chunk counts built through MarkdownMemory")
    parser.add_argument("--matrix-sizes", help="comma-separated sizes for the vector-search-only run")
    parser.add_argument(
        "--sections-per-file",
        help="comma-separated chunks per daily file (default 50 quick, 50,5 full; 5: ten times the files)",
    )
    parser.add_argument("--queries", type=int, help="queries per size (default 20 quick, 100 full)")
    parser.add_argument("--spec-queries", type=int, help="queries for the slow baseline (a)")
    parser.add_argument("--json", dest="json_path", help="also write the JSON result here")
    parser.add_argument("--workdir", help="where to build the memories (default: a temp folder, removed)")
    parser.add_argument("--mixes", action="store_true",
                        help="query mixes a user has (English, plain, Chinese, identifiers, common words) "
                             "at --sizes (default 12000,100000) in --files files; see bench.mixes")
    parser.add_argument("--files", type=int, default=FILES, help="with --mixes: files per memory")
    parser.add_argument("--vector-dtype", default="float32", choices=("float32", "float16", "int8"),
                        help="with --mixes: MemoryConfig(index={'vector_dtype': ...})")
    parser.add_argument("--probe", help=argparse.SUPPRESS)
    parser.add_argument("--mixes-probe", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.probe:
        print(json.dumps(probe(args.probe)))
        return 0
    if args.mixes_probe:
        spec = json.loads(args.mixes_probe)
        print(json.dumps(probe_mixes(spec["root"], spec["vector_dtype"], spec["queries"])))
        return 0

    def sizes(text: str | None, default: Sequence[int]) -> list[int]:
        return (
            [int(x.replace("_", "")) for x in text.split(",") if x.strip() and int(x.replace("_", ""))]
            if text is not None
            else list(default)
        )

    if args.mixes:
        return _main_mixes(args, sizes(args.sizes, MIXES_SIZES))
    quick = bool(args.quick)
    build_sizes = sizes(args.sizes, QUICK_SIZES if quick else FULL_SIZES)
    matrix_sizes = sizes(args.matrix_sizes, () if quick or args.sizes else FULL_MATRIX_SIZES)
    layouts = sizes(args.sections_per_file, QUICK_LAYOUTS if quick else FULL_LAYOUTS)
    queries = args.queries or (20 if quick else 100)
    spec_queries = args.spec_queries or (3 if quick else 10)
    result: dict[str, Any] = {
        "mode": "quick" if quick else "full",
        "machine": machine(),
        "queries": queries,
        "spec_queries": spec_queries,
        "sizes": [],
        "matrix_only": [],
    }
    with tempfile.TemporaryDirectory(prefix="md-memory-bench-", dir=args.workdir) as tmp:
        for n in build_sizes:
            for per_file in layouts:
                print(f"building {n:,} chunks, {per_file} per file ...", file=sys.stderr, flush=True)
                result["sizes"].append(bench_size(n, Path(tmp), queries=queries,
                                                  spec_queries=min(spec_queries, queries),
                                                  sections_per_file=per_file))
        for n in matrix_sizes:
            print(f"matrix-only search at {n:,} vectors ...", file=sys.stderr, flush=True)
            result["matrix_only"].append(bench_matrix(n, Path(tmp), queries=queries, with_vec=True))
    result["targets"] = _targets(result["sizes"])
    result["peak_rss_mb"] = round(_peak_rss_mb(), 1)
    return _report(_table(result), result, args.json_path)


def _main_mixes(args: argparse.Namespace, build_sizes: list[int]) -> int:
    """``python -m bench --mixes``: :func:`bench.mixes.bench_mixes` at each size; a table, then JSON."""
    result: dict[str, Any] = {"mode": "mixes", "machine": machine(), "sizes": []}
    with tempfile.TemporaryDirectory(prefix="md-memory-bench-", dir=args.workdir) as tmp:
        for n in build_sizes:
            print(f"mixes at {n:,} chunks in {args.files:,} files ({args.vector_dtype}) ...",
                  file=sys.stderr, flush=True)
            spec = 3 if args.spec_queries is None else args.spec_queries
            result["sizes"].append(bench_mixes(n, Path(tmp), files=args.files, per_mix=args.queries or 20,
                                               spec_queries=spec, vector_dtype=args.vector_dtype))
    result["targets"] = mixes_targets(result["sizes"])
    targets = "\n".join(f"- {name}: {'met' if target['met'] else 'NOT met'}"
                         for name, target in result["targets"].items())
    return _report(mixes_table(result["sizes"]) + "\n\n" + targets, result, args.json_path)


def _report(table: str, result: dict[str, Any], json_path: str | None) -> int:
    """Print the table, then the whole result as JSON (also written to ``json_path``)."""
    print(table)
    print()
    text = json.dumps(result, indent=2)
    print(text)
    if json_path:
        Path(json_path).write_text(text + "\n", encoding="utf-8")
    return 0
