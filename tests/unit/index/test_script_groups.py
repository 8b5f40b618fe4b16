"""ScriptVectors: one matrix per script group, cosines offset by each group's background."""

from __future__ import annotations

import numpy as np
import pytest

from langchain_md_memory.index.sqlite.script_groups import SCRIPT_CJK, SCRIPT_OTHER, ScriptVectors
from langchain_md_memory.index.sqlite.vectors import VectorMatrix
from langchain_md_memory.text import script_group

# Axes: five topics, then "written in English", then "written in Chinese".
LANGUAGE = 1.2


def note(topic: int, script: int) -> np.ndarray:
    v = np.zeros(7)
    v[topic] = 1.0
    v[5 + script] = LANGUAGE
    return v


def test_an_answer_in_the_other_language_outranks_notes_that_only_share_the_question_language() -> None:
    vectors = ScriptVectors()
    # Ten Chinese notes on topics 1-4, ten English notes on them too, and the English answer (topic 0).
    chinese = [note(1 + i % 4, SCRIPT_CJK) for i in range(10)]
    english = [note(1 + i % 4, SCRIPT_OTHER) for i in range(10)] + [note(0, SCRIPT_OTHER)]
    vectors.add(list(range(100, 110)), chinese, [SCRIPT_CJK] * 10)
    vectors.add(list(range(200, 211)), english, [SCRIPT_OTHER] * 11)
    question = note(0, SCRIPT_CJK)  # a Chinese question about topic 0

    plain = VectorMatrix()
    plain.add(list(range(100, 110)) + list(range(200, 211)), chinese + english)
    assert plain.top_k(question, 1)[0][0] != 210  # by raw cosine, any Chinese note beats the answer

    top = vectors.top_k(question, 3)
    assert top[0][0] == 210 and top[0][1] > top[1][1] + 0.2
    # The gate's yardstick stays memory-wide: the mean and spread of all the plain cosines.
    assert vectors.background(question) == pytest.approx(plain.background(question), abs=1e-6)


def test_a_memory_in_one_script_scores_plain_cosines() -> None:
    rng = np.random.default_rng(7)
    rows = [rng.normal(size=8) for _ in range(30)]
    vectors, plain = ScriptVectors(), VectorMatrix()
    vectors.add(list(range(30)), rows, [SCRIPT_OTHER] * 30)
    plain.add(list(range(30)), rows)
    query = rng.normal(size=8)
    assert vectors.top_k(query, 5) == plain.top_k(query, 5)
    assert vectors.background(query) == plain.background(query)


def test_rows_move_between_groups_and_leave_on_remove() -> None:
    vectors = ScriptVectors()
    vectors.add([1, 2], [np.eye(3)[0], np.eye(3)[1]], [SCRIPT_OTHER, SCRIPT_OTHER])
    vectors.add([2], [np.eye(3)[1]], [SCRIPT_CJK])  # the note was rewritten in Chinese
    assert len(vectors) == 2
    vectors.remove([1, 2])
    assert len(vectors) == 0 and vectors.top_k(np.eye(3)[0], 3) == []


def test_script_group_weighs_a_cjk_character_as_a_short_word() -> None:
    assert script_group("爸爸的生日是 3 月 8 日 (Dad)") == SCRIPT_CJK
    assert script_group("Chen Weilin (陈蔚琳) likes oolong tea") == SCRIPT_OTHER
    assert script_group("") == SCRIPT_OTHER


