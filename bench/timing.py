"""Summaries of timings shared by the benchmarks: p50, p95 and mean in ms, and how many.

Example:
    .. code-block:: python

        from bench.timing import summarize

        summarize([1.0, 2.0, 3.0])  # {"p50_ms": 2.0, "p95_ms": 2.9, "mean_ms": 2.0, "n": 3}
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["summarize"]


def summarize(ms: Sequence[float], digits: int = 2) -> dict[str, float]:
    """p50, p95 and mean of timings in ms (linear interpolation), rounded to ``digits``, and how many."""
    if not ms:
        return {}
    arr = np.asarray(ms, dtype=np.float64)
    return {
        "p50_ms": round(float(np.percentile(arr, 50)), digits),
        "p95_ms": round(float(np.percentile(arr, 95)), digits),
        "mean_ms": round(float(arr.mean()), digits),
        "n": len(ms),
    }
