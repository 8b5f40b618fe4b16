"""``python -m bench.quality.dedup_probe``: can embedding similarity tell a restated fact from a changed one?

Write-time dedup (``MemoryConfig.dedup``) drops a fact the memory already states, judged today by
normalised text and token overlap (:func:`~langchain_md_memory.files.facts.same_fact`). Issue 17 asks
whether a calibrated embedding similarity should join it, to catch paraphrases. This probe embeds
the pairs of ``bench/quality_data/dedup_pairs.json`` with a model: ``same`` pairs say one fact in
other words (dedup should drop the second), ``changed`` pairs keep the subject and change one
detail (the second is news and must be written). For each cosine threshold it reports how many
restatements an embedding rule would catch and how many changed facts it would silently drop,
with ``same_fact``'s guards (equal numbers, equal negations) applied to both. Nothing here
asserts a number.

Example:
    .. code-block:: bash

        python -m bench.quality.dedup_probe                  # the bundled local model
        python -m bench.quality.dedup_probe --embeddings openai
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from langchain_md_memory.files.facts import same_fact

from .embedder import make_embeddings

__all__ = ["PAIRS", "cosines", "guards_pass", "main", "sweep"]

PAIRS = Path(__file__).resolve().parents[1] / "quality_data" / "dedup_pairs.json"


def guards_pass(a: str, b: str) -> bool:
    """True when ``same_fact``'s guards let the pair through: the same numbers, the same negations.

    ``same_fact`` at threshold 0 applies the guards and then accepts any token overlap.
    """
    return same_fact(a, b, threshold=1e-9)


def cosines(embed: object, pairs: Sequence[Sequence[str]]) -> list[float]:
    """Cosine of each pair's two document vectors."""
    flat = [text for pair in pairs for text in pair]
    vectors = np.asarray(embed.embed_documents(flat), dtype=np.float32)  # type: ignore[attr-defined]
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return [float(vectors[2 * i] @ vectors[2 * i + 1]) for i in range(len(pairs))]


def sweep(same: Sequence[tuple[float, bool]], changed: Sequence[tuple[float, bool]],
          thresholds: Sequence[float]) -> list[dict[str, float]]:
    """Per threshold: share of restatements caught, share of changed facts dropped (guards applied)."""
    rows = []
    for t in thresholds:
        rows.append({
            "threshold": t,
            "restated_caught": sum(c >= t and g for c, g in same) / len(same),
            "changed_dropped": sum(c >= t and g for c, g in changed) / len(changed),
        })
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point."""
    parser = argparse.ArgumentParser(prog="python -m bench.quality.dedup_probe",
                                     description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--embeddings", default="local", help="as for python -m bench.quality")
    args = parser.parse_args(argv)
    embed = make_embeddings(args.embeddings)
    if embed is None:
        print("dedup_probe needs a model: --embeddings local (or another)", file=sys.stderr)
        return 2
    data = json.loads(PAIRS.read_text(encoding="utf-8"))
    result: dict[str, list[tuple[float, bool]]] = {}
    for kind in ("same", "changed"):
        pairs = data[kind]
        found = cosines(embed, pairs)
        result[kind] = [(c, guards_pass(a, b)) for c, (a, b) in zip(found, pairs, strict=True)]
    print(f"# {len(data['same'])} restated and {len(data['changed'])} changed pairs, {args.embeddings}\n")
    for kind, label in (("same", "restated"), ("changed", "changed")):
        values = sorted(c for c, _ in result[kind])
        blocked = sum(not g for _, g in result[kind])
        print(f"- {label}: cosine {values[0]:.3f} to {values[-1]:.3f}, median {np.median(values):.3f}; "
              f"the guards alone stop {blocked}")
    print("\n| cosine ≥ | restated caught | changed facts dropped |\n| --- | --- | --- |")
    for row in sweep(result["same"], result["changed"], [0.90, 0.93, 0.95, 0.97, 0.98, 0.99]):
        print(f"| {row['threshold']:.2f} | {row['restated_caught']:.2f} | {row['changed_dropped']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
