"""Compact vector matrices (``vector_dtype``): memory and top-24 agreement at 1M, search time at 100k.

Run from the repository root::

    python -m bench.vectors_compact                 # 1M matrix per dtype + 100k through MemoryIndex
    python -m bench.vectors_compact --million 200000 --index 20000   # smaller, quicker

1M: the matrix is built directly (``VectorMatrix.add``, 50k rows at a time, as sync adds files), not
through an index of 1M chunks: building one through the facade takes minutes per run (bench/RESULTS.md).
Vectors are random unit vectors of the default 384 dimensions, regenerated block by block from fixed
seeds, so the exact float32 answer and the stored vectors for re-scoring are computed without ever
holding a second 1M matrix. Each dtype runs in a fresh process; RSS is that process's ``VmRSS`` after
the build and one search (interpreter and numpy included). Agreement is the mean share of the exact
float32 top 24 found by the compact matrix's candidates re-scored with the float32 vectors, as
``MemoryIndex.vector_search`` does.

100k: one real index file of 100k vectors, opened three times (one per dtype); ``vector_search`` timed
query by query, the dtypes taking turns going first, and reported as ratios to float32 of the same run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from langchain_md_memory.index.sqlite import ChunkRow, FileState, MemoryIndex
from langchain_md_memory.index.sqlite.vectors import RESCORE_FACTOR, VectorMatrix, rescore
from langchain_md_memory.types import ChunkRecord

from .run import _rss_mb
from .synthetic import DIM

__all__ = ["main", "million", "search_times"]

DTYPES = ("float32", "float16", "int8")
_BLOCK = 50_000
_K = 24


def _block(seed: int, b: int, n: int) -> np.ndarray:
    rows = min(_BLOCK, n - b * _BLOCK)
    m = np.random.default_rng([seed, b]).standard_normal((rows, DIM), dtype=np.float32)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    return m


def _queries(seed: int, count: int) -> np.ndarray:
    q = np.random.default_rng([seed, 999_999]).standard_normal((count, DIM), dtype=np.float32)
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def million(dtype: str, n: int, queries: int, seed: int = 3) -> dict[str, Any]:
    """In this process: build an ``n``-row matrix of ``dtype``; RSS and agreement with exact float32."""
    base = _rss_mb()
    matrix = VectorMatrix(dtype)  # type: ignore[arg-type]
    blocks = (n + _BLOCK - 1) // _BLOCK
    t0 = time.perf_counter()
    for b in range(blocks):
        block = _block(seed, b, n)
        start = b * _BLOCK + 1
        for part in range(0, block.shape[0], 5_000):  # sync adds a file at a time: small blocks
            rows = block[part : part + 5_000]
            matrix.add(list(range(start + part, start + part + rows.shape[0])), list(rows))
    build_s = time.perf_counter() - t0
    qs = _queries(seed, queries)
    pool = _K if matrix.exact else _K * RESCORE_FACTOR
    t0 = time.perf_counter()
    candidates = [[rowid for rowid, _ in matrix.top_k(q, pool)] for q in qs]
    search_ms = (time.perf_counter() - t0) * 1000 / queries
    rss = _rss_mb()
    # The exact answer and the candidates' float32 vectors, one block at a time.
    wanted = {rowid for c in candidates for rowid in c}
    stored: dict[int, np.ndarray] = {}
    exact: list[list[tuple[float, int]]] = [[] for _ in range(queries)]
    for b in range(blocks):
        block = _block(seed, b, n)
        start = b * _BLOCK + 1
        scores = qs @ block.T
        for i in range(queries):
            top = np.argpartition(scores[i], -_K)[-_K:]
            merged = exact[i] + [(float(scores[i, j]), start + int(j)) for j in top]
            exact[i] = sorted(merged, reverse=True)[:_K]
        for rowid in wanted:
            if start <= rowid < start + block.shape[0]:
                stored[rowid] = block[rowid - start].copy()
    agree, raw_agree = [], []
    for i, q in enumerate(qs):
        truth = {rowid for _, rowid in exact[i]}
        final = rescore(q, candidates[i], stored, _K)
        agree.append(len(truth & {r for r, _ in final}) / _K)
        raw_agree.append(len(truth & set(candidates[i][:_K])) / _K)
    return {
        "dtype": dtype,
        "chunks": n,
        "rss_before_mb": round(base, 1),
        "rss_after_build_and_search_mb": round(rss, 1),
        "matrix_mb": round(matrix.nbytes() / 1e6, 1),
        "build_s": round(build_s, 1),
        "search_ms_mean": round(search_ms, 1),
        "top24_agreement_rescored": round(float(np.mean(agree)), 4),
        "top24_agreement_without_rescoring": round(float(np.mean(raw_agree)), 4),
        "queries": queries,
    }


def _index_of(path: Path, n: int, seed: int) -> None:
    index = MemoryIndex.open(path)
    try:
        rowid = 0
        for b in range((n + _BLOCK - 1) // _BLOCK):
            block = _block(seed, b, n)
            for f in range(0, block.shape[0], 1000):
                name = f"f{b}-{f}.md"
                rows = []
                for i, vector in enumerate(block[f : f + 1000]):
                    rowid += 1
                    rec = ChunkRecord(f"{name}:{i}", name, i + 1, i + 1, "", f"note {rowid}", f"h{rowid}",
                                      "daily", 0.0)
                    rows.append(ChunkRow(rec, f"e{rowid}", f"note n{rowid}", vector))
                index.replace_file(FileState(name, 1, 1, name), "daily", rows)
    finally:
        index.close()


def search_times(n: int, queries: int, seed: int = 5) -> dict[str, Any]:
    """``vector_search`` per dtype on one real index of ``n`` vectors, interleaved; ratios to float32."""
    with tempfile.TemporaryDirectory(prefix="md-memory-vec-") as tmp:
        path = Path(tmp) / "index.sqlite"
        t0 = time.perf_counter()
        _index_of(path, n, seed)
        build_s = time.perf_counter() - t0
        indexes = {d: MemoryIndex.open(path, vector_dtype=d) for d in DTYPES}  # type: ignore[arg-type]
        try:
            qs = _queries(seed, queries)
            for index in indexes.values():
                index.vector_search(qs[0], _K)  # load the matrix
            times: dict[str, list[float]] = {d: [] for d in DTYPES}
            agree: dict[str, list[float]] = {d: [] for d in DTYPES}
            for i, q in enumerate(qs):
                order = DTYPES[i % 3 :] + DTYPES[: i % 3]
                found: dict[str, set[str]] = {}
                for d in order:
                    t0 = time.perf_counter()
                    hits = indexes[d].vector_search(q, _K).hits
                    times[d].append((time.perf_counter() - t0) * 1000)
                    found[d] = {r.id for r, _ in hits}
                for d in DTYPES:
                    agree[d].append(len(found[d] & found["float32"]) / _K)
        finally:
            for index in indexes.values():
                index.close()
    p50 = {d: float(np.median(times[d])) for d in DTYPES}
    return {
        "chunks": n,
        "index_build_s": round(build_s, 1),
        "queries": queries,
        "p50_ms": {d: round(v, 2) for d, v in p50.items()},
        "p50_over_float32": {d: round(p50[d] / p50["float32"], 2) for d in DTYPES},
        "top24_agreement_with_float32": {d: round(float(np.mean(agree[d])), 4) for d in DTYPES},
    }


def main(argv: list[str] | None = None) -> int:
    """Run both parts and print (and optionally save) JSON."""
    parser = argparse.ArgumentParser(prog="python -m bench.vectors_compact")
    parser.add_argument("--million", type=int, default=1_000_000, help="rows of the matrix-only part")
    parser.add_argument("--index", type=int, default=100_000, help="vectors in the timed index (0: skip)")
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(million(args.child, args.million, args.queries)))
        return 0
    out: dict[str, Any] = {"million": []}
    for dtype in DTYPES:
        cmd = [sys.executable, "-m", "bench.vectors_compact", "--child", dtype,
               "--million", str(args.million), "--queries", str(args.queries)]
        done = subprocess.run(cmd, capture_output=True, text=True, check=True,
                              cwd=Path(__file__).resolve().parent.parent)
        out["million"].append(json.loads(done.stdout))
        print(done.stdout.strip(), flush=True)
    if args.index:
        out["index"] = search_times(args.index, args.queries)
        print(json.dumps(out["index"]), flush=True)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
