"""md-memory: search, read, add to and index a Markdown memory from the shell.

Example::

    $ md-memory --dir demo init --example
    $ md-memory --dir demo search "position limit" -k 3
    $ md-memory --dir demo add "Retirement target age: 60"
    $ md-memory --dir demo get MEMORY.md --from 1 --to 5
    $ md-memory status --dir demo --json

Only the standard library is imported until a command runs, so ``--help`` and
``--version`` answer at once; each command imports what it needs.
"""

from __future__ import annotations

from .main import main
from .parser import build_parser

__all__ = ["build_parser", "main"]
