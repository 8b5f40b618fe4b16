"""Deterministic synthetic memories and a cheap counting embedding, for the benchmark.

Nothing here touches the network or depends on hash randomisation: the same
seed gives byte-identical Markdown and bit-identical vectors in every process.

Example:
    .. code-block:: python

        from bench.synthetic import HashingEmbeddings, write_memory

        layout = write_memory("/tmp/mem", chunks=1000)
        emb = HashingEmbeddings()
        assert len(emb.embed_documents(["bond ladder"])[0]) == 384
"""

from __future__ import annotations

import datetime as dt
import itertools
import re
import threading
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import numpy as np
from langchain_core.embeddings import Embeddings

__all__ = ["HashingEmbeddings", "Layout", "edit_one_paragraph", "make_queries", "write_memory"]

DIM = 384

_STOPWORDS = (  # noqa: SIM905 - a word list reads better as prose
    "the a to and of i in for on my is it that with we at be this about was as not but have should "
    "from or if so up out more when what our will all by no do"
).split()
_DOMAIN = (  # noqa: SIM905 - a word list reads better as prose
    "bond ladder portfolio risk position limit stock etf dividend rebalance retirement pension "
    "mortgage rate inflation cash buffer emergency fund tax loss harvesting broker fee index fund "
    "allocation equity treasury yield duration coupon maturity hedge option volatility drawdown "
    "budget salary bonus savings goal house school tuition insurance premium deductible account "
    "transfer wire currency exchange gold crypto bitcoin margin leverage review meeting advisor "
    "decision plan target horizon conservative aggressive moderate sector tech energy health "
    "utilities real estate reit income growth value momentum screen watchlist alert threshold"
).split()
CJK_PHRASES = (
    "风险偏好稳健",
    "单只个股不超过总仓位",
    "每月定投指数基金",
    "退休目标年龄",
    "应急资金六个月",
    "债券阶梯到期",
    "房贷利率重新定价",
    "年度再平衡",
    "止损线百分之八",
    "子女教育储蓄",
    "不碰杠杆",
    "分红再投资",
    "美元资产比例",
    "黄金对冲通胀",
    "季度复盘会议",
)
_SYLLABLES = (  # noqa: SIM905 - a word list reads better as prose
    "ka lo mi ne ru ta shi vo pe da zu ri an el or um ix ba ko fe"
).split()
_WORD_RE = re.compile(r"\w+")


def _vocabulary(size: int, rng: np.random.Generator) -> list[str]:
    """Stopwords, then domain words, then pronounceable made-up words (Zipf ranks in that order)."""
    words = list(dict.fromkeys(_STOPWORDS + _DOMAIN))
    seen = set(words)
    while len(words) < size:
        n = int(rng.integers(2, 5))
        word = "".join(_SYLLABLES[int(i)] for i in rng.integers(0, len(_SYLLABLES), n))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


@dataclass(frozen=True, slots=True)
class Layout:
    """What :func:`write_memory` wrote."""

    root: Path
    files: list[str]
    chunks: int
    markdown_bytes: int
    vocabulary: list[str]
    identifiers: tuple[str, ...] = ()


