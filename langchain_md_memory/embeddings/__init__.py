"""Embeddings: the embedder seam, the validating client, spec resolution with its credential boundary,
the offline model."""

from .base import Embedder
from .client import EmbeddingClient, EmbeddingIdentity
from .providers import DEFAULT_OPENAI_MODEL, resolve_embeddings

__all__ = ["DEFAULT_OPENAI_MODEL", "Embedder", "EmbeddingClient", "EmbeddingIdentity", "resolve_embeddings"]
