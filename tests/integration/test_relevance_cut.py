"""The calibrated relevance cut, through MarkdownMemory, with embeddings whose cosines crowd together.

Every vector shares one common axis, as every text embedded by a real model
shares a language and a style: any question scores 0.4-0.5 against any note,
the way the bundled e5 scores 0.74-0.83. A raw threshold cannot tell an
answer from the crowd; a cosine measured against the memory's own background
can.
"""

from __future__ import annotations

import re
from pathlib import Path

from langchain_core.embeddings import Embeddings

from langchain_md_memory import SEED_RANKING, MarkdownMemory

TOPICS = ["retire", "pension", "bond", "cash", "tax", "house", "car", "travel", "dog", "garden"]
NOTES = [
    "retire at sixty", "pension from the company", "bond ladder", "cash buffer", "tax return in April",
    "house deposit", "car lease ends", "travel to Kyoto", "garden beds", "retire pension plan",
    "bond tax rules", "house and garden insurance",
]


class CrowdedEmbeddings(Embeddings):
    """A common axis plus one axis per topic word: cosines crowd, topic words decide."""

    def vector(self, text: str) -> list[float]:
        words = re.findall(r"\w+", text.lower())
        return [1.0, *(float(words.count(t)) for t in TOPICS)]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.vector(text)


def _memory(memory_dir: Path, **config: object) -> MarkdownMemory:
    for i, note in enumerate(NOTES):
        (memory_dir / f"note{i:02d}.md").write_text(f"- {note}\n", encoding="utf-8")
    return MarkdownMemory(memory_dir, embeddings=CrowdedEmbeddings(), config=config)


def test_a_question_whose_answer_is_not_stored_gets_no_hits(memory_dir: Path) -> None:
    with _memory(memory_dir) as mem:
        assert mem.search("what is my dog called") == []
        hits = mem.search("retire pension")
    assert hits[0].text == "- retire pension plan"
    assert hits[0].relevance == 1.0


def test_the_seed_formula_hands_back_the_crowd(memory_dir: Path) -> None:
    with _memory(memory_dir, **SEED_RANKING) as mem:
        junk = mem.search("what is my dog called")
    assert len(junk) == 6  # every note scores 0.7 x ~0.45 > min_score 0.1
    assert all("dog" not in h.text for h in junk)



def test_a_question_sharing_only_a_common_word_with_the_memory_gets_no_hits(memory_dir: Path) -> None:
    # Four notes of twelve name Tomás, none his shoes: a note about Tomás holds half of the words of
    # "Tomás's shoe size?" but little of its weight, and the vectors see no topic in it.
    for i, note in enumerate(NOTES):
        who = "Tomás: " if i % 3 == 0 else ""
        (memory_dir / f"note{i:02d}.md").write_text(f"- {who}{note}\n", encoding="utf-8")
    with MarkdownMemory(memory_dir, embeddings=CrowdedEmbeddings()) as mem:
        assert mem.search("Tomás shoes") == []
        answered = mem.search("Tomás sixty")  # the rare word is held: answered
    with MarkdownMemory(memory_dir, embeddings=CrowdedEmbeddings(), config={"min_score": 0.0}) as mem:
        withheld = mem.search("Tomás shoes")
    assert answered[0].text == "- Tomás: retire at sixty"
    assert withheld and all("Tomás" in h.text for h in withheld[:4])
    assert max(h.relevance for h in withheld) < 0.45  # under the gate: "toma" is a third of the weight


def test_a_search_reads_its_terms_document_frequencies_once(memory_dir: Path, monkeypatch) -> None:
    from langchain_md_memory.index import sqlite

    calls: list[list[str]] = []
    real = sqlite.document_frequencies

    def counting(query, terms):  # type: ignore[no-untyped-def]
        calls.append(list(terms))
        return real(query, terms)

    monkeypatch.setattr(sqlite, "document_frequencies", counting)
    with _memory(memory_dir) as mem:
        mem.search("bond ladder")
        calls.clear()
        hits = mem.search("retire pension")
        # Keyword recall's read serves the coverage weights; the one other read is of the Chinese
        # translations (退休, 养老金...), none of which the memory holds: no search follows it.
        assert calls[0] == ["retir", "pension"] and len(calls) == 2
        assert not {"retir", "pension"} & set(calls[1])
        weights = mem.index.term_idf(["retir", "pension"])  # no search before it: read again
    assert len(calls) == 3 and weights["retir"] > 0
    assert hits[0].text == "- retire pension plan" and hits[0].relevance == 1.0
