"""The PostgreSQL schema: an ordered list of migrations, applied once each, under a lock.

Every table a tenant's data lives in has a primary key (and every unique key)
starting with ``tenant``, so the schema can be distributed by tenant (Citus
requires it). Only ``md_memory_schema`` (the migrations applied) is shared by all
tenants. The embedding cache (vectors by model identity and content hash) is each
tenant's own: a shared one would answer a tenant's write from another tenant's
vectors, so the write's speed would tell whether anyone stores that exact text.

Documents hold each file's exact Markdown and a revision (the last write's
time in nanoseconds, strictly above the one before). Chunks mirror the SQLite
index's columns; ``tsv`` holds the package's own CJK-aware terms
(:func:`~langchain_md_memory.text.index_terms`) as lexemes, unparsed, with a
GIN index; ``embedding`` is a pgvector column of any dimension (``dim`` says
which). Vectors are searched through HNSW graphs of each tenant's own, partial
indexes the index builds after a sync (:mod:`.graphs`), never through one graph
shared by all tenants.

Example:
    .. code-block:: python

        with psycopg.connect(url, autocommit=True) as conn:
            ensure_schema(conn)   # creates or migrates; raises BackendSchemaError when it cannot
"""

from __future__ import annotations

import logging
from typing import Any

import psycopg
from psycopg.rows import tuple_row

from ..errors import BackendSchemaError

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "ensure_schema"]

logger = logging.getLogger(__name__)

_SECURED_LIKE_CHUNKS = r"""
    DO $$ DECLARE p record; BEGIN
      IF (SELECT relrowsecurity FROM pg_class WHERE oid = 'md_memory_chunks'::regclass) THEN
        ALTER TABLE {table} ENABLE ROW LEVEL SECURITY;
        IF (SELECT relforcerowsecurity FROM pg_class WHERE oid = 'md_memory_chunks'::regclass) THEN
          ALTER TABLE {table} FORCE ROW LEVEL SECURITY;
        END IF;
        FOR p IN SELECT * FROM pg_policies WHERE schemaname = current_schema()
            AND tablename = 'md_memory_chunks' LOOP
          EXECUTE format('CREATE POLICY %I ON {table} AS %s FOR %s TO %s', p.policyname,
                         p.permissive, p.cmd, (SELECT string_agg(CASE WHEN r = 'public' THEN 'PUBLIC'
                                                                      ELSE quote_ident(r) END, ', ')
                                               FROM unnest(p.roles) AS r))
                  || coalesce(' USING (' || p.qual || ')', '')
                  || coalesce(' WITH CHECK (' || p.with_check || ')', '');
        END LOOP;
      END IF;
    END $$
"""
"""A new tenant table ({table}) under the row-level security ``md_memory_chunks`` has, if any: a database
secured by the statement in docs/postgresql.md before the table existed covers it once migrated."""

