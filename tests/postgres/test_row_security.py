"""Optional row-level security, as the README documents it: one database role per tenant."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from langchain_md_memory import MarkdownMemory
from langchain_md_memory.errors import MemoryIndexError

TENANT_TABLES = ("md_memory_documents", "md_memory_files", "md_memory_chunks", "md_memory_index_meta",
                 "md_memory_state")

# The README's statement, word for word in effect.
POLICIES = """
DO $$ DECLARE t text; BEGIN
  FOREACH t IN ARRAY ARRAY['md_memory_documents', 'md_memory_files', 'md_memory_chunks',
                           'md_memory_index_meta', 'md_memory_state'] LOOP
    EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('CREATE POLICY tenant_rows ON %I USING (tenant = current_user) '
                   'WITH CHECK (tenant = current_user)', t);
  END LOOP;
END $$;
"""


def as_role(owner: str, role: str, tenant: str) -> MarkdownMemory:
    return MarkdownMemory.from_postgres(make_conninfo(owner, user=role), tenant=tenant, embeddings="none")


@pytest.fixture
def secured(pg_url: str) -> Iterator[tuple[str, str, str]]:
    """A database of its own whose tables the owner made and secured; two tenant roles on it."""
    suffix = uuid.uuid4().hex[:8]
    db, alice, bob = f"rls_{suffix}", f"alice_{suffix}", f"bob_{suffix}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {db}")
    owner = make_conninfo(pg_url, dbname=db)
    with MarkdownMemory.from_postgres(owner, tenant="setup", embeddings="none") as mem:
        mem.append("- the owner creates the tables")
    with psycopg.connect(owner, autocommit=True) as conn:
        conn.execute(POLICIES)
        for role in (alice, bob):
            conn.execute(f"CREATE ROLE {role} LOGIN")
            conn.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {', '.join(TENANT_TABLES)} TO {role}")
            conn.execute(f"GRANT SELECT ON md_memory_schema TO {role}")
            conn.execute(f"GRANT SELECT, INSERT ON md_memory_embedding_cache TO {role}")
            conn.execute(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {role}")
    yield owner, alice, bob
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE {db} WITH (FORCE)")
        conn.execute(f"DROP ROLE {alice}")
        conn.execute(f"DROP ROLE {bob}")


def test_each_role_reads_and_writes_its_own_tenant(secured: tuple[str, str, str]) -> None:
    owner, alice, bob = secured
    for role in (alice, bob):
        with as_role(owner, role, role) as mem:
            mem.append(f"- {role} keeps walnuts in the pantry")
            assert [h.text for h in mem.search("walnuts")] == [f"- {role} keeps walnuts in the pantry"]


def test_the_database_refuses_a_role_posing_as_another_tenant(secured: tuple[str, str, str]) -> None:
    owner, alice, bob = secured
    with as_role(owner, alice, alice) as mem:
        mem.append("- alice's plan: buy the blue house")
    with as_role(owner, bob, alice) as mem:
        assert mem.search("blue house") == []  # the rows are there, the database hides them
        with pytest.raises(MemoryIndexError, match="row-level security"):
            mem.append("- bob writes into alice's memory")
    with as_role(owner, alice, alice) as mem:
        assert mem.get("MEMORY.md") == "- alice's plan: buy the blue house\n"
