"""``MarkdownMemoryRetriever``: the memory as a LangChain ``BaseRetriever``.

Example:
    .. code-block:: python

        retriever = mem.as_retriever(k=3, mmr={"enabled": False})
        docs = retriever.invoke("position limits")
        docs[0].metadata["path"], docs[0].metadata["start_line"], docs[0].id
        retriever.invoke("position limits", k=1)     # invoke-time override
"""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

from ..config import MemoryConfig
from ..core import MemoryCore
from ..types import MemorySearchResult

__all__ = ["MarkdownMemoryRetriever", "hit_to_document"]


def hit_to_document(hit: MemorySearchResult, degraded: str | None = None) -> Document:
    """A search hit as a ``Document``: text as content, every score in metadata, chunk id as id."""
    metadata = hit.to_dict()
    metadata.pop("text")
    metadata["citation"] = hit.citation
    if degraded is not None:
        metadata["degraded"] = degraded
    return Document(page_content=hit.text, metadata=metadata, id=hit.chunk_id)


class MarkdownMemoryRetriever(BaseRetriever):
    """Hybrid retrieval over a :class:`MarkdownMemory`.

    ``k`` (default: the memory's ``max_results``) and any ``MemoryConfig`` field
    can be set at construction (``config_overrides``) or passed to ``invoke``.

    Example:
        .. code-block:: python

            retriever = MarkdownMemoryRetriever(memory=mem, k=2)
            docs = retriever.invoke("retirement goal")
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: MemoryCore
    k: int | None = Field(default=None, ge=1)
    config_overrides: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def from_memory(
        cls, memory: MemoryCore, *, k: int | None = None, **overrides: Any
    ) -> MarkdownMemoryRetriever:
        """Build a retriever; keyword arguments other than ``k`` override config fields."""
        memory.config.merged(**overrides)  # validate now, not at the first query
        return cls(memory=memory, k=k, config_overrides=overrides)

    def _resolve(self, kwargs: dict[str, Any]) -> tuple[int | None, MemoryConfig]:
        k = kwargs.pop("k", self.k)
        merged = {**self.config_overrides, **kwargs}
        config = self.memory.config.merged(**merged) if merged else self.memory.config
        return k, config

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        k, config = self._resolve(kwargs)
        ranked = self.memory.search_detailed(query, max_results=k, config=config)
        return [hit_to_document(h, ranked.degraded) for h in ranked.hits]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        k, config = self._resolve(kwargs)
        ranked = await asyncio.to_thread(self.memory.search_detailed, query, max_results=k, config=config)
        return [hit_to_document(h, ranked.degraded) for h in ranked.hits]
