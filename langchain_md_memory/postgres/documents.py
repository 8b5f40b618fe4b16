"""Markdown documents as PostgreSQL rows: one tenant's files, each its exact text and a revision.

Implements the primitives of :class:`~langchain_md_memory.files.base.DocumentStore`
(every text operation comes from there). The change
stamp of a document is ``(revision, bytes)``. The revision is the write's time
on the database's clock in nanoseconds, forced strictly above the document's
previous revision: it reads like a folder's ``(mtime_ns, size)`` (what dream's
recency guard and ``mem.stat`` callers expect), never goes back for a document,
and a file deleted and written again gets a later one. Every change is one
transaction that reads the
row ``FOR UPDATE`` and writes it back only if its revision is still the one
read (compare-and-swap); a lost race is read again and re-applied, so two hosts
appending at once both land. Paths are checked exactly as a folder's are.

Example:
    .. code-block:: python

        store = PostgresDocumentStore(PostgresDatabase.connect(url), tenant="alice")
        store.append("long_term", "- Prefers index funds")
        assert store.read("MEMORY.md") == "- Prefers index funds\\n"
"""

from __future__ import annotations

import contextlib
import logging
import random
import time
from pathlib import PurePosixPath
from typing import Any

from ..errors import MemoryInputError, MemoryPathError, MemoryStoreError
from ..files.base import Change, DocumentStore
from ..files.history import version_name
from ..files.paths import HISTORY_DIR, is_managed_file, is_memory_file
from ..files.tree import ancestors, is_a_folder, not_a_folder
from .connection import LOCK_DOCUMENTS, LOCK_TREE, PostgresDatabase
from .handle import PostgresJobLock

__all__ = ["MAX_TENANT_BYTES", "PostgresDocumentStore", "check_tenant"]

logger = logging.getLogger(__name__)

MAX_TENANT_BYTES = 255
"""The longest tenant name, in bytes of UTF-8. Every key of a tenant's rows starts with it, and a
B-tree index entry holds at most 2704 bytes: the name leaves the path or key after it room to spare."""

# A change that lost this many races in a row gives up (each loss means another writer committed).
_MAX_ATTEMPTS = 50

# The database clock in nanoseconds (microsecond resolution): the time part of a revision.
_NOW_NS = "(extract(epoch FROM clock_timestamp()) * 1000000000)::bigint"


