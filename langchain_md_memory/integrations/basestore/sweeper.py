"""A background thread that deletes a store's expired items every few minutes.

It has the shape of LangGraph's ``SqliteStore`` sweeper (``start`` returns a future that,
cancelled, stops the thread; ``stop`` joins it), so ``MarkdownBaseStore.start_ttl_sweeper`` and
``stop_ttl_sweeper`` behave as theirs.

Example:
    .. code-block:: python

        from langchain_md_memory.integrations.basestore.sweeper import Sweeper

        sweeper = Sweeper(store.sweep_ttl)
        sweeper.start(interval_minutes=5)
        ...
        assert sweeper.stop(timeout=1)
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections.abc import Callable

__all__ = ["Sweeper"]

logger = logging.getLogger(__name__)


class Sweeper:
    """Calls ``sweep`` (which returns how many items it deleted) on a daemon thread, every interval."""

    __slots__ = ("_stop", "_sweep", "_thread")

    def __init__(self, sweep: Callable[[], int]) -> None:
        self._sweep = sweep
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        """True while the thread runs."""
        return self._thread is not None and self._thread.is_alive()

    def start(self, interval_minutes: float | None) -> concurrent.futures.Future[None]:
        """Start sweeping every ``interval_minutes``; the future ends with the thread.

        Cancelling the future stops the thread. When it already runs, nothing new starts and
        the future returned only stops it when cancelled; for ``None`` nothing starts and the
        future is done.
        """
        future: concurrent.futures.Future[None] = concurrent.futures.Future()
        if interval_minutes is None:
            future.set_result(None)
            return future
        future.add_done_callback(lambda done: self._stop.set() if done.cancelled() else None)
        if self.running:
            logger.info("store TTL sweeper already running")
            return future
        self._stop.clear()

        def loop() -> None:
            try:
                while not self._stop.wait(interval_minutes * 60):
                    try:
                        swept = self._sweep()
                    except Exception:  # one failed pass must not end the sweeping
                        logger.exception("store TTL sweep failed; trying again next interval")
                        continue
                    if swept:
                        logger.info("store TTL sweep deleted %d expired item(s)", swept)
                if not future.done():
                    future.set_result(None)
            except Exception as exc:  # pragma: no cover - the loop itself does not raise
                if not future.done():
                    future.set_exception(exc)

        logger.info("starting the store TTL sweeper: every %s minute(s)", interval_minutes)
        self._thread = threading.Thread(target=loop, daemon=True, name="md-memory-ttl-sweeper")
        self._thread.start()
        return future

    def stop(self, timeout: float | None = None) -> bool:
        """Stop the thread; True when it has stopped (or never ran), False when ``timeout`` passed first."""
        thread = self._thread
        if thread is None or not thread.is_alive():
            return True
        self._stop.set()
        thread.join(timeout)
        if thread.is_alive():
            logger.warning("the store TTL sweeper did not stop within %s s", timeout)
            return False
        self._thread = None
        return True
