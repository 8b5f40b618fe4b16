"""Query mixes a user has, each against the specs' linear scan and the numpy floor in the same run.

The memory is the shape a new user measured in issue 35: daily logs of short sections over a
random 3,000-word vocabulary (one section in eight Chinese, one in twenty naming a code
identifier), 2,000 files at every size, searched with the default config (cross-language on)
and the free hashing embedder. Five mixes of queries:

- ``english``: English whose words have dictionary translations (``nvidia risk budget``): the
  memory holds Chinese, so keyword recall also searches the translations;
- ``plain``: made-up words no dictionary knows (``kaloru mine tashi``);
- ``chinese``: Chinese questions (``退休目标年龄是多少``);
- ``identifiers``: code identifiers the memory names (``svc-kalo-v2``, ``KALO_RETRIES``);
- ``common``: the memory's most frequent content words, and one query in six of stop words alone.

Per query, interleaved so load from other processes hits all alike: the search (no watcher, and
the same memory opened with its watcher) and the numpy floor (b); after a mix's queries, the
specs' linear scan (a) and its kinder numpy-per-row port (a-np) of its first ``spec_queries``
(each reads the whole index file: run between searches, they left the next one cold). Before the
first mix, ``WARM_UP`` other queries of each mix, as a running agent is past its first searches
(the process then holds keyword postings and chunk records: one-time reads, not a search's cost).
Exactness: keyword top 24 against exhaustive BM25 and the vector top 24 (plain cosines, re-scored
when compact) against exact float32, every query. Peak RSS: a fresh process that opens
the memory and runs every query. Nothing here asserts a time.

Run from the repository root::

    python -m bench --mixes                                   # 12k and 100k chunks, 2,000 files
    python -m bench --mixes --sizes 1000000 --vector-dtype int8 --spec-queries 1
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from langchain_md_memory import MarkdownMemory, MemoryConfig
from langchain_md_memory.sync.embedding import embed_text
from langchain_md_memory.sync.freshness import RACY_NS

from .baselines import NumpyFloor, read_vectors, spec_linear_scan, spec_linear_scan_numpy
from .keyword_baselines import agreement, exhaustive_keyword, index_keyword, top_rowids
from .synthetic import CJK_PHRASES, HashingEmbeddings, Layout, write_memory
from .timing import summarize

__all__ = ["MIXES", "bench_mixes", "mix_queries", "mixes_table", "mixes_targets", "probe_mixes"]

MIXES = ("english", "plain", "chinese", "identifiers", "common")
VOCABULARY = 3_000
FILES = 2_000
IDENTIFIERS = 0.05
# English words the synthetic vocabulary uses that CC-CEDICT translates (risk → 风险, budget → 预算...).
_TRANSLATABLE = ("risk", "budget", "bond", "tax", "house", "school", "insurance", "salary", "savings",
                 "pension", "mortgage", "inflation", "gold", "stock", "dividend", "retirement", "plan",
                 "meeting", "advisor", "decision", "income", "growth", "energy", "health", "currency")
_BRANDS = ("nvidia", "tesla", "vanguard", "fidelity", "schwab")
_LEADS = ("what did i decide about", "my", "how much", "when is the", "")
WARM_UP = 8
"""Queries of each mix (not the measured ones) searched before the first is timed."""
_STOPWORD_ONLY = ("what did we do about it", "the a to and of", "is it on or off", "what was that about")


def mix_queries(layout: Layout, per_mix: int, *, seed: int = 35) -> dict[str, list[str]]:
    """``per_mix`` queries of each mix, drawn from what ``layout`` wrote (deterministic)."""
    rng = np.random.default_rng(seed)
    vocab = layout.vocabulary
    made_up = [w for w in vocab[200:] if w.isalpha()]
    translatable = [w for w in _TRANSLATABLE if w in vocab]
    frequent = [w for w in vocab[:200] if w.isalpha() and len(w) > 2][40:120]  # past the stop words
    names = list(layout.identifiers) or ["svc-kalo-v2"]

    def pick(words: Sequence[str], low: int, high: int) -> list[str]:
        return [words[int(i)] for i in rng.integers(0, len(words), int(rng.integers(low, high + 1)))]

    out: dict[str, list[str]] = {mix: [] for mix in MIXES}
    for i in range(per_mix):
        lead = _LEADS[i % len(_LEADS)]
        brand = [_BRANDS[i % len(_BRANDS)]] if i % 2 == 0 else []
        out["english"].append(" ".join(filter(None, [lead, *brand, *pick(translatable, 2, 3)])))
        out["plain"].append(" ".join(pick(made_up, 2, 4)))
        phrase = CJK_PHRASES[int(rng.integers(0, len(CJK_PHRASES)))]
        out["chinese"].append(phrase[:4] + ("是多少" if i % 2 else "") if i % 3 else phrase)
        name = names[int(rng.integers(0, len(names)))]
        out["identifiers"].append(name if i % 2 else f"{name} {pick(frequent, 1, 1)[0]}")
        out["common"].append(_STOPWORD_ONLY[(i // 6) % len(_STOPWORD_ONLY)] if i % 6 == 5
                             else " ".join([lead, *pick(frequent, 2, 3)]).strip())
    return out


def _timed(fn: Callable[..., object], *args: Any) -> float:
    started = time.perf_counter()
    fn(*args)
    return (time.perf_counter() - started) * 1000


def _build(root: Path, emb: HashingEmbeddings, cfg: MemoryConfig) -> dict[str, Any]:
    """Build the memory through the facade, then embed the same texts alone (the embedding floor)."""
    started = time.perf_counter()
    with MarkdownMemory(root, embeddings=emb, config=cfg) as mem:
        mem.sync()
        build_s = time.perf_counter() - started
        chunks, embedded = mem.index.count_chunks()
        rows = mem.index.read("SELECT DISTINCT heading, text, context FROM chunks")
    texts = [embed_text(*row) for row in rows]
    floor = HashingEmbeddings()
    started = time.perf_counter()
    for start in range(0, len(texts), cfg.embedding.batch_size):
        floor.embed_documents(texts[start : start + cfg.embedding.batch_size])
    floor_s = time.perf_counter() - started
    return {"build_s": round(build_s, 2), "embedding_floor_s": round(floor_s, 2),
            "build_over_floor": round(build_s / floor_s, 2) if floor_s else None,
            "chunks": chunks, "embedded": embedded, "texts_embedded": len(texts)}


def bench_mixes(n: int, workdir: Path, *, files: int = FILES, per_mix: int = 20, spec_queries: int = 3,
                vector_dtype: str = "float32") -> dict[str, Any]:
    """Every mix at ``n`` chunks in ``files`` files: timings, ratios, exactness and peak RSS."""
    root = workdir / f"mixes-{n}-{files}-{vector_dtype}"
    layout = write_memory(root, n, sections_per_file=max(1, n // files), vocabulary_size=VOCABULARY,
                          identifiers=IDENTIFIERS)
    emb = HashingEmbeddings()
    cfg = MemoryConfig(index={"vector_dtype": vector_dtype})
    out: dict[str, Any] = {"chunks": n, "files": len(layout.files), "vector_dtype": vector_dtype,
                           "build": _build(root, emb, cfg)}
    queries = mix_queries(layout, per_mix)
    pool = cfg.ranking.candidate_multiplier * cfg.max_results
    with MarkdownMemory(root, embeddings=emb, config=cfg) as mem, \
            MarkdownMemory(root, embeddings=emb, config=cfg, watch=True) as watched:
        index_path = mem.index.path
        floor = NumpyFloor.from_arrays(*read_vectors(index_path))
        # The build and the opening wrote the index beside the Markdown, and a folder changed less than
        # RACY_NS ago is walked before every search (its mtime cannot yet tell a later change): the
        # first seconds after a sync pay a walk. Measured here is the memory an agent searches later.
        time.sleep(RACY_NS / 1e9 + 0.1)
        warm_up = mix_queries(layout, WARM_UP, seed=36)
        for q in [q for qs in warm_up.values() for q in qs]:  # as a running agent has searched before
            mem.search(q)
            watched.search(q)
        out["mixes"] = {mix: _one_mix(mem, watched, floor, index_path, qs, pool, spec_queries)
                        for mix, qs in queries.items()}
        out["watcher_healthy"] = bool(watched.status()["watcher_healthy"])
    out["probe"] = _run_probe(root, vector_dtype, queries)
    return out


def _one_mix(mem: MarkdownMemory, watched: MarkdownMemory, floor: NumpyFloor, index_path: str,
             queries: list[str], pool: int, spec_queries: int) -> dict[str, Any]:
    times: dict[str, list[float]] = {name: [] for name in ("hybrid", "hybrid_watched", "b", "a", "a_np")}
    keyword_agreement, vector_agreement = [], []
    emb = HashingEmbeddings()
    for i, q in enumerate(queries):
        v = emb.embed_array(q)
        for name, memory in (("hybrid", mem), ("hybrid_watched", watched))[:: 1 if i % 2 else -1]:
            times[name].append(_timed(memory.search, q))
            memory._indexer.freshness.wait()  # a periodic walk the search started: not in the next timing
        times["b"].append(_timed(floor.top_k, v, pool))
        ours = [rowid for rowid, _ in mem.index.nearest(v, pool)]
        vector_agreement.append(floor.agreement(v, ours, pool))
        reference = {rowid for _, rowid in exhaustive_keyword(mem.index, q, pool)}
        found = top_rowids(mem.index, index_keyword(mem.index, q, pool))
        keyword_agreement.append(agreement(found, reference))
    for q in queries[:spec_queries]:
        v = emb.embed_array(q)
        times["a"].append(_timed(spec_linear_scan, index_path, v, pool))
        times["a_np"].append(_timed(spec_linear_scan_numpy, index_path, v, pool))
    stats = {name: summarize(ms, digits=3) for name, ms in times.items()}
    p50 = {name: s.get("p50_ms") for name, s in stats.items()}

    def ratio(a: str, b: str) -> float | None:
        return round(p50[a] / p50[b], 2) if p50[a] and p50[b] else None

    return {"queries": queries, "timings": stats,
            "ratios": {"a_over_hybrid": ratio("a", "hybrid"), "a_np_over_hybrid": ratio("a_np", "hybrid"),
                       "hybrid_over_b": ratio("hybrid", "b"), "watched_over_b": ratio("hybrid_watched", "b")},
            "keyword_agreement_with_exhaustive": round(float(np.mean(keyword_agreement)), 3),
            "vector_agreement_with_float32": round(float(np.mean(vector_agreement)), 4)}


def probe_mixes(root: str, vector_dtype: str, queries: dict[str, list[str]]) -> dict[str, Any]:
    """In a fresh process: open the memory, run every query; RSS after open and the peak (``VmHWM``)."""
    config = {"index": {"vector_dtype": vector_dtype}}
    with MarkdownMemory(root, embeddings=HashingEmbeddings(), config=config) as mem:
        opened = _status_mb("VmRSS")
        started = time.perf_counter()
        for qs in queries.values():
            for q in qs:
                mem.search(q)
        searched_s = time.perf_counter() - started
    return {"rss_after_open_mb": opened, "peak_rss_mb": _status_mb("VmHWM"),
            "searches": sum(len(qs) for qs in queries.values()), "search_s": round(searched_s, 2)}


def _status_mb(field: str) -> float | None:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return round(int(line.split()[1]) / 1024, 1)
    return None


def _run_probe(root: Path, vector_dtype: str, queries: dict[str, list[str]]) -> dict[str, Any]:
    spec = json.dumps({"root": str(root), "vector_dtype": vector_dtype, "queries": queries})
    done = subprocess.run([sys.executable, "-m", "bench", "--mixes-probe", spec], capture_output=True,
                          text=True, cwd=Path(__file__).resolve().parent.parent, check=False, timeout=3600)
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["probe failed"])[-1]}
    return dict(json.loads(done.stdout))


def mixes_targets(sizes: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Issue 35's must-shows, for the sizes measured: each says its figures and whether it is met."""
    out: dict[str, Any] = {}
    for s in sizes:
        mixes, n = s["mixes"], s["chunks"]
        ratios = {mix: m["ratios"] for mix, m in mixes.items()}
        if n <= 20_000:
            faster = {mix: r["a_over_hybrid"] for mix, r in ratios.items()}
            out[f"{n}_every_mix_20x_faster_than_the_spec_scan"] = {
                "ratios": faster, "met": all(r is not None and r >= 20 for r in faster.values())}
        elif n <= 200_000:
            for key, label in (("hybrid_over_b", "no_watcher"), ("watched_over_b", "watcher")):
                within = {mix: r[key] for mix, r in ratios.items()}
                out[f"{n}_every_mix_within_1.5x_of_the_floor_{label}"] = {
                    "ratios": within, "met": all(r is not None and r <= 1.5 for r in within.values())}
        else:
            worst = min(m["vector_agreement_with_float32"] for m in mixes.values())
            peak = s["probe"].get("peak_rss_mb")
            out[f"{n}_peak_rss_at_most_1gb_and_top24_agreement_0.99"] = {
                "peak_rss_mb": peak, "worst_vector_agreement": worst,
                "met": peak is not None and peak <= 1024 and worst >= 0.99}
        keyword = {mix: m["keyword_agreement_with_exhaustive"] for mix, m in mixes.items()}
        out[f"{n}_keyword_top24_agrees_with_exhaustive_bm25"] = {
            "agreement": keyword, "met": all(a == 1.0 for a in keyword.values())}
    return out


