"""The embedding model of a run, with query vectors cached across configs.

Every config asks the same questions, so each query is embedded once per run;
documents are not cached here (the memory's own embedding cache keeps them
across reopenings of a folder).

A spec is what ``MarkdownMemory(embeddings=...)`` takes, or ``py:MODULE:FACTORY``:
a function of no arguments returning a LangChain :class:`Embeddings` (how another
offline model is measured on the same harness without becoming a dependency;
``bench/embedding_candidates.py`` has factories for the ones compared in QUALITY.md).

Example:
    .. code-block:: python

        emb = make_embeddings("local")      # the bundled offline model, as embeddings="local"
        emb.embed_query("where do I live?"); emb.embed_query("where do I live?")
        assert emb.query_calls == 1
        other = make_embeddings("py:bench.embedding_candidates:use_multilingual")
"""

from __future__ import annotations

import importlib
import threading

from langchain_core.embeddings import Embeddings

from langchain_md_memory.embeddings import resolve_embeddings

__all__ = ["PY_PREFIX", "QueryCachedEmbeddings", "from_factory", "make_embeddings"]


class QueryCachedEmbeddings(Embeddings):
    """Wraps an :class:`Embeddings`; ``embed_query`` answers repeated texts from a dict.

    ``model`` is the wrapped model's name, so the index fingerprint names the
    real vector space; ``query_calls`` / ``query_hits`` count misses and hits.
    """

    def __init__(self, inner: Embeddings, model: str) -> None:
        self.inner = inner
        self.model = model
        self.query_calls = 0
        self.query_hits = 0
        self.documents_embedded = 0
        self._queries: dict[str, list[float]] = {}
        self._lock = threading.Lock()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Pass through (the memory caches document vectors itself)."""
        with self._lock:
            self.documents_embedded += len(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        """The wrapped model's query vector, computed once per distinct text."""
        with self._lock:
            cached = self._queries.get(text)
            if cached is not None:
                self.query_hits += 1
                return cached
        vector = self.inner.embed_query(text)
        with self._lock:
            self.query_calls += 1
            self._queries[text] = vector
        return vector


PY_PREFIX = "py:"


def from_factory(target: str) -> QueryCachedEmbeddings:
    """``MODULE:FACTORY`` → the :class:`Embeddings` that ``FACTORY()`` returns, query-cached.

    The index fingerprint is ``provider:model:dim``, so the model name is the
    instance's ``model`` attribute when it has one without a colon, else ``MODULE.FACTORY``.

    Raises:
        ValueError: the target is not ``MODULE:FACTORY``, or the factory returns no Embeddings.
        ImportError, AttributeError: the module or the factory does not exist.
    """
    module_name, sep, factory_name = target.partition(":")
    if not sep or not module_name or not factory_name.isidentifier():
        raise ValueError(f"--embeddings py:MODULE:FACTORY wanted, got py:{target}")
    factory = getattr(importlib.import_module(module_name), factory_name)
    instance = factory()
    if not isinstance(instance, Embeddings):
        raise ValueError(f"py:{target} returned {type(instance).__name__}, not a langchain_core Embeddings")
    model = getattr(instance, "model", None)
    if not isinstance(model, str) or not model or ":" in model:
        model = f"{module_name}.{factory_name}"
    return QueryCachedEmbeddings(instance, model=model)


def make_embeddings(spec: str) -> QueryCachedEmbeddings | None:
    """``"none"`` → ``None`` (keyword-only); ``py:MODULE:FACTORY`` → :func:`from_factory`; any other
    spec resolves as ``MarkdownMemory(embeddings=spec)``.

    ``"local"`` is the bundled offline model, exactly what ``embeddings="local"`` builds.
    """
    if spec.startswith(PY_PREFIX):
        return from_factory(spec[len(PY_PREFIX):])
    client = resolve_embeddings(spec)
    if client is None:
        return None
    return QueryCachedEmbeddings(client.embeddings, model=client.model)
