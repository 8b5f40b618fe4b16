"""Moving a memory's documents between stores: migrate, pull to a folder, push a person's edits back.

Works on any two :class:`~langchain_md_memory.files.base.DocumentStore`
backends (a folder, PostgreSQL rows): documents move as exact bytes, so a
round trip is byte-identical.

- :func:`migrate` copies every document (the hidden ``.<name>.unindexed.md``
  files too) into a target that holds none, or replaces the target's with
  ``overwrite=True``.
- :func:`pull` writes a store's documents into a folder for a person to read
  and edit, with a manifest (``.md-memory/pull.json``) of what each document
  held at the pull.
- :func:`push` applies the folder's changes (edited, added and deleted files)
  back. A document changed on the store since the pull is a conflict: the
  push then raises :class:`PushConflictError` naming every such path and
  writes nothing, so nobody's edit is overwritten silently.

Example:
    .. code-block:: python

        from langchain_md_memory.files.store import MarkdownStore
        from langchain_md_memory.files.transfer import pull, push

        server = MarkdownStore("shared-memory")
        pull(server, "my-copy", origin="shared")
        # ... a person edits my-copy/MEMORY.md ...
        report = push("my-copy", server, origin="shared")
        print(report.written)  # ['MEMORY.md']
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..config import MemoryConfig
from ..errors import MemoryStoreError, check_write_size
from ..text.redaction import WriteRedactor
from .atomic import atomic_output
from .base import DocumentStore
from .paths import STATE_DIR
from .store import MarkdownStore
from .tree import tree_clash

__all__ = [
    "PULL_MANIFEST",
    "PushConflictError",
    "PushReport",
    "TransferError",
    "migrate",
    "pull",
    "push",
]

PULL_MANIFEST = f"{STATE_DIR}/pull.json"
"""Where :func:`pull` records what each document held, relative to the pulled folder."""

_MANIFEST_VERSION = 1


class TransferError(MemoryStoreError):
    """A migrate, pull or push that was refused before anything was written."""


class PushConflictError(TransferError):
    """Documents changed on the store since the pull; ``paths`` lists them. Nothing was written."""

    def __init__(self, paths: list[str]) -> None:
        self.paths = paths
        shown = ", ".join(paths[:20]) + (f" and {len(paths) - 20} more" if len(paths) > 20 else "")
        super().__init__(
            f"Push refused: {len(paths)} document(s) changed on the store since the pull: {shown}. "
            "Nothing was written; pull again into a fresh folder, redo your edits there, then push."
        )


@dataclass(frozen=True)
class PushReport:
    """What a push changed on the store (sorted paths) and how many changed files it found."""

    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    @property
    def changed(self) -> int:
        """How many documents the push wrote or removed."""
        return len(self.written) + len(self.removed)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _contents(store: DocumentStore) -> dict[str, bytes]:
    return {path: store.read_bytes(path) for path in sorted(store.scan(include_unindexed=True))}


def migrate(source: DocumentStore, target: DocumentStore, *, overwrite: bool = False,
            progress: Callable[[int, int], None] | None = None) -> list[str]:
    """Copy every document of ``source`` into ``target`` byte for byte; returns the paths copied.

    The target must hold no document, unless ``overwrite``: then its documents
    that ``source`` lacks are removed, so it ends holding exactly the same.

    Raises:
        TransferError: the target is not empty and ``overwrite`` is false.
    """
    with target.locked():
        existing = set(target.scan(include_unindexed=True))
        if existing and not overwrite:
            raise TransferError(
                f"The target already holds {len(existing)} document(s); migrate only into an empty "
                "memory, or pass overwrite=True (--overwrite) to replace its documents"
            )
        paths = sorted(source.scan(include_unindexed=True))
        _check_tree(paths, "migrate")
        with target.transaction():
            for done, path in enumerate(paths, 1):
                target.write_bytes(path, source.read_bytes(path))
                if progress is not None:
                    progress(done, len(paths))
            for path in sorted(existing - set(paths)):
                target.remove(path)
    return paths


def _check_tree(paths: Iterable[str], what: str) -> None:
    """Refuse, before anything is written, documents no folder could hold together."""
    clash = tree_clash(paths)
    if clash is not None:
        raise TransferError(f"{what.capitalize()} refused, nothing was written: {clash}")


def _checked_text(path: str, data: bytes, max_write_bytes: int) -> str:
    """A pushed document's text: UTF-8 without NUL, within the write cap; else a refusal naming it."""
    try:
        check_write_size(len(data), max_write_bytes)
        text = data.decode("utf-8")
    except (UnicodeDecodeError, MemoryStoreError) as exc:
        reason = f"it is not valid UTF-8 ({exc.reason})" if isinstance(exc, UnicodeDecodeError) else str(exc)
        raise TransferError(f"Push refused, nothing was written: {path!r}: {reason}; "
                            "fix the file and push again") from exc
    if "\x00" in text:
        raise TransferError(f"Push refused, nothing was written: {path!r} holds a NUL character; "
                            "remove it and push again")
    return text