def test_a_compact_matrix_is_rescored_and_still_offset_by_script() -> None:
    chinese = [note(1 + i % 4, SCRIPT_CJK) for i in range(10)]
    english = [note(1 + i % 4, SCRIPT_OTHER) for i in range(10)] + [note(0, SCRIPT_OTHER)]
    ids = list(range(100, 110)) + list(range(200, 211))
    stored = {rowid: v for rowid, v in zip(ids, chinese + english, strict=True)}
    exact, compact = ScriptVectors(), ScriptVectors("int8")
    for vectors in (exact, compact):
        vectors.add(ids, chinese + english, [SCRIPT_CJK] * 10 + [SCRIPT_OTHER] * 11)
    question = note(0, SCRIPT_CJK)
    asked: list[int] = []

    def lookup(rowids):
        asked.extend(rowids)
        return {r: stored[r] for r in rowids}

    top = compact.top_k(question, 3, stored=lookup)
    assert not compact.exact and asked  # the stored float32 vectors decided
    best = exact.top_k(question, 1)[0]
    assert top[0][0] == best[0] == 210  # the cross-lingual answer, as with float32
    assert top[0][1] == pytest.approx(best[1], abs=0.01)  # exact cosine; the offset from compact backgrounds


def test_a_repeated_query_is_measured_again_after_a_write() -> None:
    rng = np.random.default_rng(11)
    vectors = ScriptVectors()
    vectors.add(list(range(20)), [rng.normal(size=6) for _ in range(20)], [SCRIPT_OTHER] * 20)
    query = rng.normal(size=6)
    before = vectors.background(query)
    assert vectors.background(query) == before  # asked twice, the same answer
    near = [query + rng.normal(scale=0.1, size=6) for _ in range(20)]
    vectors.add(list(range(20, 40)), near, [SCRIPT_OTHER] * 20)
    after = vectors.background(query)
    assert after is not None and before is not None and after[0] > before[0] + 0.1


def test_the_top_k_pass_measures_the_background_it_returns(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(5)
    vectors = ScriptVectors()
    groups = [SCRIPT_OTHER] * 15 + [SCRIPT_CJK] * 15
    vectors.add(list(range(30)), [rng.normal(size=6) for _ in range(30)], groups)
    query = rng.normal(size=6)
    measured = vectors.background(query)
    sampled: list[int] = []
    monkeypatch.setattr(VectorMatrix, "backgrounds", lambda self, q: sampled.append(1))
    top, background, unmeasured = vectors.search(query, 5)
    assert top == vectors.top_k(query, 5)
    assert background == pytest.approx(measured)  # same figures as a separate sample
    assert sampled == []  # and no second pass over the vectors
    assert unmeasured == set()  # both groups are measured


def test_the_rows_of_a_group_too_small_for_a_background_are_named_with_it() -> None:
    # Fifteen English rows measure a background; three Chinese rows are too few for one of their own.
    rng = np.random.default_rng(7)
    vectors = ScriptVectors()
    groups = [SCRIPT_OTHER] * 15 + [SCRIPT_CJK] * 3
    vectors.add(list(range(18)), [rng.normal(size=6) for _ in range(18)], groups)
    top, background, unmeasured = vectors.search(rng.normal(size=6), 18)
    assert background is not None and len(top) == 18
    assert unmeasured == {15, 16, 17}
    few = ScriptVectors()
    few.add([1, 2, 3], [rng.normal(size=6) for _ in range(3)], [SCRIPT_OTHER] * 3)
    top, background, unmeasured = few.search(rng.normal(size=6), 2)
    assert background is None and unmeasured == {rowid for rowid, _ in top}


def test_a_chunk_is_grouped_by_what_it_is_embedded_as() -> None:
    from langchain_md_memory.index.rows import ChunkRow
    from langchain_md_memory.types import ChunkRecord

    def row(heading: str, text: str, context: str = "") -> ChunkRow:
        record = ChunkRecord("a:1", "a.md", 1, 1, heading, text, "h", "daily", 0.0)
        return ChunkRow(record, "e", "", None, context)

    assert row("## Flush", "- Prefers aisle seats.").script == SCRIPT_OTHER
    # The model reads the heading and the context too: this vector is a Chinese text's.
    assert row("## 13:00 妹妹打电话", "- OK", "妹妹打电话说她怀孕了，预产期在明年春天。").script == SCRIPT_CJK