MIGRATIONS: tuple[str, ...] = (
    # 1: documents, the derived index, the shared embedding cache, durable state.
    """
    CREATE SEQUENCE IF NOT EXISTS md_memory_chunk_ids;
    CREATE TABLE IF NOT EXISTS md_memory_documents (
        tenant text NOT NULL,
        path text NOT NULL,
        content text NOT NULL,
        revision bigint NOT NULL,
        created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
        updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
        PRIMARY KEY (tenant, path)
    );
    CREATE TABLE IF NOT EXISTS md_memory_files (
        tenant text NOT NULL,
        path text NOT NULL,
        revision bigint NOT NULL,
        size bigint NOT NULL,
        hash text NOT NULL,
        kind text NOT NULL,
        indexed_at double precision NOT NULL,
        PRIMARY KEY (tenant, path)
    );
    CREATE TABLE IF NOT EXISTS md_memory_chunks (
        tenant text NOT NULL,
        rowid bigint NOT NULL DEFAULT nextval('md_memory_chunk_ids'),
        id text NOT NULL,
        path text NOT NULL,
        start_line integer NOT NULL,
        end_line integer NOT NULL,
        heading text NOT NULL,
        text text NOT NULL,
        hash text NOT NULL,
        embed_hash text NOT NULL,
        context text NOT NULL DEFAULT '',
        script smallint NOT NULL DEFAULT 0,
        file_kind text NOT NULL,
        updated_at double precision NOT NULL,
        n_terms integer NOT NULL,
        terms text NOT NULL,
        tsv tsvector NOT NULL,
        dim integer,
        embedding vector,
        access_count bigint NOT NULL DEFAULT 0,
        PRIMARY KEY (tenant, rowid),
        UNIQUE (tenant, id)
    );
    CREATE INDEX IF NOT EXISTS md_memory_chunks_path ON md_memory_chunks (tenant, path);
    CREATE INDEX IF NOT EXISTS md_memory_chunks_tsv ON md_memory_chunks USING gin (tsv);
    CREATE TABLE IF NOT EXISTS md_memory_index_meta (
        tenant text NOT NULL,
        key text NOT NULL,
        value text NOT NULL,
        PRIMARY KEY (tenant, key)
    );
    CREATE TABLE IF NOT EXISTS md_memory_embedding_cache (
        fingerprint text NOT NULL,
        hash text NOT NULL,
        dim integer NOT NULL,
        vector bytea NOT NULL,
        PRIMARY KEY (fingerprint, hash)
    );
    CREATE TABLE IF NOT EXISTS md_memory_state (
        tenant text NOT NULL,
        key text NOT NULL,
        value jsonb NOT NULL,
        PRIMARY KEY (tenant, key)
    )
    """,
    # 2: the shared per-dimension HNSW indexes go: a tenant filter discarded most of what they found,
    # and every insert paid for a graph of all tenants. Each tenant's graphs replace them (.graphs).
    # A tenant's vectors by script group, in rowid order: the exact scan of a group and the query's
    # background sample (a group's first rows) read only those rows.
    r"""
    DO $$ DECLARE name text; BEGIN
      FOR name IN SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()
          AND tablename = 'md_memory_chunks' AND indexname ~ '^md_memory_chunks_hnsw_[0-9]+$' LOOP
        EXECUTE format('DROP INDEX %I', name);
      END LOOP;
    END $$;
    CREATE INDEX IF NOT EXISTS md_memory_chunks_vectors ON md_memory_chunks (tenant, script, dim, rowid)
        WHERE embedding IS NOT NULL
    """,
    # 3: the embedding cache becomes each tenant's own (keyed by tenant first). A shared row cannot be
    # told apart by tenant (any of them may have written it, any may hold its text), so every row goes:
    # a tenant embeds a text again when it next needs it. Where the chunks are under row-level
    # security, the cache gets the chunks' policies, so a tenant's role reads no other tenant's vectors.
    # The table itself stays, keeping the grants roles have on it.
    """
    TRUNCATE md_memory_embedding_cache;
    ALTER TABLE md_memory_embedding_cache ADD COLUMN tenant text NOT NULL;
    ALTER TABLE md_memory_embedding_cache DROP CONSTRAINT md_memory_embedding_cache_pkey,
        ADD PRIMARY KEY (tenant, fingerprint, hash);
    """ + _SECURED_LIKE_CHUNKS.format(table="md_memory_embedding_cache"),
    # 4: struck History lines with the days they held, for as-of search (never chunks), with the grants
    # and row-level security the chunks have (the roles that index a tenant write both). Forgetting each
    # tenant's chunking signature makes its next sync read every document again, so it gains them.
    """
    CREATE TABLE IF NOT EXISTS md_memory_past_facts (
        tenant text NOT NULL,
        path text NOT NULL,
        line integer NOT NULL,
        text text NOT NULL,
        statement text NOT NULL,
        since date,
        until date NOT NULL,
        embed_hash text NOT NULL,
        PRIMARY KEY (tenant, path, line)
    );
    DELETE FROM md_memory_index_meta WHERE key = 'chunking';
    DO $$ DECLARE g record; BEGIN
      FOR g IN SELECT grantee, privilege_type FROM information_schema.role_table_grants
          WHERE table_schema = current_schema() AND table_name = 'md_memory_chunks'
          AND privilege_type IN ('SELECT', 'INSERT', 'UPDATE', 'DELETE') AND grantee <> current_user LOOP
        EXECUTE format('GRANT %s ON md_memory_past_facts TO %s', g.privilege_type,
                       CASE WHEN g.grantee = 'PUBLIC' THEN 'PUBLIC' ELSE quote_ident(g.grantee) END);
      END LOOP;
    END $$;
    """ + _SECURED_LIKE_CHUNKS.format(table="md_memory_past_facts"),
)
"""Schema changes in order: ``MIGRATIONS[i]`` takes version ``i`` to ``i + 1``. Append only, never edit."""

SCHEMA_VERSION = len(MIGRATIONS)

# Serialises schema changes of every process (the key is this package's, not a tenant's).
_SCHEMA_LOCK = 0x6D64_0000


def ensure_schema(conn: psycopg.Connection[Any]) -> int:
    """Create the schema or bring it up to :data:`SCHEMA_VERSION`; returns the version found before.

    Raises:
        BackendSchemaError: pgvector is not installed (and cannot be created here), or the schema
            was written by a newer version of this package.
    """
    with conn.transaction(), conn.cursor(row_factory=tuple_row) as cur:
        cur.execute("SELECT pg_advisory_xact_lock(%s, 0)", (_SCHEMA_LOCK,))
        _ensure_vector(cur)
        # Checked before creating: a role without CREATE on the schema (one role per tenant under
        # row-level security) can still open a memory whose tables the owner made.
        cur.execute("SELECT to_regclass('md_memory_schema') IS NULL")
        missing = cur.fetchone()
        if missing is not None and missing[0]:
            cur.execute("CREATE TABLE md_memory_schema ("
                        "version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())")
        cur.execute("SELECT coalesce(max(version), 0) FROM md_memory_schema")
        row = cur.fetchone()
        found = int(row[0]) if row is not None else 0
        if found > SCHEMA_VERSION:
            raise BackendSchemaError(
                f"The md_memory tables in this database are at schema version {found}, newer than this "
                f"package's {SCHEMA_VERSION}: upgrade langchain-md-memory (pip install -U "
                "'langchain-md-memory[postgres]') on every host using this database"
            )
        for version in range(found, SCHEMA_VERSION):
            logger.info("PostgreSQL memory schema: migrating to version %d", version + 1)
            cur.execute(MIGRATIONS[version])
            cur.execute("INSERT INTO md_memory_schema(version) VALUES (%s)", (version + 1,))
    return found


def _ensure_vector(cur: psycopg.Cursor[Any]) -> None:
    cur.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'")
    if cur.fetchone() is not None:
        return
    try:
        with cur.connection.transaction():  # a savepoint: a refusal must not end the outer transaction
            cur.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.Error as exc:
        raise BackendSchemaError(
            "This PostgreSQL database has no pgvector extension and this user cannot create it "
            f"({type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}). "
            "Install pgvector on the server, then run CREATE EXTENSION vector; in this database as "
            "its owner or a superuser"
        ) from exc
