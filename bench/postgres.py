"""``python -m bench.postgres``: many tenants in one PostgreSQL, against the SQLite backend on the same data.

Builds ``--tenants`` synthetic memories of ``--chunks`` chunks each (the same
generator as ``python -m bench``, one seed per tenant), moves each into its own
tenant with ``migrate`` and indexes it there (``sync``, which ends by building
the tenant's HNSW graphs), with the fixed hashing embedding and the default
config: ingest chunks/s. Then, on tenant 0 and on the same Markdown indexed by
SQLite, query by query and taking turns: search p50/p95 of both backends; the
vector pool's top 24 through the tenant's HNSW graphs (``auto`` and ``hnsw``)
against an exact scan; and the throughput of ``--processes`` processes
searching random tenants at once. ``wall_s`` is the whole run's time.

Without ``--postgres URL`` it starts PostgreSQL 16 + pgvector from the
``pgserver`` package (in the test dependency group) in the work folder. Nothing
here asserts a number.

Example::

    python -m bench.postgres --tenants 100 --chunks 10000     # 1M chunks, the issue's size
    python -m bench.postgres --tenants 4 --chunks 2000         # a quick look
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from langchain_md_memory import MarkdownMemory, MemoryConfig
from langchain_md_memory.files.store import MarkdownStore
from langchain_md_memory.files.transfer import migrate

from .synthetic import HashingEmbeddings, Layout, make_queries, write_memory
from .timing import summarize

__all__ = ["main"]

POOL = 24
"""Candidates asked of each path, as the default config asks (``candidate_multiplier * max_results``)."""


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _timed(fn: Callable[[str], object], arg: str) -> float:
    t0 = time.perf_counter()
    fn(arg)
    return (time.perf_counter() - t0) * 1000


def tenant_name(i: int) -> str:
    """The tenant holding synthetic memory ``i``."""
    return f"t{i:04d}"


def _open(url: str, tenant: str, emb: HashingEmbeddings, **kw: Any) -> MarkdownMemory:
    return MarkdownMemory.from_postgres(url, tenant=tenant, embeddings=emb, config=MemoryConfig(), **kw)


def ingest(url: str, layouts: Sequence[Layout], emb: HashingEmbeddings) -> dict[str, Any]:
    """Move each memory into its tenant and index it there; chunks per second, first and last apart."""
    per_tenant: list[dict[str, float]] = []
    for i, layout in enumerate(layouts):
        with _open(url, tenant_name(i), emb) as mem:
            t0 = time.perf_counter()
            migrate(MarkdownStore(layout.root), mem.store, overwrite=True)
            moved = time.perf_counter() - t0
            mem.sync()
            total = time.perf_counter() - t0
            chunks, embedded = mem.index.count_chunks()
        per_tenant.append({"chunks": chunks, "embedded": embedded, "documents_s": moved, "total_s": total})
        if i % 10 == 0 or i == len(layouts) - 1:
            _log(f"  tenant {i + 1}/{len(layouts)}: {chunks} chunks in {total:.1f} s")
    total_chunks = int(sum(t["chunks"] for t in per_tenant))
    seconds = sum(t["total_s"] for t in per_tenant)
    tail = per_tenant[-max(1, len(per_tenant) // 10):]
    return {
        "tenants": len(per_tenant),
        "chunks": total_chunks,
        "seconds": round(seconds, 1),
        "chunks_per_s": round(total_chunks / seconds),
        "first_tenant_chunks_per_s": round(per_tenant[0]["chunks"] / per_tenant[0]["total_s"]),
        "last_tenths_chunks_per_s": round(sum(t["chunks"] for t in tail) / sum(t["total_s"] for t in tail)),
        "documents_share": round(sum(t["documents_s"] for t in per_tenant) / seconds, 3),
    }


def _overlap(a: Sequence[Any], b: Sequence[Any]) -> float:
    ids_a, ids_b = {r.id for r, _ in a}, {r.id for r, _ in b}
    return len(ids_a & ids_b) / max(len(ids_b), 1)


def compare(url: str, layout: Layout, emb: HashingEmbeddings, queries: int) -> dict[str, Any]:
    """Tenant 0 against SQLite on the same Markdown (default config: ``vector_search="auto"``)."""
    qs = make_queries(layout, queries)
    times: dict[str, list[float]] = {"sqlite": [], "postgres": []}
    with MarkdownMemory(layout.root, embeddings=emb, config=MemoryConfig()) as lite, \
            _open(url, tenant_name(0), emb) as pg:
        lite.sync()
        for q in qs[:3]:  # warm caches and pools, as a long-running agent has them
            lite.search(q)
            pg.search(q)
        for i, q in enumerate(qs):
            order = (("sqlite", lite), ("postgres", pg))[:: 1 if i % 2 else -1]
            for name, mem in order:
                times[name].append(_timed(mem.search, q))
        out: dict[str, Any] = {name: summarize(ms) for name, ms in times.items()}
        out["postgres_vector_search"] = pg.index.vector_mode  # type: ignore[attr-defined]
        out["hnsw_min_rows"] = pg.index.hnsw_min_rows  # type: ignore[attr-defined]
        out["pgvector"] = pg.index.pgvector_version  # type: ignore[attr-defined]
    out["p50_ratio_postgres_over_sqlite"] = round(out["postgres"]["p50_ms"] / out["sqlite"]["p50_ms"], 2)
    return out


def agreement(url: str, emb: HashingEmbeddings, queries: list[str]) -> dict[str, Any]:
    """Tenant 0's vector pool (top 24) through ``auto`` and through ``hnsw``, each against ``exact``.

    ``auto`` searches a script group through the tenant's HNSW graph once the group holds
    ``HNSW_MIN_ROWS`` vectors; ``hnsw`` searches every group through its graph (opening it builds the
    graphs of the smaller groups, as ``vector_search="hnsw"`` does). Also the time of a vector recall.
    """
    out: dict[str, Any] = {}
    with _open(url, tenant_name(0), emb, vector_search="exact") as exact:
        exact.sync()
        vectors = [np.asarray(emb.embed_query(q), dtype=np.float32) for q in queries]
        truth = []
        ms: list[float] = []
        for v in vectors:
            t0 = time.perf_counter()
            truth.append(exact.index.vector_search(v, POOL).hits)
            ms.append((time.perf_counter() - t0) * 1000)
        out["exact_vector_recall_ms_p50"] = round(float(np.median(ms)), 1)
        for mode in ("auto", "hnsw"):
            with _open(url, tenant_name(0), emb, vector_search=mode) as mem:
                mem.sync()  # builds the graphs this mode calls for
                agree, ms, short = [], [], 0
                for v, want in zip(vectors, truth, strict=True):
                    t0 = time.perf_counter()
                    got = mem.index.vector_search(v, POOL).hits
                    ms.append((time.perf_counter() - t0) * 1000)
                    short += len(got) < len(want)
                    agree.append(_overlap(got, want))
            out[f"{mode}_top24_agreement"] = round(float(np.mean(agree)), 3)
            out[f"{mode}_worst_query_agreement"] = round(float(np.min(agree)), 3)
            out[f"{mode}_vector_recall_ms_p50"] = round(float(np.median(ms)), 1)
            out[f"{mode}_short_answers"] = short
    out["queries"] = len(queries)
    return out


def graphs(url: str) -> dict[str, Any]:
    """How many tenant HNSW graphs the database holds, and their size."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT count(*), coalesce(sum(pg_relation_size(indexname::regclass)), 0) "
                           "FROM pg_indexes WHERE tablename = 'md_memory_chunks' "
                           "AND starts_with(indexname, 'md_memory_hnsw_')").fetchone()
    assert row is not None
    return {"graphs": int(row[0]), "graph_mb": round(int(row[1]) / 2**20, 1)}


