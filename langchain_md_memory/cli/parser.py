"""The arguments of ``md-memory``: global options before or after the command, plain help text.

Building the parser imports only the standard library, so ``md-memory --help``
and ``--version`` answer without loading LangChain or numpy.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
from typing import Any, NoReturn

from .. import __version__
from ..integrations.mcp_bind import DEFAULT_HOST, DEFAULT_INSPECT_PORT, DEFAULT_PORT, TOKEN_ENV

__all__ = [
    "DIR_ENV",
    "DREAM_MODEL_ENV",
    "LEGACY_DIR_ENV",
    "LEGACY_POSTGRES_ENV",
    "POSTGRES_ENV",
    "TENANT_ENV",
    "build_parser",
    "memory_dir",
    "postgres_target",
]

DIR_ENV = "MD_MEMORY_DIR"
POSTGRES_ENV = "MD_MEMORY_POSTGRES_URL"
TENANT_ENV = "MD_MEMORY_TENANT"
LEGACY_DIR_ENV = "LANGCHAIN_MD_MEMORY_DIR"
LEGACY_POSTGRES_ENV = "MD_MEMORY_POSTGRES"
DREAM_MODEL_ENV = "LANGCHAIN_MD_MEMORY_DREAM_MODEL"
_DEFAULT_DIR = "memory"


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line: ``md-memory: error: ...``, exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"md-memory: error: {message} (see {self.prog} --help)\n")


def _day(text: str) -> dt.date | None:
    """``--as-of``: an ISO day, or a usage error naming the format (parsed here: ``--help`` stays light)."""
    try:
        if len(text.strip()) == 10:
            return dt.date.fromisoformat(text.strip())
    except ValueError:
        pass
    raise argparse.ArgumentTypeError(f"{text!r} is not a date: give the day as YYYY-MM-DD, e.g. 2025-03-31")


def memory_dir(given: str | None) -> str:
    """The memory folder: ``--dir``, else ``$MD_MEMORY_DIR`` (or the older ``$LANGCHAIN_MD_MEMORY_DIR``),
    else ``./memory``."""
    return given or os.environ.get(DIR_ENV) or os.environ.get(LEGACY_DIR_ENV) or _DEFAULT_DIR


def postgres_target(url: str | None, tenant: str | None) -> tuple[str | None, str | None]:
    """``(url, tenant)`` of a PostgreSQL memory: the options, else ``$MD_MEMORY_POSTGRES_URL`` (or the
    older ``$MD_MEMORY_POSTGRES``) and ``$MD_MEMORY_TENANT``; ``(None, ...)`` for a folder memory."""
    url = url or os.environ.get(POSTGRES_ENV) or os.environ.get(LEGACY_POSTGRES_ENV) or None
    return url, tenant or os.environ.get(TENANT_ENV) or None


def _global_options(parser: argparse.ArgumentParser, *, top: bool) -> None:
    # On the subcommands the defaults are SUPPRESS, so an option given before the command is kept.
    def default(value: Any) -> Any:
        return value if top else argparse.SUPPRESS

    group = parser.add_argument_group("global options (before or after the command)")
    group.add_argument("--dir", default=default(None), metavar="DIR",
                       help=f"memory folder (default: ${DIR_ENV}, else ./memory)")
    group.add_argument("--postgres", default=default(None), metavar="URL",
                       help=f"a PostgreSQL memory instead of a folder (default: ${POSTGRES_ENV})")
    group.add_argument("--tenant", default=default(None), metavar="NAME",
                       help=f"whose memory in PostgreSQL (default: ${TENANT_ENV})")
    group.add_argument("--embeddings", default=default("auto"), metavar="SPEC",
                       help="auto, none, local, openai or openai:MODEL (default: auto)")
    group.add_argument("--cross-language", action=argparse.BooleanOptionalAction, default=default(None),
                       help="translate keywords between Chinese and English with CC-CEDICT when the "
                            "local extra brings it (default: the config's ranking.cross_language, on)")
    group.add_argument("--json", action="store_true", default=default(False),
                       help="print JSON (times in ISO 8601)")
    group.add_argument("--progress", action=argparse.BooleanOptionalAction, default=default(None),
                       help="a progress bar on stderr while chunks are embedded "
                            "(default: when stderr is a terminal and --json is not given)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``md-memory``."""
    doc = sys.modules[__package__].__doc__ or "md-memory"
    parser = _Parser(prog="md-memory", description=doc.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"md-memory {__version__}")
    _global_options(parser, top=True)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help, description=help)
        _global_options(p, top=False)
        return p

    init = command("init", "start a memory folder: a .gitignore and an empty MEMORY.md (refuses a memory)")
    init.add_argument("--example", action="store_true",
                      help="fill it with the example memory shipped in the package instead")

    search = command("search", "hybrid search: vector and keyword recall, merge, decay, MMR, top k")
    search.add_argument("query")
    search.add_argument("-k", type=int, default=None, help="number of results (default 6)")
    search.add_argument("--as-of", type=_day, default=None, metavar="YYYY-MM-DD",
                        help="what the memory held on that day: superseded statements valid then first")

    get = command("get", "print lines of a memory file")
    get.add_argument("path")
    get.add_argument("--from", dest="start", type=int, default=None, help="first line (1-based)")
    get.add_argument("--to", dest="end", type=int, default=None, help="last line (inclusive)")

    add = command("add", "append text to MEMORY.md, today's log or a topic file (creates the folder)")
    add.add_argument("text", help="the text to append; - reads it from standard input")
    where = add.add_mutually_exclusive_group()
    where.add_argument("--daily", action="store_true", help="append to today's YYYY-MM-DD.md")
    where.add_argument("--file", default=None, help="a relative .md path")

    index = command("index", "bring the index up to date with the Markdown now")
    mode = index.add_mutually_exclusive_group()
    mode.add_argument("--force", action="store_true", help="re-chunk every file")
    mode.add_argument("--rebuild", action="store_true", help="build a fresh index file and swap it in")
    index.add_argument("--create", action="store_true", help="create the memory folder if it is missing")

    status = command("status", "files, chunks, embeddings, last sync, warnings")
    del status

    verify = command("verify", "check the index against the Markdown and repair it")
    verify.add_argument("--no-repair", action="store_true", help="only report; exit 1 when inconsistent")

    watch = command("watch", "keep the index in step with the files until Ctrl-C")
    watch.add_argument("--debounce-ms", type=int, default=None,
                       help="quiet time after a change before syncing (default 1500)")

    dream = command("dream", "consolidate session logs into MEMORY.md with a chat model")
    dream.add_argument("--model", default=os.environ.get(DREAM_MODEL_ENV),
                       help=f"chat model, e.g. openai:gpt-4o-mini (default: ${DREAM_MODEL_ENV})")
    dream.add_argument("--force", action="store_true", help="ignore the interval and session-count gates")
    dream.add_argument("--min-sessions", type=int, default=3, help="unprocessed logs needed (default 3)")
    dream.add_argument("--min-interval-hours", type=float, default=24.0, help="since last dream (default 24)")

    export = command("export", "write the Markdown files to a .tar.gz")
    export.add_argument("path", help="archive file, or a folder to receive memory.tar.gz")

    import_ = command("import", "unpack a memory .tar.gz into the memory folder and index it")
    import_.add_argument("archive")
    import_.add_argument("--overwrite", action="store_true", help="replace same-named memory files")

    pull = command("pull", "write the memory's Markdown into a folder for a person to read and edit")
    pull.add_argument("folder", help="an empty or new folder, or an earlier pull with nothing unpushed")

    push = command("push", "apply a pulled folder's edits back; refused if the memory changed them since")
    push.add_argument("folder", help="a folder written by pull")

    migrate = command("migrate", "copy every Markdown file, byte for byte, from a folder into this memory "
                                 "or from this memory into a folder")
    way = migrate.add_mutually_exclusive_group(required=True)
    way.add_argument("--from", dest="from_dir", metavar="FOLDER", help="a memory folder to copy in")
    way.add_argument("--to", dest="to_dir", metavar="FOLDER", help="a folder to copy this memory into")
    migrate.add_argument("--overwrite", action="store_true",
                         help="replace the target's files (it ends holding exactly the source's)")

    mcp = command("mcp", "serve the memory to MCP clients: memory_search, memory_get, memory_update and "
                         "each file as a read-only resource (stdio; needs the 'mcp' extra)")
    mcp.add_argument("--http", action="store_true",
                     help="streamable HTTP at http://HOST:PORT/mcp instead of stdio")
    mcp.add_argument("--host", default=None,
                     help=f"address to bind with --http (default {DEFAULT_HOST}; "
                          "any other needs --allow-remote)")
    mcp.add_argument("--port", type=int, default=None, help=f"port with --http (default {DEFAULT_PORT})")
    mcp.add_argument("--allow-remote", action="store_true",
                     help=f"allow a --host that is not loopback; then ${TOKEN_ENV} must hold a bearer token, "
                          "which every request must send")

    inspect = command("inspect", "serve a read-only page to read the memory in a browser: its files, "
                                 "searches with every score, a file's History, the session context "
                                 "(needs the 'inspect' extra)")
    inspect.add_argument("--host", default=None,
                         help=f"address to bind (default {DEFAULT_HOST}; any other needs --allow-remote)")
    inspect.add_argument("--port", type=int, default=None, help=f"port (default {DEFAULT_INSPECT_PORT})")
    inspect.add_argument("--allow-remote", action="store_true",
                         help=f"allow a --host that is not loopback; then ${TOKEN_ENV} must hold a bearer "
                              "token, which every request must send")
    return parser
