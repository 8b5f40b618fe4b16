"""The five-stage pipeline through MarkdownMemory, with an embedding whose cosines we choose."""

import datetime as dt

import pytest
from langchain_core.embeddings import Embeddings

from langchain_md_memory import MarkdownMemory, MemoryConfig
from langchain_md_memory.config import SEED_RANKING as SEED  # the seed's formulas, checked number by number
from langchain_md_memory.text import script_group
from tests.support.embeddings import AxisEmbeddings, cosine

VOCAB = ["retire", "sixty", "million", "pension", "cash", "bond"]
SMALL_CHUNKS = {"chunking": {"chunk_tokens": 16, "chunk_overlap_tokens": 0}, "embedding": {"retries": 0}}


@pytest.fixture
def emb():
    return AxisEmbeddings(VOCAB)


def open_memory(path, emb, *, seed=False, **config):
    base = MemoryConfig(**SMALL_CHUNKS).merged(**(SEED if seed else {}))
    return MarkdownMemory(path, embeddings=emb, config=base.merged(**config))


def test_both_path_score_is_the_weighted_sum_of_vector_and_keyword(memory_dir, emb):
    (memory_dir / "MEMORY.md").write_text("Retire at sixty with a pension.\n")
    (memory_dir / "cash.md").write_text("Cash buffer: six months.\n")
    with open_memory(memory_dir, emb, ranking={"mmr": {"enabled": False}}, seed=True) as mem:
        hit = mem.search("retire pension")[0]
    assert hit.retrieved_by == "both"
    expected_v = cosine(emb.vector("retire pension"), emb.vector("Retire at sixty with a pension."))
    assert hit.vector_score == pytest.approx(expected_v, abs=1e-6)
    assert hit.keyword_score == 1.0
    assert hit.score == pytest.approx(0.7 * hit.vector_score + 0.3 * hit.keyword_score)
    assert hit.merged_score == pytest.approx(hit.score)


def test_weights_renormalise_to_the_vector_path_when_keywords_find_nothing(memory_dir):
    emb = AxisEmbeddings(VOCAB, aliases={"annuity": "pension"})
    (memory_dir / "MEMORY.md").write_text("Company annuity starts at sixty-five.\n")
    with open_memory(memory_dir, emb, seed=True) as mem:
        ranked = mem.search_detailed("pension")
    assert ranked.funnel["keyword"] == 0
    hit = ranked.hits[0]
    assert hit.retrieved_by == "vector" and hit.keyword_score is None
    # the chunk lies on the "sixty" and "pension" axes, the query on "pension" alone
    assert hit.vector_score == pytest.approx(1 / 2**0.5, abs=1e-6)
    assert hit.score == pytest.approx(hit.vector_score)


def test_custom_weights_are_renormalised(memory_dir, emb):
    (memory_dir / "MEMORY.md").write_text("Retire at sixty with a pension.\n")
    with open_memory(memory_dir, emb, ranking={"vector_weight": 1.0, "text_weight": 1.0}, seed=True) as mem:
        hit = mem.search("retire pension")[0]
    assert hit.score == pytest.approx(0.5 * hit.vector_score + 0.5 * hit.keyword_score)


def test_min_score_cuts_weak_hits(memory_dir, emb):
    (memory_dir / "MEMORY.md").write_text(
        "Retire at sixty.\n\nCash buffer before I retire, cash cash cash.\n"
    )
    with open_memory(memory_dir, emb, ranking={"mmr": {"enabled": False}}, seed=True) as mem:
        all_hits = mem.search("retire", max_results=5)
        weakest = min(h.score for h in all_hits)
        tighter = mem.config.merged(ranking={"min_score": weakest + 1e-3})
        cut = mem.search_detailed("retire", max_results=5, config=tighter)
    assert len(all_hits) == 2
    assert len(cut.hits) == 1
    assert all(h.score >= weakest + 1e-3 for h in cut.hits)


