"""Optional row-level security, as docs/postgresql.md documents it: one database role per tenant."""

from __future__ import annotations

import datetime as dt
import re
import textwrap
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from langchain_md_memory import MarkdownMemory
from langchain_md_memory.errors import MemoryIndexError
from tests.postgres.conftest import create_schema_at
from tests.support.embeddings import AxisEmbeddings

TENANT_TABLES = ("md_memory_documents", "md_memory_files", "md_memory_chunks", "md_memory_index_meta",
                 "md_memory_state", "md_memory_embedding_cache", "md_memory_past_facts")

# The statement of docs/postgresql.md, word for word (test_the_docs_give_this_statement).
POLICIES = """
DO $$ DECLARE t text; BEGIN
  FOREACH t IN ARRAY ARRAY['md_memory_documents', 'md_memory_files', 'md_memory_chunks',
                           'md_memory_index_meta', 'md_memory_state', 'md_memory_embedding_cache',
                           'md_memory_past_facts'] LOOP
    EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('CREATE POLICY tenant_rows ON %I USING (tenant = current_user) '
                   'WITH CHECK (tenant = current_user)', t);
  END LOOP;
END $$;
"""

# What the documentation said while the embedding cache was shared by every tenant (schema version 2).
SHARED_CACHE_POLICIES = POLICIES.replace(
    ", 'md_memory_embedding_cache',\n                           'md_memory_past_facts'", "")
SHARED_CACHE_GRANTS = "SELECT, INSERT ON md_memory_embedding_cache"

Secured = tuple[str, str, str]

DOCS = Path(__file__).resolve().parents[2] / "docs" / "postgresql.md"


def as_role(owner: str, role: str, tenant: str, embeddings: object = "none") -> MarkdownMemory:
    return MarkdownMemory.from_postgres(make_conninfo(owner, user=role), tenant=tenant, embeddings=embeddings)


