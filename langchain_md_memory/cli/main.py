"""Running ``md-memory``: parse, check, run one command, and turn every failure into one line.

Exit codes: 0 success (a server stopped with Ctrl-C included); 1 a command's own "not ok"
(``verify --no-repair`` found problems, a dream failed); 2 bad input or an error (one line on
stderr: ``md-memory: error: ...``); 130 interrupted with Ctrl-C (one line; what was indexed so
far is kept); 141 the reader of stdout went away (``| head``), silently.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import re
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from .parser import DIR_ENV, POSTGRES_ENV, TENANT_ENV, build_parser, memory_dir, postgres_target

if TYPE_CHECKING:
    from .progress import ProgressBar

__all__ = ["main"]

EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141
_DEBUG_ENV = "MD_MEMORY_DEBUG"
# Commands that may create the memory folder; the others refuse a missing one.
_CREATING = {"add", "import", "init"}
# Commands that need a folder: a PostgreSQL memory has none to watch or unpack an archive into.
_FOLDER_ONLY = {"watch", "import", "init"}
# A placeholder after `=` or `:` (`api_key=...`, `token: <KEY>`) is a hint how to pass a value, not a
# value: the secret filter leaves it as it is.
_PLACEHOLDER = re.compile(r"((?<=[:=])\s*(?:\.\.\.|…|<[A-Za-z_-]+>)(?=[\s,;)]|$))")


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run the CLI; returns the exit code (see the module docstring)."""
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            args = build_parser().parse_args(argv)
    except SystemExit as stop:  # --help, --version or a usage error, already printed
        return stop.code if isinstance(stop.code, int) else 2
    args.postgres, args.tenant = postgres_target(args.postgres, args.tenant)
    args.dir = memory_dir(args.dir)
    bar: ProgressBar | None = None
    try:
        problem = _check(args)
        if problem is not None:
            print(f"md-memory: error: {problem}", file=err)
            return 2
        from .progress import ProgressBar

        bar = ProgressBar.for_args(err, explicit=args.progress, json=args.json)
        with _warnings_to(err, bar):
            code = _run(args, out, err, bar)
        if bar is not None:
            bar.close()  # a sync that stopped early (the provider failed) leaves its line open
        out.flush()
        return code
    except KeyboardInterrupt:
        if bar is not None:
            bar.close()
        served = _SERVERS.get(args.command)
        if served is not None:  # Ctrl-C is how a server is stopped: nothing was cut short
            print(f"md-memory: stopped serving {served}", file=err)
            return 0
        print("md-memory: interrupted; the work finished so far is kept, run the command again to continue",
              file=err)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _quiet_stdout(out)
        return EXIT_BROKEN_PIPE
    except Exception as exc:
        if bar is not None:
            bar.close()
        if os.environ.get(_DEBUG_ENV):
            raise
        print(f"md-memory: error: {_cli_message(exc)}", file=err)
        return 2


_SERVERS = {"mcp": "the memory over MCP", "inspect": "the inspect page"}
"""The commands that serve until Ctrl-C, and what each serves."""


def _cli_message(exc: Exception) -> str:
    """The error's line, saying the CLI's way where the package's message names a Python argument."""
    from ..errors import MissingApiKeyError

    if isinstance(exc, MissingApiKeyError):
        return (f"--embeddings {exc.spec} needs an API key: set {exc.variable} in the environment, or use "
                "--embeddings local (the offline model) or --embeddings none (keyword search only)")
    return one_line(exc)


