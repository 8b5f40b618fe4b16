"""Plain BM25 Okapi (k1=1.2, b=0.75) over lowercase word tokens: an outside reference, not our search.

idf is ``ln(1 + (N - n + 0.5) / (n + 0.5))`` (Lucene's, never negative).
Tokens are ``\\w+`` runs of the lowercased text; no stemming, no stop words.

Example:
    .. code-block:: python

        bm25 = BM25(["the cat sat", "a dog barked", "cat food"])
        assert bm25.top("cat", 2)[0] in (0, 2)
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

__all__ = ["BM25", "tokens"]

_WORD = re.compile(r"\w+")


def tokens(text: str) -> list[str]:
    """Lowercase ``\\w+`` tokens."""
    return _WORD.findall(text.lower())


class BM25:
    """BM25 Okapi over a fixed list of documents; :meth:`top` returns document indices, best first."""

    def __init__(self, documents: Sequence[str], k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.tf = [Counter(tokens(d)) for d in documents]
        self.len = [sum(tf.values()) for tf in self.tf]
        self.avg = sum(self.len) / len(self.len) if self.len else 0.0
        df: Counter[str] = Counter()
        for tf in self.tf:
            df.update(tf.keys())
        n = len(self.tf)
        self.idf = {t: math.log(1 + (n - c + 0.5) / (c + 0.5)) for t, c in df.items()}

    def scores(self, query: str) -> list[float]:
        """One score per document."""
        terms = [t for t in tokens(query) if t in self.idf]
        out = []
        for tf, length in zip(self.tf, self.len, strict=True):
            norm = self.k1 * (1 - self.b + self.b * length / self.avg) if self.avg else self.k1
            out.append(sum(self.idf[t] * tf[t] * (self.k1 + 1) / (tf[t] + norm) for t in terms if t in tf))
        return out

    def top(self, query: str, k: int) -> list[int]:
        """Indices of the ``k`` best documents with a positive score, best first (ties by index)."""
        scored = [(s, i) for i, s in enumerate(self.scores(query)) if s > 0]
        scored.sort(key=lambda p: (-p[0], p[1]))
        return [i for _, i in scored[:k]]
