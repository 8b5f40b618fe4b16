"""Hold an exclusive SQLite lock on a database for a while (spawned by the reliability tests).

Usage: ``python lock_holder.py DB SECONDS``; prints ``locked`` once the lock is
held and ``released`` after committing. Standard library only, so it starts fast.
"""

from __future__ import annotations

import sqlite3
import sys
import time


def main() -> None:
    db, seconds = sys.argv[1], float(sys.argv[2])
    conn = sqlite3.connect(db, isolation_level=None, timeout=30)
    conn.execute("BEGIN EXCLUSIVE")
    # A write, so the lock is a real pending change and not just a reservation.
    conn.execute("INSERT INTO meta(key, value) VALUES ('held_by_test', '1') "
                 "ON CONFLICT(key) DO UPDATE SET value = value")
    print("locked", flush=True)
    time.sleep(seconds)
    conn.execute("COMMIT")
    conn.close()
    print("released", flush=True)


if __name__ == "__main__":
    main()
