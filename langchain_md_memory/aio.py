"""How a memory's methods reach their owners: routed by file, forwarded, and twinned async.

A :class:`~langchain_md_memory.MarkdownMemory` holds owners (its documents, indexer, searcher) and
forwards to them. :func:`routed` forwards a :class:`~.files.documents.Documents` method after asking
the memory's ``_route`` which memory holds the file it names (a project memory sends ``~global/...``
to the global one), so no file method can miss the route. :func:`twin` makes the async twin of a
method: the same parameters, run in a worker thread (``asyncio.to_thread``) by name, so a
subclass's override is what runs; the store and the index are shared safely across threads.

Example:
    .. code-block:: python

        class Memory:
            edit = routed(Documents.edit)
            aedit = twin(edit)
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar, cast

from .files.documents import Documents
from .files.drafts import DraftStore

__all__ = [
    "FILE_PARAMETERS", "SYNC_TWIN", "Routed", "class_twin", "closed_on_error", "owned", "routed", "twin",
]

_P = ParamSpec("_P")
_R = TypeVar("_R")
_S = TypeVar("_S")


class _Closable(Protocol):
    def close(self) -> None: ...


_C = TypeVar("_C", bound=_Closable)

SYNC_TWIN = "async_index"
"""The async twin of ``sync`` (``async`` itself is a keyword; ``getattr(mem, "async")`` also works)."""

FILE_PARAMETERS = ("file", "path")
"""The parameter names that name a memory file; a method taking one is :func:`routed`."""


class Routed(Protocol):
    """What :func:`routed` needs of a memory: its documents and the route of a file."""

    _documents: Documents

    def _route(self, file: str) -> tuple[Routed, str, str]: ...


@contextlib.contextmanager
def closed_on_error(opened: _C) -> Iterator[_C]:
    """``opened`` for the block; closed when the block raises (a constructor that fails half-way)."""
    try:
        yield opened
    except BaseException:
        opened.close()
        raise


def routed(op: Callable[Concatenate[Documents, _P], _R], *, paths_out: bool = False
           ) -> Callable[Concatenate[Any, _P], _R]:
    """``op`` on the documents of the memory that holds its file; ``paths_out``: prefix the paths returned."""
    signature = inspect.signature(op)
    name = next(p for p in signature.parameters if p in FILE_PARAMETERS)

    @functools.wraps(op)
    def forward(self: Routed, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        bound = signature.bind(None, *args, **kwargs)
        bound.apply_defaults()
        mem, inner, prefix = self._route(bound.arguments[name])
        bound.arguments[name] = inner
        drafted = mem._documents.store
        if prefix and isinstance(drafted, DraftStore):  # a dry run names the file as the caller did
            drafted.prefix = prefix
        result: Any = op(mem._documents, *bound.args[1:], **bound.kwargs)
        if paths_out and prefix:  # a path, or what ``remember`` did with the paths in it
            return cast(_R, prefix + result if isinstance(result, str) else result.prefixed(prefix))
        return cast(_R, result)

    forward.__routed__ = True  # type: ignore[attr-defined]
    return forward


def owned(op: Callable[Concatenate[Documents, _P], _R]) -> Callable[Concatenate[Any, _P], _R]:
    """``op`` on this memory's own documents (a method that names no file)."""
    @functools.wraps(op)
    def forward(self: Routed, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        return op(self._documents, *args, **kwargs)

    return forward


def twin(method: Callable[Concatenate[_S, _P], _R]) -> Callable[Concatenate[_S, _P], Coroutine[Any, Any, _R]]:
    """The async twin of ``method``: the same parameters, run by name in a worker thread."""
    @functools.wraps(method)
    async def run(self: _S, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        return cast(_R, await asyncio.to_thread(getattr(self, method.__name__), *args, **kwargs))

    run.__doc__ = f"Async twin of :meth:`{method.__name__}`."
    return run


def class_twin(method: Callable[Concatenate[type[_S], _P], _R]
               ) -> classmethod[_S, _P, Coroutine[Any, Any, _R]]:
    """The async twin of a classmethod (a constructor: ``from_postgres``, ``for_project``, ...)."""
    func = getattr(method, "__func__", method)  # the class body holds the classmethod object itself

    @functools.wraps(func)
    async def run(cls: type[_S], /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        return cast(_R, await asyncio.to_thread(getattr(cls, func.__name__), *args, **kwargs))

    run.__doc__ = f"Async twin of :meth:`{func.__name__}`."
    return classmethod(run)
