"""Concurrent async store calls as one batch: what one event-loop tick schedules runs together, once.

LangGraph's async stores (``AsyncPostgresStore``, ``AsyncSqliteStore``) gather the
single-operation calls (``aget``, ``aput``, ``asearch``, ...) made in the same tick
into one ``batch``; identical reads run once and share their result, and puts to
one key keep the last value. For Markdown this matters more than for a database:
each put rewrites its namespace file, so ten parallel tool calls putting to one
namespace become one locked rewrite instead of ten.

Example:
    .. code-block:: python

        coalescer = Coalescer(lambda ops: asyncio.to_thread(store.batch, ops))
        op = GetOp(("users",), "alice")
        a, b = await asyncio.gather(coalescer.submit(op), coalescer.submit(op))
        # one store.batch([op]) call; a == b
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Sequence

from langgraph.store.base import GetOp, ListNamespacesOp, Op, PutOp, Result, SearchOp

__all__ = ["Coalescer", "dedupe"]

_READS = (GetOp, SearchOp, ListNamespacesOp)


def dedupe(ops: Sequence[Op]) -> tuple[list[Op], list[int]]:
    """``(unique, where)``: the ops to run, and for each op of ``ops`` the position of its result.

    Equal reads run once. Puts (and deletes) of one ``(namespace, key)`` become the last of them,
    run where the first stood: the calls were concurrent, so the last one submitted wins.
    """
    unique: list[Op] = []
    where: list[int] = []
    put_at: dict[tuple[tuple[str, ...], str], int] = {}
    for op in ops:
        if isinstance(op, PutOp):
            at = put_at.setdefault((tuple(op.namespace), op.key), len(unique))
            if at == len(unique):
                unique.append(op)
            else:
                unique[at] = op
        elif isinstance(op, _READS):
            # A filter dict makes a SearchOp unhashable: compare by equality (a tick holds few ops).
            at = next((i for i, seen in enumerate(unique) if type(seen) is type(op) and seen == op),
                      len(unique))
            if at == len(unique):
                unique.append(op)
        else:
            at = len(unique)
            unique.append(op)
        where.append(at)
    return unique, where


class Coalescer:
    """Runs the ops submitted during one event-loop tick as one deduplicated batch.

    ``run`` executes a list of ops and returns their results in order. If the joint batch fails,
    each op is run alone, so every caller gets its own result or its own error.
    """

    def __init__(self, run: Callable[[list[Op]], Awaitable[list[Result]]]) -> None:
        self._run = run
        self._waiting: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Result], Op]]] = {}
        self._lock = threading.Lock()  # one store may serve several threads, each with its own loop
        self._tasks: set[asyncio.Task[None]] = set()

    async def submit(self, op: Op) -> Result:
        """Run ``op`` with the others submitted in this tick; returns its result."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Result] = loop.create_future()
        with self._lock:
            waiting = self._waiting.get(loop)
            if waiting is None:
                waiting = self._waiting[loop] = []
                loop.call_soon(self._start, loop)  # after the callers already scheduled in this tick
            waiting.append((future, op))
        return await future

    def _start(self, loop: asyncio.AbstractEventLoop) -> None:
        with self._lock:
            items = self._waiting.pop(loop, [])
        task = loop.create_task(self._drain(items))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _drain(self, items: list[tuple[asyncio.Future[Result], Op]]) -> None:
        live = [(future, op) for future, op in items if not future.done()]  # a cancelled caller drops out
        if not live:
            return
        unique, where = dedupe([op for _, op in live])
        try:
            results = await self._run(unique)
        except asyncio.CancelledError:
            for future, _ in live:
                future.cancel()
            raise
        except Exception as exc:
            if len(unique) == 1:
                for future, _ in live:
                    if not future.done():
                        future.set_exception(exc)
                return
            for future, op in live:
                await self._alone(future, op)
            return
        for (future, _), at in zip(live, where, strict=True):
            if not future.done():
                future.set_result(results[at])

    async def _alone(self, future: asyncio.Future[Result], op: Op) -> None:
        try:
            [result] = await self._run([op])
        except Exception as exc:
            if not future.done():
                future.set_exception(exc)
            return
        if not future.done():
            future.set_result(result)
