"""Each tenant's own HNSW graphs: what they answer, whose vectors they hold, and the planner's use of them."""

from __future__ import annotations

import numpy as np
import psycopg
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from langchain_md_memory import MarkdownMemory
from langchain_md_memory.postgres import graphs as graphs_module
from langchain_md_memory.postgres import index as index_module
from langchain_md_memory.postgres.graphs import graph_name, hnsw_query
from langchain_md_memory.postgres.recall import vector_literal
from langchain_md_memory.text import SCRIPT_OTHER
from tests.postgres.conftest import MemoryFactory

DIM = 16
CONFIG = {"chunking": {"chunk_tokens": 16, "chunk_overlap_tokens": 0}}
QUERIES = ["bond ladder", "green tea", "pension at sixty", "cash buffer", "index funds", "a trip to Kyoto"]


def notes(n: int, word: str = "note") -> str:
    """``n`` paragraphs, one chunk each under CONFIG, every one with a vector of its own."""
    return "\n\n".join(f"- {word} {i}: something worth remembering, number {i * 7919 % 1000}"
                       for i in range(n))


def graph_names(url: str, tenant: str) -> set[str]:
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'md_memory_chunks' "
                            "AND starts_with(indexname, 'md_memory_hnsw_')").fetchall()
    return {str(r[0]) for r in rows} & {graph_name(tenant, DIM, SCRIPT_OTHER)}


def hits(mem: MarkdownMemory, query: str) -> list[tuple[str, float, str]]:
    return [(h.chunk_id, round(h.score, 5), h.retrieved_by) for h in mem.search(query)]


def test_the_tenant_graph_returns_the_exact_scan_hits(pg_memory_factory: MemoryFactory, pg_url: str,
                                                       tenant: str):
    emb = DeterministicFakeEmbedding(size=DIM)
    graph = pg_memory_factory(embeddings=emb, config=CONFIG, vector_search="hnsw")
    exact = pg_memory_factory(embeddings=emb, config=CONFIG, vector_search="exact")
    graph.write("MEMORY.md", notes(60))
    graph.sync()
    assert graph_names(pg_url, tenant) == {graph_name(tenant, DIM, SCRIPT_OTHER)}
    exact.sync()
    for query in QUERIES:
        v = np.asarray(emb.embed_query(query), dtype=np.float32)
        by_graph = [(r.id, round(s, 6)) for r, s in graph.index.vector_search(v, 24).hits]
        by_scan = [(r.id, round(s, 6)) for r, s in exact.index.vector_search(v, 24).hits]
        assert by_graph == by_scan and len(by_graph) == 24, query
        assert hits(graph, query) == hits(exact, query), query


@pytest.mark.parametrize("plan", ["auto", "force_generic_plan"])
def test_the_graph_query_is_planned_onto_the_tenant_graph(pg_memory_factory: MemoryFactory, pg_url: str,
                                                          tenant: str, plan: str):
    emb = DeterministicFakeEmbedding(size=DIM)
    mem = pg_memory_factory(embeddings=emb, config=CONFIG, vector_search="hnsw")
    mem.write("MEMORY.md", notes(30))
    mem.sync()
    literal = vector_literal(np.asarray(emb.embed_query("tea"), dtype=np.float32))
    with psycopg.connect(pg_url, autocommit=True) as conn, conn.transaction():
        conn.execute(f"SET LOCAL plan_cache_mode = {plan}")
        conn.execute("SET LOCAL enable_sort = off")  # as the recall does
        # Prepared, so a generic plan is what the server would reuse: the literals still prove the predicate.
        plan_rows = conn.execute(b"EXPLAIN " + hnsw_query(tenant, DIM, SCRIPT_OTHER).as_bytes(conn),
                                 (literal, literal, 24), prepare=True).fetchall()
    assert graph_name(tenant, DIM, SCRIPT_OTHER) in "\n".join(str(r[0]) for r in plan_rows)


def test_a_tenant_graph_holds_and_returns_only_that_tenant(pg_memory_factory: MemoryFactory, pg_url: str,
                                                          tenant: str):
    emb = DeterministicFakeEmbedding(size=DIM)
    alice = pg_memory_factory(embeddings=emb, config=CONFIG, vector_search="hnsw")
    bob = pg_memory_factory(tenant_name=f"{tenant}-bob", embeddings=emb, config=CONFIG, vector_search="hnsw")
    alice.write("MEMORY.md", notes(40, "alice"))
    # Bob's notes include the very texts of the queries: the nearest vectors in the table are his.
    bob.write("MEMORY.md", notes(40, "bob") + "\n\n" + "\n\n".join(f"- {q}" for q in QUERIES))
    alice.sync()
    bob.sync()
    assert graph_name(tenant, DIM, SCRIPT_OTHER) != graph_name(f"{tenant}-bob", DIM, SCRIPT_OTHER)
    for query in QUERIES:
        v = np.asarray(emb.embed_query(query), dtype=np.float32)
        found = alice.index.vector_search(v, 24).hits
        assert len(found) == 24 and all("alice" in r.text for r, _ in found), query
        assert all("bob" not in h.text for h in alice.search(query))
        assert any(query in h.text for h in bob.search(query)), query
    with psycopg.connect(pg_url, autocommit=True) as conn:
        definition = conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s",
                                  (graph_name(tenant, DIM, SCRIPT_OTHER),)).fetchone()
    assert definition is not None and f"tenant = '{tenant}'" in str(definition[0])


