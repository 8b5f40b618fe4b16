"""The PostgreSQL backend itself: read-after-write across hosts, tenants, errors, agreement with SQLite."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import psycopg
import pytest

from langchain_md_memory import MarkdownMemory, MemoryStoreError
from langchain_md_memory.errors import (
    BackendConnectionError,
    BackendSchemaError,
    MemoryInputError,
    MemoryPathError,
)
from langchain_md_memory.postgres import SCHEMA_VERSION
from langchain_md_memory.text import query_terms
from tests.integration.test_degraded_search import Slow
from tests.postgres.conftest import MemoryFactory, create_schema_at
from tests.support.embeddings import AxisEmbeddings

NOTES = ("# Money\n\n- Bond ladder: five rungs of treasuries.\n- 单只个股不超过总仓位 5%\n"
         "- Cash buffer: six months.\n")


def texts(mem: MarkdownMemory, query: str) -> list[str]:
    return [hit.text for hit in mem.search(query)]


# -- one tenant, many hosts ------------------------------------------------------------------


def test_a_write_on_one_host_is_found_by_a_search_on_another_at_once(pg_memory_factory: MemoryFactory):
    here, there = pg_memory_factory(), pg_memory_factory()
    assert there.search("oolong") == []  # the other host has synced (an empty memory) before the write
    here.append("- Prefers oolong tea")
    assert any("oolong" in t for t in texts(there, "oolong"))
    here.edit("oolong", "jasmine")
    assert texts(there, "oolong") == []
    assert any("jasmine" in t for t in texts(there, "jasmine"))
    here.delete_file("MEMORY.md")
    assert texts(there, "jasmine") == [] and there.list_files() == []


def test_chinese_is_found_inside_longer_text_as_on_sqlite(pg_memory: MarkdownMemory):
    pg_memory.write("MEMORY.md", NOTES)
    assert any("仓位" in t for t in texts(pg_memory, "仓位"))
    assert any("个股" in t for t in texts(pg_memory, "个股仓位上限"))


def test_the_markdown_is_stored_byte_for_byte(pg_memory: MarkdownMemory):
    text = "# T\r\n\r\n- crlf line\r\n- 中文 ünïcødé\r\n"
    pg_memory.write("notes.md", text)  # the caller's CRLF is read as LF, as a folder memory does
    assert pg_memory.read_bytes("notes.md") == text.replace("\r\n", "\n").encode()
    pg_memory.append("- more", file="notes.md")
    assert pg_memory.get("notes.md").endswith("ünïcødé\n- more\n")


def test_concurrent_appends_from_two_memories_all_land(pg_memory_factory: MemoryFactory):
    hosts = [pg_memory_factory(), pg_memory_factory()]
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for i in range(25):
                hosts[n % 2].append(f"- w{n} line {i}")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    lines = hosts[0].get("MEMORY.md").splitlines()
    assert sorted(lines) == sorted(f"- w{n} line {i}" for n in range(4) for i in range(25))


def test_update_runs_again_when_another_writer_won_the_race(pg_memory_factory: MemoryFactory):
    first, second = pg_memory_factory(), pg_memory_factory()
    calls = []

    def bump(old: str | None) -> str:
        calls.append(old)
        if len(calls) == 1:  # another host creates the file between this read and this write
            second.store.write("count.md", "10\n")
        return f"{int(old or '0') + 1}\n"

    # An existing row is locked from the read to the write; a new one can only be raced, and the loser
    # reads the winner's text and applies its change to it.
    first.store.update("count.md", bump)
    assert first.get("count.md") == "11\n" and calls == [None, "10\n"]


def test_an_edit_to_the_same_text_is_found_as_in_a_folder(pg_memory: MarkdownMemory):
    from langchain_md_memory import create_memory_tools

    pg_memory.write("MEMORY.md", "- likes tea\n")
    assert pg_memory.edit("likes tea", "likes tea") is True
    update = create_memory_tools(pg_memory)[2]
    reply = update.invoke({"action": "edit", "old_text": "likes tea", "content": "likes tea"})
    assert "not found" not in reply and pg_memory.get("MEMORY.md") == "- likes tea\n"


def test_lines_are_inserted_and_replaced_keeping_every_other_byte(pg_memory: MarkdownMemory):
    pg_memory.store.write_bytes("notes.md", b"- a\r\n- b\r\n- c")
    pg_memory.insert_lines("notes.md", 1, "- new")
    assert pg_memory.replace_lines("notes.md", 3, 3, "- B") == "- b\r\n"
    assert pg_memory.read_bytes("notes.md") == b"- a\r\n- new\r\n- B\r\n- c"
    with pytest.raises(MemoryPathError, match=r"Memory file 'nope\.md' does not exist"):
        pg_memory.insert_lines("nope.md", 0, "- x")
    assert pg_memory.list_files() == ["notes.md"]


def test_rebuild_and_verify_work_in_place(pg_memory: MarkdownMemory):
    pg_memory.write("MEMORY.md", NOTES)
    pg_memory.sync()
    stats = pg_memory.rebuild()
    assert stats.files == 1 and stats.chunks_added >= 1
    assert pg_memory.verify().ok
    assert any("treasuries" in t for t in texts(pg_memory, "bond ladder"))


def test_state_lives_in_the_database(pg_memory_factory: MemoryFactory):
    pg_memory_factory().state.set("dream_last_run", 12.5)
    assert pg_memory_factory().state.get("dream_last_run") == 12.5
    assert pg_memory_factory(tenant_name="someone-else").state.get("dream_last_run") is None


# -- tenants ---------------------------------------------------------------------------------


def test_a_tenant_never_sees_another_tenants_text_on_any_surface(pg_memory_factory: MemoryFactory):
    alice = pg_memory_factory(tenant_name="alice-iso", embeddings=AxisEmbeddings(["bond", "tea"]))
    bob = pg_memory_factory(tenant_name="bob-iso", embeddings=AxisEmbeddings(["bond", "tea"]))
    alice.write("MEMORY.md", "- Alice private note: bond ladder\n")
    alice.as_store().put(("users", "alice"), "food", {"content": "Alice loves tea"})
    bob.write("goals.md", "- Bob goal: tea house\n")

    assert bob.list_files() == ["goals.md"]
    assert all("Alice" not in h.text for h in bob.search("bond ladder alice tea"))
    assert all("Alice" not in d.page_content for d in bob.as_retriever(k=10).invoke("alice bond tea"))
    with pytest.raises(MemoryPathError):
        bob.get("MEMORY.md")
    assert bob.edit("Alice private note", "Bob was here") is False
    assert bob.delete_text("Alice private note") is False
    assert alice.get("MEMORY.md") == "- Alice private note: bond ladder\n"

    from langchain_md_memory import create_memory_tools

    search, get, update = create_memory_tools(bob)
    assert "Alice" not in search.invoke({"query": "alice private note bond"})
    assert "does not exist" in get.invoke({"path": "MEMORY.md"})
    edit = {"action": "edit", "old_text": "Alice private note", "content": "x"}
    assert "does not exist" in update.invoke(edit)
    assert "Alice" not in alice.get("MEMORY.md").replace("Alice private note", "")  # unchanged but for itself

    bob_store = bob.as_store()
    assert bob_store.get(("users", "alice"), "food") is None
    assert bob_store.search(("users",), query="tea") == []
    assert bob_store.list_namespaces() == []
    assert alice.as_store().get(("users", "alice"), "food") is not None


def test_a_tenant_embeds_its_own_texts_whatever_another_tenant_stores(pg_memory_factory: MemoryFactory,
                                                                     tenant: str):
    text = "- Bob's secret: the bond ladder ends in 2031\n"
    bob_model, alice_model = AxisEmbeddings(["bond", "tea"]), AxisEmbeddings(["bond", "tea"])
    bob = pg_memory_factory(tenant_name=f"{tenant}-bob", embeddings=bob_model)
    bob.write("MEMORY.md", text)
    bob.sync()
    assert bob_model.texts_embedded == 1
    # Served from another tenant's cache, this write would be faster, telling alice that bob holds it.
    alice = pg_memory_factory(tenant_name=f"{tenant}-alice", embeddings=alice_model)
    alice.write("guess.md", text)
    alice.sync()
    assert alice_model.texts_embedded == 1
    # A tenant's own cache still spares its model a text it embedded before.
    bob.write("copy.md", text)
    bob.sync()
    assert bob_model.texts_embedded == 1
    assert [h.path for h in alice.search("bond ladder")] == ["guess.md"]


def test_an_old_shared_embedding_cache_is_emptied_and_becomes_per_tenant(pg_url: str, tenant: str):
    url = _new_database(pg_url, f"sharedcache_{tenant}".replace("-", "_"))
    create_schema_at(url, 2)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("INSERT INTO md_memory_embedding_cache(fingerprint, hash, dim, vector) "
                     "VALUES ('axis-v1', 'somebody''s text', 1, '\\x0000803f')")
    model = AxisEmbeddings(["bond", "tea"])
    with MarkdownMemory.from_postgres(url, tenant="alice", embeddings=model) as alice:
        alice.write("MEMORY.md", "- Alice drinks tea\n")
        assert [h.path for h in alice.search("tea")] == ["MEMORY.md"]
    assert model.texts_embedded == 1
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SELECT max(version) FROM md_memory_schema").fetchone() == (SCHEMA_VERSION,)
        # Rows nobody can attribute to a tenant are gone; what is cached now is alice's.
        assert conn.execute("SELECT tenant, count(*) FROM md_memory_embedding_cache "
                            "GROUP BY tenant").fetchall() == [("alice", 1)]
        key = conn.execute("SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE contype = 'p' "
                           "AND conrelid = 'md_memory_embedding_cache'::regclass").fetchall()
        assert key == [("PRIMARY KEY (tenant, fingerprint, hash)",)]


# -- bad input -------------------------------------------------------------------------------


def test_refused_paths_and_text_change_nothing(pg_memory: MarkdownMemory):
    pg_memory.write("MEMORY.md", NOTES)
    for path in ("../x.md", "/etc/x.md", "a\\b.md", "x\x00.md"):
        with pytest.raises(MemoryPathError):
            pg_memory.append("- x", file=path)
    with pytest.raises(MemoryInputError, match="NUL"):
        pg_memory.append("- with \x00 inside")
    from langchain_md_memory import create_memory_tools

    update = create_memory_tools(pg_memory)[2]
    assert "outside the memory directory" in update.invoke({"content": "x", "file": "../x.md"})
    assert "NUL" in update.invoke({"content": "a\x00b"})
    assert pg_memory.get("MEMORY.md") == NOTES and pg_memory.list_files() == ["MEMORY.md"]


def test_a_tenant_name_over_the_limit_is_refused_at_open_and_creates_nothing(pg_url: str, tenant: str):
    url = _new_database(pg_url, f"longtenant_{tenant}".replace("-", "_"))
    for name in ("x" * 6000, "仓" * 86):  # 6000 and 258 bytes of UTF-8
        with pytest.raises(MemoryInputError, match=r"tenant .* over 255 bytes"):
            MarkdownMemory.from_postgres(url, tenant=name, embeddings="none")
    with pytest.raises(MemoryInputError, match="not valid UTF-8"):
        MarkdownMemory.from_postgres(url, tenant="a\ud800", embeddings="none")  # a lone surrogate
    with psycopg.connect(url, autocommit=True) as conn:  # refused before connecting: no table made
        assert conn.execute("SELECT to_regclass('md_memory_documents')").fetchone() == (None,)
    longest = "仓" * 85  # 255 bytes: at the limit, every write and search works
    with MarkdownMemory.from_postgres(url, tenant=longest, embeddings="none") as mem:
        mem.append("- the longest tenant name keeps walnuts")
        assert [h.text for h in mem.search("walnuts")] == ["- the longest tenant name keeps walnuts"]


def test_what_needs_a_folder_says_so(pg_memory: MarkdownMemory):
    with pytest.raises(MemoryStoreError, match=r"PostgreSQL .* not in a folder"):
        pg_memory.start_watching()
    with pytest.raises(MemoryStoreError, match="not in a folder"):
        assert pg_memory.memory_dir


def test_an_archive_of_a_tenant_unpacks_into_the_same_folder_memory(pg_memory: MarkdownMemory,
                                                                    tmp_path: Path):
    pg_memory.write("MEMORY.md", NOTES)
    pg_memory.append("- 仓位 note", file="topics/risk.md")
    pg_memory.as_store().put(("users", "a"), "k", {"content": "hidden"}, index=False)
    archive = pg_memory.export_archive(tmp_path)
    with MarkdownMemory.import_archive(archive, tmp_path / "folder", embeddings="none") as folder:
        names = pg_memory.list_files(include_unindexed=True)
        assert folder.list_files(include_unindexed=True) == names and len(names) == 3
        assert all(folder.read_bytes(n) == pg_memory.read_bytes(n) for n in names)
        assert any("仓位" in hit.text for hit in folder.search("仓位"))


def test_an_unreachable_server_is_one_clear_error(tmp_path: Path):
    with pytest.raises(BackendConnectionError, match="Cannot reach PostgreSQL"):
        MarkdownMemory.from_postgres(f"postgresql://postgres@/postgres?host={tmp_path}", tenant="a",
                                     embeddings="none")


def test_an_unknown_user_is_refused_as_credentials(pg_url: str):
    url = pg_url.replace("postgresql://postgres:@", "postgresql://nobody-here:@")
    with pytest.raises(BackendConnectionError, match="refused the credentials"):
        MarkdownMemory.from_postgres(url, tenant="a", embeddings="none")


def _new_database(pg_url: str, name: str, owner: str = "postgres") -> str:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        if owner != "postgres":
            conn.execute(f'CREATE ROLE "{owner}" LOGIN')
        conn.execute(f'CREATE DATABASE "{name}" OWNER "{owner}"')
    return pg_url.replace("postgresql://postgres:@/postgres", f"postgresql://{owner}:@/{name}")


def test_a_database_without_pgvector_names_create_extension(pg_url: str, tenant: str):
    url = _new_database(pg_url, f"novector_{tenant}".replace("-", "_"), owner=f"plain_{tenant}")
    with pytest.raises(BackendSchemaError, match="CREATE EXTENSION vector"):
        MarkdownMemory.from_postgres(url, tenant="a", embeddings="none")


def test_a_schema_from_a_newer_package_is_refused(pg_url: str, tenant: str):
    url = _new_database(pg_url, f"newer_{tenant}".replace("-", "_"))
    MarkdownMemory.from_postgres(url, tenant="a", embeddings="none").close()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("INSERT INTO md_memory_schema(version) VALUES (%s)", (SCHEMA_VERSION + 1,))
    with pytest.raises(BackendSchemaError, match="newer than this package"):
        MarkdownMemory.from_postgres(url, tenant="a", embeddings="none")


# -- the same answers as SQLite --------------------------------------------------------------


@pytest.mark.parametrize("vector_search", ["exact", "hnsw"])
def test_both_backends_return_the_same_hits(pg_memory_factory: MemoryFactory, tmp_path: Path,
                                            vector_search: str):
    files = {"MEMORY.md": NOTES, "goals.md": "# Goals\n\n- Retire at sixty with a pension.\n- Bond tent.\n",
             "2026-01-02.md": "- Talked about cash and bonds.\n"}
    emb = AxisEmbeddings(["bond", "cash", "retire", "tea"])
    config = {"chunking": {"chunk_tokens": 16, "chunk_overlap_tokens": 0}}
    folder = MarkdownMemory(tmp_path / "m", embeddings=emb, config=config)
    pg = pg_memory_factory(embeddings=emb, config=config, vector_search=vector_search)
    try:
        for path, text in files.items():
            folder.write(path, text)
            pg.write(path, text)
        for query in ("bond ladder", "cash", "retire pension", "仓位", "tea"):
            expected = [(h.chunk_id, round(h.score, 5), h.retrieved_by, round(h.relevance, 5))
                        for h in folder.search(query)]
            found = [(h.chunk_id, round(h.score, 5), h.retrieved_by, round(h.relevance, 5))
                     for h in pg.search(query)]
            assert found == expected, query
        # A vector hit keyword recall left out keeps its BM25, on either backend.
        narrow = folder.config.merged(ranking={"candidate_multiplier": 1})
        for query in ("bond ladder", "cash"):  # hits the paths order alike (ties at 0 they may not)
            expected = [(h.chunk_id, round(h.score, 5), h.keyword_score and round(h.keyword_score, 5))
                        for h in folder.search_detailed(query, max_results=2, config=narrow).hits]
            found = [(h.chunk_id, round(h.score, 5), h.keyword_score and round(h.keyword_score, 5))
                     for h in pg.search_detailed(query, max_results=2, config=narrow).hits]
            assert found == expected, query
        ids = [h.chunk_id for h in folder.search("bond ladder", max_results=10)]
        asked = query_terms("bond ladder")
        assert pg.index.keyword_scores(asked, ids) == pytest.approx(folder.index.keyword_scores(asked, ids))
        # The weights of term coverage: rarer terms weigh more, a term no chunk holds the most.
        terms = ["bond", "retir", "仓位", "walnut"]
        weights = folder.index.term_idf(terms)
        assert pg.index.term_idf(terms) == pytest.approx(weights)
        assert weights["bond"] < weights["retir"] < weights["walnut"]
    finally:
        folder.close()


def test_session_logs_are_written_and_dream_consolidates_them(pg_memory_factory: MemoryFactory):
    from langchain_core.language_models import FakeListChatModel
    from langchain_core.messages import AIMessage, HumanMessage

    from langchain_md_memory.langgraph import write_session_log

    mem, other_host = pg_memory_factory(), pg_memory_factory()
    mem.write("MEMORY.md", "# Memory\n\n- Likes tea\n")
    first = write_session_log(mem, [HumanMessage("I prefer oolong"), AIMessage("Noted.")], "t-1")
    again = write_session_log(mem, [HumanMessage("I prefer oolong"), AIMessage("Noted."),
                                    HumanMessage("and green tea")], "t-1")
    assert first == again and mem.list_files() == ["MEMORY.md", first]
    assert any("oolong" in t for t in texts(mem, "oolong"))

    # Another host's dream holds the tenant's dream lock: this one is busy, and writes nothing.
    held = other_host.job_lock(".dream.lock")
    assert held.acquire()
    try:
        busy = mem.dream(FakeListChatModel(responses=["# Memory\n\n- Likes tea\n- Prefers oolong\n"]),
                         force=True)
        assert busy.status == "busy" and "database session" in busy.reason
    finally:
        held.release()
    done = mem.dream(FakeListChatModel(responses=["# Memory\n\n- Likes tea\n- Prefers oolong\n"]),
                     force=True, recency_guard=0, keep_newest=0)
    assert done.status == "done", done.reason
    assert mem.get("MEMORY.md") == "# Memory\n\n- Likes tea\n- Prefers oolong\n"
    assert done.backup is not None and str(done.backup).startswith(".history/MEMORY-")
    assert mem.read_bytes(str(done.backup)) == b"# Memory\n\n- Likes tea\n"  # the version it replaced
    assert mem.list_files() == ["MEMORY.md"] and done.sessions_deleted == (first,)
    assert other_host.state.get("dream_last_run") is not None  # the bookkeeping is the tenant's


@pytest.mark.parametrize("autocommit", [True, False])
def test_tenants_share_a_callers_pool_whatever_its_row_factory(pg_url: str, tenant: str, autocommit: bool):
    from psycopg.rows import dict_row
    from psycopg_pool import ConnectionPool

    # LangGraph's PostgresStore asks for dict rows and autocommit; other code may use neither.
    with ConnectionPool(pg_url, min_size=1, max_size=4, open=True,
                        kwargs={"autocommit": autocommit, "row_factory": dict_row}) as pool:
        alice = MarkdownMemory.from_postgres(pool, tenant=f"{tenant}-a", embeddings="none")
        bob = MarkdownMemory.from_postgres(pool, tenant=f"{tenant}-b", embeddings="none")
        alice.append("- Alice likes oolong")
        bob.append("- Bob likes espresso")
        assert texts(alice, "oolong") and not texts(bob, "oolong")
        alice.close()
        bob.close()
        with pool.connection() as conn:  # still the caller's, still open, as it was
            assert conn.execute("SELECT count(*) AS n FROM md_memory_documents").fetchone()["n"] >= 2
            assert conn.autocommit is autocommit


def test_the_change_stamp_reads_like_a_folders_and_only_moves_forward(pg_memory: MarkdownMemory):
    pg_memory.write("notes.md", "- one\n")
    first = pg_memory.stat("notes.md")
    assert first is not None and first[1] == len(b"- one\n")
    assert first[0] > 1_600_000_000 * 10**9  # nanoseconds of a recent time, as a file's mtime_ns
    stamps = [first]
    for text in ("- two\n", "- two\n", "- three\n"):  # the same bytes again still move it
        pg_memory.write("notes.md", text)
        stamps.append(pg_memory.stat("notes.md"))
    assert [s[0] for s in stamps] == sorted({s[0] for s in stamps})
    pg_memory.delete_file("notes.md")
    pg_memory.write("notes.md", "- one\n")  # same bytes as the first version: a later stamp all the same
    assert pg_memory.stat("notes.md")[0] > stamps[-1][0]


@pytest.mark.slow
def test_the_dream_lock_of_a_killed_process_is_free_again(pg_url: str, tenant: str):
    import subprocess
    import sys
    import time

    holder = subprocess.Popen(
        [sys.executable, "-c", (
            "import sys, time\n"
            "from langchain_md_memory import MarkdownMemory\n"
            f"mem = MarkdownMemory.from_postgres({pg_url!r}, tenant={tenant!r}, embeddings='none')\n"
            "lock = mem.job_lock('.dream.lock')\n"
            "assert lock.acquire()\n"
            "print('held', flush=True)\n"
            "time.sleep(600)\n")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with MarkdownMemory.from_postgres(pg_url, tenant=tenant, embeddings="none") as mem:
            lock = mem.job_lock(".dream.lock")
            assert not lock.acquire() and "database session pid" in str(lock.holder())
            holder.kill()
            holder.wait()
            deadline = time.monotonic() + 60  # the server ends the dead client's session on its own
            while not lock.acquire():
                assert time.monotonic() < deadline, "the killed holder's lock was never released"
                time.sleep(0.05)
            lock.release()
    finally:
        holder.kill()
        holder.wait()


def test_a_read_over_the_limit_names_the_size_and_sends_nothing_back(pg_memory: MarkdownMemory):
    pg_memory.write("big.md", "x" * 100)
    store = pg_memory.store
    assert store.read_bytes("big.md", max_bytes=100) == b"x" * 100
    with pytest.raises(MemoryStoreError, match=r"'big\.md' is 100 bytes, over the 99 allowed"):
        store.read_bytes("big.md", max_bytes=99)
    stamp, data = store.read_stamped("big.md", max_bytes=99) or ((0, 0), b"")
    assert stamp == store.stat("big.md") and data is None
    with pytest.raises(MemoryPathError, match="does not exist"):
        store.read_bytes("missing.md")
    assert store.read_stamped("missing.md", max_bytes=100) is None


def test_both_backends_recall_with_the_same_idf_and_background(pg_memory_factory: MemoryFactory,
                                                               tmp_path: Path):
    words = ["bond", "cash", "retire", "tea", "bond cash", "retire tea", "other", "bond tea", "cash retire",
             "tea tea", "bond bond cash", "plain"]
    notes = "".join(f"## Note {i}\n\n- {w}.\n\n" for i, w in enumerate(words))  # a chunk each
    emb = AxisEmbeddings(["bond", "cash", "retire", "tea"])
    config = {"chunking": {"chunk_tokens": 16, "chunk_overlap_tokens": 0}}
    folder = MarkdownMemory(tmp_path / "m", embeddings=emb, config=config)
    pg = pg_memory_factory(embeddings=emb, config=config)
    try:
        folder.write("MEMORY.md", notes)
        pg.write("MEMORY.md", notes)
        folder.sync()
        pg.sync()
        terms = query_terms("bond ladder walnut")
        want, got = folder.index.keyword_search([terms], 5), pg.index.keyword_search([terms], 5)
        assert [r.id for r, _ in got.hits[0]] == [r.id for r, _ in want.hits[0]]
        assert got.idf == pytest.approx(want.idf) and got.idf == pytest.approx(pg.index.term_idf(terms))
        nowhere = pg.index.keyword_search([["walnut"]], 5)  # nothing matched: the idf is counted all the same
        assert nowhere.hits == [[]] and nowhere.idf == pytest.approx(folder.index.term_idf(["walnut"]))
        vector = np.asarray(emb.embed_query("bond cash"), dtype=np.float32)
        background = folder.index.vector_search(vector, 5).background
        assert background is not None
        assert pg.index.vector_search(vector, 5).background == pytest.approx(background)
    finally:
        folder.close()


def test_a_search_counts_its_terms_in_the_tenant_once(pg_memory_factory: MemoryFactory,
                                                       monkeypatch: pytest.MonkeyPatch):
    from langchain_md_memory.postgres import index, recall

    calls: list[list[str]] = []
    real = recall.document_frequencies

    def counting(conn, tenant, terms):  # type: ignore[no-untyped-def]
        calls.append(list(terms))
        return real(conn, tenant, terms)

    monkeypatch.setattr(recall, "document_frequencies", counting)
    monkeypatch.setattr(index, "document_frequencies", counting)
    mem = pg_memory_factory(embeddings=AxisEmbeddings(["bond", "tea"]))
    mem.write("MEMORY.md", NOTES)
    mem.search("bond")
    calls.clear()
    hits = mem.search("bond ladder")
    # Keyword recall's count serves the coverage weights; the one other count (before it) is of the
    # Chinese translations (债券, 梯子...), none of which the memory holds: no search follows it.
    assert len(calls) == 2 and calls[1] == ["bond", "ladder"] and not {"bond", "ladder"} & set(calls[0])
    assert "Bond ladder" in hits[0].text
    mem.index.term_idf(["bond", "ladder"])  # no search before it: counted again
    assert len(calls) == 3


def test_a_backlog_is_embedded_behind_a_search_as_in_a_folder(pg_memory_factory: MemoryFactory) -> None:
    mem = pg_memory_factory(embeddings=Slow(0.02), config={"embedding": {"search_wait_s": 0.3}})
    mem.write("MEMORY.md", NOTES)
    for i in range(80):  # 1.6 s of embedding
        mem.write(f"note-{i:02d}.md", f"- Note {i} about the garden, week {i}\n")
    ranked = mem.search_detailed("bond ladder")
    assert "Bond ladder" in ranked.hits[0].text
    assert ranked.degraded is not None and "not embedded yet" in ranked.degraded
    deadline = time.monotonic() + 60
    while mem.status()["waiting_for_embeddings"] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert mem.status()["embedded"] == mem.status()["chunks"]
    assert mem.search_detailed("bond ladder").degraded is None


def test_the_label_reads_only_the_cosines_a_background_measures_as_on_sqlite(
        pg_memory_factory: MemoryFactory):
    from tests.integration.test_confidence_label import CJK, NOTES, BilingualEmbeddings

    mem = pg_memory_factory(embeddings=BilingualEmbeddings())
    for i, note in enumerate(NOTES[:4]):  # four notes: no background at all
        mem.write(f"note{i:02d}.md", f"- {note}\n")
    few = mem.search_detailed("what is my dog called")
    assert few.hits and all(hit.vector_score for hit in few.hits) and not few.confident
    for i, note in enumerate(NOTES[4:], start=4):  # twelve English notes measure one; two Chinese do not
        mem.write(f"note{i:02d}.md", f"- {note}\n")
    mem.write("zh1.md", "- 现金储备：六个月开支\n")
    mem.write("zh2.md", "- 退休：六十岁\n")
    unrelated = mem.search_detailed("我的狗叫什么名字")
    answered = mem.search_detailed("现金储备")
    english = mem.search_detailed("retire pension")
    assert any(CJK.search(hit.text) for hit in unrelated.hits) and not unrelated.confident
    assert CJK.search(answered.hits[0].text) and answered.hits[0].confident
    assert english.hits[0].text == "- retire pension plan" and english.hits[0].confident
