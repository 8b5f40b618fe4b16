"""IndexConnection is the index's boundary for errors: no sqlite3 error leaves it untranslated."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from langchain_md_memory.errors import IndexDamagedError, MemoryIndexError
from langchain_md_memory.index.sqlite.connection import IndexConnection


def _open(path: Path) -> IndexConnection:
    return IndexConnection(sqlite3.connect(path, check_same_thread=False, isolation_level=None), str(path))


def test_damage_met_while_streamed_rows_are_read_is_an_index_error(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB)")
    conn.executemany("INSERT INTO t VALUES (?, ?)", ((i, bytes(1000)) for i in range(2000)))
    conn.commit()
    conn.close()
    size = path.stat().st_size
    with path.open("r+b") as handle:  # the second half's leaf pages: the query starts, then meets them
        handle.seek(size // 2)
        handle.write(b"\xde\xad\xbe\xef" * (size // 8))
    db = _open(path)
    read = 0
    with pytest.raises(MemoryIndexError) as caught, db.lock:
        for _ in db.stream("SELECT id, body FROM t"):
            read += 1
    assert read > 0  # the damage surfaced mid-read, where a bare cursor used to let sqlite3's error out
    assert isinstance(caught.value, IndexDamagedError) and str(path) in str(caught.value)
    assert isinstance(caught.value.__cause__, sqlite3.DatabaseError)
    db.close()


def test_a_statement_refused_inside_a_write_is_an_index_error_and_nothing_is_kept(tmp_path: Path) -> None:
    db = _open(tmp_path / "index.sqlite")
    with db.write() as conn:
        conn.execute("CREATE TABLE kept (x)")
        conn.execute("CREATE TABLE guarded (x)")
        conn.execute("CREATE TRIGGER refuse BEFORE INSERT ON guarded BEGIN SELECT RAISE(ABORT, 'no'); END")
    with pytest.raises(MemoryIndexError, match=r"cannot write index .*no"), db.write() as conn:
        conn.execute("INSERT INTO kept VALUES (1)")
        conn.execute("INSERT INTO guarded VALUES (1)")
    assert db.query("SELECT count(*) FROM kept").fetchone()[0] == 0  # rolled back
    db.close()


def test_an_error_in_a_nested_write_is_translated_before_it_reaches_the_outer_block(tmp_path: Path) -> None:
    db = _open(tmp_path / "index.sqlite")
    seen: list[BaseException] = []
    with pytest.raises(MemoryIndexError), db.write():
        try:
            with db.write() as conn:  # as an index method inside writing() does
                conn.execute("INSERT INTO missing VALUES (1)")
        except Exception as exc:
            seen.append(exc)
            raise
    assert len(seen) == 1 and isinstance(seen[0], MemoryIndexError)
    db.close()



@pytest.mark.parametrize("use", ["query", "stream", "read_snapshot", "write"])
def test_every_use_of_a_closed_connection_is_an_index_error(tmp_path: Path, use: str) -> None:
    # A reader may still hold an index that a rebuild swapped out and closed: it must learn so as an
    # index error (the facade then asks the new index), never as sqlite3's ProgrammingError.
    db = _open(tmp_path / "index.sqlite")
    db.close()
    with pytest.raises(MemoryIndexError):
        if use == "query":
            db.query("SELECT 1")
        elif use == "stream":
            list(db.stream("SELECT 1"))
        else:
            with db.read_snapshot() if use == "read_snapshot" else db.write():
                pass


def test_a_value_is_read_once_per_read_snapshot_of_the_reading_thread(tmp_path: Path) -> None:
    import threading

    db = _open(tmp_path / "index.sqlite")
    reads: list[str] = []

    def read() -> int:
        reads.append(threading.current_thread().name)
        return len(reads)

    assert db.once_per_snapshot("generation", read) == 1  # outside a snapshot: read each time
    assert db.once_per_snapshot("generation", read) == 2
    with db.read_snapshot():
        assert db.once_per_snapshot("generation", read) == 3
        with db.read_snapshot():  # a nested one is the same snapshot
            assert db.once_per_snapshot("generation", read) == 3
        other: list[int] = []
        thread = threading.Thread(target=lambda: other.append(db.once_per_snapshot("generation", read)))
        thread.start()
        thread.join(timeout=0.2)
        assert thread.is_alive() or other != [3]  # another thread never gets this snapshot's value
    thread.join()
    assert other == [4]  # it read for itself, once the snapshot ended
    with db.read_snapshot():  # a new snapshot reads again
        assert db.once_per_snapshot("generation", read) == 5
    db.close()
