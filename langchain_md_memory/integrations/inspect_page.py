"""The memory as a read-only local web page: its files, a search with every number, a file's History.

What no editor shows is the index's view of the Markdown: each hit's numbers and label, the session
context as cut, the History of a fact. ``md-memory inspect`` serves it (Starlette and Jinja2, the
``inspect`` extra) through :func:`~.local_http.serve_http`, the host, token and DNS-rebinding rules of
``md-memory mcp``. The pages are server-rendered HTML that reads without JavaScript:

- ``/``: the files (kind, size, chunks, modified), the index's status and the session-context report;
- ``/search?q=…&as_of=YYYY-MM-DD&k=N``: what :meth:`~.MarkdownMemory.search_detailed` returns, hit by
  hit, with the funnel and any degraded note (the page computes no number of its own);
- ``/file/<path>``: the file with line numbers, its sections, provenance beside the lines it marks and
  its ``## History`` drawn as a timeline (:func:`~..files.sections.past_facts`);
- ``/context``: the session context exactly as the agent gets it, with the cut notes.

Nothing on it can write: every method but GET and HEAD is refused (405).

Example:
    .. code-block:: python

        from langchain_md_memory import MarkdownMemory
        from langchain_md_memory.integrations.inspect_page import create_inspect_app
        from langchain_md_memory.integrations.local_http import serve_http

        with MarkdownMemory("memory", embeddings="none") as mem:
            serve_http(create_inspect_app(mem), host="127.0.0.1", port=8001)  # `md-memory inspect`
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from ..errors import MemoryStoreError
from ..files.facts import parse_provenance, provenance_day, strip_annotations
from ..files.paths import LONG_TERM_FILE, file_kind
from ..files.sections import PastFact, past_facts
from ..text.tokens import heading_level, marked_terms
from ..types import MemorySearchResult

if TYPE_CHECKING:
    from ..memory import MarkdownMemory

try:
    import jinja2
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, PlainTextResponse, Response
    from starlette.routing import Route
except ImportError as exc:  # pragma: no cover - exercised by an install without the extra
    raise ImportError(
        "the inspect page needs the 'inspect' extra: pip install 'langchain-md-memory[inspect]'"
    ) from exc

__all__ = ["create_inspect_app"]

_READING = frozenset({"GET", "HEAD"})

_TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("langchain_md_memory.integrations", "inspect_templates"),
    autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
)


@dataclass(frozen=True, slots=True)
class _FileRow:
    path: str
    kind: str
    size: int
    chunks: int
    modified: str


@dataclass(frozen=True, slots=True)
class _Line:
    number: int
    text: str
    provenance: tuple[str, ...]
    heading: int
    hit: bool


@dataclass(frozen=True, slots=True)
class _Change:
    fact: PastFact
    why: str
    replaced_by: tuple[tuple[int, str], ...]


def _kind(path: str) -> str:
    """evergreen (MEMORY.md), topic (another evergreen file), daily or session."""
    kind = file_kind(path)
    return "topic" if kind == "evergreen" and path != LONG_TERM_FILE else kind


def _ranks(hits: list[MemorySearchResult], score: str) -> dict[str, int]:
    """Each hit's place among these hits by one recall score (1 = highest); none for a hit it missed."""
    scored = sorted((h for h in hits if getattr(h, score) is not None), key=lambda h: -getattr(h, score))
    return {h.chunk_id: place for place, h in enumerate(scored, 1)}


def _mmr_outcomes(hits: list[MemorySearchResult]) -> dict[str, str]:
    """What MMR did to each hit: its place among the hits MMR ordered against its rank before MMR.

    A hit with no rank before MMR (``relevance_rank`` 0) was put in by a later stage: as of a past day,
    a fact that held then comes first.
    """
    outcomes = {}
    ordered = [h for h in hits if h.relevance_rank > 0]
    for place, hit in enumerate(ordered, 1):
        before = hit.relevance_rank
        outcomes[hit.chunk_id] = (f"kept at {place}" if before == place else
                                  f"raised from {before} to {place}" if before > place else
                                  f"lowered from {before} to {place}: too like a hit above")
    for hit in hits:
        outcomes.setdefault(hit.chunk_id, "not ranked by MMR: held on the day asked")
    return outcomes


def _page(name: str, status_code: int = 200, **values: Any) -> HTMLResponse:
    return HTMLResponse(_TEMPLATES.get_template(name).render(**values), status_code=status_code)


def _problem(message: str, status_code: int) -> HTMLResponse:
    return _page("problem.html", status_code, title="Cannot show this", message=message)


def _file_link(path: str) -> str:
    return "/file/" + quote(path, safe="/")


