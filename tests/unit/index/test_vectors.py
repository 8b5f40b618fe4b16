"""The vector matrix: add, replace, remove and top-k agree with a numpy brute force; BLOB round trip."""

from __future__ import annotations

import numpy as np
import pytest

from langchain_md_memory.errors import MemoryIndexError
from langchain_md_memory.index.rows import from_blob, to_blob
from langchain_md_memory.index.scoring import BACKGROUND_SAMPLE
from langchain_md_memory.index.sqlite.vectors import RESCORE_FACTOR, VectorMatrix, rescore

DIM = 8


def brute_force(vectors: dict[int, np.ndarray], query: np.ndarray, k: int) -> list[tuple[int, float]]:
    """Cosine of the query with every live vector, best first, ties by rowid; reported clipped to [0, 1]."""
    q = query / np.linalg.norm(query)
    scored = [(rowid, float(v @ q / np.linalg.norm(v))) for rowid, v in vectors.items()]
    best = sorted(scored, key=lambda pair: (-pair[1], pair[0]))[:k]
    return [(rowid, min(max(score, 0.0), 1.0)) for rowid, score in best]


def assert_same_ranking(got: list[tuple[int, float]], want: list[tuple[int, float]]) -> None:
    assert [rowid for rowid, _ in got] == [rowid for rowid, _ in want]
    assert [score for _, score in got] == pytest.approx([score for _, score in want], abs=1e-5)


def random_vectors(rng: np.random.Generator, rowids: range) -> dict[int, np.ndarray]:
    return {rowid: rng.normal(size=DIM) for rowid in rowids}


def test_top_k_matches_brute_force_after_adds_and_removes() -> None:
    rng = np.random.default_rng(7)
    live = random_vectors(rng, range(1, 301))
    matrix = VectorMatrix()
    matrix.add(list(live), list(live.values()))

    removed = [int(r) for r in rng.choice(list(live), size=120, replace=False)]
    matrix.remove(removed)
    for rowid in removed:
        del live[rowid]
    extra = random_vectors(rng, range(1000, 1050))
    matrix.add(list(extra), list(extra.values()))
    live.update(extra)

    assert len(matrix) == len(live)
    for _ in range(20):
        query = rng.normal(size=DIM)
        assert_same_ranking(matrix.top_k(query, 10), brute_force(live, query, 10))


def test_removed_rows_are_never_returned() -> None:
    matrix = VectorMatrix()
    matrix.add([1, 2, 3], [np.eye(DIM)[0], np.eye(DIM)[1], np.eye(DIM)[2]])
    matrix.remove([1, 3])
    assert [rowid for rowid, _ in matrix.top_k(np.eye(DIM)[0], 10)] == [2]
    assert len(matrix) == 1


def test_adding_an_existing_rowid_replaces_its_vector() -> None:
    matrix = VectorMatrix()
    matrix.add([1, 2], [np.eye(DIM)[0], np.eye(DIM)[1]])
    matrix.add([1], [np.eye(DIM)[1]])
    assert len(matrix) == 2
    assert matrix.top_k(np.eye(DIM)[0], 2) == [(1, 0.0), (2, 0.0)]
    assert matrix.top_k(np.eye(DIM)[1], 1)[0][1] == pytest.approx(1.0)


def test_a_rowid_given_twice_in_one_add_keeps_the_last_vector() -> None:
    matrix = VectorMatrix()
    matrix.add([5, 5], [np.eye(DIM)[0], np.eye(DIM)[3]])
    assert len(matrix) == 1
    assert matrix.top_k(np.eye(DIM)[3], 1) == [(5, pytest.approx(1.0))]


def test_k_larger_than_the_matrix_returns_every_row() -> None:
    rng = np.random.default_rng(1)
    live = random_vectors(rng, range(5))
    matrix = VectorMatrix()
    matrix.add(list(live), list(live.values()))
    query = rng.normal(size=DIM)
    assert_same_ranking(matrix.top_k(query, 50), brute_force(live, query, 50))


@pytest.mark.parametrize("k", [0, -1])
def test_non_positive_k_returns_nothing(k: int) -> None:
    matrix = VectorMatrix()
    matrix.add([1], [np.ones(DIM)])
    assert matrix.top_k(np.ones(DIM), k) == []


def test_an_empty_matrix_or_a_zero_query_returns_nothing() -> None:
    assert VectorMatrix().top_k(np.ones(DIM), 3) == []
    matrix = VectorMatrix()
    matrix.add([1], [np.ones(DIM)])
    assert matrix.top_k(np.zeros(DIM), 3) == []


