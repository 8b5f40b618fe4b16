"""Builders for the plain dataclasses the search stages pass around: index chunks and search hits.

Each builder fills every field a test does not care about, so a test names only
what it checks: ``make_hit("a", 0.9, text="Retire at 55")``.
"""

from __future__ import annotations

from typing import Any

from langchain_md_memory.types import ChunkRecord, MemorySearchResult

HIT_FIELDS = (
    "path", "start_line", "end_line", "score", "vector_score", "keyword_score", "retrieved_by", "file_kind",
    "decay", "confident",
)
"""Fields of a hit every serialised form (CLI JSON, retriever metadata) must carry.

In retriever metadata ``source`` is the file path (as in LangChain loaders); the hit's recall path is
``retrieved_by`` everywhere."""


def make_hit(chunk_id: str = "c", score: float = 0.5, *, path: str = "MEMORY.md", start_line: int = 1,
             end_line: int | None = None, text: str | None = None, **fields: Any) -> MemorySearchResult:
    """A vector-path evergreen hit scoring ``score``; ``text`` defaults to the chunk id."""
    values: dict[str, Any] = {
        "vector_score": score,
        "keyword_score": None,
        "retrieved_by": "vector",
        "file_kind": "evergreen",
        "chunk_id": chunk_id,
    }
    values.update(fields)
    return MemorySearchResult(path=path, start_line=start_line,
                              end_line=start_line if end_line is None else end_line,
                              text=chunk_id if text is None else text, score=score, **values)


def make_record(chunk_id: str, path: str = "MEMORY.md", *, start_line: int = 1, end_line: int | None = None,
                text: str | None = None, **fields: Any) -> ChunkRecord:
    """An evergreen chunk as the index stores it; ``text`` defaults to ``"text <id>"``."""
    values: dict[str, Any] = {"heading": "", "hash": chunk_id, "file_kind": "evergreen", "updated_at": 0.0}
    values.update(fields)
    return ChunkRecord(id=chunk_id, path=path, start_line=start_line,
                       end_line=start_line if end_line is None else end_line,
                       text=f"text {chunk_id}" if text is None else text, **values)
