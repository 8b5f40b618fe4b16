"""``python -m tests.support.slow_cli ARGS``: the real ``md-memory`` CLI, plus ``--embeddings slow``.

``slow`` is a fake embedding model (keyword counts, as :class:`AxisEmbeddings`) that sleeps
``$SLOW_EMBED_SECONDS`` per text and, after each batch, appends the batch size to the file
``$SLOW_EMBED_LOG``: a test can wait until embedding is under way, then interrupt the process.
With ``$SLOW_EMBED_IN_PROCESS=1`` it runs as the bundled model does: on the calling thread, and
deaf to Ctrl-C until the call returns (a C call holds the signal off that long).
Everything else is ``langchain_md_memory.cli.main`` as the console script runs it.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from typing import Any

import langchain_md_memory.memory as core
from langchain_md_memory.cli import main
from langchain_md_memory.embeddings import EmbeddingClient
from tests.support.embeddings import AxisEmbeddings

VOCABULARY = ["retire", "bond", "stock", "cash", "pension", "house", "fund", "tax"]


class SlowEmbeddings(AxisEmbeddings):
    """Keyword-count vectors, ``$SLOW_EMBED_SECONDS`` per text, one line per batch in ``$SLOW_EMBED_LOG``."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        seconds = float(os.environ.get("SLOW_EMBED_SECONDS", "0")) * len(texts)
        if IN_PROCESS:  # Ctrl-C arrives when the call returns, as after the bundled model's C call
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            try:
                time.sleep(seconds)
            finally:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        else:
            time.sleep(seconds)
        vectors = super().embed_documents(texts)
        log = os.environ.get("SLOW_EMBED_LOG")
        if log:
            with open(log, "a", encoding="utf-8") as handle:
                handle.write(f"{len(texts)}\n")
        return vectors


IN_PROCESS = os.environ.get("SLOW_EMBED_IN_PROCESS") == "1"
_resolve = core.resolve_embeddings


def _resolve_with_slow(spec: Any, **kwargs: Any) -> Any:
    if spec != "slow":
        return _resolve(spec, **kwargs)
    model = SlowEmbeddings(VOCABULARY, model="slow-v1")
    if IN_PROCESS:
        return EmbeddingClient(model, provider="SlowEmbeddings", model="slow-v1", in_process=True,
                               batch_size=kwargs.get("batch_size", 32))
    return _resolve(model, **kwargs)


core.resolve_embeddings = _resolve_with_slow  # type: ignore[assignment]

if __name__ == "__main__":
    sys.exit(main())
