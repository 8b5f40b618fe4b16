"""The ``.gitignore`` of a memory folder: the Markdown goes into git, what is derived from it does not.

A memory folder is meant to be committed, but beside the Markdown the package
keeps files that are derived from it or belong to one running machine: the
index (``index.sqlite`` with its ``-wal`` / ``-shm`` sidecars and the
``.rebuild-<pid>`` file of a rebuild under way), lock files and the temp files
of atomic writes. A folder the package creates gets a ``.gitignore`` naming
them, so ``git status`` shows only the memory. The bookkeeping in
``.md-memory/state.json`` (which session logs dream already merged) is durable
and stays tracked. A ``.gitignore`` already there is never touched.

Example:
    .. code-block:: python

        from langchain_md_memory.files.gitignore import write_gitignore

        assert write_gitignore(new_folder)          # written
        assert not write_gitignore(new_folder)      # already there: left as it is
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

__all__ = ["GITIGNORE_FILE", "GITIGNORE_TEXT", "write_gitignore"]

logger = logging.getLogger(__name__)

GITIGNORE_FILE = ".gitignore"

GITIGNORE_TEXT = """\
# Written by langchain-md-memory when it created this folder; edit freely, it is never rewritten.
# The Markdown files are the memory. These are derived from them or local to one machine:
# the search index and its sidecars (rebuilt from the Markdown when missing),
index.sqlite*
# lock files,
.md-memory.lock
.dream.lock
.dream.lock.holder
# and temp files of writes in progress.
.*.tmp
# .md-memory/state.json (what dream already merged) is durable bookkeeping: keep it tracked.
"""


def write_gitignore(folder: Path) -> bool:
    """Write :data:`GITIGNORE_TEXT` to ``folder/.gitignore`` unless a file of that name exists.

    Returns ``True`` when written. Never raises for an unwritable folder: the
    ``.gitignore`` is a convenience, the memory works without it.
    """
    try:
        fd = os.open(folder / GITIGNORE_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except FileExistsError:
        return False
    except OSError as exc:
        logger.info("no .gitignore written in %s: %s", folder, exc)
        return False
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(GITIGNORE_TEXT)
    return True
