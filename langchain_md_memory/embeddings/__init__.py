"""Embeddings: the validating client, spec resolution with its credential boundary, the offline model."""

from .client import EmbeddingClient, EmbeddingIdentity
from .providers import DEFAULT_OPENAI_MODEL, resolve_embeddings

__all__ = ["DEFAULT_OPENAI_MODEL", "EmbeddingClient", "EmbeddingIdentity", "resolve_embeddings"]