def create_inspect_app(mem: MarkdownMemory) -> Starlette:
    """The read-only inspect page over ``mem`` as an ASGI app (serve it with :func:`.local_http.serve_http`).

    Example:
        .. code-block:: python

            from starlette.testclient import TestClient

            page = TestClient(create_inspect_app(mem)).get("/search", params={"q": "retire"})
    """

    def home(request: Request) -> Response:
        # The index's rows only: the home page of a large memory reads no file's text
        # (the session-context report reads MEMORY.md and today's and yesterday's logs, as the agent does).
        mem.sync()
        indexed = mem.indexed_files()
        rows = []
        for path in mem.list_files():
            known = indexed.get(path)
            stamp = (known.modified_ns, known.size) if known else mem.stat(path)  # a file the index skipped
            rows.append(_FileRow(path, _kind(path), stamp[1] if stamp else 0, known.chunks if known else 0,
                                 dt.datetime.fromtimestamp(stamp[0] / 1e9).strftime("%Y-%m-%d %H:%M")
                                 if stamp else "-"))
        return _page("home.html", title="Memory", location=mem.location, files=rows,
                     status=mem.status(), context=mem.session_context_report(), link=_file_link)

    def search(request: Request) -> Response:
        query = request.query_params.get("q", "")
        as_of_text = request.query_params.get("as_of", "").strip()
        k_text = request.query_params.get("k", "").strip()
        values: dict[str, Any] = {"title": "Search", "query": query, "as_of_text": as_of_text,
                                  "k_text": k_text}
        if not query.strip():
            return _page("search.html", **values, ranked=None)
        try:
            as_of = dt.date.fromisoformat(as_of_text) if as_of_text else None
        except ValueError:
            return _problem(f"as_of={as_of_text!r} is not a day: give it as YYYY-MM-DD, e.g. 2026-11-01",
                            400)
        if k_text and (not k_text.isdigit() or int(k_text) < 1):
            return _problem(f"k={k_text!r} is not a number of results: give a whole number of at least 1",
                            400)
        ranked = mem.search_detailed(query, max_results=int(k_text) if k_text else None, as_of=as_of)
        return _page("search.html", **values, ranked=ranked,
                     marked={h.chunk_id: marked_terms(h.text, query) for h in ranked.hits},
                     keyword_rank=_ranks(ranked.hits, "keyword_score"),
                     vector_rank=_ranks(ranked.hits, "vector_score"), mmr=_mmr_outcomes(ranked.hits),
                     link=_file_link, kind=_kind)

    def file(request: Request) -> Response:
        path = request.path_params["path"]
        try:
            text = mem.get(path)
        except (MemoryStoreError, ValueError, OSError) as exc:
            return _problem(f"cannot read {path}: {exc}", 404)
        lines_from = _int_param(request, "from")
        lines_to = _int_param(request, "to") or lines_from
        raw = text.replace("\r\n", "\n").split("\n")
        if raw and raw[-1] == "":
            raw.pop()
        lines = []
        for number, line in enumerate(raw, 1):
            lines.append(_Line(number, strip_annotations(line), parse_provenance(line), heading_level(line),
                               lines_from is not None and lines_to is not None
                               and lines_from <= number <= lines_to))
        sections = [(line.number, line.heading, line.text.strip().lstrip("#").strip())
                    for line in lines if line.heading]
        return _page("file.html", title=path, path=path, kind=_kind(path), lines=lines, sections=sections,
                     history=_timeline(path, text, raw))

    def context(request: Request) -> Response:
        return _page("context.html", title="Session context", context=mem.session_context_report())

    return Starlette(routes=[
        Route("/", home, methods=["GET"]), Route("/search", search, methods=["GET"]),
        Route("/file/{path:path}", file, methods=["GET"]), Route("/context", context, methods=["GET"]),
    ], middleware=[Middleware(_ReadOnly)])


def _int_param(request: Request, name: str) -> int | None:
    value = request.query_params.get(name, "")
    return int(value) if value.isdigit() else None


def _timeline(path: str, text: str, lines: list[str]) -> list[_Change]:
    """The struck facts of ``text`` in the order they were superseded, each with the live lines written
    the day it was superseded (what a supersede put in its place carries that day's provenance)."""
    changes = []
    for fact in sorted(past_facts(path, text), key=lambda f: (f.until, f.line)):
        why = "expired" if "(expired " in fact.text else "superseded"
        replaced = tuple(
            (number, strip_annotations(line).strip()) for number, line in enumerate(lines, 1)
            if "~~" not in line and provenance_day(parse_provenance(line)) == fact.until
        ) if why == "superseded" else ()
        changes.append(_Change(fact, why, replaced))
    return changes


class _ReadOnly:
    """ASGI middleware answering every method but GET and HEAD with 405: nothing on the page writes."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] not in _READING:
            await PlainTextResponse("the inspect page is read-only: only GET and HEAD are answered",
                                    status_code=405, headers={"Allow": "GET, HEAD"})(scope, receive, send)
            return
        await self.app(scope, receive, send)
