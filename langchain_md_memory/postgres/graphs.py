"""Each tenant's own HNSW graphs: one partial index per (tenant, dimension, script group), built in bulk.

One HNSW index over every tenant's vectors answers a tenant's query with the
nearest vectors of all tenants, and the tenant filter then discards most of them
(pgvector before 0.8 cannot resume the scan: with many tenants few of the
``ef_search`` candidates are the tenant's). So each tenant gets graphs of its
own: a partial index ``WHERE tenant = '…' AND dim = N AND script = g`` holds the
tenant's vectors of one script group, which is exactly what vector recall ranks
per query, and :func:`hnsw_query` repeats those three conditions as literals so
the planner can prove the index's predicate whatever the statement's plan
(a generic plan of a prepared statement cannot prove it from parameters).

:func:`ensure_graphs` runs after a sync. It builds a group's graph once the
group holds :data:`HNSW_MIN_ROWS` vectors (any number under
``vector_search="hnsw"``): one bulk build, far faster than growing the graph
insert by insert. Later writes go into the graph as usual. A build holds a SHARE
lock on ``md_memory_chunks`` while it runs (other tenants' index writes wait for
it, searches do not) and gives up after :data:`BUILD_LOCK_TIMEOUT` waiting for
one, to try again after a later sync. Only the table's owner may create an index: a tenant's role under
row-level security leaves its vectors to the exact scan (logged once).

Example:
    .. code-block:: python

        left = ensure_graphs(db, "alice", min_rows=HNSW_MIN_ROWS)   # graphs still to build, if any
"""

from __future__ import annotations

import hashlib
import logging

import psycopg
from psycopg import sql

from ..errors import MemoryIndexError
from .connection import Conn, PostgresDatabase

__all__ = [
    "BUILD_LOCK_TIMEOUT",
    "HNSW_EF_CONSTRUCTION",
    "HNSW_EF_SEARCH",
    "HNSW_M",
    "HNSW_MAX_DIM",
    "HNSW_MIN_ROWS",
    "drop_graphs",
    "ensure_graphs",
    "graph_name",
    "hnsw_query",
]

logger = logging.getLogger(__name__)

HNSW_MAX_DIM = 2000
"""pgvector's HNSW indexes vectors of at most this many dimensions; longer ones are searched exactly."""

HNSW_MIN_ROWS = 2000
"""A script group's vectors from which ``vector_search="auto"`` builds and uses its HNSW graph.

An exact scan grows with the group while a graph query at :data:`HNSW_EF_SEARCH` costs about the same
whatever its size; below this many vectors the exact scan is as fast, and exact (measured in the
PostgreSQL bench: ``docs/bench-history.md``)."""

HNSW_M = 24
HNSW_EF_CONSTRUCTION = 128
HNSW_EF_SEARCH = 800
"""Graph shape and search breadth: chosen on the PostgreSQL bench's hardest case (one tenant's hashing
vectors, nearly flat similarities) for a top 24 that agrees with the exact scan; pgvector's defaults
(``m`` 16, ``ef_construction`` 64) need a wider search for the same agreement. The sweep is in
``docs/bench-history.md``."""

BUILD_LOCK_TIMEOUT = "5s"
"""How long a build waits for other tenants' open write transactions before leaving it to a later sync."""

# Serialises the graph upkeep of one tenant across processes (second key: hashtext(tenant)).
_LOCK_GRAPHS = 0x6D64_0004
_rows = PostgresDatabase.rows


def _tenant_key(tenant: str) -> str:
    return hashlib.md5(tenant.encode("utf-8"), usedforsecurity=False).hexdigest()[:16]


def graph_name(tenant: str, dim: int, group: int) -> str:
    """The index holding ``tenant``'s ``dim``-dimensional vectors of script ``group``."""
    return f"md_memory_hnsw_{_tenant_key(tenant)}_{int(dim)}_{int(group)}"


def _predicate(tenant: str, dim: int, group: int) -> sql.Composed:
    return sql.SQL("tenant = {} AND dim = {} AND script = {}").format(
        sql.Literal(tenant), sql.SQL(str(int(dim))), sql.SQL(str(int(group))))


