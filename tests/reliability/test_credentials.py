"""The credential boundary, end to end through MarkdownMemory, against a server on 127.0.0.1.

``OPENAI_API_KEY`` is set in the environment and the base URL points at a
local OpenAI-compatible server. The env key must never reach that server;
an explicitly passed key must; and neither key may appear in any file under
the memory folder (Markdown, ``index.sqlite`` and its sidecars, locks), in
an exported archive, in ``status()`` or in the captured logs.
"""

from __future__ import annotations

import gzip
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from langchain_md_memory import MarkdownMemory
from langchain_md_memory.embeddings import resolve_embeddings
from tests.support.openai_server import Seen, fake_openai_server, only_api_key_in_env

pytestmark = pytest.mark.enable_socket

ENV_SECRET = "sk-env-SECRET-0123456789abcdef"
EXPLICIT = "sk-explicit-KEY-fedcba9876543210"
DIM = 8


def _vector(text: str) -> list[float]:
    words = text.lower().split()
    return [1.0 + sum(len(w) for w in words if w.startswith(c)) for c in "abcdefgh"]


@pytest.fixture
def server() -> Iterator[tuple[str, Seen]]:
    with fake_openai_server(lambda text, _i: _vector(text)) as served:
        yield served


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    only_api_key_in_env(monkeypatch, ENV_SECRET)


def _exercise(mem: MarkdownMemory) -> None:
    mem.append("- Risk: conservative; no single stock above 5% of the portfolio")
    mem.write("goals.md", "# Goals\n\nRetire at 60 with a paid-off house.\n")
    mem.append("- Daily: bought more bonds today", file="daily")
    assert mem.search("single stock")[0].path == "MEMORY.md"
    hits = mem.search("retire house")
    assert hits[0].path == "goals.md" and hits[0].vector_score is not None
    mem.rebuild()
    assert mem.verify().ok


def _files_with(root: Path, secret: str) -> list[str]:
    needle = secret.encode()
    files = [p for p in sorted(root.rglob("*")) if p.is_file()]
    return [str(p.relative_to(root)) for p in files if needle in p.read_bytes()]


def _assert_nowhere(root: Path, mem: MarkdownMemory, tmp_path: Path, caplog: pytest.LogCaptureFixture,
                    *secrets: str) -> None:
    status = json.dumps(mem.status(), default=str)
    archive = mem.export_archive(tmp_path / "backup.tar.gz")
    unpacked = gzip.decompress(archive.read_bytes())
    assert len(unpacked) > 0
    for secret in secrets:
        assert _files_with(root, secret) == [], f"{secret[:6]}... written under the memory folder"
        assert secret.encode() not in unpacked, "key in the exported archive"
        assert secret not in status and secret not in repr(mem) and secret not in repr(mem.embedder)
        assert secret not in caplog.text, "key in the logs"


def test_env_key_never_reaches_a_custom_base_url_through_the_facade(
    memory_dir: Path, tmp_path: Path, server: tuple[str, Seen], monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    url, seen = server
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    caplog.set_level(logging.DEBUG)
    with MarkdownMemory(memory_dir, embeddings="openai:m", config={"embedding": {"retries": 0}}) as mem:
        assert mem.embedder is not None and mem.embedder.provider == "openai"
        _exercise(mem)
        assert mem.index.count_chunks()[1] == mem.index.count_chunks()[0] > 0
        _assert_nowhere(memory_dir, mem, tmp_path, caplog, ENV_SECRET)
    _assert_nowhere_after_close(memory_dir, ENV_SECRET)
    assert len(seen.headers) >= 3 and any("Retire at 60" in t for t in seen.inputs)
    for headers, raw in zip(seen.headers, seen.raw, strict=True):
        assert "authorization" not in headers
        assert ENV_SECRET.encode() not in raw and b"unused-placeholder" not in raw


def test_auto_with_a_custom_base_url_in_the_env_sends_no_key(
    memory_dir: Path, server: tuple[str, Seen], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, seen = server
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    with MarkdownMemory(memory_dir, embeddings="auto", config={"embedding": {"retries": 0}}) as mem:
        mem.append("- Prefers index funds")
        assert mem.search("index funds")[0].retrieved_by == "both"
    assert seen.headers and all("authorization" not in h for h in seen.headers)
    assert all(ENV_SECRET.encode() not in raw for raw in seen.raw)


def test_an_explicit_key_is_sent_and_still_never_stored(
    memory_dir: Path, tmp_path: Path, server: tuple[str, Seen], caplog: pytest.LogCaptureFixture
) -> None:
    url, seen = server
    caplog.set_level(logging.DEBUG)
    client = resolve_embeddings("openai:m", base_url=url, api_key=EXPLICIT, retries=0)
    with MarkdownMemory(memory_dir, embeddings=client) as mem:
        _exercise(mem)
        _assert_nowhere(memory_dir, mem, tmp_path, caplog, EXPLICIT, ENV_SECRET)
    _assert_nowhere_after_close(memory_dir, EXPLICIT, ENV_SECRET)
    assert seen.headers and all(h.get("authorization") == f"Bearer {EXPLICIT}" for h in seen.headers)
    assert all(ENV_SECRET.encode() not in raw for raw in seen.raw)


def _assert_nowhere_after_close(root: Path, *secrets: str) -> None:
    # Closing folds the WAL into index.sqlite: check the settled files too.
    for secret in secrets:
        assert _files_with(root, secret) == []
