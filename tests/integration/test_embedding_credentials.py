"""Credential boundary against a real OpenAI-compatible server on 127.0.0.1.

An OPENAI_API_KEY from the environment must never reach a host other than
api.openai.com; an explicitly given key is sent; the key never appears in logs.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import numpy as np
import pytest

from langchain_md_memory.embeddings import resolve_embeddings
from tests.support.openai_server import Seen, fake_openai_server, only_api_key_in_env

pytestmark = pytest.mark.enable_socket

ENV_SECRET = "sk-test-secret"
DIM = 4


def _vector(text: str, i: int) -> list[float]:
    return [float(len(text) + 1), float(i + 1), 0.5, 1.0]


@pytest.fixture
def server() -> Iterator[tuple[str, Seen]]:
    with fake_openai_server(_vector) as served:
        yield served


@pytest.fixture(autouse=True)
def _secret_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    only_api_key_in_env(monkeypatch, ENV_SECRET)


def test_env_key_is_not_sent_to_another_host(
    server: tuple[str, Seen], caplog: pytest.LogCaptureFixture
) -> None:
    url, seen = server
    caplog.set_level(logging.DEBUG)
    client = resolve_embeddings("openai:m", base_url=url, retries=0)
    assert client is not None
    docs = client.embed_documents(["hello", "单只个股不超过总仓位 5%"])
    query = client.embed_query("hi")
    assert docs.shape == (2, DIM) and query.shape == (DIM,)
    expected = np.array(_vector("hello", 0), dtype=np.float64)
    np.testing.assert_allclose(docs[0], expected / np.linalg.norm(expected), rtol=1e-6)
    assert len(seen.headers) == 2
    for headers in seen.headers:
        assert "authorization" not in headers
        assert ENV_SECRET not in json.dumps(headers)
    # Plain strings go out: no tiktoken token ids (tiktoken would need a download).
    assert seen.bodies[0]["input"] == ["hello", "单只个股不超过总仓位 5%"]
    assert ENV_SECRET not in caplog.text


def test_base_url_from_env_is_untrusted_too(
    server: tuple[str, Seen], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    url, seen = server
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    caplog.set_level(logging.DEBUG)
    client = resolve_embeddings("auto", retries=0)
    assert client is not None and client.provider == "openai"
    assert client.embed_query("hi").shape == (DIM,)
    assert "authorization" not in seen.headers[0]
    assert ENV_SECRET not in caplog.text


def test_explicit_key_is_sent_as_bearer(server: tuple[str, Seen], caplog: pytest.LogCaptureFixture) -> None:
    url, seen = server
    caplog.set_level(logging.DEBUG)
    client = resolve_embeddings("openai:m", base_url=url, api_key="sk-explicit", retries=0)
    assert client is not None
    assert client.embed_documents(["a"]).shape == (1, DIM)
    assert seen.headers[0]["authorization"] == "Bearer sk-explicit"
    assert ENV_SECRET not in caplog.text
    assert "sk-explicit" not in caplog.text


async def test_async_query_also_strips_the_env_key(server: tuple[str, Seen]) -> None:
    url, seen = server
    client = resolve_embeddings("openai:m", base_url=url, retries=0)
    assert client is not None
    assert (await client.aembed_query("hi")).shape == (DIM,)
    assert "authorization" not in seen.headers[0]
