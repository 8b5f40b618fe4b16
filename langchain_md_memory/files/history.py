"""Earlier versions of a document, kept in the hidden ``.history/`` folder (dream's backups).

``.history/`` is hidden, so its files are never listed, indexed or searched;
only the newest ``keep`` versions of each name stay.

Example:
    .. code-block:: python

        from langchain_md_memory.files.history import save_version

        path = save_version(root, "MEMORY", b"- old text\\n", "20260714T120000Z", keep=10)
        assert path.name == "MEMORY-20260714T120000Z.md"
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from .atomic import atomic_output
from .paths import HISTORY_DIR

__all__ = ["save_version", "version_name"]


def version_name(name: str, stamp: str, n: int = 0) -> str:
    """``<name>-<stamp>.md``, or ``<name>-<stamp>-<n>.md`` when that one is taken."""
    return f"{name}-{stamp}.md" if n == 0 else f"{name}-{stamp}-{n}.md"


def save_version(root: Path, name: str, data: bytes, stamp: str, keep: int) -> Path:
    """Write ``data`` as ``root/.history/<name>-<stamp>.md``; keep the newest ``keep`` of that name."""
    folder = root / HISTORY_DIR
    folder.mkdir(exist_ok=True)
    n = 0
    while (target := folder / version_name(name, stamp, n)).exists():
        n += 1
    with atomic_output(target) as handle:
        handle.write(data)
    versions = sorted(folder.glob(f"{name}-*.md"), key=lambda p: (p.stat().st_mtime_ns, p.name))
    for old in versions[: max(len(versions) - max(keep, 1), 0)]:
        with contextlib.suppress(OSError):
            old.unlink()
    return target