def hnsw_query(tenant: str, dim: int, group: int) -> sql.Composed:
    """The nearest ``%s`` rows of one group through its graph: ``(rowid, cosine)``; params: query ×2, limit.

    Without the graph (not built yet, or not allowed) the same statement is an exact scan.
    """
    return sql.SQL(
        "SELECT rowid, 1 - (embedding <=> %s::vector) FROM md_memory_chunks WHERE {} "
        "AND embedding IS NOT NULL ORDER BY embedding::vector({}) <=> %s::vector({}) LIMIT %s"
    ).format(_predicate(tenant, dim, group), sql.SQL(str(int(dim))), sql.SQL(str(int(dim))))


def _existing(conn: Conn, tenant: str) -> set[str]:
    prefix = f"md_memory_hnsw_{_tenant_key(tenant)}_"
    return {str(r[0]) for r in _rows(
        conn, "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() "
        "AND tablename = 'md_memory_chunks' AND starts_with(indexname, %s)", (prefix,))}


def _may_create(conn: Conn) -> bool:
    row = _rows(conn, "SELECT pg_has_role(relowner, 'USAGE') FROM pg_class "
                "WHERE oid = to_regclass('md_memory_chunks')")
    return bool(row and row[0][0])


_warned_owner: set[str] = set()


def ensure_graphs(db: PostgresDatabase, tenant: str, *, min_rows: int) -> list[str]:
    """Build the graphs of ``tenant``'s groups holding ``min_rows`` vectors or more, drop those of empty ones.

    Returns the names of the graphs called for but not built now (their build could not take its
    lock within :data:`BUILD_LOCK_TIMEOUT`): the caller asks again after its next sync.
    """
    with db.connection() as conn:
        if not _may_create(conn):
            if tenant not in _warned_owner:
                _warned_owner.add(tenant)
                logger.info("tenant %r: this role does not own md_memory_chunks, so it cannot build its "
                            "HNSW graphs; vector recall scans its vectors exactly", tenant)
            return []
        sizes = {(int(d), int(g)): int(n) for d, g, n in _rows(
            conn, "SELECT dim, script, count(*) FROM md_memory_chunks WHERE tenant = %s "
            "AND embedding IS NOT NULL GROUP BY dim, script", (tenant,))}
        existing = _existing(conn, tenant)
    wanted = {graph_name(tenant, d, g): (d, g) for (d, g), n in sizes.items()
              if n >= max(1, min_rows) and d <= HNSW_MAX_DIM}
    emptied = sorted(existing - {graph_name(tenant, d, g) for d, g in sizes})
    if emptied:
        drop_graphs(db, tenant, emptied)
    return [name for name, (dim, group) in sorted(wanted.items())
            if name not in existing and not _build(db, tenant, name, dim, group)]


def _build(db: PostgresDatabase, tenant: str, name: str, dim: int, group: int) -> bool:
    statement = sql.SQL(
        "CREATE INDEX IF NOT EXISTS {} ON md_memory_chunks USING hnsw ((embedding::vector({})) "
        "vector_cosine_ops) WITH (m = {}, ef_construction = {}) WHERE {}"
    ).format(sql.Identifier(name), sql.SQL(str(int(dim))), sql.SQL(str(HNSW_M)),
             sql.SQL(str(HNSW_EF_CONSTRUCTION)), _predicate(tenant, dim, group))
    try:
        with db.transaction() as conn:
            _rows(conn, f"SET LOCAL lock_timeout = '{BUILD_LOCK_TIMEOUT}'")
            _rows(conn, "SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (_LOCK_GRAPHS, tenant))
            _rows(conn, statement)
    except MemoryIndexError as exc:
        if isinstance(exc.__cause__, (psycopg.errors.LockNotAvailable, psycopg.errors.InsufficientPrivilege)):
            logger.info("tenant %r: HNSW graph %s not built now (%s); a later sync tries again",
                        tenant, name, exc.__cause__)
            return False
        raise
    logger.info("tenant %r: built HNSW graph %s", tenant, name)
    return True


def drop_graphs(db: PostgresDatabase, tenant: str, names: list[str] | None = None) -> None:
    """Drop ``tenant``'s graphs (all of them by default), e.g. before its vectors are all replaced."""
    with db.connection() as conn:
        names = sorted(_existing(conn, tenant) if names is None else names)
        if not names or not _may_create(conn):
            return
    with db.transaction() as conn:
        _rows(conn, "SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (_LOCK_GRAPHS, tenant))
        for name in names:
            _rows(conn, sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(name)))
