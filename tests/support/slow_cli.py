"""``python -m tests.support.slow_cli ARGS``: the real ``md-memory`` CLI, plus ``--embeddings slow``.

``slow`` is a fake embedding model (keyword counts, as :class:`AxisEmbeddings`) that sleeps
``$SLOW_EMBED_SECONDS`` per text and, after each batch, appends the batch size to the file
``$SLOW_EMBED_LOG``: a test can wait until embedding is under way, then interrupt the process.
Everything else is ``langchain_md_memory.cli.main`` as the console script runs it.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import langchain_md_memory.memory as core
from langchain_md_memory.cli import main
from tests.support.embeddings import AxisEmbeddings

VOCABULARY = ["retire", "bond", "stock", "cash", "pension", "house", "fund", "tax"]


class SlowEmbeddings(AxisEmbeddings):
    """Keyword-count vectors, ``$SLOW_EMBED_SECONDS`` per text, one line per batch in ``$SLOW_EMBED_LOG``."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        time.sleep(float(os.environ.get("SLOW_EMBED_SECONDS", "0")) * len(texts))
        vectors = super().embed_documents(texts)
        log = os.environ.get("SLOW_EMBED_LOG")
        if log:
            with open(log, "a", encoding="utf-8") as handle:
                handle.write(f"{len(texts)}\n")
        return vectors


_resolve = core.resolve_embeddings


def _resolve_with_slow(spec: Any, **kwargs: Any) -> Any:
    return _resolve(SlowEmbeddings(VOCABULARY, model="slow-v1") if spec == "slow" else spec, **kwargs)


core.resolve_embeddings = _resolve_with_slow  # type: ignore[assignment]

if __name__ == "__main__":
    sys.exit(main())