def mixes_table(sizes: Sequence[dict[str, Any]]) -> str:
    """One Markdown row per size and mix: p50s, the ratios, exactness and the probe's peak RSS."""
    lines = ["| chunks / files | mix | hybrid p50 | watched p50 | (b) p50 | (a) p50 | (a-np) p50 | a/hyb | "
             "a-np/hyb | hyb/b | watched/b | kw agree | vec agree | peak RSS MB |",
             "|" + " --- |" * 14]
    for s in sizes:
        for mix, m in s["mixes"].items():
            t, r = m["timings"], m["ratios"]
            lines.append(
                f"| {s['chunks']:,} / {s['files']:,} ({s['vector_dtype']}) | {mix} | "
                f"{t['hybrid']['p50_ms']:.2f} | {t['hybrid_watched']['p50_ms']:.2f} | "
                f"{t['b']['p50_ms']:.2f} | "
                f"{t['a'].get('p50_ms', '-')} | {t['a_np'].get('p50_ms', '-')} | {r['a_over_hybrid']} | "
                f"{r['a_np_over_hybrid']} | {r['hybrid_over_b']} | {r['watched_over_b']} | "
                f"{m['keyword_agreement_with_exhaustive']} | {m['vector_agreement_with_float32']} | "
                f"{s['probe'].get('peak_rss_mb', '?')} |")
    build = ["", "| chunks | build (s) | embedding floor (s) | build / floor | texts embedded |",
             "|" + " --- |" * 5]
    build += [f"| {s['chunks']:,} | {s['build']['build_s']} | {s['build']['embedding_floor_s']} | "
              f"{s['build']['build_over_floor']} | {s['build']['texts_embedded']:,} |" for s in sizes]
    return "\n".join(lines + build)