def test_auto_builds_a_graph_only_for_a_group_large_enough(pg_memory_factory: MemoryFactory, pg_url: str,
                                                          tenant: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(index_module, "HNSW_MIN_ROWS", 25)
    emb = DeterministicFakeEmbedding(size=DIM)
    mem = pg_memory_factory(embeddings=emb, config=CONFIG)
    mem.write("MEMORY.md", notes(10))
    mem.sync()
    assert graph_names(pg_url, tenant) == set()
    mem.write("MEMORY.md", notes(30))
    mem.sync()
    assert graph_names(pg_url, tenant) == {graph_name(tenant, DIM, SCRIPT_OTHER)}
    # A memory emptied of vectors loses its graph.
    mem.write("MEMORY.md", "")
    mem.sync()
    assert graph_names(pg_url, tenant) == set()


def test_a_graph_build_that_cannot_get_its_lock_is_left_for_a_later_sync(
        pg_memory_factory: MemoryFactory, pg_url: str, tenant: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(graphs_module, "BUILD_LOCK_TIMEOUT", "200ms")
    emb = DeterministicFakeEmbedding(size=DIM)
    mem = pg_memory_factory(embeddings=emb, config=CONFIG, vector_search="hnsw")
    mem.write("MEMORY.md", notes(20))
    with psycopg.connect(pg_url) as blocker:  # another tenant's write transaction, still open
        blocker.execute("LOCK TABLE md_memory_chunks IN ROW EXCLUSIVE MODE")
        mem.sync()
        assert graph_names(pg_url, tenant) == set()
        assert len(mem.search("something worth remembering")) > 0  # searched exactly meanwhile
        blocker.rollback()
    mem.sync()  # nothing changed, but the graph is still due
    assert graph_names(pg_url, tenant) == {graph_name(tenant, DIM, SCRIPT_OTHER)}


def test_a_version_1_database_migrates_and_keeps_its_memories(pg_url: str, tenant: str):
    from psycopg.conninfo import make_conninfo

    from langchain_md_memory.postgres.schema import MIGRATIONS, SCHEMA_VERSION, ensure_schema

    name = f"v1_{tenant}".replace("-", "_")
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = make_conninfo(pg_url, dbname=name)
    emb = DeterministicFakeEmbedding(size=DIM)
    # The schema as version 1 left it: its one migration, and the shared HNSW index it made per dimension.
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute("CREATE TABLE md_memory_schema (version integer PRIMARY KEY, "
                     "applied_at timestamptz NOT NULL DEFAULT now())")
        conn.execute(MIGRATIONS[0])
        conn.execute("INSERT INTO md_memory_schema(version) VALUES (1)")
        conn.execute(f"CREATE INDEX md_memory_chunks_hnsw_{DIM} ON md_memory_chunks USING hnsw "
                     f"((embedding::vector({DIM})) vector_cosine_ops) WHERE dim = {DIM}")
        conn.execute("INSERT INTO md_memory_documents(tenant, path, content, revision) "
                     "VALUES (%s, %s, %s, 1)", ("a", "MEMORY.md", notes(30) + "\n"))
    with psycopg.connect(url, autocommit=True) as conn:
        assert ensure_schema(conn) == 1
    with psycopg.connect(url, autocommit=True) as conn:
        assert ensure_schema(conn) == SCHEMA_VERSION  # applied once
        indexes = {str(r[0]) for r in conn.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'md_memory_chunks'").fetchall()}
    assert f"md_memory_chunks_hnsw_{DIM}" not in indexes and "md_memory_chunks_vectors" in indexes
    try:
        with MarkdownMemory.from_postgres(url, tenant="a", embeddings=emb, config=CONFIG,
                                          vector_search="hnsw") as mem:
            assert mem.get("MEMORY.md") == notes(30) + "\n"
            assert "number 0" in mem.search("note 0: something worth remembering")[0].text
            assert graph_names(url, "a") == {graph_name("a", DIM, SCRIPT_OTHER)}
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
