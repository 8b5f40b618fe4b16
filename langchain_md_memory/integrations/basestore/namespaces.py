"""Namespaces of the LangGraph store as folders: which labels can be folder names.

Example:
    .. code-block:: python

        from langchain_md_memory.integrations.basestore.namespaces import is_label, namespace_file

        assert namespace_file(("users", "alice"), "store.md") == "users/alice/store.md"
        assert not is_label("v1.2")
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import PurePosixPath

from langgraph.store.base import InvalidNamespaceError

__all__ = ["NAMESPACE_FILE", "check_labels", "is_label", "namespace_file", "unindexed_file_name"]

NAMESPACE_FILE = "store.md"
"""The Markdown file holding one namespace's items, inside the namespace's folder."""


def unindexed_file_name(file_name: str = NAMESPACE_FILE) -> str:
    """The hidden sibling of a namespace file, for ``index=False`` items (``.store.unindexed.md``)."""
    name = PurePosixPath(file_name)
    return f".{name.stem}.unindexed{name.suffix}"


_BAD_LABEL_RE = re.compile(r"[/\\\x00-\x1f\x7f\ud800-\udfff]")


def namespace_file(namespace: tuple[str, ...], name: str) -> str:
    if not namespace:
        raise InvalidNamespaceError("Namespace cannot be empty: items live in a namespace folder")
    check_labels(namespace)
    return "/".join((*namespace, name))


def is_label(name: str) -> bool:
    try:
        check_labels((name,))
    except InvalidNamespaceError:
        return False
    return True


def check_labels(namespace: Sequence[str]) -> None:
    for label in namespace:
        if not isinstance(label, str) or not label:
            raise InvalidNamespaceError(
                f"Namespace labels must be non-empty strings, got {label!r} in {tuple(namespace)}"
            )
        if "." in label or _BAD_LABEL_RE.search(label):
            raise InvalidNamespaceError(
                f"Namespace label {label!r} in {tuple(namespace)} cannot hold '.', '/', '\\\\', control "
                "characters or lone surrogates: each label is a folder name"
            )
        if label != label.strip() or label.startswith(("~", "#")):
            raise InvalidNamespaceError(
                f"Namespace label {label!r} in {tuple(namespace)} cannot have surrounding whitespace "
                "or start with '~' or '#' (the memory ignores such folders)"
            )