def test_thirty_day_old_daily_hit_has_half_decay_and_ranks_under_todays_copy(memory_dir, emb):
    today = dt.date.today()
    old = today - dt.timedelta(days=30)
    text = "Bond ladder decision: buy five rungs.\n"
    (memory_dir / f"{old.isoformat()}.md").write_text(text)
    (memory_dir / f"{today.isoformat()}.md").write_text(text)
    with open_memory(memory_dir, emb, ranking={"mmr": {"enabled": False}}, seed=True) as mem:
        hits = mem.search("bond ladder")
    assert [h.path for h in hits] == [f"{today.isoformat()}.md", f"{old.isoformat()}.md"]
    assert hits[0].decay == 1.0
    assert hits[1].decay == pytest.approx(0.5)
    assert hits[1].score == pytest.approx(hits[0].score * 0.5)
    # The default keeps the order but floors the decay: 0.8 + 0.2 · 0.5.
    with open_memory(memory_dir, emb, ranking={"mmr": {"enabled": False}}) as mem:
        hits = mem.search("bond ladder")
    assert [h.path for h in hits] == [f"{today.isoformat()}.md", f"{old.isoformat()}.md"]
    assert hits[1].decay == pytest.approx(0.9)


def test_evergreen_files_never_decay(memory_dir, emb):
    (memory_dir / "MEMORY.md").write_text("Bond rule: only treasuries.\n")
    (memory_dir / "goals.md").write_text("Bond goal: a ladder by 2030.\n")
    with open_memory(memory_dir, emb) as mem:
        hits = mem.search("bond")
    assert {h.path for h in hits} == {"MEMORY.md", "goals.md"}
    assert all(h.decay == 1.0 and h.file_kind == "evergreen" for h in hits)


DUPES = """Retire at sixty with two million invested.

Retire at sixty with two million invested.

Retire at sixty with two million invested.

Pension plan: retire at sixty on the company pension.

Cash buffer: six months of cash before I retire.
"""


def test_mmr_brings_a_distinct_relevant_chunk_into_the_top_two(memory_dir, emb):
    (memory_dir / "MEMORY.md").write_text(DUPES)
    with open_memory(memory_dir, emb, max_results=2) as mem:
        on = mem.search("retire at sixty")
    with open_memory(memory_dir, emb, max_results=2, ranking={"mmr": {"enabled": False}}) as mem:
        off = mem.search("retire at sixty")
    with open_memory(memory_dir, emb, max_results=2, ranking={"mmr": {"lambda": 1.0}}) as mem:
        pure = mem.search("retire at sixty")
    assert "Pension plan" in on[1].text and on[1].relevance_rank == 4
    assert all("two million" in h.text for h in off)
    assert [h.chunk_id for h in pure] == [h.chunk_id for h in off]


def test_mmr_with_embedding_cosine_similarity_also_diversifies(memory_dir, emb):
    (memory_dir / "MEMORY.md").write_text(DUPES)
    with open_memory(memory_dir, emb, max_results=2, ranking={"mmr": {"similarity": "cosine"}}) as mem:
        hits = mem.search("retire at sixty")
    assert "Pension plan" in hits[1].text


def test_forced_resync_of_unchanged_files_embeds_nothing(memory_dir, emb):
    (memory_dir / "MEMORY.md").write_text(DUPES)
    with open_memory(memory_dir, emb) as mem:
        first = mem.sync()
        assert first.embedded == 3  # three distinct texts: the duplicates share one call
        again = mem.sync(force=True)
    assert again.embedded == 0
    assert again.cached == first.chunks_added


def test_one_paragraph_edit_reembeds_only_that_paragraph(memory_dir, emb):
    (memory_dir / "MEMORY.md").write_text("".join(f"Note {i} about bond rung {i}.\n\n" for i in range(20)))
    with open_memory(memory_dir, emb) as mem:
        mem.sync()
        before = emb.texts_embedded
        assert mem.edit("Note 7 about bond rung 7.", "Note 7 about cash, not bonds.")
        stats = mem.sync()
    assert stats.embedded == 1
    assert emb.texts_embedded - before == 1


def test_changed_embedding_identity_clears_and_reembeds_all_vectors(memory_dir):
    (memory_dir / "MEMORY.md").write_text("Retire at sixty.\n")
    (memory_dir / "cash.md").write_text("Cash buffer.\n")
    with open_memory(memory_dir, AxisEmbeddings(VOCAB, model="axis-v1")) as mem:
        mem.sync()
        assert mem.status()["embedded"] == 2
    other = AxisEmbeddings(VOCAB, model="axis-v2")
    with open_memory(memory_dir, other) as mem:
        stats = mem.sync()
        status = mem.status()
    assert stats.embedded == 2 and other.texts_embedded == 2
    assert status["identity_changed_from"].startswith("AxisEmbeddings:axis-v1:7")
    assert status["embedding_identity"].startswith("AxisEmbeddings:axis-v2:7")
    assert status["embedded"] == 2


