"""The embedding client: batching, timeout, retries, validation and identity over any provider.

:class:`EmbeddingClient` wraps any ``langchain_core`` :class:`~langchain_core.embeddings.Embeddings`
and hands the index float32, L2-normalised numpy vectors it can trust: the right
count, one dimension, finite, non-zero. It is the :class:`~.base.Embedder` sync and search
use; build one from a spec with :func:`~langchain_md_memory.embeddings.resolve_embeddings`.

Example:
    .. code-block:: python

        from langchain_core.embeddings import DeterministicFakeEmbedding
        from langchain_md_memory.embeddings import EmbeddingClient

        client = EmbeddingClient(DeterministicFakeEmbedding(size=8), provider="fake", model="default")
        assert client.embed_documents(["a", "b"]).shape == (2, 8)
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from ..errors import EmbeddingError, MemoryInputError

if TYPE_CHECKING:  # any object with embed_documents / embed_query works; LangChain loads when a model does
    from langchain_core.embeddings import Embeddings

__all__ = ["INDEX_TOKENIZER_VERSION", "REMOTE_QUERY_CHARS", "EmbeddingClient", "EmbeddingIdentity"]

logger = logging.getLogger(__name__)

#: Bump when the text fed to the embedding model changes (chunk text, prefixes), so vectors are rebuilt.
INDEX_TOKENIZER_VERSION = "1"

# OpenAI allows 2048 inputs and ~300k tokens per request. CJK text can cost ~2 tokens a
# character, so 100k characters keeps a batch under the token limit for any language.
_MAX_INPUTS = 2048
_DEFAULT_MAX_BATCH_CHARS = 100_000
#: The head of a query a remote model is sent when it names no window of its own. OpenAI's
#: embedding models read 8,191 tokens; CJK text can cost ~2 tokens a character, so 4,000
#: characters fit in any script, and no question needs more.
REMOTE_QUERY_CHARS = 4_000
# Headers that identify an OpenAI account; none of them goes to an untrusted host.

# Provider calls run here so a hung call can be abandoned after timeout_s. Small on purpose:
# a stuck worker only blocks its own slot, and embedding calls are already batched.
_executor = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="md-memory-embed")

_T = TypeVar("_T")
Vectors = NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class EmbeddingIdentity:
    """Which vector space an index holds: ``str(identity) == "provider:model:dim"``.

    Example:
        .. code-block:: python

            assert str(EmbeddingIdentity("openai", "text-embedding-3-small", 1536)) == (
                "openai:text-embedding-3-small:1536"
            )
    """

    provider: str
    model: str
    dim: int

    def __str__(self) -> str:
        return f"{self.provider}:{self.model}:{self.dim}"


class _InvalidOutput(EmbeddingError):
    """The provider answered with unusable vectors; retrying would not help."""


def _is_permanent(exc: BaseException) -> bool:
    """Errors a retry cannot fix: programming errors and 4xx answers other than rate limits."""
    if isinstance(exc, _InvalidOutput | TypeError | AttributeError | NotImplementedError | ImportError):
        return True
    try:
        import openai
    except ImportError:  # pragma: no cover - langchain-openai is a runtime dependency
        return False
    permanent = (
        openai.AuthenticationError,
        openai.BadRequestError,
        openai.PermissionDeniedError,
        openai.NotFoundError,
        openai.UnprocessableEntityError,
    )
    return isinstance(exc, permanent)


class EmbeddingClient:
    """Wraps any langchain_core Embeddings: batching, timeout, retries, validation.

    Every call runs on a worker thread and is abandoned after ``timeout_s``
    (unless ``in_process``: a model computing on this machine cannot hang on
    a network, and a busy CPU only makes it slower, so it is never cut off);
    transient failures are retried ``retries`` times with exponential backoff
    (``retry_base_delay_s``, then twice that, ...). Output is validated and
    L2-normalised; a bad answer raises :class:`EmbeddingError` and nothing
    partial is returned.

    Example:
        .. code-block:: python

            from langchain_core.embeddings import DeterministicFakeEmbedding

            client = EmbeddingClient(DeterministicFakeEmbedding(size=4), provider="fake", model="d4")
            q = client.embed_query("hello")
            assert q.shape == (4,) and str(client.identity()) == "fake:d4:4"
    """

    def __init__(
        self,
        embeddings: Embeddings,
        *,
        provider: str,
        model: str,
        batch_size: int = 32,
        timeout_s: float = 15.0,
        retries: int = 2,
        max_batch_chars: int = _DEFAULT_MAX_BATCH_CHARS,
        retry_base_delay_s: float = 0.5,
        in_process: bool = False,
        max_query_chars: int = REMOTE_QUERY_CHARS,
    ) -> None:
        """Wrap ``embeddings``; ``provider`` and ``model`` name the vector space in the index fingerprint."""
        if batch_size < 1 or timeout_s <= 0 or retries < 0 or max_batch_chars < 1 or retry_base_delay_s < 0:
            raise MemoryInputError(
                "need batch_size >= 1, max_batch_chars >= 1, timeout_s > 0, retries >= 0 and "
                f"retry_base_delay_s >= 0; got {batch_size}, {max_batch_chars}, {timeout_s}, "
                f"{retries}, {retry_base_delay_s}"
            )
        self.embeddings = embeddings
        self.provider = provider
        self.model = model
        self.batch_size = min(batch_size, _MAX_INPUTS)
        self.timeout_s = timeout_s
        self.retries = retries
        self.max_batch_chars = max_batch_chars
        self.retry_base_delay_s = retry_base_delay_s
        self.in_process = in_process
        self.max_query_chars = max_query_chars
        self._dim: int | None = None
        self._dim_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"EmbeddingClient(provider={self.provider!r}, model={self.model!r}, dim={self._dim})"

    def identity(self) -> EmbeddingIdentity:
        """The ``provider:model:dim`` fingerprint; probes the provider once if no call has run yet."""
        if self._dim is None:
            self.embed_query("dimension probe")
        assert self._dim is not None
        return EmbeddingIdentity(self.provider, self.model, self._dim)

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        """Embed stored texts: an ``(n, dim)`` float32 array of unit rows, in input order."""
        items = list(texts)
        if not items:
            return np.empty((0, self._dim or 0), dtype=np.float32)
        parts = [
            self._call(partial(self.embeddings.embed_documents, batch), len(batch), "embed_documents")
            for batch in self._batches(items)
        ]
        return np.vstack(parts)

    def fit_query(self, text: str) -> str:
        """The head of ``text`` the model reads: its own window when it knows it, else ``max_query_chars``.

        A model that knows its token window (the bundled one) has a ``fit_query`` of its own.
        """
        fit = getattr(self.embeddings, "fit_query", None)
        if callable(fit):
            return str(fit(text))
        return text[: self.max_query_chars]

    def embed_query(self, text: str) -> Vectors:
        """Embed a search query: a ``(dim,)`` float32 unit vector of its head (see :meth:`fit_query`)."""
        fitted = self.fit_query(text)
        rows = self._call(lambda: [self.embeddings.embed_query(fitted)], 1, "embed_query")
        return rows.reshape(-1)

    def start_query(self, text: str) -> Callable[[], Vectors]:
        """:meth:`embed_query` begun now on a worker thread: the caller works on meanwhile, and the
        function returned waits for the vector (timeout and retries as for any call; its errors are
        :meth:`embed_query`'s). An in-process model computes when waited for, on the caller's thread:
        it holds the interpreter most of the time, so a thread hid nothing of it (the bundled model's
        searches took as long either way)."""
        if self.in_process:
            return partial(self.embed_query, text)
        fitted = self.fit_query(text)

        def one() -> list[list[float]]:
            return [self.embeddings.embed_query(fitted)]

        first = _executor.submit(one)
        return lambda: self._call(one, 1, "embed_query", first=first).reshape(-1)

    async def aembed_query(self, text: str) -> Vectors:
        """Async twin of :meth:`embed_query` (runs the sync path on a thread)."""
        return await asyncio.to_thread(self.embed_query, text)

    def _batches(self, texts: list[str]) -> Iterator[list[str]]:
        batch: list[str] = []
        chars = 0
        for text in texts:
            if batch and (len(batch) >= self.batch_size or chars + len(text) > self.max_batch_chars):
                yield batch
                batch, chars = [], 0
            batch.append(text)
            chars += len(text)
        if batch:
            yield batch

    def _call(self, fn: Callable[[], Any], n: int, what: str,
              first: concurrent.futures.Future[Any] | None = None) -> Vectors:
        """``fn``'s validated answer, retried; ``first``: its first attempt, already started."""
        attempts = self.retries + 1
        for attempt in range(1, attempts + 1):
            try:
                return self._validate(self._with_timeout(fn, what, first if attempt == 1 else None), n)
            except Exception as exc:
                if _is_permanent(exc) or attempt == attempts:
                    if isinstance(exc, EmbeddingError):
                        raise
                    raise EmbeddingError(
                        f"{self.provider} {what} failed after {attempt} attempt(s): "
                        f"{type(exc).__name__}: {exc}"
                    ) from exc
                delay = self.retry_base_delay_s * 2 ** (attempt - 1)
                logger.warning(
                    "%s %s attempt %d/%d failed (%s); retrying in %.2fs",
                    self.provider,
                    what,
                    attempt,
                    attempts,
                    type(exc).__name__,
                    delay,
                )
                if delay:
                    time.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    def _with_timeout(self, fn: Callable[[], _T], what: str,
                      started: concurrent.futures.Future[_T] | None = None) -> _T:
        if started is None and self.in_process:
            return fn()
        future = started if started is not None else _executor.submit(fn)
        try:
            return future.result(timeout=self.timeout_s)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise EmbeddingError(f"{self.provider} {what} timed out after {self.timeout_s:g}s") from None

    def _validate(self, raw: Any, n: int) -> Vectors:
        try:
            rows = list(raw)
        except TypeError:
            raise _InvalidOutput(
                f"{self.provider} returned {type(raw).__name__}, not a list of vectors"
            ) from None
        if len(rows) != n:
            raise _InvalidOutput(f"{self.provider} returned {len(rows)} vectors for {n} texts")
        dims = {len(r) for r in rows}
        if len(dims) != 1:
            raise _InvalidOutput(f"{self.provider} returned vectors of different dimensions: {sorted(dims)}")
        dim = dims.pop()
        if dim == 0:
            raise _InvalidOutput(f"{self.provider} returned empty vectors")
        try:
            arr = np.asarray(rows, dtype=np.float32)  # what the index keeps; half the work of float64
        except (TypeError, ValueError) as exc:
            raise _InvalidOutput(f"{self.provider} returned non-numeric vectors: {exc}") from None
        bad = ~np.isfinite(arr).all(axis=1)
        if bad.any():
            raise _InvalidOutput(
                f"{self.provider} returned non-finite values (NaN or inf) in vector(s) "
                f"{np.flatnonzero(bad)[:5].tolist()}"
            )
        norms = np.linalg.norm(arr, axis=1)
        zero = norms == 0
        if zero.any():
            raise _InvalidOutput(
                f"{self.provider} returned zero vector(s) at {np.flatnonzero(zero)[:5].tolist()}"
            )
        with self._dim_lock:
            if self._dim is None:
                self._dim = dim
            elif dim != self._dim:
                raise _InvalidOutput(
                    f"{self.provider} returned {dim}-dimensional vectors, earlier calls returned "
                    f"{self._dim}; a changed model needs a new client and a reindex"
                )
        out: Vectors = arr / norms[:, None]
        return out
