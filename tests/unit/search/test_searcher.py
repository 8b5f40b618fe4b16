"""The recall of another memory joins this one's under its prefix, for one ranking over both."""

from __future__ import annotations

from langchain_md_memory.search.pipeline import Recall
from langchain_md_memory.search.searcher import combined, prefixed
from langchain_md_memory.types import ChunkRecord
from tests.support.hits import make_record


def record(rid: str, path: str = "MEMORY.md") -> ChunkRecord:
    return make_record(rid, path, end_line=2, text="text", hash="h")


def test_a_sources_recall_is_prefixed_and_joins_this_memorys():
    own = Recall(vector=[(record("MEMORY.md:1-2"), 0.9)], keyword=[(record("MEMORY.md:1-2"), 1.0)],
                 vectors={"MEMORY.md:1-2": "p"}, degraded=None, terms=("tests",))
    other = Recall(vector=[(record("MEMORY.md:1-2"), 0.8)], keyword=[], vectors={"MEMORY.md:1-2": "g"},
                   degraded="keyword results only")
    both = combined(own, prefixed(other, "~global/"))
    assert [r.id for r, _ in both.vector] == ["MEMORY.md:1-2", "~global/MEMORY.md:1-2"]
    assert [r.path for r, _ in both.vector] == ["MEMORY.md", "~global/MEMORY.md"]
    assert [s for _, s in both.vector] == [0.9, 0.8]
    assert [r.id for r, _ in both.keyword] == ["MEMORY.md:1-2"]
    assert both.vectors == {"MEMORY.md:1-2": "p", "~global/MEMORY.md:1-2": "g"}
    assert both.degraded == "keyword results only"
    assert both.terms == ("tests",)  # what relevance is measured with stays this memory's