def test_status_only_reads_what_is_left_to_index_and_embed(memory_dir, emb):
    for i in range(5):
        (memory_dir / f"plan{i}.md").write_text(f"Retire at sixty, plan {i}.\n")
    with open_memory(memory_dir, emb) as mem:
        info = mem.status()
        assert (info["files"], info["files_to_index"], info["chunks"], info["dirty"]) == (5, 5, 0, True)
        assert emb.calls == emb.queries == 0  # not even the call that measures the model's dimension
        mem.sync()
        (memory_dir / "plan0.md").unlink()
        (memory_dir / "plan1.md").write_text("Retire at sixty-five, plan 1 revised.\n")
        calls = (emb.calls, emb.queries)
        info = mem.status()
        assert (info["files"], info["files_to_index"], info["embedded"]) == (4, 2, 5)
        assert info["waiting_for_embeddings"] == 0 and (emb.calls, emb.queries) == calls
    other = AxisEmbeddings(VOCAB, model="axis-v2")
    with open_memory(memory_dir, other) as mem:
        info = mem.status()
    assert info["embedding_identity"].startswith("AxisEmbeddings:axis-v1:7")
    assert info["waiting_for_embeddings"] == 5  # another model's vectors: the next sync makes them all again
    assert other.calls == other.queries == 0


def test_embedding_outage_at_query_time_answers_from_keywords(memory_dir, emb):
    (memory_dir / "MEMORY.md").write_text("Retire at sixty.\n")
    (memory_dir / "cash.md").write_text("Cash buffer.\n")
    with open_memory(memory_dir, emb) as mem:
        mem.sync()
        emb.fail = TimeoutError("provider timed out")
        ranked = mem.search_detailed("cash")
    assert ranked.degraded is not None and "keyword" in ranked.degraded
    assert [h.retrieved_by for h in ranked.hits] == ["keyword"]
    assert ranked.hits[0].score == ranked.hits[0].keyword_score == 1.0


def test_embedding_outage_at_index_time_still_indexes_keywords_and_recovers(memory_dir, emb):
    (memory_dir / "MEMORY.md").write_text("Retire at sixty.\n")
    emb.fail = ConnectionError("down")
    with open_memory(memory_dir, emb) as mem:
        mem.sync()
        assert "down" in mem.status()["embedding_error"]
        assert mem.status()["embedded"] == 0
        assert mem.search("retire")[0].retrieved_by == "keyword"
        emb.fail = None
        mem._indexer._embed_retry_at = 0.0  # skip the back-off window in the test
        mem._indexer.embedding_error = None
        mem.sync()
        assert mem.status()["embedded"] == 1
        assert mem.search("retire")[0].retrieved_by == "both"


CHECKUP = """# Session checkup

## Assistant

Did you book the blood test at the clinic?

## User

Yes, last Tuesday.
"""


def test_a_short_reply_is_found_through_the_question_it_answers(memory_dir):
    # "Yes, last Tuesday." alone shares no word with the query; embedded with its neighbouring
    # lines (the question before it) it is found, and the file still shows only the reply.
    emb = AxisEmbeddings(["blood", "test", "clinic", "tuesday", "gym"])
    (memory_dir / "sessions").mkdir()
    (memory_dir / "sessions" / "checkup.md").write_text(CHECKUP)
    (memory_dir / "MEMORY.md").write_text("# Profile\n\n- Tuesday is gym day.\n")

    def ranked(**config):
        with MarkdownMemory(memory_dir, embeddings=emb, config=MemoryConfig(**config)) as mem:
            hits = mem.search("when was the blood test?")
        return next(h for h in hits if "last Tuesday" in h.text), hits

    reply, hits = ranked()
    assert [h.path for h in hits[:2]] == ["sessions/checkup.md"] * 2 and reply in hits[:2]
    # Near the question through its context, which the hit does not show.
    assert reply.vector_score == pytest.approx(0.5**0.5) and "blood" not in reply.text
    alone, hits = ranked(chunking={"chunk_context_tokens": 0})
    assert not alone.vector_score and hits[-1] == alone  # alone it means nothing: last, below the gym note


class BilingualTopics(Embeddings):
    """Topic counts (either language's word counts) plus a heavy axis for the language a text is in."""

    TOPICS = (("birthday", "生日"), ("rent", "房租"), ("tea", "茶"), ("gym", "健身"), ("car", "车"))

    def vector(self, text: str) -> list[float]:
        low = text.lower()
        topics = [float(low.count(en) + low.count(zh)) for en, zh in self.TOPICS]
        return [*topics, 1.2 * (script_group(text) == 0), 1.2 * (script_group(text) == 1)]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.vector(text)


