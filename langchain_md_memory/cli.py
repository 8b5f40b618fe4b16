"""``md-memory``: search, read, add to and index a Markdown memory from the shell.

Example:
    .. code-block:: console

        $ md-memory --dir examples/memory search "position limit" -k 3
        $ md-memory --dir examples/memory add "Retirement target age: 60"
        $ md-memory --dir examples/memory get MEMORY.md --from 1 --to 5
        $ md-memory --dir examples/memory status --json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import textwrap
import threading
from collections.abc import Callable, Sequence
from typing import TextIO

from .embeddings.providers import chat_model
from .errors import MemoryInputError, MemoryStoreError
from .memory import MarkdownMemory
from .secrets import scrub
from .sync.indexer import SyncStats
from .types import MemorySearchResult

__all__ = ["build_parser", "main"]

_DIR_ENV = "LANGCHAIN_MD_MEMORY_DIR"
_DREAM_MODEL_ENV = "LANGCHAIN_MD_MEMORY_DREAM_MODEL"


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``md-memory``."""
    parser = argparse.ArgumentParser(prog="md-memory", description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=os.environ.get(_DIR_ENV, "memory"),
                        help=f"memory folder (default: ${_DIR_ENV} or ./memory)")
    parser.add_argument("--embeddings", default="auto",
                        help="auto | none | local | openai | openai:<model> (default: auto)")
    sub = parser.add_subparsers(dest="command", required=True)

    search = sub.add_parser("search", help="hybrid search")
    search.add_argument("query")
    search.add_argument("-k", type=int, default=None, help="number of results")
    search.add_argument("--json", action="store_true", help="print JSON")

    get = sub.add_parser("get", help="print lines of a memory file")
    get.add_argument("path")
    get.add_argument("--from", dest="start", type=int, default=None, help="first line (1-based)")
    get.add_argument("--to", dest="end", type=int, default=None, help="last line (inclusive)")

    add = sub.add_parser("add", help="append text to MEMORY.md (or today's log)")
    add.add_argument("text")
    where = add.add_mutually_exclusive_group()
    where.add_argument("--daily", action="store_true", help="append to today's YYYY-MM-DD.md")
    where.add_argument("--file", default=None, help="a relative .md path")

    index = sub.add_parser("index", help="sync the index with the Markdown")
    mode = index.add_mutually_exclusive_group()
    mode.add_argument("--force", action="store_true", help="re-chunk every file")
    mode.add_argument("--rebuild", action="store_true", help="build a fresh index file and swap it in")

    dream = sub.add_parser("dream", help="consolidate session logs into MEMORY.md with a chat model")
    dream.add_argument("--model", default=os.environ.get(_DREAM_MODEL_ENV),
                       help=f"chat model spec, e.g. openai:gpt-4o-mini (default: ${_DREAM_MODEL_ENV})")
    dream.add_argument("--force", action="store_true", help="ignore the interval and session-count gates")
    dream.add_argument("--min-sessions", type=int, default=3, help="unprocessed logs needed (default 3)")
    dream.add_argument("--min-interval-hours", type=float, default=24.0, help="since last dream (default 24)")
    dream.add_argument("--json", action="store_true", help="print JSON")

    export = sub.add_parser("export", help="write the Markdown files to a .tar.gz")
    export.add_argument("path", help="archive file, or a folder to receive memory.tar.gz")

    import_ = sub.add_parser("import", help="unpack a memory .tar.gz into --dir and reindex")
    import_.add_argument("archive")
    import_.add_argument("--overwrite", action="store_true", help="replace same-named memory files")

    status = sub.add_parser("status", help="files, chunks, embeddings, last sync")
    status.add_argument("--json", action="store_true", help="print JSON")

    verify = sub.add_parser("verify", help="check the index against the Markdown and repair it")
    verify.add_argument("--no-repair", action="store_true", help="only report; exit 1 when inconsistent")
    verify.add_argument("--json", action="store_true", help="print JSON")

    watch = sub.add_parser("watch", help="keep the index in step with the files until Ctrl-C")
    watch.add_argument("--debounce-ms", type=int, default=None,
                       help="quiet time after a change before syncing (default: watch_debounce_ms, 1500)")
    return parser


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run the CLI; returns the exit code (0 ok, 2 bad input or failure)."""
    out = out or sys.stdout
    err = err or sys.stderr
    args = build_parser().parse_args(argv)
    try:
        with MarkdownMemory(args.dir, embeddings=args.embeddings) as mem:
            return _COMMANDS[args.command](mem, args, out, err)
    except (MemoryStoreError, ValueError, OSError, ImportError) as exc:  # ImportError: --embeddings local
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"md-memory: error: {scrub(message)}", file=err)
        return 2


def _search(mem: MarkdownMemory, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    ranked = mem.search_detailed(args.query, max_results=args.k)
    if args.json:
        json.dump({"query": args.query, "degraded": ranked.degraded, "funnel": ranked.funnel,
                   "results": [h.to_dict() for h in ranked.hits]}, out, ensure_ascii=False, indent=2)
        out.write("\n")
        return 0
    if ranked.degraded:
        print(f"note: {ranked.degraded}", file=err)
    if not ranked.hits:
        print("no results", file=out)
        return 0
    _print_table(ranked.hits, out)
    return 0


def _print_table(hits: Sequence[MemorySearchResult], out: TextIO) -> None:
    def fmt(x: float | None) -> str:
        return "-" if x is None else f"{x:.3f}"

    header = f"{'#':>2}  {'score':>6}  {'vector':>6}  {'keyword':>7}  {'decay':>5}  {'source':<7}  location"
    print(header, file=out)
    for i, h in enumerate(hits, 1):
        print(f"{i:>2}  {h.score:>6.3f}  {fmt(h.vector_score):>6}  {fmt(h.keyword_score):>7}  "
              f"{h.decay:>5.2f}  {h.source:<7}  {h.citation}", file=out)
        snippet = " ".join(h.text.split())
        print(textwrap.indent(textwrap.shorten(snippet, width=100, placeholder=" …"), "    "), file=out)


def _get(mem: MarkdownMemory, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    text = mem.get(args.path, args.start, args.end)
    out.write(text if text.endswith("\n") or not text else text + "\n")
    return 0


def _add(mem: MarkdownMemory, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    file = "daily" if args.daily else (args.file or "long_term")
    path = mem.append(args.text, file=file)
    print(f"appended to {path}", file=out)
    return 0


def _index(mem: MarkdownMemory, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    progress = _progress_bar(err)
    stats = mem.rebuild(progress=progress) if args.rebuild else mem.sync(force=args.force, progress=progress)
    print(f"files {stats.files}, changed {stats.files_changed}, removed {stats.files_removed}, "
          f"chunks +{stats.chunks_added}/-{stats.chunks_removed}, embedded {stats.embedded}, "
          f"cached {stats.cached}, {stats.seconds:.2f}s", file=out)
    return 0


def _status(mem: MarkdownMemory, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    mem.sync()
    info = mem.status()
    if info["last_sync"] is not None:
        info["last_sync"] = dt.datetime.fromtimestamp(info["last_sync"]).isoformat(timespec="seconds")
    if args.json:
        json.dump(info, out, ensure_ascii=False, indent=2)
        out.write("\n")
    else:
        for key, value in info.items():
            print(f"{key:<22} {'-' if value is None else value}", file=out)
    return 0


def _dream(mem: MarkdownMemory, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if not args.model:
        print(f"md-memory: error: dream needs --model (e.g. openai:gpt-4o-mini) or ${_DREAM_MODEL_ENV}",
              file=err)
        return 2
    model = chat_model(args.model)
    result = mem.dream(model, force=args.force, min_sessions=args.min_sessions,
                       min_interval=dt.timedelta(hours=args.min_interval_hours))
    if args.json:
        json.dump(result.to_dict(), out, ensure_ascii=False, indent=2)
        out.write("\n")
    else:
        print(f"{result.status}: {result.reason}", file=out)
        if result.backup is not None:
            print(f"previous MEMORY.md kept in {result.backup}", file=out)
    return 0 if result.ok else 1


def _export(mem: MarkdownMemory, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    path = mem.export_archive(args.path)
    print(f"exported the Markdown of {mem.memory_dir} to {path}", file=out)
    return 0


def _import(mem: MarkdownMemory, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    with MarkdownMemory.import_archive(args.archive, mem.memory_dir, overwrite=args.overwrite,
                                       embeddings=args.embeddings) as restored:
        files = restored.status()["files"]
    print(f"imported {args.archive} into {mem.memory_dir} ({files} files indexed)", file=out)
    return 0


def _watch(mem: MarkdownMemory, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    def line(stats: SyncStats) -> None:
        now = dt.datetime.now().strftime("%H:%M:%S")
        print(f"{now} synced: files {stats.files}, changed {stats.files_changed}, removed "
              f"{stats.files_removed}, chunks +{stats.chunks_added}/-{stats.chunks_removed}, "
              f"embedded {stats.embedded}", file=out, flush=True)

    if args.debounce_ms is not None and args.debounce_ms < 0:
        raise MemoryInputError(f"--debounce-ms must be 0 or more, got {args.debounce_ms}")
    line(mem.sync())
    watcher = mem.start_watching(line, debounce_ms=args.debounce_ms)
    print(f"watching {mem.memory_dir} ({watcher.backend}, debounce {watcher.debounce_s * 1000:.0f} ms); "
          "Ctrl-C to stop", file=out, flush=True)
    stop = threading.Event()
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    mem.stop_watching()
    print(f"stopped after {watcher.sync_count} syncs", file=out, flush=True)
    return 0


def _verify(mem: MarkdownMemory, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    report = mem.verify(repair=not args.no_repair)
    if args.json:
        json.dump(report.to_dict(), out, ensure_ascii=False, indent=2)
        out.write("\n")
    else:
        print(report.summary(), file=out)
    return 0 if report.ok else 1


def _progress_bar(stream: TextIO, min_total: int = 50) -> Callable[[int, int], None]:
    """Progress on stderr for long syncs; silent for small memories and pipes."""
    interactive = hasattr(stream, "isatty") and stream.isatty()

    def report(done: int, total: int) -> None:
        if total < min_total or not interactive:
            return
        width = 30
        filled = width * done // total
        stream.write(f"\rindexing [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
        if done >= total:
            stream.write("\n")
        stream.flush()

    return report


_COMMANDS: dict[str, Callable[[MarkdownMemory, argparse.Namespace, TextIO, TextIO], int]] = {
    "search": _search,
    "get": _get,
    "add": _add,
    "index": _index,
    "dream": _dream,
    "export": _export,
    "import": _import,
    "status": _status,
    "watch": _watch,
    "verify": _verify,
}