def _searcher(url: str, tenants: int, seconds: float, seed: int, queries: list[str],
              done: Any) -> None:
    from psycopg_pool import ConnectionPool

    rng = random.Random(seed)
    emb = HashingEmbeddings()
    opened: dict[int, MarkdownMemory] = {}
    count = 0
    with ConnectionPool(url, min_size=1, max_size=1, open=True) as pool:  # one connection per process
        try:
            deadline = time.perf_counter() + seconds
            while time.perf_counter() < deadline:
                t = rng.randrange(tenants)
                mem = opened.get(t)
                if mem is None:
                    mem = opened[t] = _open(pool, tenant_name(t), emb)  # type: ignore[arg-type]
                mem.search(rng.choice(queries))
                count += 1
        finally:
            for mem in opened.values():
                mem.close()
    done.put(count)


def throughput(url: str, tenants: int, processes: int, seconds: float, queries: list[str]) -> dict[str, Any]:
    """Searches per second of ``processes`` processes, each searching random tenants for ``seconds``."""
    ctx = multiprocessing.get_context("spawn")
    out: dict[str, Any] = {}
    for n in sorted({1, processes}):
        done = ctx.Queue()
        workers = [ctx.Process(target=_searcher, args=(url, tenants, seconds, i, queries, done))
                   for i in range(n)]
        for w in workers:
            w.start()
        counts = [done.get(timeout=seconds + 600) for _ in workers]
        for w in workers:
            w.join()
        out[f"{n}_processes_searches_per_s"] = round(sum(counts) / seconds, 1)
    return out


