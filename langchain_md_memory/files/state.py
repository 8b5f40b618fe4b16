"""Durable bookkeeping that is not memory text: a small JSON file in the memory folder.

The index is derived and may be deleted at any time, so anything that must
survive it (when dream last ran, which session logs it already merged) lives
here: ``.md-memory/state.json``, written atomically under the store's lock and
carried by archives. It is hidden, so it is never indexed or searched.

Example:
    .. code-block:: python

        from langchain_md_memory.files.state import StateFile

        state = StateFile(store)
        state.set("dream_last_run", 1767225600.0)
        assert state.get("dream_last_run") == 1767225600.0
"""

from __future__ import annotations

import json
import logging
from typing import Any

from ..errors import MemoryStoreError
from .atomic import atomic_output
from .paths import STATE_FILE
from .store import MarkdownStore

__all__ = ["StateFile"]

logger = logging.getLogger(__name__)

class StateFile:
    """Key-value state of one memory, as JSON beside its Markdown files."""

    def __init__(self, store: MarkdownStore) -> None:
        self._store = store
        self.path = store.root / STATE_FILE

    def get(self, key: str, default: Any = None) -> Any:
        """The value stored under ``key``, or ``default``."""
        return self._load().get(key, default)

    def set(self, key: str, value: Any) -> None:
        """Store ``value`` (JSON-serialisable) under ``key``, atomically."""
        with self._store.locked():
            data = self._load()
            data[key] = value
            try:
                self.path.parent.mkdir(exist_ok=True)
                with atomic_output(self.path) as handle:
                    handle.write(json.dumps(data, ensure_ascii=False, indent=1, sort_keys=True).encode())
            except OSError as exc:
                raise MemoryStoreError(f"Cannot write the memory state file {STATE_FILE!r}: {exc}") from exc

    def _load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            # Bookkeeping only: a damaged file costs a re-run of dream, never memory text.
            logger.warning("ignoring unreadable %s: %s", STATE_FILE, exc)
            return {}
        return data if isinstance(data, dict) else {}
