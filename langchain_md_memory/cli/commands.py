"""What each ``md-memory`` command does, given arguments :mod:`.main` already checked.

Every command works on a :class:`~langchain_md_memory.MarkdownMemory` (the
memory without its LangChain integrations, which the CLI never needs), so a
search imports no retriever, graph or chat-model code. With ``--json`` each
command prints one JSON document (``watch``: one per line), times in ISO 8601.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import sys
import textwrap
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from ..errors import MemoryInputError
from ..files.edits import split_lf
from ..files.paths import LONG_TERM_FILE, resolve_alias
from ..files.session_context import SessionContext
from ..memory import MarkdownMemory
from ..search.relevance import NO_STRONG_MATCH
from ..sync.indexer import SyncStats
from ..types import MemorySearchResult, ProgressCallback, iso_time
from .parser import DREAM_MODEL_ENV

__all__ = ["run"]

Command = Callable[[MarkdownMemory, argparse.Namespace, TextIO, TextIO], int]


def run(args: argparse.Namespace, out: TextIO, err: TextIO, progress: ProgressCallback | None) -> int:
    """Open the memory at ``args.dir`` and run ``args.command`` on it; returns the exit code."""
    if args.command == "init":
        return _init(args, out)
    if args.command == "import":
        return _import(args, out, progress)
    config = _config(args)
    if args.postgres is not None:
        opened = MarkdownMemory.from_postgres(args.postgres, args.tenant, embeddings=args.embeddings,
                                          config=config, progress=progress, pool_max_size=2)
    else:  # the watcher syncs on its own thread while this one prints, a server runs unseen: no bar there
        opened = MarkdownMemory(args.dir, embeddings=args.embeddings, config=config,
                            progress=None if args.command in ("watch", "mcp", "inspect") else progress)
    with opened as mem:
        return _COMMANDS[args.command](mem, args, out, err)


def _config(args: argparse.Namespace) -> dict[str, Any] | None:
    """The config overrides the global options ask for (``--no-cross-language``), if any."""
    if getattr(args, "cross_language", None) is None:
        return None
    return {"ranking": {"cross_language": args.cross_language}}


def _init(args: argparse.Namespace, out: TextIO) -> int:
    from ..files.starter import init_memory

    written = init_memory(args.dir, example=args.example)
    folder = Path(args.dir).expanduser().resolve()
    if args.json:
        _dump({"memory_dir": str(folder), "written": written}, out)
        return 0
    what = "the example memory" if args.example else "an empty memory"
    print(f"created {what} in {args.dir}: {', '.join(written)}", file=out)
    then = "search '单只个股 仓位上限'" if args.example else "add TEXT"
    print(f"next: md-memory --dir {args.dir} {then}", file=out)
    return 0


def _dump(data: Any, out: TextIO) -> None:
    json.dump(data, out, ensure_ascii=False, indent=2)
    out.write("\n")


def _hit(hit: MemorySearchResult) -> dict[str, Any]:
    return {**hit.to_dict(), "citation": hit.citation, "updated_at": iso_time(hit.updated_at)}


def _search(mem: MarkdownMemory, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    ranked = mem.search_detailed(args.query, max_results=args.k, as_of=getattr(args, "as_of", None))
    as_of = ranked.as_of.isoformat() if ranked.as_of else None
    if args.json:
        _dump({"query": args.query, "as_of": as_of, "degraded": ranked.degraded, "funnel": ranked.funnel,
               "confident": ranked.confident, "results": [_hit(h) for h in ranked.hits]}, out)
        return 0
    if ranked.degraded:
        print(f"note: {ranked.degraded}", file=err)
    if as_of:
        read = "" if getattr(args, "as_of", None) else " (the date the question names)"
        print(f"as of {as_of}{read}", file=out)
    if not ranked.hits:
        print("no results", file=out)
        return 0
    if not ranked.confident:
        print(NO_STRONG_MATCH, file=out)
    _print_table(ranked.hits, out)
    return 0


def _print_table(hits: Sequence[MemorySearchResult], out: TextIO) -> None:
    def fmt(x: float | None) -> str:
        return "-" if x is None else f"{x:.3f}"

    header = (f"{'#':>2}  {'score':>6}  {'vector':>6}  {'keyword':>7}  {'relev':>5}  {'conf':<4}  "
              f"{'decay':>5}  {'by':<7}  location")
    print(header, file=out)
    for i, h in enumerate(hits, 1):
        print(f"{i:>2}  {h.score:>6.3f}  {fmt(h.vector_score):>6}  {fmt(h.keyword_score):>7}  "
              f"{h.relevance:>5.2f}  {'yes' if h.confident else 'no':<4}  {h.decay:>5.2f}  "
              f"{h.retrieved_by:<7}  {h.citation}", file=out)
        snippet = " ".join(h.text.split())
        print(textwrap.indent(textwrap.shorten(snippet, width=100, placeholder=" …"), "    "), file=out)


def _get(mem: MarkdownMemory, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    text = mem.get(args.path, args.start, args.end)
    if not text and args.start is not None:
        _past_the_end(mem, args.path, args.start)
    if args.json:
        _dump({"path": args.path, "start_line": args.start, "end_line": args.end, "text": text}, out)
        return 0
    out.write(text if text.endswith("\n") or not text else text + "\n")
    return 0


def _past_the_end(mem: MarkdownMemory, path: str, start: int) -> None:
    """Refuse ``--from`` past a file's last line, saying how many lines it has (nothing was printed)."""
    total = len(split_lf(mem.get(path)))
    if start > total:
        lines = f"lines 1 to {total}" if total > 1 else ("line 1" if total else "no lines to read")
        raise MemoryInputError(f"{resolve_alias(path)} has {total} line{'' if total == 1 else 's'}: --from "
                               f"{start} is past its end ({lines})")


