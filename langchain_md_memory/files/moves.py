"""Moving a memory's files to new paths inside it: byte for byte, all of them or none.

A rename of a file or a folder is a move of every file it holds. The bytes move as they are, never
decoded, redacted or capped: they are the memory's already, perhaps written by hand (Latin-1, CRLF,
a secret a person chose to keep). Everything is checked before anything is written, so a refused
move changes nothing; a write that fails half-way is taken back (a database's transaction does that
itself).

Example:
    .. code-block:: python

        from langchain_md_memory.files.moves import move_documents

        move_documents(store, [("proj/a.md", "done/a.md"), ("proj/.store.unindexed.md",
                                                            "done/.store.unindexed.md")])
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

from ..errors import MemoryInputError, MemoryPathError
from .base import DocumentStore
from .paths import is_unindexed_file
from .tree import tree_clash

__all__ = ["move_documents"]


def move_documents(store: DocumentStore, moves: Sequence[tuple[str, str]]) -> None:
    """Move each document ``(old, new)`` of ``store`` to ``new``, under the store's lock.

    The paths are the store's, checked already. Refused before anything is written: an ``old`` that
    does not exist, a ``new`` that does or is given twice, a ``new`` that would put a file where a
    folder is (or the reverse), a hidden unindexed file given a visible name (or the reverse). Then
    every ``new`` is written and every ``old`` removed.

    Raises:
        MemoryPathError: a missing ``old``, a clash in the tree, a change of kind.
        MemoryInputError: a ``new`` that exists already or is given twice.
    """
    for old, new in moves:
        if is_unindexed_file(old) != is_unindexed_file(new):
            raise MemoryPathError(f"{old!r} cannot move to {new!r}: a hidden unindexed file keeps a name of "
                                  "the form '.<name>.unindexed.md' and a visible file a visible name")
    targets = [new for _, new in moves]
    if len(set(targets)) != len(targets):
        raise MemoryInputError(f"two files would move to the same path: {sorted(targets)}; nothing was moved")
    with store.locked():
        for old, new in moves:
            if not store.exists(old):
                raise MemoryPathError(f"Memory file {old!r} does not exist; nothing was moved")
            if store.exists(new):
                raise MemoryInputError(f"{new!r} already exists; nothing was moved")
        clash = tree_clash({*store.list_files(include_unindexed=True), *targets})
        if clash is not None:
            raise MemoryPathError(f"{clash}; nothing was moved")
        data = {old: store.read_bytes(old) for old, _ in moves}
        with store.transaction():
            written: list[str] = []
            try:
                for old, new in moves:
                    store.write_bytes(new, data[old])
                    written.append(new)
            except BaseException:
                for new in written:  # a folder's undo; a database's transaction undoes them itself
                    with contextlib.suppress(Exception):
                        store.remove(new)
                raise
            for old, _ in moves:
                store.remove(old)
