"""The session context: MEMORY.md, today's and yesterday's logs, within a token budget.

Example:
    .. code-block:: python

        from langchain_md_memory.files.session_context import load_session_context

        text = load_session_context(store, max_tokens=2000)
"""

from __future__ import annotations

import datetime as dt
import logging

from ..errors import MemoryStoreError
from ..text import estimate_tokens
from .base import DocumentStore
from .paths import LONG_TERM_FILE, daily_file_name

__all__ = ["load_session_context"]

logger = logging.getLogger(__name__)


def load_session_context(store: DocumentStore, max_tokens: int, today: dt.date | None = None) -> str:
    """MEMORY.md, today's and yesterday's logs as ``## <file>`` sections, within a budget.

    A section that would take the whole text over ``max_tokens`` (by
    :func:`text.estimate_tokens`) is skipped and later ones are still tried.
    Returns ``""`` when nothing exists or fits.
    """
    day = today or dt.date.today()
    candidates = [LONG_TERM_FILE, daily_file_name(day), daily_file_name(day - dt.timedelta(days=1))]
    sections: list[str] = []
    for name in dict.fromkeys(candidates):
        try:
            content = store.read(name).strip() if store.exists(name) else ""
        except MemoryStoreError as exc:
            logger.warning("session context: skipping %s: %s", name, exc)
            continue
        if not content:
            continue
        section = f"## {name}\n\n{content}"
        if estimate_tokens("\n\n".join([*sections, section])) > max_tokens:
            logger.debug("session context: %s does not fit in %d tokens", name, max_tokens)
            continue
        sections.append(section)
    return "\n\n".join(sections)
