"""``MarkdownMemoryRetriever``: the memory as a LangChain ``BaseRetriever``.

It takes what a ``VectorStore`` retriever takes: ``search_type``
(``"similarity"``, ``"mmr"``, ``"similarity_score_threshold"``),
``search_kwargs`` (``k``, ``score_threshold``, ``lambda_mult``, ``fetch_k``),
``k``, ``tags``, ``metadata``; and any :class:`~langchain_md_memory.MemoryConfig`
field as an override. The search types map onto the search's steps:
``"mmr"`` turns the MMR step on, ``"similarity"`` turns it off (no
``search_type``: the memory's config decides), and ``score_threshold`` is the
pipeline's ``min_score``. Each ``Document`` carries, as LangChain loaders do,
the file path in ``metadata["source"]``; the recall path that found it
(``"vector"``, ``"keyword"``, ``"both"``) is ``metadata["retrieved_by"]``.

Example:
    .. code-block:: python

        retriever = mem.as_retriever(search_type="mmr", search_kwargs={"k": 3, "lambda_mult": 0.5})
        docs = retriever.invoke("position limits")
        docs[0].metadata["source"], docs[0].metadata["start_line"], docs[0].id
        retriever.invoke("position limits", k=1)     # invoke-time override
"""

from __future__ import annotations

import asyncio
import datetime as dt
import math
from typing import TYPE_CHECKING, Any, Literal, Self, get_args

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, field_validator, model_validator

from ..config import MOVED, MemoryConfig
from ..errors import MemoryInputError
from ..search.asof import as_of_date
from ..types import MemorySearchResult

if TYPE_CHECKING:
    from ..memory import MarkdownMemory

__all__ = ["SEARCH_KWARGS", "SEARCH_TYPES", "MarkdownMemoryRetriever", "SearchType", "hit_to_document"]

SearchType = Literal["similarity", "mmr", "similarity_score_threshold"]
SEARCH_TYPES: tuple[str, ...] = get_args(SearchType)
"""The ``search_type`` values a ``VectorStore`` retriever accepts, and so does this one."""

SEARCH_KWARGS: tuple[str, ...] = ("k", "score_threshold", "lambda_mult", "fetch_k", "as_of")
"""The ``VectorStore`` ``search_kwargs`` understood here, and ``as_of`` (a ``date`` or ``YYYY-MM-DD``: what
held on that day, see :meth:`MarkdownMemory.search`); MemoryConfig fields are accepted too."""

_RETRIEVER_ARGS = ("k", "search_type", "search_kwargs", "tags", "metadata", "name")
_CONFIG_FIELDS = tuple(MemoryConfig.model_fields)
_ACCEPTED_FIELDS = (*_CONFIG_FIELDS, *MOVED)  # the flat names of earlier releases, with a deprecation warning


def hit_to_document(hit: MemorySearchResult, degraded: str | None = None) -> Document:
    """A search hit as a ``Document``: text as content, the file path as ``source``, scores in metadata.

    ``metadata`` holds every field of the hit except ``text`` (the page content); the hit's recall
    path is ``retrieved_by`` and ``source`` is the file path, as in LangChain's loaders.
    """
    metadata = hit.to_dict()
    metadata.pop("text")
    metadata["source"] = hit.path
    metadata["citation"] = hit.citation
    if degraded is not None:
        metadata["degraded"] = degraded
    return Document(page_content=hit.text, metadata=metadata, id=hit.chunk_id)


def _allowed(names: tuple[str, ...]) -> str:
    config = f"MemoryConfig fields ({', '.join(_CONFIG_FIELDS)})"
    return f"{', '.join(names)}, or {config}" if names else config


def _check_keys(given: dict[str, Any], where: str, names: tuple[str, ...]) -> None:
    unknown = sorted(set(given) - set(names) - set(_ACCEPTED_FIELDS))
    if unknown:
        raise MemoryInputError(f"{where} got unknown key(s) {unknown}; allowed: {_allowed(names)}")


def _check_search(search_type: str | None, search_kwargs: dict[str, Any]) -> None:
    if search_type is not None and search_type not in SEARCH_TYPES:
        raise MemoryInputError(
            f"search_type {search_type!r} is not allowed; use one of {', '.join(map(repr, SEARCH_TYPES))}"
        )
    _check_keys(search_kwargs, "search_kwargs", SEARCH_KWARGS)
    as_of_date(search_kwargs.get("as_of"))
    threshold = search_kwargs.get("score_threshold")
    if search_type == "similarity_score_threshold" and threshold is None:
        raise MemoryInputError(
            "search_type='similarity_score_threshold' needs search_kwargs={'score_threshold': <0..1>}"
        )
    if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, int | float)
                                  or not 0 <= threshold <= 1):
        raise MemoryInputError(f"score_threshold must be a number from 0 to 1, got {threshold!r}")
    for key in ("k", "fetch_k"):
        value = search_kwargs.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise MemoryInputError(f"{key} must be a whole number of at least 1, got {value!r}")


def _check_k_once(k: int | None, search_kwargs: dict[str, Any]) -> None:
    if k is not None and search_kwargs.get("k", k) != k:
        raise MemoryInputError(
            f"k is given twice: k={k} and search_kwargs['k']={search_kwargs['k']}; give it once"
        )