def _add(mem: MarkdownMemory, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    file = "daily" if args.daily else (args.file or "long_term")
    path = mem.append(_standard_input() if args.text == "-" else args.text, file=file)
    if args.json:
        _dump({"path": path}, out)
    else:
        print(f"appended to {path}", file=out)
    return 0


def _standard_input() -> str:
    """The text of ``add -``: all of standard input, as ``cat -`` reads it."""
    text = sys.stdin.read()
    if not text.strip():
        raise MemoryInputError("add -: standard input was empty; pipe in the text to remember, e.g. "
                               "echo '- Prefers tea' | md-memory add -")
    return text


def _stats(stats: SyncStats) -> dict[str, Any]:
    return dataclasses.asdict(stats)


def _index(mem: MarkdownMemory, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    stats = mem.rebuild() if args.rebuild else mem.sync(force=args.force)
    if args.json:
        _dump(_stats(stats), out)
        return 0
    print(f"files {stats.files}, changed {stats.files_changed}, removed {stats.files_removed}, "
          f"chunks +{stats.chunks_added}/-{stats.chunks_removed}, embedded {stats.embedded}, "
          f"cached {stats.cached}, {stats.seconds:.2f}s", file=out)
    _warn_if_waiting(mem, err)
    return 0


def _warn_if_waiting(mem: MarkdownMemory, err: TextIO) -> None:
    """One line when chunks are left without vectors: searches find them by keywords only."""
    info = mem.status()
    waiting = info.get("waiting_for_embeddings") or 0
    if waiting:
        why = info.get("embedding_error") or "not embedded yet"
        print(f"md-memory: warning: {waiting} chunk(s) wait for embeddings ({why}); searches find them by "
              "keywords only until `md-memory index` embeds them", file=err)


def _status(mem: MarkdownMemory, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    # Reads only: an interrupted index is shown as it is, and `index` does the work.
    info = mem.status()
    context = mem.session_context_report()
    info["session_context"] = {f.name: f"{f.shown_lines} of {f.total_lines} lines ({f.tokens} tokens)"
                               for f in context.files}
    advice = _consolidation_advice(context)
    if args.json:
        _dump({**info, "session_context_tokens": context.max_tokens, "advice": advice}, out)
        return 0
    info["session_context"] = info["session_context"] or {"-": "no MEMORY.md or recent logs"}
    for key, value in info.items():
        if isinstance(value, dict):
            value = "; ".join(f"{k}: {v}" for k, v in value.items()) or None
        print(f"{key:<22} {'-' if value is None else value}", file=out)
    behind = _behind(info)
    if behind:
        print(behind, file=out)
    if advice:
        print(advice, file=out)
    return 0


def _behind(info: dict[str, Any]) -> str | None:
    """What the index has yet to catch up with, and the command that does it; ``None``: nothing."""
    files, chunks = info.get("files_to_index") or 0, info.get("waiting_for_embeddings") or 0
    if not files and not chunks:
        return None
    todo = " and ".join(filter(None, [f"{files} file(s) to index" if files else "",
                                      f"{chunks} chunk(s) to embed" if chunks else ""]))
    return f"The index is behind the Markdown ({todo}): `md-memory index` brings it up to date."


def _consolidation_advice(context: SessionContext) -> str | None:
    """What to do when MEMORY.md does not fit the session context, or ``None`` when it does."""
    memory = next((f for f in context.files if f.name == LONG_TERM_FILE and f.cut), None)
    if memory is None:
        return None
    return (f"MEMORY.md is over the {context.max_tokens}-token session-context budget: the agent starts with "
            f"{memory.shown_lines} of its {memory.total_lines} lines and finds the rest only by searching. "
            "Consolidate it with `md-memory dream --model ... --force` (or the dream node), or raise "
            "max_session_context_tokens.")


def _verify(mem: MarkdownMemory, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    report = mem.verify(repair=not args.no_repair)
    if args.json:
        _dump(report.to_dict(), out)
    else:
        print(report.summary(), file=out)
    return 0 if report.ok else 1


def _watch(mem: MarkdownMemory, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    def line(stats: SyncStats) -> None:
        now = dt.datetime.now().astimezone()
        if args.json:
            print(json.dumps({"time": now.isoformat(timespec="seconds"), **_stats(stats)}), file=out,
                  flush=True)
            return
        print(f"{now:%H:%M:%S} synced: files {stats.files}, changed {stats.files_changed}, removed "
              f"{stats.files_removed}, chunks +{stats.chunks_added}/-{stats.chunks_removed}, "
              f"embedded {stats.embedded}", file=out, flush=True)

    if args.debounce_ms is not None and args.debounce_ms < 0:
        raise MemoryInputError(f"--debounce-ms must be 0 or more, got {args.debounce_ms}")
    line(mem.sync())
    watcher = mem.start_watching(line, debounce_ms=args.debounce_ms)
    print(f"watching {mem.memory_dir} ({watcher.backend}, debounce {watcher.debounce_s * 1000:.0f} ms); "
          "Ctrl-C to stop", file=err if args.json else out, flush=True)
    stop = threading.Event()
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    mem.stop_watching()
    print(f"stopped after {watcher.sync_count} syncs", file=err if args.json else out, flush=True)
    return 0


def _dream(mem: MarkdownMemory, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ..embeddings.providers import chat_model
    from ..features.dream import dream

    if not args.model:
        raise MemoryInputError(f"dream needs --model (e.g. openai:gpt-4o-mini) or ${DREAM_MODEL_ENV}")
    result = dream(mem, chat_model(args.model), force=args.force, min_sessions=args.min_sessions,
                   min_interval=dt.timedelta(hours=args.min_interval_hours), progress=mem.progress)
    if args.json:
        _dump(result.to_dict(), out)
    else:
        print(f"{result.status}: {result.reason}", file=out)
        if result.backup is not None:
            print(f"previous MEMORY.md kept in {result.backup}", file=out)
    return 0 if result.ok else 1


def _export(mem: MarkdownMemory, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ..features.archive import export_archive

    path = export_archive(mem, args.path, progress=mem.progress)
    if args.json:
        _dump({"memory_dir": str(mem.memory_dir), "archive": str(path)}, out)
    else:
        print(f"exported the Markdown of {mem.memory_dir} to {path}", file=out)
    return 0


def _import(args: argparse.Namespace, out: TextIO, progress: ProgressCallback | None) -> int:
    from ..config import MemoryConfig
    from ..embeddings import resolve_embeddings
    from ..features.archive import ArchiveTargetNotEmptyError, import_archive

    config = MemoryConfig(**(_config(args) or {}))
    # A bad --embeddings fails here, before the archive is unpacked.
    embedder = resolve_embeddings(args.embeddings, batch_size=config.embedding.batch_size,
                                  timeout_s=config.embedding.timeout_s, retries=config.embedding.retries)
    try:
        names = import_archive(args.archive, args.dir, overwrite=args.overwrite, progress=progress)
    except ArchiveTargetNotEmptyError as exc:
        raise ArchiveTargetNotEmptyError(exc.target, exc.existing, how="--overwrite") from None
    with MarkdownMemory(args.dir, embeddings=embedder or "none", config=config, progress=progress) as mem:
        stats = mem.sync(force=True)
        if args.json:
            _dump({"archive": args.archive, "memory_dir": str(mem.memory_dir), "imported": names,
                   **_stats(stats)}, out)
        else:
            print(f"imported {args.archive} into {mem.memory_dir} ({stats.files} files indexed)", file=out)
    return 0


def _pull(mem: MarkdownMemory, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ..files.transfer import pull

    paths = pull(mem.store, args.folder, origin=_origin(mem))
    if args.json:
        _dump({"folder": args.folder, "pulled": paths}, out)
    else:
        print(f"pulled {len(paths)} file(s) into {args.folder}; edit them, then: "
              f"md-memory push {args.folder}", file=out)
    return 0


def _push(mem: MarkdownMemory, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ..files.transfer import push

    report = push(args.folder, mem.store, origin=_origin(mem), config=mem.config)
    if report.changed:
        mem.sync()
    if args.json:
        _dump({"folder": args.folder, "written": report.written, "removed": report.removed}, out)
    else:
        print(f"pushed {args.folder}: {len(report.written)} file(s) written, {len(report.removed)} removed",
              file=out)
    return 0


def _migrate(mem: MarkdownMemory, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ..files.base import DocumentStore
    from ..files.store import MarkdownStore
    from ..files.transfer import migrate

    source: DocumentStore
    target: DocumentStore
    if args.from_dir is not None:
        source, target, folder = MarkdownStore(_existing(args.from_dir)), mem.store, args.from_dir
    else:
        source, target, folder = mem.store, MarkdownStore(args.to_dir), args.to_dir
    paths = migrate(source, target, overwrite=args.overwrite, progress=None)
    if args.from_dir is not None:
        mem.sync(force=True)
    if args.json:
        _dump({"from" if args.from_dir is not None else "to": folder, "copied": paths}, out)
    else:
        way = f"from {folder} into {mem.location}" if args.from_dir is not None else f"into {folder}"
        print(f"migrated {len(paths)} file(s) {way}", file=out)
    return 0


def _mcp(mem: MarkdownMemory, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    import os

    from ..integrations.mcp_bind import DEFAULT_HOST, DEFAULT_PORT, TOKEN_ENV
    from ..integrations.mcp_server import create_mcp_server, serve

    host = args.host or DEFAULT_HOST
    port = DEFAULT_PORT if args.port is None else args.port
    server = create_mcp_server(mem, host=host, port=port)
    if args.http:  # stdout is the protocol's under stdio: only this transport may say where it is
        print(f"md-memory: serving {mem.location} over MCP at http://{host}:{port}/mcp; Ctrl-C to stop",
              file=err, flush=True)
    serve(server, http=args.http, token=os.environ.get(TOKEN_ENV) or None, allow_remote=args.allow_remote)
    return 0


def _inspect(mem: MarkdownMemory, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    import os

    from ..integrations.inspect_page import create_inspect_app
    from ..integrations.local_http import serve_http
    from ..integrations.mcp_bind import DEFAULT_HOST, DEFAULT_INSPECT_PORT, TOKEN_ENV

    host = args.host or DEFAULT_HOST
    port = DEFAULT_INSPECT_PORT if args.port is None else args.port
    app = create_inspect_app(mem)
    shown = f"[{host}]" if ":" in host else host
    print(f"md-memory: inspect {mem.location} at http://{shown}:{port}/ (read-only); Ctrl-C to stop",
          file=out, flush=True)
    serve_http(app, host=host, port=port, token=os.environ.get(TOKEN_ENV) or None,
               allow_remote=args.allow_remote)
    return 0


def _existing(folder: str) -> str:
    if not Path(folder).expanduser().is_dir():
        raise MemoryInputError(f"no memory folder at {folder} to migrate from")
    return folder


def _origin(mem: MarkdownMemory) -> str:
    """Names the memory in a pull's manifest, so a push goes back to where the files came from."""
    return mem.location


_COMMANDS: dict[str, Command] = {
    "search": _search,
    "get": _get,
    "add": _add,
    "index": _index,
    "status": _status,
    "verify": _verify,
    "watch": _watch,
    "dream": _dream,
    "export": _export,
    "pull": _pull,
    "push": _push,
    "migrate": _migrate,
    "mcp": _mcp,
    "inspect": _inspect,
}