def _notes_in_both_languages(memory_dir, topics) -> None:
    """Three notes a topic in each language, all saying nothing changed."""
    for i, (en, zh) in enumerate(topics * 3):
        (memory_dir / f"zh-{i}.md").write_text(f"# 笔记\n\n- 关于{zh}的安排没有变化。\n")
        (memory_dir / f"en-{i}.md").write_text(f"# Note\n\n- Nothing changed about the {en} plan.\n")


def test_a_question_finds_its_answer_written_in_the_other_language(memory_dir):
    # Every Chinese note is nearer a Chinese question than the English answer is, by raw cosine.
    emb = BilingualTopics()
    _notes_in_both_languages(memory_dir, BilingualTopics.TOPICS[1:])
    (memory_dir / "family.md").write_text("# Family\n\n- Dad's birthday is on March 8.\n")
    question = "爸爸的生日是哪天？"
    asked, answer = emb.embed_query(question), emb.vector("# Family\n\n- Dad's birthday is on March 8.")
    assert cosine(asked, answer) < cosine(asked, emb.vector("关于茶的安排没有变化"))
    with MarkdownMemory(memory_dir, embeddings=emb) as mem:
        hits = mem.search(question)
    assert hits and hits[0].path == "family.md" and hits[0].vector_score is not None


def test_a_short_english_note_in_a_chinese_log_is_measured_as_english(memory_dir):
    # The short English section below stands after a Chinese entry. Embedded with those lines
    # (as its context) it read as Chinese, yet was measured among English notes: for a Chinese
    # question it took their offset (index.scoring) and stood above every note but the answer.
    emb = BilingualTopics()
    _notes_in_both_languages(memory_dir, BilingualTopics.TOPICS[2:])
    (memory_dir / "rent.md").write_text("# 房子\n\n- 房租每个月一千七百欧。\n")
    (memory_dir / "memory").mkdir()
    (memory_dir / "memory" / "2026-10-21.md").write_text(
        "## 13:00 生日\n- 妹妹打电话说妈妈的生日想在成都过，生日蛋糕已经订好了。\n\n"
        "## Pre-compaction memory flush\n- Prefers aisle seats on flights.\n"
    )
    with MarkdownMemory(memory_dir, embeddings=emb, config=MemoryConfig(ranking={"min_score": 0.0})) as mem:
        hits = mem.search("房租多少钱？", max_results=30)
    assert hits[0].path == "rent.md"
    flush = next(h.vector_score for h in hits if "aisle" in h.text)
    english = [h.vector_score or 0.0 for h in hits if h.path.startswith("en-")]
    assert flush is not None and english and flush <= max(english) + 1e-6


def test_a_vector_hit_below_the_keyword_pool_keeps_its_keyword_score(memory_dir):
    emb = AxisEmbeddings(VOCAB, aliases={"annuity": "pension"})
    (memory_dir / "a.md").write_text("Pension, cash.\n")
    (memory_dir / "c.md").write_text("Pension bond.\n")
    # Third by BM25 (the longest), first by cosine (its annuity is a pension to the embedding).
    (memory_dir / "b.md").write_text("Company annuity: the pension fund pays out monthly from sixty-five.\n")
    pool_of_two = {"max_results": 2, "ranking": {"candidate_multiplier": 1, "mmr": {"enabled": False}}}
    with open_memory(memory_dir, emb, **pool_of_two) as mem:
        completed = mem.search_detailed("pension")
    alone = {**pool_of_two, "ranking": {**pool_of_two["ranking"], "complete_keyword_scores": False}}
    with open_memory(memory_dir, emb, **alone) as mem:
        as_returned = mem.search_detailed("pension")
    (hit,) = (h for h in completed.hits if h.path == "b.md")
    (seed_hit,) = (h for h in as_returned.hits if h.path == "b.md")
    assert seed_hit.retrieved_by == "vector" and seed_hit.keyword_score is None  # keyword recall kept a and c
    assert hit.retrieved_by == "both" and 0.0 < hit.keyword_score < 1.0
    assert hit.vector_score == seed_hit.vector_score and hit.score > seed_hit.score
    assert completed.funnel["keyword"] == 3 and as_returned.funnel["keyword"] == 2