class MarkdownMemoryRetriever(BaseRetriever):
    """Hybrid retrieval over a :class:`MarkdownMemory`, configured as a ``VectorStore`` retriever is.

    ``k`` defaults to the memory's ``max_results``. ``search_type`` and
    ``search_kwargs`` work as on ``VectorStore.as_retriever`` (see the module
    docstring for how they map onto the pipeline); ``config_overrides`` are
    MemoryConfig fields for this retriever. ``k``, the ``search_kwargs`` keys and
    config fields can also be passed to ``invoke``. Unknown keys are an error
    that names the allowed ones.

    Example:
        .. code-block:: python

            retriever = MarkdownMemoryRetriever(memory=mem, search_kwargs={"k": 2}, tags=["memory"])
            docs = retriever.invoke("retirement goal")
            [d.metadata["source"] for d in docs]     # ['goals.md', 'MEMORY.md']
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    if TYPE_CHECKING:
        memory: MarkdownMemory
    else:  # the facade imports this module: checked by what a memory does, below
        memory: Any
    k: int | None = Field(default=None, ge=1)
    search_type: SearchType | None = None
    """``"similarity"`` (MMR off), ``"mmr"`` (MMR on), ``"similarity_score_threshold"`` (MMR off,
    ``score_threshold`` as ``min_score``); ``None`` keeps the memory's config."""
    search_kwargs: dict[str, Any] = Field(default_factory=dict)
    config_overrides: dict[str, Any] = Field(default_factory=dict)

    @field_validator("memory")
    @classmethod
    def _a_memory(cls, value: Any) -> Any:
        if not callable(getattr(value, "search_detailed", None)):
            raise ValueError(f"memory must be a MarkdownMemory, got {type(value).__name__}")
        return value

    @model_validator(mode="after")
    def _validate(self) -> Self:
        _check_search(self.search_type, self.search_kwargs)
        _check_keys(self.config_overrides, "config_overrides", ())
        _check_k_once(self.k, self.search_kwargs)
        self._resolve({})  # a bad override fails now, not at the first query
        return self

    @classmethod
    def from_memory(cls, memory: MarkdownMemory, *, k: int | None = None, search_type: str | None = None,
                    search_kwargs: dict[str, Any] | None = None, tags: list[str] | None = None,
                    metadata: dict[str, Any] | None = None, name: str | None = None,
                    **overrides: Any) -> MarkdownMemoryRetriever:
        """Build a retriever as ``VectorStore.as_retriever`` does; other keyword arguments are config fields.

        ``tags`` default to the memory's class name (a ``VectorStore`` tags its
        retrievers with its own class name the same way).
        """
        _check_keys(overrides, "as_retriever()", _RETRIEVER_ARGS)
        _check_search(search_type, search_kwargs or {})
        _check_k_once(k, search_kwargs or {})
        fields: dict[str, Any] = {"memory": memory, "k": k, "search_type": search_type,
                                  "search_kwargs": dict(search_kwargs or {}), "config_overrides": overrides,
                                  "tags": tags or [type(memory).__name__], "metadata": metadata}
        if name is not None:
            fields["name"] = name
        return cls(**fields)

    def _resolve(self, kwargs: dict[str, Any]) -> tuple[int | None, MemoryConfig, dt.date | None]:
        """``(k, config, as_of)`` of one query: memory config < overrides < search type/kwargs < invoke."""
        given = {key: value for key, value in kwargs.items() if value is not None}
        _check_keys(given, "invoke()", SEARCH_KWARGS)
        search = {**self.search_kwargs, **{key: given.pop(key) for key in SEARCH_KWARGS if key in given}}
        _check_search(self.search_type, search)
        k: int | None = search.pop("k", self.k)
        as_of = as_of_date(search.pop("as_of", None))
        from_search: dict[str, Any] = {key: search.pop(key) for key in list(search)
                                       if key not in SEARCH_KWARGS}
        ranking: dict[str, Any] = {}
        if self.search_type is not None:
            ranking["mmr"] = {"enabled": self.search_type == "mmr"}
        if "lambda_mult" in search:
            ranking["mmr"] = {**ranking.get("mmr", {}), "lambda": search["lambda_mult"]}
        if "score_threshold" in search:
            ranking["min_score"] = search["score_threshold"]
        config = self.memory.config
        for layer in (self.config_overrides, {"ranking": ranking} if ranking else {}, from_search, given):
            if layer:
                config = config.merged(**layer)
        if "fetch_k" in search:
            # VectorStore MMR picks k of fetch_k candidates; here MMR sees the top pool_multiplier × k.
            pool = max(1, math.ceil(search["fetch_k"] / (k or config.max_results)))
            config = config.merged(ranking={"mmr": {"pool_multiplier": pool}, "candidate_multiplier":
                                            max(pool, config.ranking.candidate_multiplier)})
        return k, config, as_of

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        k, config, as_of = self._resolve(kwargs)
        ranked = self.memory.search_detailed(query, max_results=k, config=config, as_of=as_of)
        return [hit_to_document(h, ranked.degraded) for h in ranked.hits]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        k, config, as_of = self._resolve(kwargs)
        ranked = await asyncio.to_thread(self.memory.search_detailed, query, max_results=k, config=config,
                                         as_of=as_of)
        return [hit_to_document(h, ranked.degraded) for h in ranked.hits]
