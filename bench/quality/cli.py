"""The command line the single-measurement harnesses share (``bench.quality.asof``, ``.hygiene``).

Each takes ``--embeddings`` (as ``python -m bench.quality``) and ``--workdir``, builds its memories
there (else in a temp folder), and prints its result as JSON.

Example:
    .. code-block:: python

        result = run_measurement("python -m bench.quality.asof", __doc__, run, argv)
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .embedder import QueryCachedEmbeddings, make_embeddings

__all__ = ["run_measurement"]


def run_measurement(prog: str, doc: str | None,
                    run: Callable[[QueryCachedEmbeddings | None, Path], dict[str, Any]],
                    argv: Sequence[str] | None) -> dict[str, Any]:
    """Parse ``argv``, ``run(embeddings, workdir)``, print the result as JSON and return it."""
    parser = argparse.ArgumentParser(prog=prog, description=(doc or "").split("\n")[0])
    parser.add_argument("--embeddings", default="local", help="as python -m bench.quality (default: local)")
    parser.add_argument("--workdir", type=Path, help="where the memories are built (default: a temp folder)")
    args = parser.parse_args(argv)
    embeddings = make_embeddings(args.embeddings)
    with tempfile.TemporaryDirectory(prefix=f"md-memory-{prog.rsplit('.', 1)[-1]}-") as tmp:
        result = run(embeddings, args.workdir or Path(tmp))
    result["embeddings"] = args.embeddings if embeddings is None else embeddings.model
    print(json.dumps(result, indent=2, ensure_ascii=False))
    return result