def _check(args: argparse.Namespace) -> str | None:
    """What is wrong with the arguments before anything is opened, if anything."""
    if args.command in ("mcp", "inspect"):
        problem = _check_mcp(args) if args.command == "mcp" else _check_bind(args)
        if problem is not None:
            return problem
    if args.postgres is not None:
        return _check_postgres(args)
    folder = Path(args.dir).expanduser()
    creating = (args.command in _CREATING or (args.command == "index" and args.create)
                or (args.command == "migrate" and args.from_dir is not None))
    if not folder.exists() and not creating:
        how = "init (--example: with the example memory)" if args.command != "index" else "index --create"
        return (f"no memory folder at {args.dir} (pass --dir or set ${DIR_ENV}; "
                f"to start a new memory there: md-memory --dir {args.dir} {how})")
    if folder.exists() and not folder.is_dir():
        return f"{args.dir} is not a folder"
    if args.command == "search" and not args.query.strip():
        return "the search query is empty"
    if args.command == "search" and args.k is not None and args.k < 1:
        return f"-k must be at least 1, got {args.k}"
    return None


def _check_postgres(args: argparse.Namespace) -> str | None:
    if args.tenant is None or not args.tenant.strip():
        return f"--postgres needs --tenant NAME (or ${TENANT_ENV}): whose memory to open"
    if args.command in _FOLDER_ONLY:
        return (f"{args.command} needs a folder memory; with --postgres (or ${POSTGRES_ENV}) the memory "
                "lives in PostgreSQL")
    if args.command == "search" and not args.query.strip():
        return "the search query is empty"
    if args.command == "search" and args.k is not None and args.k < 1:
        return f"-k must be at least 1, got {args.k}"
    return None


def _check_mcp(args: argparse.Namespace) -> str | None:
    if not args.http and (args.host is not None or args.port is not None or args.allow_remote):
        return "--host, --port and --allow-remote apply to --http; stdio needs none of them"
    return _check_bind(args) if args.http else None


def _check_bind(args: argparse.Namespace) -> str | None:
    """Whether a server (``mcp --http``, ``inspect``) may listen where ``--host`` and ``--port`` say."""
    from ..integrations.mcp_bind import TOKEN_ENV, bind_problem

    if args.port is not None and not 0 <= args.port <= 65535:
        return f"--port must be between 0 and 65535, got {args.port}"
    return bind_problem(args.host or "127.0.0.1", token=os.environ.get(TOKEN_ENV) or None,
                        allow_remote=args.allow_remote)


def _run(args: argparse.Namespace, out: TextIO, err: TextIO, bar: ProgressBar | None) -> int:
    from .commands import run  # the heavy imports start here, after the arguments are known to be fine

    return run(args, out, err, bar)


def one_line(exc: BaseException) -> str:
    """The exception's whole message on one line (never cut), secrets scrubbed, hints kept."""
    from ..text.redaction import scrub

    text = " ".join(part.strip() for part in str(exc).splitlines() if part.strip()) or type(exc).__name__
    # The filter redacts what follows `api_key=`; split the placeholders out so only values are redacted.
    pieces = _PLACEHOLDER.split(text)
    return "".join(piece if i % 2 else scrub(piece) for i, piece in enumerate(pieces))


@contextlib.contextmanager
def _warnings_to(err: TextIO, bar: ProgressBar | None) -> Iterator[None]:
    """Show the package's logged warnings as ``md-memory: warning: ...`` lines while a command runs."""
    handler = _WarningLine(err, bar)
    logger = logging.getLogger("langchain_md_memory")
    logger.addHandler(handler)
    propagate, logger.propagate = logger.propagate, False  # not twice through Python's last resort
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


class _WarningLine(logging.Handler):
    def __init__(self, stream: TextIO, bar: ProgressBar | None) -> None:
        super().__init__(logging.WARNING)
        self.stream = stream
        self.bar = bar

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if self.bar is not None:
                self.bar.clear_line()
            self.stream.write(f"md-memory: warning: {one_line(Exception(record.getMessage()))}\n")
            self.stream.flush()
        except Exception:
            self.handleError(record)


def _quiet_stdout(out: TextIO) -> None:
    """After a broken pipe: point stdout at /dev/null so the exit flush does not complain."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, out.fileno())
