"""Keyword recall of a phrase, straight from an index, for tests that search one directly.

An index takes a query's terms (search tokenizes the question once, for both recall paths); a test
names a phrase: ``keyword_hits(index, "bond ladder", 5)``.
"""

from __future__ import annotations

from langchain_md_memory.index.base import SearchIndex
from langchain_md_memory.text import query_terms
from langchain_md_memory.types import ChunkRecord


def keyword_hits(index: SearchIndex, query: str, limit: int) -> list[tuple[ChunkRecord, float]]:
    """The index's keyword candidates for ``query``'s terms, best first."""
    return index.keyword_search([query_terms(query)], limit).hits[0]