def _server(workdir: Path) -> tuple[str, Any]:
    import pgserver

    server = pgserver.get_server(str(workdir / "pgdata"), cleanup_mode="stop")  # type: ignore[attr-defined]
    return server.get_uri(), server


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point of ``python -m bench.postgres``."""
    parser = argparse.ArgumentParser(prog="python -m bench.postgres", description=__doc__.splitlines()[0])
    parser.add_argument("--tenants", type=int, default=100)
    parser.add_argument("--chunks", type=int, default=10_000, help="chunks per tenant")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=20.0, help="how long the concurrent searchers run")
    parser.add_argument("--postgres", metavar="URL", help="a server to use (default: start pgserver)")
    parser.add_argument("--workdir", help="where to write the Markdown (default: a temp folder, removed)")
    parser.add_argument("--json", dest="json_path", help="also write the JSON result here")
    args = parser.parse_args(argv)
    result: dict[str, Any] = {"tenants": args.tenants, "chunks_per_tenant": args.chunks}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="md-memory-pg-bench-", dir=args.workdir) as tmp:
        work = Path(tmp)
        url, server = (args.postgres, None) if args.postgres else _server(work)
        try:
            _log(f"writing {args.tenants} memories of {args.chunks:,} chunks ...")
            layouts = [write_memory(work / "md" / tenant_name(i), args.chunks, seed=1000 + i)
                       for i in range(args.tenants)]
            emb = HashingEmbeddings()
            _log("ingesting ...")
            result["ingest"] = ingest(url, layouts, emb)
            _log("searching tenant 0 against SQLite ...")
            result["search"] = compare(url, layouts[0], emb, args.queries)
            result["ingest"].update(graphs(url))
            _log("HNSW against exact on tenant 0 ...")
            result["hnsw_tenant_0"] = agreement(url, emb, make_queries(layouts[0], args.queries, seed=23))
            _log(f"{args.processes} processes searching ...")
            result["concurrent"] = throughput(url, args.tenants, args.processes, args.seconds,
                                              make_queries(layouts[0], 50))
        finally:
            if server is not None:
                server.cleanup()
    result["wall_s"] = round(time.perf_counter() - started)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json_path:
        Path(args.json_path).write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