def test_a_query_of_the_wrong_dimension_names_both_dimensions() -> None:
    matrix = VectorMatrix()
    matrix.add([1], [np.ones(DIM)])
    with pytest.raises(MemoryIndexError, match=rf"3 dimensions.*{DIM}"):
        matrix.top_k(np.ones(3), 1)


def test_adding_a_vector_of_another_dimension_is_refused() -> None:
    matrix = VectorMatrix()
    matrix.add([1], [np.ones(DIM)])
    with pytest.raises(MemoryIndexError, match="mixed dimensions"):
        matrix.add([2], [np.ones(DIM + 1)])
    assert len(matrix) == 1


def test_growing_past_capacity_keeps_every_row() -> None:
    rng = np.random.default_rng(3)
    live: dict[int, np.ndarray] = {}
    matrix = VectorMatrix()
    for start in range(0, 500, 37):  # many small adds force several regrowths
        batch = random_vectors(rng, range(start, min(start + 37, 500)))
        matrix.add(list(batch), list(batch.values()))
        live.update(batch)
    assert len(matrix) == 500
    query = rng.normal(size=DIM)
    assert_same_ranking(matrix.top_k(query, 25), brute_force(live, query, 25))


def test_a_mass_removal_keeps_the_survivors_searchable() -> None:
    rng = np.random.default_rng(4)
    live = random_vectors(rng, range(3000))
    matrix = VectorMatrix()
    matrix.add(list(live), list(live.values()))
    gone = list(range(100, 3000))
    matrix.remove(gone)
    for rowid in gone:
        del live[rowid]
    assert len(matrix) == 100
    query = rng.normal(size=DIM)
    assert_same_ranking(matrix.top_k(query, 100), brute_force(live, query, 100))


def test_load_matches_add() -> None:
    rng = np.random.default_rng(5)
    live = random_vectors(rng, range(1, 40))
    loaded = VectorMatrix.load(((rowid, to_blob(v)) for rowid, v in live.items()), expected=10)
    assert len(loaded) == len(live)
    query = rng.normal(size=DIM)
    assert_same_ranking(loaded.top_k(query, 7), brute_force(live, query, 7))


def test_load_refuses_mixed_dimensions() -> None:
    rows = [(1, to_blob(np.ones(DIM))), (2, to_blob(np.ones(DIM + 2)))]
    with pytest.raises(MemoryIndexError, match="mixed dimensions"):
        VectorMatrix.load(iter(rows), expected=2)


def test_blob_round_trip_is_float32_exact() -> None:
    vector = np.array([0.1, -2.5, 3e-7, 1e6, 0.0], dtype=np.float64)
    blob = to_blob(vector)
    assert len(blob) == 4 * len(vector)
    back = from_blob(blob)
    assert back.dtype == np.float32
    np.testing.assert_array_equal(back, vector.astype(np.float32))
    assert to_blob(back) == blob


# -- compact matrices (float16, int8) ------------------------------------------------------------------

COMPACT = ["float16", "int8"]


def _filled(dtype: str, live: dict[int, np.ndarray]) -> VectorMatrix:
    matrix = VectorMatrix(dtype)  # type: ignore[arg-type]
    matrix.add(list(live), list(live.values()))
    return matrix


@pytest.mark.parametrize("dtype", COMPACT)
def test_compact_matrix_scores_stay_close_to_the_exact_cosine(dtype: str) -> None:
    rng = np.random.default_rng(11)
    live = {rowid: rng.normal(size=64) for rowid in range(1, 401)}
    matrix = _filled(dtype, live)
    query = rng.normal(size=64)
    got = dict(matrix.top_k(query, 400))
    want = dict(brute_force(live, query, 400))
    assert set(got) == set(want)
    tolerance = 2e-3 if dtype == "float16" else 2e-2
    assert max(abs(got[r] - want[r]) for r in want) < tolerance


@pytest.mark.parametrize("dtype", COMPACT)
def test_rescoring_a_compact_pool_gives_the_exact_float32_top_k(dtype: str) -> None:
    rng = np.random.default_rng(5)
    live = {rowid: rng.normal(size=64) for rowid in range(1, 2001)}
    matrix = _filled(dtype, live)
    for _ in range(10):
        query = rng.normal(size=64)
        pool = [rowid for rowid, _ in matrix.top_k(query, 10 * RESCORE_FACTOR)]
        got = rescore(query, pool, live, 10)
        assert_same_ranking(got, brute_force(live, query, 10))