def write_memory(
    root: str | Path,
    chunks: int,
    *,
    sections_per_file: int = 50,
    seed: int = 7,
    vocabulary_size: int = 20_000,
    identifiers: float = 0.0,
) -> Layout:
    """Write ``chunks`` sections as daily logs (``YYYY-MM-DD.md``) plus a ``MEMORY.md``.

    Every section is ``## HH:MM topic`` and one paragraph of 20–60 words, so
    the chunker makes exactly one chunk per section. Words follow a Zipf law
    over the vocabulary (stopwords most frequent); one paragraph in eight is
    Chinese. ``identifiers`` is the share of paragraphs that also name one of
    200 code identifiers (``svc-kalo-v2``, ``KALO_RETRIES``, ``getKaloMine``...);
    drawn apart, so the rest of the memory is the same with or without them.
    """
    names = _identifiers(np.random.default_rng(seed + 1)) if identifiers > 0 else []
    named = np.random.default_rng(seed + 2).random(chunks) < identifiers if names else np.zeros(chunks, bool)
    which = np.random.default_rng(seed + 3).integers(0, max(len(names), 1), chunks)
    rng = np.random.default_rng(seed)
    vocab = _vocabulary(vocabulary_size, rng)
    ranks = np.arange(1, len(vocab) + 1, dtype=np.float64)
    probs = 1.0 / ranks**1.05
    probs /= probs.sum()
    lengths = rng.integers(20, 61, chunks)
    words = rng.choice(len(vocab), size=int(lengths.sum()), p=probs)
    cjk = rng.random(chunks) < 0.125
    cjk_pick = rng.integers(0, len(CJK_PHRASES), (chunks, 3))
    topics = rng.integers(len(_STOPWORDS), len(_STOPWORDS) + len(_DOMAIN), (chunks, 2))
    out = Path(root)
    out.mkdir(parents=True, exist_ok=True)
    evergreen = min(200, max(1, chunks // 100))
    day = dt.date.today()
    files: list[str] = []
    offset = 0
    size = 0
    index = 0

    def section(i: int) -> str:
        nonlocal offset
        n = int(lengths[i])
        ids = words[offset : offset + n]
        offset += n
        topic = f"{vocab[topics[i, 0]]} {vocab[topics[i, 1]]}"
        if cjk[i]:
            body = (
                "，".join(CJK_PHRASES[int(j)] for j in cjk_pick[i])
                + "。"
                + " ".join(vocab[int(w)] for w in ids[:8])
            )
        else:
            body = " ".join(vocab[int(w)] for w in ids)
        if named[i]:
            body += f" (see `{names[int(which[i])]}`)"
        return f"## {9 + i % 10:02d}:{(i * 7) % 60:02d} {topic}\n\n- {body}.\n"

    def emit(name: str, title: str, count: int) -> None:
        nonlocal index, size
        parts = [f"# {title}\n"]
        for _ in range(count):
            parts.append(section(index))
            index += 1
        text = "\n".join(parts)
        (out / name).write_text(text, encoding="utf-8")
        files.append(name)
        size += len(text.encode("utf-8"))

    emit("MEMORY.md", "Long-term memory", evergreen)
    remaining = chunks - evergreen
    n_day = 0
    while remaining > 0:
        count = min(sections_per_file, remaining)
        date = day - dt.timedelta(days=n_day)
        emit(f"{date.isoformat()}.md", date.isoformat(), count)
        remaining -= count
        n_day += 1
    used = tuple(dict.fromkeys(names[int(j)] for j in which[named])) if names else ()
    return Layout(out, files, chunks, size, vocab, used)


def _identifiers(rng: np.random.Generator, count: int = 200) -> list[str]:
    """Code identifiers in the shapes people write them: kebab, upper snake, dotted files, camel case."""
    def word() -> str:
        return "".join(_SYLLABLES[int(i)] for i in rng.integers(0, len(_SYLLABLES), int(rng.integers(2, 4))))

    shapes = (
        lambda: f"svc-{word()}-v{int(rng.integers(1, 5))}",
        lambda: f"{word().upper()}_{word().upper()}",
        lambda: f"{word()}.{word()}.yaml",
        lambda: f"get{word().capitalize()}{word().capitalize()}",
        lambda: f"{word()}_{word()}_id",
    )
    return list(dict.fromkeys(shapes[i % len(shapes)]() for i in range(count)))


def edit_one_paragraph(layout: Layout) -> str:
    """Reword one paragraph in the middle of the newest daily file; returns the file's name."""
    name = layout.files[1] if len(layout.files) > 1 else layout.files[0]
    path = layout.root / name
    lines = path.read_text(encoding="utf-8").split("\n")
    bullets = [i for i, line in enumerate(lines) if line.startswith("- ")]
    target = bullets[len(bullets) // 2]
    lines[target] = "- edited: the bond ladder now ends in 2031 and the cash buffer is six months."
    path.write_text("\n".join(lines), encoding="utf-8")
    return name


def make_queries(layout: Layout, count: int, *, seed: int = 11) -> list[str]:
    """Natural-looking queries: words drawn from real sections plus stopwords; some in Chinese."""
    rng = np.random.default_rng(seed)
    texts = [(layout.root / name).read_text(encoding="utf-8") for name in layout.files[:50]]
    bodies = [line[2:] for text in texts for line in text.split("\n") if line.startswith("- ")]
    queries: list[str] = []
    for i in range(count):
        if i % 7 == 6:
            queries.append(CJK_PHRASES[int(rng.integers(0, len(CJK_PHRASES)))][:4] + "是多少")
            continue
        body = _WORD_RE.findall(bodies[int(rng.integers(0, len(bodies)))])
        picked = [body[int(j)] for j in rng.integers(0, len(body), int(rng.integers(2, 4)))]
        lead = ["what", "did", "i", "decide", "about"][: int(rng.integers(0, 5))]
        queries.append(" ".join(lead + picked))
    return queries


class HashingEmbeddings(Embeddings):
    """Feature hashing of word unigrams and bigrams into ``dim`` signed buckets, L2-normalised.

    Deterministic (CRC32, not ``hash()``), about 20 µs per short text, and it
    counts what it embeds: ``documents_embedded`` and ``queries_embedded``.
    """

    def __init__(self, dim: int = DIM) -> None:
        """Create the embedding; ``dim`` is the vector length."""
        self.dim = dim
        self.model = f"hashing-{dim}"
        self.documents_embedded = 0
        self.queries_embedded = 0
        self._lock = threading.Lock()
        self._cache: dict[str, int] = {}

    def _hash(self, token: str) -> int:
        value = self._cache.get(token)
        if value is None:
            value = zlib.crc32(token.encode("utf-8"))
            if len(self._cache) < 1_000_000:
                self._cache[token] = value
        return value

    def _matrix(self, texts: Sequence[str]) -> np.ndarray:
        docs: list[int] = []
        codes: list[int] = []
        for row, text in enumerate(texts):
            hashes = [self._hash(t) for t in _WORD_RE.findall(text.lower())]
            grams = hashes + [(a * 1_000_003 + b) & 0xFFFFFFFF for a, b in itertools.pairwise(hashes)]
            if not grams:
                grams = [0]
            codes.extend(grams)
            docs.extend([row] * len(grams))
        code = np.asarray(codes, dtype=np.uint64)
        bucket = (code % self.dim).astype(np.int64)
        sign = np.where((code >> np.uint64(16)) & np.uint64(1), 1.0, -1.0)
        flat = np.bincount(
            np.asarray(docs, dtype=np.int64) * self.dim + bucket,
            weights=sign,
            minlength=len(texts) * self.dim,
        )
        matrix = flat.reshape(len(texts), self.dim).astype(np.float32)
        matrix[:, 0] += 1e-3  # never a zero vector (the client rejects those)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed stored texts (counted in ``documents_embedded``)."""
        with self._lock:
            self.documents_embedded += len(texts)
        return cast(list[list[float]], self._matrix(texts).tolist()) if texts else []

    def embed_query(self, text: str) -> list[float]:
        """Embed a query (counted in ``queries_embedded``)."""
        with self._lock:
            self.queries_embedded += 1
        return cast(list[float], self.embed_array(text).tolist())

    def embed_array(self, text: str) -> np.ndarray:
        """The query vector as a float32 array, uncounted (for the baselines)."""
        row: np.ndarray = self._matrix([text])[0]
        return row