class PostgresDocumentStore(DocumentStore):
    """One tenant's Markdown documents in ``md_memory_documents``.

    Args:
        db: the database (see :class:`~langchain_md_memory.postgres.connection.PostgresDatabase`).
        tenant: whose documents; every query is filtered by it.
        max_path_depth / max_name_bytes: the same limits as a folder memory's.
    """

    def __init__(self, db: PostgresDatabase, tenant: str, *, max_path_depth: int = 16,
                 max_name_bytes: int = 255) -> None:
        self.db = db
        self.tenant = check_tenant(tenant)
        self.max_path_depth = max_path_depth
        self.max_name_bytes = max_name_bytes

    @property
    def location(self) -> str:
        """Where the documents live, for messages: ``postgresql://host/db#tenant``."""
        return f"postgresql://{self.db.name}#{self.tenant}"

    # -- paths and stamps -----------------------------------------------------------

    def stat(self, path: str) -> tuple[int, int] | None:
        """``(revision, bytes)`` of the document (revision: its last write's time in ns), or ``None``."""
        rows = self.db.query(
            "SELECT revision, octet_length(content) FROM md_memory_documents WHERE tenant = %s AND path = %s",
            (self.tenant, self.relpath(path)),
        )
        return None if not rows else (int(rows[0][0]), int(rows[0][1]))

    def scan(self, *, include_unindexed: bool = False) -> dict[str, tuple[int, int]]:
        """Every document with its ``(revision, bytes)``, in one query."""
        wanted = is_memory_file if include_unindexed else is_managed_file
        rows = self.db.query(
            "SELECT path, revision, octet_length(content) FROM md_memory_documents WHERE tenant = %s",
            (self.tenant,),
        )
        return {str(p): (int(r), int(n)) for p, r, n in rows if wanted(str(p))}

    # -- reading and writing bytes ---------------------------------------------------

    def read_stamped(self, path: str, *, max_bytes: int) -> tuple[tuple[int, int], bytes | None] | None:
        """``((revision, bytes), content)`` of one version in one query; ``None`` content over the limit."""
        rows = self.db.query(
            "SELECT revision, octet_length(content), "
            "CASE WHEN octet_length(content) <= %s THEN content END "
            "FROM md_memory_documents WHERE tenant = %s AND path = %s",
            (max_bytes, self.tenant, self.relpath(path)),
        )
        if not rows:
            return None
        revision, size, content = rows[0]
        return (int(revision), int(size)), None if content is None else str(content).encode("utf-8")

    def rewrite(self, path: str, change: Change) -> bool:
        """Apply ``change`` in one compare-and-swap transaction; True when the document was written.

        The row is read ``FOR UPDATE`` and written back only if its revision is still the one read;
        a lost race (another host created or changed it) is read again and ``change`` runs again.
        Every write gets a new revision, as a folder's file a new mtime, even with the same bytes.

        Raises:
            MemoryPathError: a path that is not a Markdown memory file, or that a folder could not
                hold next to the tenant's other documents.
            MemoryInputError: new bytes that PostgreSQL text cannot store (not UTF-8, or a NUL).
            MemoryStoreError: after 50 lost races in a row.
        """
        rel = self.relpath(path)
        if not is_memory_file(rel):
            raise MemoryPathError(f"Only Markdown memory files can be written: {rel!r} is not a '.md' file")
        for attempt in range(_MAX_ATTEMPTS):
            with self.db.transaction() as conn:
                rows = self.db.rows(
                    conn, "SELECT content, revision FROM md_memory_documents "
                    "WHERE tenant = %s AND path = %s FOR UPDATE", (self.tenant, rel),
                )
                old = None if not rows else str(rows[0][0]).encode("utf-8")
                new = change if isinstance(change, bytes) else change(old)
                if new is None:
                    return False
                text = _storable(new, rel)
                if not rows:
                    self._check_tree(conn, rel)
                    done = self.db.rows(
                        conn, "INSERT INTO md_memory_documents(tenant, path, content, revision) "
                        f"VALUES (%s, %s, %s, {_NOW_NS}) "
                        "ON CONFLICT (tenant, path) DO NOTHING RETURNING 1", (self.tenant, rel, text),
                    )
                else:
                    done = self.db.rows(
                        conn, "UPDATE md_memory_documents SET content = %s, "
                        f"revision = GREATEST(revision + 1, {_NOW_NS}), updated_at = clock_timestamp() "
                        "WHERE tenant = %s AND path = %s AND revision = %s RETURNING 1",
                        (text, self.tenant, rel, rows[0][1]),
                    )
                if done:
                    return True
            # Another writer created or changed it between our read and write: read it again.
            logger.debug("write conflict on %s (attempt %d); retrying", rel, attempt + 1)
            time.sleep(random.uniform(0, 0.002 * (attempt + 1)))
        raise MemoryStoreError(
            f"Gave up writing {rel!r} after {_MAX_ATTEMPTS} conflicting writes by others; try again"
        )

    def remove(self, path: str) -> bool:
        """Delete the document; False when it does not exist."""
        rows = self.db.query("DELETE FROM md_memory_documents WHERE tenant = %s AND path = %s RETURNING 1",
                             (self.tenant, self.relpath(path)))
        return bool(rows)

    def transaction(self) -> contextlib.AbstractContextManager[object]:
        """One transaction around several writes (a push): all of them are kept, or none."""
        return self.db.transaction()

    def sweep_temp_files(self, max_age_s: float = 3600.0) -> int:
        """Nothing to sweep: a transaction never leaves half a document."""
        return 0

    # -- locks and versions -------------------------------------------------------------

    def locked(self) -> contextlib.AbstractContextManager[None]:
        """The tenant's advisory lock every writer of the facade takes; re-entrant within a thread."""
        return self.db.advisory_lock(LOCK_DOCUMENTS, self.tenant)

    def job_lock(self, name: str) -> PostgresJobLock:
        """The tenant's exclusive lock for one job (``name``: e.g. ``.dream.lock``), taken without waiting."""
        return PostgresJobLock(self.db, self.tenant, name)

    def keep_version(self, name: str, data: bytes, stamp: str, keep: int) -> PurePosixPath:
        """Keep ``data`` as the hidden document ``.history/<name>-<stamp>.md``; the newest ``keep`` stay."""
        text = _storable(data, f"{HISTORY_DIR}/{name}")
        pattern = f"{HISTORY_DIR}/{name}-%"
        with self.db.transaction() as conn:
            taken = {str(r[0]) for r in self.db.rows(
                conn, "SELECT path FROM md_memory_documents WHERE tenant = %s AND path LIKE %s",
                (self.tenant, pattern))}
            n = 0
            while (rel := f"{HISTORY_DIR}/{version_name(name, stamp, n)}") in taken:
                n += 1
            self.db.rows(conn, "INSERT INTO md_memory_documents(tenant, path, content, revision) "
                         f"VALUES (%s, %s, %s, {_NOW_NS})", (self.tenant, rel, text))
            self.db.rows(
                conn, "DELETE FROM md_memory_documents WHERE tenant = %s AND path IN (SELECT path FROM "
                "md_memory_documents WHERE tenant = %s AND path LIKE %s ORDER BY revision DESC, path DESC "
                "OFFSET %s)", (self.tenant, self.tenant, pattern, max(keep, 1)))
        return PurePosixPath(rel)

    # -- internals --------------------------------------------------------------------

    def _check_tree(self, conn: Any, rel: str) -> None:
        """Refuse a new document where a folder could not hold it: under a document, or above one.

        The same errors as a folder memory's, so a tenant always pulls, exports and migrates into one.
        """
        folders = ancestors(rel)
        # Two hosts creating a.md and a.md/b.md at once would each miss the other's uncommitted row:
        # creations of a tenant's documents take turns (until commit); rewrites of existing ones don't.
        self.db.rows(conn, "SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (LOCK_TREE, self.tenant))
        rows = self.db.rows(
            conn, "SELECT path FROM md_memory_documents WHERE tenant = %s "
            "AND (path = ANY(%s) OR starts_with(path, %s)) ORDER BY length(path) LIMIT 1",
            (self.tenant, folders, rel + "/"),
        )
        if rows:
            found = str(rows[0][0])
            raise not_a_folder(rel, PurePosixPath(found).name) if found in folders else is_a_folder(rel)

def check_tenant(tenant: str) -> str:
    """``tenant`` when it can name a tenant (a non-empty UTF-8 string without NUL, at most
    :data:`MAX_TENANT_BYTES` bytes), else a clear error; checked before anything reaches the database."""
    if not isinstance(tenant, str) or not tenant.strip() or "\x00" in tenant:
        raise MemoryInputError(f"tenant must be a non-empty string without NUL bytes, got {tenant!r:.80}")
    try:
        size = len(tenant.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise MemoryInputError(f"tenant {tenant!r:.80} is not valid UTF-8 ({exc.reason})") from exc
    if size > MAX_TENANT_BYTES:
        raise MemoryInputError(
            f"tenant {tenant[:40]!r}... is {size} bytes of UTF-8, over {MAX_TENANT_BYTES} bytes (the "
            "longest tenant name: every index key of a tenant's rows starts with it): use a shorter "
            "name, e.g. a user id or a hash of the long one"
        )
    return tenant


def _storable(data: bytes, rel: str) -> str:
    """``data`` as PostgreSQL text: UTF-8 without NUL characters, or a clear refusal."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MemoryInputError(
            f"{rel!r} would not be valid UTF-8 ({exc.reason}); nothing was written"
        ) from exc
    if "\x00" in text:
        raise MemoryInputError(
            f"Text for {rel!r} holds a NUL character, which PostgreSQL text cannot store; remove it"
        )
    return text
