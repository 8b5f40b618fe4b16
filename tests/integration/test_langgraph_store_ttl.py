"""MarkdownBaseStore TTLs: the same script of calls gives LangGraph's SqliteStore's results, expired items
omitted from reads as ``omit_expired`` has them.

LangGraph's ``InMemoryStore`` has no TTL support in the langgraph installed here; its
``SqliteStore`` (``langgraph-checkpoint-sqlite``) does, so it is the reference. Both stores run
on one controllable clock, so the script moves through minutes of TTL in no time and without
timing margins: ours takes it as ``clock=``; ``SqliteStore`` reads the time from SQLite's
``CURRENT_TIMESTAMP`` (swapped in its SQL for the clock's time) and from Python's
``datetime.datetime.now`` (patched in its module). Its SQL is otherwise run as written.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import sqlite3
import time
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import BaseStore, TTLConfig
from langgraph.store.sqlite import SqliteStore
from langgraph.store.sqlite import base as sqlite_store_module

from langchain_md_memory import MarkdownMemory
from langchain_md_memory.errors import MemoryInputError
from langchain_md_memory.integrations.basestore import (
    NAMESPACE_FILE,
    AsyncMarkdownBaseStore,
    MarkdownBaseStore,
    unindexed_file_name,
)
from tests.support.embeddings import AxisEmbeddings

ALICE = ("users", "alice")
BOB = ("users", "bob")
START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


class Clock:
    """A clock that moves only when told to."""

    def __init__(self) -> None:
        self.time = START

    def now(self) -> dt.datetime:
        return self.time

    def at(self, minutes: float) -> None:
        """Set the time to ``minutes`` after the start."""
        self.time = START + dt.timedelta(minutes=minutes)


class _ClockCursor(sqlite3.Cursor):
    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        clock: Clock = self.connection.clock  # type: ignore[attr-defined]
        now = clock.now().astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
        return super().execute(sql.replace("CURRENT_TIMESTAMP", f"'{now}'"), parameters)


class _ClockConnection(sqlite3.Connection):
    clock: Clock

    def cursor(self, factory: Any = _ClockCursor) -> sqlite3.Cursor:  # type: ignore[override]
        return super().cursor(factory)


@pytest.fixture
def clock() -> Clock:
    return Clock()


StoreFactory = Callable[[TTLConfig | None], BaseStore]


@pytest.fixture
def sqlite_store(clock: Clock, monkeypatch: pytest.MonkeyPatch) -> Iterator[StoreFactory]:
    class _Now(dt.datetime):
        @classmethod
        def now(cls, tz: dt.tzinfo | None = None) -> dt.datetime:  # type: ignore[override]
            return clock.now()

    monkeypatch.setattr(sqlite_store_module, "datetime",
                        types.SimpleNamespace(datetime=_Now, timedelta=dt.timedelta, timezone=dt.timezone))
    conns: list[sqlite3.Connection] = []

    def make(ttl: TTLConfig | None) -> BaseStore:
        conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None,
                               factory=_ClockConnection)
        conn.clock = clock  # type: ignore[attr-defined]
        conns.append(conn)
        store = SqliteStore(conn, ttl=ttl)
        store.setup()
        return store

    yield make
    for conn in conns:
        conn.close()


@pytest.fixture
def markdown_store(clock: Clock, tmp_path: Path) -> Iterator[StoreFactory]:
    mems: list[MarkdownMemory] = []

    def make(ttl: TTLConfig | None) -> BaseStore:
        mem = MarkdownMemory(tmp_path / f"memory{len(mems)}", embeddings="none")
        mems.append(mem)
        return mem.as_store(ttl=ttl, clock=clock.now)

    yield make
    for mem in mems:
        mem.close()


def sweep(store: BaseStore) -> int:
    assert isinstance(store, MarkdownBaseStore | SqliteStore)
    return store.sweep_ttl()


def run_script(store: BaseStore, clock: Clock) -> list[tuple[str, Any]]:
    """Puts with and without TTLs, reads before and after expiry, refreshes, sweeps: what each returned."""
    seen: list[tuple[str, Any]] = []

    def get(label: str, namespace: tuple[str, ...], key: str, **kwargs: Any) -> None:
        item = store.get(namespace, key, **kwargs)
        seen.append((label, None if item is None else item.value))

    def search(label: str, prefix: tuple[str, ...], **kwargs: Any) -> None:
        hits = store.search(prefix, limit=50, **kwargs)
        seen.append((label, sorted((hit.namespace, hit.key) for hit in hits)))

    clock.at(0)
    store.put(ALICE, "short", {"content": "ten minutes"}, ttl=10)
    store.put(ALICE, "read", {"content": "ten minutes, read at 5"}, ttl=10)
    store.put(ALICE, "default", {"content": "the config's default TTL"})
    store.put(ALICE, "forever", {"content": "no TTL"}, ttl=None)
    store.put(ALICE, "retimed", {"content": "ten minutes, then put again without"}, ttl=10)
    store.put(BOB, "searched", {"content": "ten minutes, searched at 8"}, ttl=10)
    clock.at(5)
    get("t5 get read", ALICE, "read")
    get("t5 get short without refresh", ALICE, "short", refresh_ttl=False)
    store.put(ALICE, "retimed", {"content": "put again without a TTL"}, ttl=None)
    clock.at(8)
    search("t8 search bob", BOB)
    clock.at(11)
    get("t11 get short before a sweep", ALICE, "short", refresh_ttl=False)
    search("t11 search before a sweep", ("users",), refresh_ttl=False)
    seen.append(("sweep t11", sweep(store)))
    get("t11 get short after the sweep", ALICE, "short", refresh_ttl=False)
    search("t11 search after the sweep", ("users",), refresh_ttl=False)
    for minute in (16, 19, 31):
        clock.at(minute)
        seen.append((f"sweep t{minute}", sweep(store)))
    search("t31 search", ("users",), refresh_ttl=False)
    get("t31 get retimed", ALICE, "retimed")
    return seen


def omitting_expired(seen: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """``seen`` with each read of expired, unswept items answered as the same read after the sweep."""
    after = {label.replace("after the sweep", ""): value
             for label, value in seen if "after the sweep" in label}
    return [(label, after[label.replace("before a sweep", "")] if "before a sweep" in label else value)
            for label, value in seen]


@pytest.mark.parametrize(("config", "refreshed"), [
    (TTLConfig(default_ttl=30, refresh_on_read=True), True),
    (TTLConfig(default_ttl=30, refresh_on_read=False), False),
    (TTLConfig(default_ttl=30), False),  # reads refresh only when the config asks, as in SqliteStore
    (None, False),
], ids=["refresh_on_read", "no_refresh_on_read", "refresh_on_read_unset", "no_config"])
def test_ttl_script_gives_sqlite_stores_results(
    sqlite_store: StoreFactory, markdown_store: StoreFactory, clock: Clock, config: TTLConfig | None,
    refreshed: bool,
) -> None:
    ours = run_script(markdown_store(config), clock)
    theirs = run_script(sqlite_store(config), clock)
    assert ours == omitting_expired(theirs)
    assert dict(ours)["t11 get short before a sweep"] is None
    assert (ALICE, "short") not in dict(ours)["t11 search before a sweep"]
    sweeps = [count for label, count in ours if label.startswith("sweep")]
    # Reads that refresh keep "read" and "searched" alive past their first ten minutes.
    if config is None:  # no default TTL: "default" never expires
        assert sweeps == [3, 0, 0, 0]
    else:
        assert sweeps == ([1, 1, 1, 1] if refreshed else [3, 0, 0, 1])
        assert dict(ours)["t31 search"] == [(ALICE, "forever"), (ALICE, "retimed")]


def test_put_writes_the_expiry_next_to_the_item_and_a_read_moves_only_it(
    markdown_store: StoreFactory, clock: Clock, tmp_path: Path
) -> None:
    store = markdown_store(TTLConfig(refresh_on_read=True))
    store.put(ALICE, "food", {"content": "Loves hotpot"}, ttl=10)
    path = tmp_path / "memory0" / "users" / "alice" / NAMESPACE_FILE
    written = path.read_text(encoding="utf-8")
    assert "<!-- expires: 2026-01-01T00:10:00+00:00, ttl 10 min -->" in written

    clock.at(4.5)
    assert store.get(ALICE, "food") is not None
    refreshed = path.read_text(encoding="utf-8")
    assert "<!-- expires: 2026-01-01T00:14:30+00:00, ttl 10 min -->" in refreshed
    changed = [(a, b) for a, b in zip(written.splitlines(), refreshed.splitlines(), strict=True) if a != b]
    assert len(changed) == 1
    assert changed[0][0].split(" <!-- expires")[0] == changed[0][1].split(" <!-- expires")[0]


def test_a_refresh_reuses_the_items_embedding(tmp_path: Path, clock: Clock) -> None:
    embeddings = AxisEmbeddings(["hotpot", "tea"])
    mem = MarkdownMemory(tmp_path / "memory", embeddings=embeddings)
    try:
        store = mem.as_store(ttl=TTLConfig(refresh_on_read=True), clock=clock.now)
        store.put(ALICE, "food", {"content": "Loves hotpot"}, ttl=10)
        assert [hit.key for hit in store.search(("users",), query="hotpot")] == ["food"]
        embedded = embeddings.texts_embedded
        clock.at(3)
        assert [hit.key for hit in store.search(("users",), query="hotpot")] == ["food"]  # refreshes
        assert "00:13:00+00:00, ttl 10 min" in mem.get(store.namespace_path(ALICE))
        assert [hit.key for hit in store.search(("users",), query="hotpot")] == ["food"]  # re-indexes
        assert embeddings.texts_embedded == embedded
    finally:
        mem.close()


@pytest.mark.parametrize("config", [None, TTLConfig(omit_expired=True), TTLConfig(omit_expired=False)])
def test_expired_items_are_never_read_before_the_sweep(markdown_store: StoreFactory, clock: Clock,
                                                       config: TTLConfig | None) -> None:
    store = markdown_store(config)
    store.put(ALICE, "gone", {"content": "expires"}, ttl=1)
    store.put(BOB, "kept", {"content": "stays"})
    clock.at(2)
    assert store.get(ALICE, "gone") is None
    assert [hit.key for hit in store.search(("users",))] == ["kept"]
    assert store.list_namespaces() == [BOB]
    assert sweep(store) == 1


def test_expiry_is_honoured_to_the_second(markdown_store: StoreFactory, clock: Clock) -> None:
    store = markdown_store(None)
    store.put(ALICE, "blink", {"content": "one second"}, ttl=1 / 60)
    clock.time = START + dt.timedelta(seconds=1)
    assert store.get(ALICE, "blink") is not None  # expires strictly after its moment
    clock.time = START + dt.timedelta(seconds=1, milliseconds=1)
    assert store.get(ALICE, "blink") is None
    assert store.search(ALICE) == []


def test_unindexed_items_expire_too_and_their_hidden_file_goes(
    markdown_store: StoreFactory, clock: Clock, tmp_path: Path
) -> None:
    store = markdown_store(None)
    store.put(ALICE, "secret", {"content": "hidden"}, index=False, ttl=1)
    hidden = tmp_path / "memory0" / "users" / "alice" / unindexed_file_name()
    assert "ttl 1 min" in hidden.read_text(encoding="utf-8")
    clock.at(2)
    assert sweep(store) == 1
    assert not hidden.exists()
    assert store.get(ALICE, "secret") is None


def test_hand_edited_expiries_are_honoured(markdown_store: StoreFactory, clock: Clock,
                                           tmp_path: Path) -> None:
    store = markdown_store(TTLConfig(refresh_on_read=True))
    for key in ("dated", "unbounded", "fixed"):
        store.put(ALICE, key, {"content": key}, ttl=10)
    path = tmp_path / "memory0" / "users" / "alice" / NAMESPACE_FILE
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if lines[i - 1] == "## dated":  # a bare date: the last day it holds
            lines[i] = line.replace("2026-01-01T00:10:00+00:00, ttl 10 min", "2026-01-03")
        elif lines[i - 1] == "## unbounded":  # the comment dropped: never expires
            lines[i] = line.split(" <!-- expires")[0]
        elif lines[i - 1] == "## fixed":  # the TTL dropped: reads do not move it
            lines[i] = line.replace(", ttl 10 min", "")
    path.write_text("\n".join(lines), encoding="utf-8")
    clock.at(5)
    assert store.get(ALICE, "fixed") is not None
    clock.at(60 * 24 * 3 - 1)
    assert sweep(store) == 1  # "fixed", at ten minutes despite the read
    clock.at(60 * 24 * 3 + 1)
    assert sweep(store) == 1  # "dated", after January 3rd
    assert [hit.key for hit in store.search(ALICE)] == ["unbounded"]


@pytest.mark.parametrize("ttl", [float("nan"), float("inf"), "10"])
def test_a_ttl_that_is_not_a_number_of_minutes_is_refused(markdown_store: StoreFactory, ttl: Any) -> None:
    store = markdown_store(None)
    with pytest.raises(MemoryInputError, match="ttl must be a finite number of minutes"):
        store.put(ALICE, "k", {"content": "x"}, ttl=ttl)
    assert store.get(ALICE, "k") is None


def test_sweeper_thread_deletes_expired_items_and_stops(markdown_store: StoreFactory, clock: Clock) -> None:
    store = markdown_store(TTLConfig(sweep_interval_minutes=1))
    assert isinstance(store, MarkdownBaseStore)
    store.put(ALICE, "gone", {"content": "expires"}, ttl=1)
    clock.at(2)
    future = store.start_ttl_sweeper(sweep_interval_minutes=0.0005)  # every 30 ms
    try:
        deadline = time.monotonic() + 5
        while store.get(ALICE, "gone", refresh_ttl=False) is not None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert store.get(ALICE, "gone", refresh_ttl=False) is None
    finally:
        assert store.stop_ttl_sweeper(timeout=5)
    assert future.result(timeout=5) is None


def test_without_a_ttl_config_the_sweeper_does_not_start(markdown_store: StoreFactory) -> None:
    store = markdown_store(None)
    assert isinstance(store, MarkdownBaseStore)
    assert store.start_ttl_sweeper().done()
    assert store.stop_ttl_sweeper(timeout=0)


def test_fractional_ttls_expire_on_the_real_clock(tmp_path: Path) -> None:
    mem = MarkdownMemory(tmp_path / "memory", embeddings="none")
    try:
        store = mem.as_store()
        store.put(ALICE, "blink", {"content": "60 ms"}, ttl=0.001)
        store.put(ALICE, "hour", {"content": "an hour"}, ttl=60)
        time.sleep(0.2)
        assert store.sweep_ttl() == 1
        assert [hit.key for hit in store.search(ALICE)] == ["hour"]
    finally:
        mem.close()


async def test_async_store_ttl_calls_are_awaitable_as_on_async_sqlite_store(tmp_path: Path,
                                                                            clock: Clock) -> None:
    with MarkdownMemory(tmp_path / "memory", embeddings="none") as mem:
        store = AsyncMarkdownBaseStore(mem, ttl=TTLConfig(sweep_interval_minutes=0.0005), clock=clock.now)
        await store.aput(ALICE, "gone", {"content": "expires"}, ttl=1)
        await store.aput(ALICE, "swept", {"content": "expires"}, ttl=1)
        clock.at(2)
        assert await store.sweep_ttl() == 2
        await store.aput(ALICE, "later", {"content": "expires"}, ttl=1)
        clock.at(4)
        sweeping = await store.start_ttl_sweeper()  # every 30 ms
        deadline = time.monotonic() + 5
        while mem.exists(store.namespace_path(ALICE)) and "## later" in mem.get(store.namespace_path(ALICE)) \
                and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert "## later" not in mem.get(store.namespace_path(ALICE))
        assert await store.stop_ttl_sweeper(timeout=5)
        assert await sweeping is None


async def test_async_sweep(markdown_store: StoreFactory, clock: Clock) -> None:
    store = markdown_store(None)
    assert isinstance(store, MarkdownBaseStore)
    await store.aput(ALICE, "gone", {"content": "expires"}, ttl=1)
    clock.at(2)
    assert await store.asweep_ttl() == 1
    assert await store.aget(ALICE, "gone") is None
