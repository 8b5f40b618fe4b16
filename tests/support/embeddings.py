"""A deterministic test embedding whose cosines the test chooses.

Each text maps to a vector of keyword counts over a fixed vocabulary (one
axis per word), so ``cos("retire", "retire pension") = 1/sqrt(2)`` exactly.
Texts with none of the words map to a constant "other" axis. ``aliases`` map
extra words onto an axis (a synonym the keyword index cannot see).
"""

from __future__ import annotations

import math
import re
import threading

from langchain_core.embeddings import Embeddings


class AxisEmbeddings(Embeddings):
    """Keyword-count vectors over ``vocabulary``; counts calls, texts embedded and queries."""

    def __init__(
        self, vocabulary: list[str], *, model: str = "axis-v1", aliases: dict[str, str] | None = None
    ) -> None:
        self.vocabulary = vocabulary
        self.aliases = aliases or {}
        self.model = model
        self.texts_embedded = 0
        self.calls = 0
        self.queries = 0
        self.fail: BaseException | None = None
        self._lock = threading.Lock()

    def vector(self, text: str) -> list[float]:
        words = [self.aliases.get(w, w) for w in re.findall(r"\w+", text.lower())]
        vec = [float(words.count(w)) for w in self.vocabulary]
        vec.append(0.0 if any(vec) else 1.0)
        return vec

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        with self._lock:
            self.calls += 1
            if self.fail is not None:
                raise self.fail
            self.texts_embedded += len(texts)
        return [self.vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        with self._lock:
            self.queries += 1
            if self.fail is not None:
                raise self.fail
        return self.vector(text)


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))
