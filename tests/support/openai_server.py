"""A fake OpenAI-compatible embeddings server on 127.0.0.1, for credential-boundary tests."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


@dataclass
class Seen:
    """Every request the fake server received."""

    headers: list[dict[str, str]] = field(default_factory=list)
    bodies: list[dict[str, object]] = field(default_factory=list)
    raw: list[bytes] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)


@contextlib.contextmanager
def serve_on_loopback(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """Serve ``handler`` on a free 127.0.0.1 port in a thread; yields the ``/v1`` base URL."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


@contextlib.contextmanager
def fake_openai_server(vector: Callable[[str, int], list[float]]) -> Iterator[tuple[str, Seen]]:
    """Serve ``POST /v1/embeddings`` on a free loopback port; yields (base URL, what it saw)."""
    seen = Seen()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            seen.raw.append(bytes(str(self.headers), "latin-1") + raw)
            seen.headers.append({k.lower(): v for k, v in self.headers.items()})
            body = json.loads(raw)
            seen.bodies.append(body)
            if self.path != "/v1/embeddings":
                self.send_error(404)
                return
            inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
            seen.inputs.extend(str(t) for t in inputs)
            payload = json.dumps({
                "data": [{"embedding": vector(str(t), i), "index": i, "object": "embedding"}
                         for i, t in enumerate(inputs)],
                "model": "m", "object": "list", "usage": {"prompt_tokens": 1, "total_tokens": 1},
            }).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: object) -> None:  # keep test output quiet
            pass

    with serve_on_loopback(Handler) as base_url:
        yield base_url, seen


OPENAI_ENV_OVERRIDES = ("OPENAI_BASE_URL", "OPENAI_API_BASE", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID")


def only_api_key_in_env(monkeypatch: pytest.MonkeyPatch, api_key: str) -> None:
    """Set ``OPENAI_API_KEY`` and clear the variables that would redirect or scope OpenAI calls."""
    monkeypatch.setenv("OPENAI_API_KEY", api_key)
    for name in OPENAI_ENV_OVERRIDES:
        monkeypatch.delenv(name, raising=False)