def _read_manifest(folder: Path) -> dict[str, object] | None:
    try:
        data = json.loads((folder / PULL_MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise TransferError(f"Cannot read the pull manifest {PULL_MANIFEST!r} in {str(folder)!r}: "
                            f"{exc}") from exc
    if not isinstance(data, dict) or data.get("version") != _MANIFEST_VERSION \
            or not isinstance(data.get("documents"), dict):
        raise TransferError(f"{PULL_MANIFEST!r} in {str(folder)!r} is not a pull manifest this package wrote")
    return data


def _write_manifest(folder: Path, origin: str, documents: Mapping[str, str]) -> None:
    path = folder / PULL_MANIFEST
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {"version": _MANIFEST_VERSION, "origin": origin, "documents": dict(sorted(documents.items()))}
    with atomic_output(path) as handle:
        handle.write((json.dumps(body, indent=1, ensure_ascii=False) + "\n").encode("utf-8"))


def _local_changes(folder: MarkdownStore, pulled: Mapping[str, str]) -> dict[str, bytes | None]:
    """Documents whose bytes differ from the pull: new or edited → bytes, deleted → ``None``."""
    local = _contents(folder)
    changes: dict[str, bytes | None] = {
        path: data for path, data in local.items() if pulled.get(path) != _digest(data)
    }
    changes.update({p: None for p in pulled if p not in local})
    return dict(sorted(changes.items()))


def pull(store: DocumentStore, folder: str | os.PathLike[str], *, origin: str = "") -> list[str]:
    """Write every document of ``store`` into ``folder``; returns the paths written.

    ``folder`` must be absent, empty, or an earlier pull of the same ``origin``
    with no unpushed edit (its documents are then brought up to date).
    ``origin`` names the store (e.g. a tenant) so a push cannot land elsewhere.

    Raises:
        TransferError: the folder holds other files, another origin's pull, or unpushed edits.
    """
    root = Path(folder)
    manifest = _read_manifest(root) if root.exists() else None
    contents = _contents(store)
    _check_tree(contents, "pull")  # first: a tenant written before it refused such paths may hold them
    local = MarkdownStore(root)
    if manifest is None:
        if local.scan(include_unindexed=True):
            raise TransferError(f"{str(root)!r} already holds Markdown files; "
                                "pull into an empty or new folder")
    else:
        _check_origin(manifest, origin, root)
        pending = _local_changes(local, _documents(manifest))
        if pending:
            raise TransferError(
                f"{str(root)!r} has {len(pending)} unpushed change(s) ({', '.join(list(pending)[:5])}); "
                "push them first, or pull into a fresh folder"
            )
    for path, data in contents.items():
        local.write_bytes(path, data)
    for path in sorted(set(local.scan(include_unindexed=True)) - set(contents)):
        local.remove(path)  # deleted on the store since the last pull, unchanged here
    _write_manifest(root, origin, {path: _digest(data) for path, data in contents.items()})
    return list(contents)


def _documents(manifest: Mapping[str, object]) -> dict[str, str]:
    documents = manifest["documents"]
    assert isinstance(documents, dict)
    return {str(k): str(v) for k, v in documents.items()}


def _check_origin(manifest: Mapping[str, object], origin: str, root: Path) -> None:
    if manifest.get("origin") != origin:
        raise TransferError(
            f"{str(root)!r} was pulled from {manifest.get('origin')!r}, not {origin!r}; "
            "push it where it came from"
        )


def push(folder: str | os.PathLike[str], store: DocumentStore, *, origin: str = "",
         config: MemoryConfig | None = None) -> PushReport:
    """Apply the edits made in a pulled ``folder`` to ``store``; returns what changed.

    Only documents that differ from the pull are touched, all of them or none: each must still
    hold on the store what it held at the pull (checked under the store's write lock, which the
    writes then keep), be UTF-8 without NUL and within ``max_write_bytes``, and fit a folder's
    tree; a database writes them in one transaction. Secrets in them are redacted as every other
    write is (``redact_writes`` of ``config``, the defaults when none is given), in the folder too.

    Raises:
        TransferError: ``folder`` is not a pull of ``origin``, or a document was refused (nothing written).
        PushConflictError: documents changed on the store since the pull.
    """
    cfg = config or MemoryConfig()
    root = Path(folder)
    manifest = _read_manifest(root) if root.is_dir() else None
    if manifest is None:
        raise TransferError(f"{str(root)!r} is not a pulled folder (no {PULL_MANIFEST}); pull first")
    _check_origin(manifest, origin, root)
    pulled = _documents(manifest)
    local = MarkdownStore(root)
    changes = _local_changes(local, pulled)
    hygiene = cfg.hygiene
    redactor = WriteRedactor(hygiene.redact_kinds, hygiene.redact_patterns) if hygiene.redact_writes else None
    for path, data in changes.items():
        if data is not None:
            text = _checked_text(path, data, cfg.limits.max_write_bytes)
            if redactor is not None and (clean := redactor.redact(text)) != text:
                changes[path] = clean.encode("utf-8")
    with store.locked():
        conflicts = [path for path in changes if _current_digest(store, path) != pulled.get(path)]
        if conflicts:
            raise PushConflictError(conflicts)
        kept = set(store.scan(include_unindexed=True)) - {p for p, d in changes.items() if d is None}
        _check_tree(kept | {p for p, d in changes.items() if d is not None}, "push")
        with store.transaction():
            for path, data in changes.items():
                if data is None:
                    store.remove(path)
                else:
                    store.write_bytes(path, data)
    for path, data in changes.items():
        if data is not None and local.read_bytes(path) != data:
            local.write_bytes(path, data)  # the redacted text, so the folder matches what was pushed
    for path, data in changes.items():
        if data is None:
            pulled.pop(path, None)
        else:
            pulled[path] = _digest(data)
    _write_manifest(root, origin, pulled)
    return PushReport(written=[p for p, d in changes.items() if d is not None],
                      removed=[p for p, d in changes.items() if d is None])


def _current_digest(store: DocumentStore, path: str) -> str | None:
    return _digest(store.read_bytes(path)) if store.exists(path) else None
