"""One credential rule for every model the package builds, and errors scrubbed of keys.

Before: `md-memory dream --model openai:...` sent the environment's OPENAI_API_KEY to an
untrusted OPENAI_BASE_URL (the embeddings path already withheld it), and a server echoing the
key in its error body got it stored in the index, printed by the CLI and shown by status().
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from langchain_md_memory import MarkdownMemory
from langchain_md_memory.cli import main
from langchain_md_memory.embeddings.providers import chat_model
from langchain_md_memory.errors import MemoryInputError
from tests.support.openai_server import OPENAI_ENV_OVERRIDES, serve_on_loopback

pytestmark = pytest.mark.enable_socket

SECRET = "sk-env-SECRET-0123456789abcdefXYZ"


@contextlib.contextmanager
def echoing_server() -> Iterator[tuple[str, list[dict[str, str]]]]:
    """Answers every request 401 with the request's headers in the error body (a hostile echo)."""
    seen: list[dict[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            headers = {k.lower(): v for k, v in self.headers.items()}
            seen.append(headers)
            body = json.dumps({"error": {"message": f"bad key {headers.get('authorization', '')}",
                                         "type": "invalid_request_error"}}).encode()
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    with serve_on_loopback(Handler) as base_url:
        yield base_url, seen


def _seed(memory_dir: Path) -> None:
    (memory_dir / "MEMORY.md").write_text("# Profile\n\n- Retire at 55\n")
    (memory_dir / "sessions").mkdir()
    (memory_dir / "sessions" / "2026-07-10-a.md").write_text("# Session\n\nWants a house by 2030.\n")


def _everything_on_disk(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


def test_cli_dream_never_sends_the_env_key_to_an_untrusted_base_url(
    memory_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _seed(memory_dir)
    for name in OPENAI_ENV_OVERRIDES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    caplog.set_level(logging.DEBUG)
    with echoing_server() as (base_url, seen):
        monkeypatch.setenv("OPENAI_BASE_URL", base_url)
        out, err = io.StringIO(), io.StringIO()
        code = main(["--dir", str(memory_dir), "--embeddings", "none", "dream", "--model",
                     "openai:gpt-4o-mini", "--min-sessions", "1", "--json"], out=out, err=err)
        status_out = io.StringIO()
        main(["--dir", str(memory_dir), "--embeddings", "none", "status", "--json"], out=status_out,
             err=io.StringIO())
    assert seen, "the model was called"
    assert all(SECRET not in json.dumps(h) for h in seen)
    assert all("authorization" not in h for h in seen)
    assert code == 1 and json.loads(out.getvalue())["status"] == "error"
    for text in (out.getvalue(), err.getvalue(), status_out.getvalue(), caplog.text):
        assert SECRET not in text
    assert SECRET.encode() not in _everything_on_disk(memory_dir)


def test_a_model_error_echoing_a_key_is_scrubbed_from_result_state_and_logs(
    memory_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    class EchoingModel(FakeListChatModel):
        def _call(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> str:
            raise PermissionError(f"401 Incorrect API key provided: {SECRET}")

    _seed(memory_dir)
    caplog.set_level(logging.DEBUG)
    with MarkdownMemory(memory_dir, embeddings="none") as mem:
        result = mem.dream(EchoingModel(responses=["x"]), min_sessions=1)
        assert result.status == "error" and "[redacted: api key]" in result.reason
        assert SECRET not in result.reason
        assert SECRET not in json.dumps(mem.state.get("dream_last_result"))
        assert SECRET not in json.dumps(mem.status(), default=str)
    assert SECRET not in caplog.text
    assert SECRET.encode() not in _everything_on_disk(memory_dir)


def test_another_providers_redirected_endpoint_is_refused_before_any_call(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/evil")
    with pytest.raises(MemoryInputError, match=r"only sent to api\.anthropic\.com") as caught:
        chat_model("anthropic:claude-x")
    assert SECRET not in str(caught.value)