@pytest.fixture
def secure(pg_url: str) -> Iterator[Callable[[int | None], Secured]]:
    """Makes a database of its own whose tables the owner made (at an older schema version, or the
    package's own) and secured as the documentation of that version says, with two tenant roles on it."""
    made: list[tuple[str, str, str]] = []

    def make(version: int | None = None) -> Secured:
        suffix = uuid.uuid4().hex[:8]
        db, alice, bob = f"rls_{suffix}", f"alice_{suffix}", f"bob_{suffix}"
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {db}")
        made.append((db, alice, bob))
        owner = make_conninfo(pg_url, dbname=db)
        if version is None:
            with MarkdownMemory.from_postgres(owner, tenant="setup", embeddings="none") as mem:
                mem.append("- the owner creates the tables")
            policies, tables = POLICIES, TENANT_TABLES
        else:
            create_schema_at(owner, version)
            policies, tables = SHARED_CACHE_POLICIES, TENANT_TABLES[:5]
        with psycopg.connect(owner, autocommit=True) as conn:
            conn.execute(policies)
            for role in (alice, bob):
                conn.execute(f"CREATE ROLE {role} LOGIN")
                conn.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {', '.join(tables)} TO {role}")
                conn.execute(f"GRANT SELECT ON md_memory_schema TO {role}")
                conn.execute(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {role}")
                if version is not None:
                    conn.execute(f"GRANT {SHARED_CACHE_GRANTS} TO {role}")
        return owner, alice, bob

    yield make
    with psycopg.connect(pg_url, autocommit=True) as conn:
        for db, alice, bob in made:
            conn.execute(f"DROP DATABASE {db} WITH (FORCE)")
            conn.execute(f"DROP ROLE IF EXISTS {alice}")
            conn.execute(f"DROP ROLE IF EXISTS {bob}")


@pytest.fixture
def secured(secure: Callable[[int | None], Secured]) -> Secured:
    """A database secured as docs/postgresql.md says, with two tenant roles on it."""
    return secure(None)


def test_the_docs_give_this_statement() -> None:
    blocks = re.findall(r"^ *```sql\n(.*?)^ *```", DOCS.read_text(encoding="utf-8"), re.S | re.M)
    assert POLICIES.strip() in [textwrap.dedent(block).strip() for block in blocks]


def test_each_role_reads_and_writes_its_own_tenant(secured: Secured) -> None:
    owner, alice, bob = secured
    for role in (alice, bob):
        with as_role(owner, role, role) as mem:
            mem.append(f"- {role} keeps walnuts in the pantry")
            assert [h.text for h in mem.search("walnuts")] == [f"- {role} keeps walnuts in the pantry"]


def test_the_database_refuses_a_role_posing_as_another_tenant(secured: Secured) -> None:
    owner, alice, bob = secured
    with as_role(owner, alice, alice) as mem:
        mem.append("- alice's plan: buy the blue house")
    with as_role(owner, bob, alice) as mem:
        assert mem.search("blue house") == []  # the rows are there, the database hides them
        with pytest.raises(MemoryIndexError, match="row-level security"):
            mem.append("- bob writes into alice's memory")
    with as_role(owner, alice, alice) as mem:
        assert mem.get("MEMORY.md") == "- alice's plan: buy the blue house\n"


def rows_each_role_reads(owner: str, roles: tuple[str, ...], table: str) -> dict[str, int]:
    """How many rows of ``table`` each role, and the owner, can read."""
    seen = {}
    for role, conninfo in [*((r, make_conninfo(owner, user=r)) for r in roles), ("owner", owner)]:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            seen[role] = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    return seen


def cache_rows_each_role_reads(owner: str, alice: str, bob: str) -> dict[str, int]:
    """Both tenants store the same text and one of their own; the cache rows each role can read."""
    for role in (alice, bob):
        with as_role(owner, role, role, AxisEmbeddings(["bond", "tea", role])) as mem:
            mem.append(f"- the bond ladder ends in 2031\n- {role} drinks tea")
            assert mem.search("bond ladder")  # indexed, vectors and all
    return rows_each_role_reads(owner, (alice, bob), "md_memory_embedding_cache")


def test_a_role_reads_no_row_of_another_tenants_embedding_cache(secured: Secured) -> None:
    owner, alice, bob = secured
    seen = cache_rows_each_role_reads(owner, alice, bob)
    assert seen[alice] > 0 and seen[bob] > 0 and seen[alice] + seen[bob] == seen["owner"]


def test_a_database_secured_while_the_cache_was_shared_covers_it_once_migrated(
        secure: Callable[[int | None], Secured]) -> None:
    owner, alice, bob = secure(2)
    with psycopg.connect(owner, autocommit=True) as conn:
        conn.execute("INSERT INTO md_memory_embedding_cache(fingerprint, hash, dim, vector) "
                     "VALUES ('axis-v1', 'h', 1, '\\x0000803f')")
    MarkdownMemory.from_postgres(owner, tenant="setup", embeddings="none").close()  # the owner migrates
    seen = cache_rows_each_role_reads(owner, alice, bob)
    assert seen[alice] > 0 and seen[bob] > 0 and seen[alice] + seen[bob] == seen["owner"]


def struck_lines_each_role_reads(owner: str, alice: str, bob: str) -> dict[str, int]:
    """Each tenant supersedes a fact of its own; the struck lines each role can read, and its as-of answer."""
    for role in (alice, bob):
        with as_role(owner, role, role, AxisEmbeddings(["rent", role])) as mem:
            mem.append(f"- {role} pays rent 1,650")
            assert mem.supersede(f"{role} pays rent 1,650", f"- {role} pays rent 1,720",
                                 today=dt.date(2025, 4, 1))
            then = mem.search("rent", as_of=dt.date(2025, 3, 1))
            assert then[0].text.startswith(f"- ~~{role} pays rent 1,650~~"), then[0].text
    return rows_each_role_reads(owner, (alice, bob), "md_memory_past_facts")


def test_a_role_reads_only_its_own_tenants_struck_lines(secured: Secured) -> None:
    owner, alice, bob = secured
    assert struck_lines_each_role_reads(owner, alice, bob) == {alice: 1, bob: 1, "owner": 2}


def test_a_database_secured_before_struck_lines_were_kept_covers_them_once_migrated(
        secure: Callable[[int | None], Secured]) -> None:
    owner, alice, bob = secure(2)
    MarkdownMemory.from_postgres(owner, tenant="setup", embeddings="none").close()  # the owner migrates
    assert struck_lines_each_role_reads(owner, alice, bob) == {alice: 1, bob: 1, "owner": 2}