def test_rescore_orders_by_exact_cosine_and_ties_by_rowid() -> None:
    vectors = {7: np.array([1.0, 0.0]), 3: np.array([2.0, 0.0]), 5: np.array([0.6, 0.8])}
    vectors[9] = np.array([-1.0, 0.0])
    got = rescore(np.array([1.0, 0.0]), [7, 3, 5, 9, 42], vectors, 4)
    assert [rowid for rowid, _ in got] == [3, 7, 5, 9]  # 42 has no vector: dropped
    assert [score for _, score in got] == pytest.approx([1.0, 1.0, 0.6, 0.0])  # clipped at 0


@pytest.mark.parametrize("dtype", COMPACT)
def test_compact_matrix_add_replace_remove_keep_rows_and_scales_together(dtype: str) -> None:
    rng = np.random.default_rng(3)
    live = {rowid: rng.normal(size=DIM) * rng.uniform(0.1, 10) for rowid in range(1, 201)}
    matrix = _filled(dtype, live)
    removed = [int(r) for r in rng.choice(list(live), size=80, replace=False)]
    matrix.remove(removed)
    for rowid in removed:
        del live[rowid]
    live[removed[0]] = rng.normal(size=DIM)  # back, with a new vector
    first = next(iter(live))
    live[first] = rng.normal(size=DIM) * 100  # replaced, a very different scale
    changed = [removed[0], first]
    matrix.add(changed, [live[r] for r in changed])
    assert len(matrix) == len(live)
    for _ in range(10):
        query = rng.normal(size=DIM)
        pool = [rowid for rowid, _ in matrix.top_k(query, 5 * RESCORE_FACTOR)]
        assert_same_ranking(rescore(query, pool, live, 5), brute_force(live, query, 5))


@pytest.mark.parametrize("dtype", COMPACT)
def test_a_compact_matrix_loads_blobs_and_takes_less_memory(dtype: str) -> None:
    rng = np.random.default_rng(2)
    live = {rowid: rng.normal(size=384).astype(np.float32) for rowid in range(1, 20_001)}
    rows = [(rowid, to_blob(v)) for rowid, v in live.items()]
    exact = VectorMatrix.load(iter(rows), expected=len(rows))
    compact = VectorMatrix.load(iter(rows), expected=len(rows), dtype=dtype)  # type: ignore[arg-type]
    assert not compact.exact and exact.exact
    assert compact.nbytes() < exact.nbytes() * (0.55 if dtype == "float16" else 0.3)
    query = rng.normal(size=384)
    pool = [rowid for rowid, _ in compact.top_k(query, 24 * RESCORE_FACTOR)]
    assert [r for r, _ in rescore(query, pool, live, 24)] == [r for r, _ in exact.top_k(query, 24)]
    assert compact.background(query) == pytest.approx(exact.background(query), abs=1e-2)


def test_an_unknown_vector_dtype_is_refused_by_name() -> None:
    with pytest.raises(MemoryIndexError, match="bfloat16"):
        VectorMatrix("bfloat16")  # type: ignore[arg-type]


def test_search_is_top_k_and_background_from_one_pass() -> None:
    rng = np.random.default_rng(3)
    live = random_vectors(rng, range(1, 60))
    for dtype in ("float32", "float16", "int8"):
        matrix = VectorMatrix(dtype)
        matrix.add(list(live), list(live.values()))
        query = rng.normal(size=DIM)
        top, background = matrix.search(query, 7)
        assert top == matrix.top_k(query, 7)
        assert background == pytest.approx(matrix.background(query), abs=1e-6)
        assert matrix.search(query, 7, sample=4)[1] is None  # too few rows sampled to say


