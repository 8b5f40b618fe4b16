"""Which of a tick's concurrent store ops run, and where each caller finds its result."""

from __future__ import annotations

from langgraph.store.base import GetOp, ListNamespacesOp, PutOp, SearchOp

from langchain_md_memory.integrations.basestore.coalesce import dedupe

NS = ("users", "alice")


def test_equal_reads_run_once_and_share_a_result() -> None:
    ops = [GetOp(NS, "a"), GetOp(NS, "a"), GetOp(NS, "b"), ListNamespacesOp(), ListNamespacesOp()]
    unique, where = dedupe(ops)
    assert unique == [GetOp(NS, "a"), GetOp(NS, "b"), ListNamespacesOp()]
    assert where == [0, 0, 1, 2, 2]


def test_searches_with_filter_dicts_are_compared_by_value() -> None:
    ops = [SearchOp(NS, {"n": 2}), SearchOp(NS, {"n": 2}), SearchOp(NS, {"n": 3})]
    unique, where = dedupe(ops)
    assert unique == [SearchOp(NS, {"n": 2}), SearchOp(NS, {"n": 3})]
    assert where == [0, 0, 1]


def test_puts_to_one_key_keep_the_last_value_at_the_first_place() -> None:
    ops = [PutOp(NS, "k", {"v": 1}), PutOp(NS, "other", {"v": 0}), PutOp(NS, "k", None),
           PutOp(NS, "k", {"v": 3})]
    unique, where = dedupe(ops)
    assert unique == [PutOp(NS, "k", {"v": 3}), PutOp(NS, "other", {"v": 0})]
    assert where == [0, 1, 0, 0]


def test_a_get_and_a_put_of_one_key_both_run() -> None:
    unique, where = dedupe([GetOp(NS, "k"), PutOp(NS, "k", {"v": 1})])
    assert len(unique) == 2 and where == [0, 1]
