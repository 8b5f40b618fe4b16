"""Facts past their ``<!-- expires: YYYY-MM-DD -->`` day leave the candidates before ranking.

Expiry depends on the day a search runs, so it is applied to what recall returned (the pipeline's
step 2, :func:`~langchain_md_memory.search.pipeline.expire`) rather than baked into the index (which
stays derivable from the Markdown alone). A candidate whose every fact has expired is dropped; one
that also holds live facts keeps them, with the expired lines blanked out of its text (line numbers
still match the file).

Example:
    .. code-block:: python

        import datetime as dt
        from langchain_md_memory.search.expiry import live_candidates

        keyword = live_candidates(keyword, dt.date(2027, 2, 1))
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence

from ..files.facts import expired, normalize_fact
from ..types import ChunkRecord

__all__ = ["holds_expiry", "live_candidates", "live_text"]


def live_text(text: str, today: dt.date) -> str | None:
    """``text`` with expired lines blanked; ``None`` when no fact in it is still live."""
    if "expires:" not in text:
        return text
    lines = text.split("\n")
    kept = ["" if expired(line, today) else line for line in lines]
    if not any(normalize_fact(line) and not line.lstrip().startswith("#") for line in kept):
        return None
    return "\n".join(kept)


def holds_expiry(pool: Sequence[tuple[ChunkRecord, float]]) -> bool:
    """Whether a candidate of ``pool`` carries an expiry day (most searches meet none)."""
    return any("expires:" in record.text for record, _ in pool)


def live_candidates(pool: Sequence[tuple[ChunkRecord, float]], today: dt.date
                    ) -> list[tuple[ChunkRecord, float]]:
    """``pool`` without the candidates none of whose facts is live on ``today``; the others with
    their expired lines blanked (:func:`live_text`)."""
    out = []
    for record, score in pool:
        text = live_text(record.text, today)
        if text is None:
            continue
        out.append((record if text == record.text else dataclasses.replace(record, text=text), score))
    return out
