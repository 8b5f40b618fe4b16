"""The k highest of many scores, found without partitioning them all: what both recall paths rank.

Example:
    .. code-block:: python

        scores = np.array([0.2, 0.9, 0.4, 0.9])
        assert at_or_above_kth(scores, 2).tolist() == [1, 3]
"""

from __future__ import annotations

import numpy as np

__all__ = ["at_or_above_kth"]

FLOOR_SAMPLE = 2048
"""Scores whose k-th highest is tried as a floor before the rest are partitioned."""


def at_or_above_kth(scores: np.ndarray, k: int, sample: int = FLOOR_SAMPLE) -> np.ndarray:
    """Positions, ascending, of every score at or above the k-th highest (every position for k ≥ n):
    the k best and any tied with the k-th, for the caller to order.

    When k scores reach a floor, so does the k-th highest: only the scores at or above a floor need
    partitioning. The k-th highest of the first ``sample`` is one (the caller's rows are in no
    particular order), leaving ~k·n/sample of n to partition instead of n. A score
    that is not a number (never stored, but no floor) leaves the k positions ``argpartition`` gives.
    """
    n = scores.shape[0]
    if k >= n:
        return np.arange(n)
    rows = None  # the positions of the scores reaching a floor, when there is one
    if n >= 4 * sample >= 16 * k:
        floor = np.partition(scores[:sample], sample - k)[sample - k]
        reaching = np.flatnonzero(scores >= floor)
        if reaching.shape[0] >= k:
            rows = reaching
    held = scores if rows is None else scores[rows]
    kth = np.partition(held, held.shape[0] - k)[held.shape[0] - k]
    if np.isnan(kth):
        return np.sort(np.argpartition(scores, n - k)[n - k :])
    kept: np.ndarray = np.flatnonzero(held >= kth) if rows is None else rows[held >= kth]
    return kept
