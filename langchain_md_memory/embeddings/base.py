"""The embedder seam: what sync and search need from an embedding model.

:class:`~langchain_md_memory.embeddings.client.EmbeddingClient` implements it over any LangChain
``Embeddings`` (batching, timeout, retries, validation); sync embeds chunks with it and search its
queries, both typed against this protocol alone.

Example:
    .. code-block:: python

        from langchain_core.embeddings import DeterministicFakeEmbedding
        from langchain_md_memory.embeddings import EmbeddingClient
        from langchain_md_memory.embeddings.base import Embedder

        embedder: Embedder = EmbeddingClient(DeterministicFakeEmbedding(size=8), provider="fake", model="d8")
        wait = embedder.start_query(embedder.fit_query("retirement age"))
        assert wait().shape == (8,)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

__all__ = ["Embedder"]


class Embedder(Protocol):
    """Unit vectors for stored texts and for queries, and the identity of the space they live in."""

    def identity(self) -> object:
        """What the vectors depend on; ``str()`` of it is ``provider:model:dim``."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """One unit vector per text, as an ``(n, dim)`` float32 array."""
        ...

    def fit_query(self, text: str) -> str:
        """The head of ``text`` the model reads (its input window); ``text`` when it fits."""
        ...

    def start_query(self, text: str) -> Callable[[], np.ndarray]:
        """The query's unit vector begun now (where that helps): the function returned waits for it and
        raises what embedding it raised."""
        ...