@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_groups_search_as_separate_matrices_through_adds_moves_and_removes(dtype: str) -> None:
    rng = np.random.default_rng(35)
    matrix = VectorMatrix(dtype)  # type: ignore[arg-type]
    live: dict[int, tuple[int, np.ndarray]] = {}  # rowid -> (group, vector)
    for step in range(60):
        group = int(rng.integers(0, 3))
        rowids = [int(r) for r in rng.choice(400, size=int(rng.integers(1, 12)), replace=False)]
        if step % 3 == 2:
            matrix.remove(rowids)
            for rowid in rowids:
                live.pop(rowid, None)
        else:  # a rowid held in another group moves to this one
            vectors = [rng.normal(size=DIM) for _ in rowids]
            matrix.add(rowids, vectors, group)
            live.update({rowid: (group, v) for rowid, v in zip(rowids, vectors, strict=True)})
        query = rng.normal(size=DIM)
        found = matrix.search_groups(query, 5)
        by_group: dict[int, dict[int, np.ndarray]] = {}
        for rowid, (g, v) in live.items():
            by_group.setdefault(g, {})[rowid] = v
        assert sorted(found) == sorted(by_group) and len(matrix) == len(live)
        for g, rows in by_group.items():
            count, top, stats = found[g]
            assert count == len(rows)
            if dtype == "float32":
                assert_same_ranking(top, brute_force(rows, query, 5))
                separate = VectorMatrix()
                separate.add(list(rows), list(rows.values()))
                want = separate.background(query)
                assert (stats is None) == (want is None)
                if stats is not None and want is not None:
                    assert stats == pytest.approx(want, abs=1e-5)
            else:
                assert {rowid for rowid, _ in top} <= set(rows)
        assert matrix.backgrounds(query).keys() == by_group.keys()


def test_a_group_left_empty_is_dropped_and_an_earlier_one_grows_without_losing_rows() -> None:
    matrix = VectorMatrix()
    eye = np.eye(DIM)
    matrix.add([1, 2, 3], [eye[0], eye[1], eye[2]], group=5)
    matrix.add([4, 6, 7, 8], [eye[3], eye[4], eye[5], eye[6]], group=1)  # before group 5: it moves up
    query = eye[3] + 0.2 * eye[0]
    found = matrix.search_groups(query, 1)
    assert {g: [r for r, _ in top] for g, (_, top, _) in found.items()} == {1: [4], 5: [1]}
    assert [r for r, _ in matrix.search_groups(eye[2], 1)[5][1]] == [3]
    matrix.remove([4, 6, 7, 8])
    assert list(matrix.search_groups(eye[2], 1)) == [5]
    assert [r for r, _ in matrix.search_groups(eye[2] + 0.1 * eye[1], 3)[5][1]] == [3, 2, 1]


@pytest.mark.parametrize("sample_rows", ["random", "best", "worst"])
def test_top_k_of_a_large_matrix_matches_brute_force_whatever_its_first_rows_hold(sample_rows: str) -> None:
    # Past 4 × BACKGROUND_SAMPLE rows only the rows reaching the first rows' k-th best are ranked:
    # a few (random), exactly the k best (best first) or nearly all (worst first), the same answer.
    rng = np.random.default_rng(11)
    n = 4 * BACKGROUND_SAMPLE + 3_000
    block = rng.normal(size=(n, DIM))
    query = rng.normal(size=DIM)
    cosines = (block / np.linalg.norm(block, axis=1, keepdims=True)) @ (query / np.linalg.norm(query))
    if sample_rows != "random":  # the rows nearest the query first, or last
        block = block[np.argsort(-cosines if sample_rows == "best" else cosines, kind="stable")]
    rowids = list(range(1, n + 1))
    matrix = VectorMatrix()
    matrix.add(rowids, list(block))
    unit = block / np.linalg.norm(block, axis=1, keepdims=True)
    for q in (query, rng.normal(size=DIM), -query):
        scores = unit @ (q / np.linalg.norm(q))
        best = np.lexsort((np.arange(n), -scores))[:24]
        want = [(rowids[i], min(max(float(scores[i]), 0.0), 1.0)) for i in best]
        assert_same_ranking(matrix.top_k(q, 24), want)


def test_the_background_spread_is_numpys_mean_and_std_to_the_last_bit() -> None:
    from langchain_md_memory.index.sqlite.vectors import _spread

    rng = np.random.default_rng(36)
    for n in [*range(8, 40), *rng.integers(40, 5000, size=300).tolist()]:
        scores = (rng.normal(size=n) * rng.uniform(0.01, 1.0) + rng.uniform(-1, 1)).astype(np.float32)
        for sample in (scores, scores[: max(8, n // 2)], scores[1::2] if n >= 16 else scores):
            before = sample.copy()
            assert _spread(sample) == (float(sample.mean()), float(sample.std()))
            np.testing.assert_array_equal(sample, before)  # the scores are left as they were
    assert _spread(np.ones(7, dtype=np.float32)) is None
