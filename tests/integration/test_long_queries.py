"""A pasted document as a query is bounded work, and every search surface says so (issue 39).

Keyword recall reads the query's most informative terms (those with the highest idf among the
ones the memory holds), so a word buried at the end of a long paste still finds its note; the
embedder reads only its input window; past ``max_query_chars`` the query is refused by name.
"""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from typing import ClassVar

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from langchain_md_memory import MarkdownMemory, create_memory_tools
from langchain_md_memory.cli import main
from langchain_md_memory.embeddings import EmbeddingClient
from langchain_md_memory.embeddings.client import REMOTE_QUERY_CHARS
from langchain_md_memory.errors import MemoryInputError

FILLER = " ".join(f"{word}{n}" for n in range(12) for word in (
    "meeting", "quarterly", "planning", "routine", "budget", "review", "agenda", "minutes")) + " "
"""96 distinct terms, none of them in the memory: more than keyword recall reads."""


def pasted(chars: int, tail: str = "sourdough starter") -> str:
    """A document of about ``chars`` characters, ``tail`` at its very end."""
    return (FILLER * (chars // len(FILLER) + 1))[:chars] + " " + tail


@pytest.fixture
def mem(memory_dir: Path):
    with MarkdownMemory(memory_dir, embeddings="none") as memory:
        memory.append("- Feeds the sourdough starter every Sunday")
        memory.append("- Prefers index funds over single stocks")
        yield memory


def _tool(mem: MarkdownMemory):
    return next(t for t in create_memory_tools(mem) if t.name == "memory_search")


def test_a_word_at_the_end_of_a_long_paste_still_finds_its_note(mem: MarkdownMemory) -> None:
    ranked = mem.search_detailed(pasted(400_000))
    assert ranked.hits and "sourdough" in ranked.hits[0].text
    assert ranked.degraded is not None and "most informative" in ranked.degraded


def test_the_bounded_form_is_the_same_through_every_surface(mem: MarkdownMemory, memory_dir: Path) -> None:
    query = pasted(50_000)
    assert "sourdough" in mem.search(query)[0].text
    assert "sourdough" in asyncio.run(mem.asearch(query))[0].text
    docs = mem.as_retriever().invoke(query)
    assert "sourdough" in docs[0].page_content and "most informative" in docs[0].metadata["degraded"]
    reply = str(_tool(mem).invoke({"query": query}))
    assert "sourdough" in reply and "Note: long query" in reply and len(reply) < 5_000
    out, err = io.StringIO(), io.StringIO()
    mem.close()
    assert main(["--dir", str(memory_dir), "search", query], out=out, err=err) == 0
    assert "sourdough" in out.getvalue() and "long query" in err.getvalue()


def test_a_query_over_max_query_chars_is_refused_by_name(memory_dir: Path) -> None:
    with MarkdownMemory(memory_dir, embeddings="none", config={"limits": {"max_query_chars": 10_000}}) as mem:
        mem.append("- Feeds the sourdough starter every Sunday")
        with pytest.raises(MemoryInputError, match="max_query_chars=10000"):
            mem.search(pasted(20_000))
        reply = str(_tool(mem).invoke({"query": pasted(20_000)}))
        assert "max_query_chars=10000" in reply and len(reply) < 500
        assert mem.search("sourdough")  # the memory keeps serving


def test_a_short_query_is_searched_as_given(mem: MarkdownMemory) -> None:
    ranked = mem.search_detailed("sourdough starter")
    assert ranked.degraded is None and "sourdough" in ranked.hits[0].text


class _Recording(DeterministicFakeEmbedding):
    """A remote model's stand-in that records the length of every query it is sent."""

    seen: ClassVar[list[int]] = []

    def embed_query(self, text: str) -> list[float]:
        self.seen.append(len(text))
        return super().embed_query(text)


def test_a_remote_model_is_sent_the_head_of_a_long_query_and_the_hit_says_so(memory_dir: Path) -> None:
    model = _Recording(size=16)
    client = EmbeddingClient(model, provider="fake", model="rec16")
    with MarkdownMemory(memory_dir, embeddings=client) as mem:
        mem.append("- Feeds the sourdough starter every Sunday")
        model.seen.clear()
        ranked = mem.search_detailed(pasted(100_000))
    assert max(model.seen) == REMOTE_QUERY_CHARS  # (the first call may be a dimension probe)
    assert ranked.degraded is not None and f"first {REMOTE_QUERY_CHARS} of" in ranked.degraded
