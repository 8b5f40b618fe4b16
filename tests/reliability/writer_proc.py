"""A fork server of memory writers for the crash test (spawned by test_crash_safety.py).

Importing the package costs about a second; forty fresh interpreters would
cost forty. This process imports it once, then forks one writer per ``run``
command read from stdin; the test SIGKILLs the writer by pid at a random
moment. Protocol (one line each, on stdout):

* stdin ``run DIR`` → ``pid N``; the writer prints ``ready``, then after each
  committed step ``w I`` (notes.md is version I), ``a I`` (fact I appended),
  ``e I`` (counter.md edited to I), ``s I`` (index synced); when the writer
  dies the server prints ``exit N STATUS``.
* stdin ``quit`` → the server exits.

Writers print with ``os.write`` (unbuffered, one small write per line, so lines
never interleave) and always go through the public facade.
"""

from __future__ import annotations

import os
import re
import sys

from langchain_md_memory import MarkdownMemory

NOTES = "notes.md"
COUNTER = "counter.md"
LINES = 600


def version_text(i: int) -> str:
    """notes.md at version ``i``: ~30 KB, header and footer naming ``i``, every line too."""
    body = "".join(f"- line {n:04d} of version {i}: marker ver{i}x\n" for n in range(LINES))
    return f"# notes version {i}\n\n{body}\nEND OF VERSION {i}\n"


def fact_line(i: int) -> str:
    """The ``i``-th appended fact, with a unique searchable word."""
    return f"- fact {i}: remember token fact{i}tok for good"


def counter_text(i: int) -> str:
    """counter.md at value ``i``."""
    return f"# Counter\n\ncounter value: {i}\n"


_VERSION_RE = re.compile(r"^# notes version (\d+)\n")
_COUNTER_RE = re.compile(r"counter value: (\d+)")


def _say(line: str) -> None:
    os.write(1, (line + "\n").encode())


def _writer(root: str) -> None:
    with MarkdownMemory(root, embeddings="none") as mem:
        notes = mem.get(NOTES) if mem.store.exists(NOTES) else ""
        match = _VERSION_RE.match(notes)
        version = int(match[1]) if match else 0
        facts = [int(m) for m in re.findall(r"^- fact (\d+):", mem.get("MEMORY.md"), re.M)] \
            if mem.store.exists("MEMORY.md") else []
        step = max([version, *facts]) + 1
        counter_match = _COUNTER_RE.search(mem.get(COUNTER)) if mem.store.exists(COUNTER) else None
        counter = int(counter_match[1]) if counter_match else 0
        if counter_match is None:
            mem.write(COUNTER, counter_text(0))
        _say("ready")
        while True:
            mem.write(NOTES, version_text(step))
            _say(f"w {step}")
            mem.append(fact_line(step))
            _say(f"a {step}")
            if mem.edit(f"counter value: {counter}\n", f"counter value: {counter + 1}\n", file=COUNTER):
                counter += 1
                _say(f"e {counter}")
            mem.sync()
            _say(f"s {step}")
            step += 1


def main() -> None:
    for line in sys.stdin:
        command = line.split()
        if not command or command[0] == "quit":
            return
        if command[0] != "run":
            continue
        pid = os.fork()
        if pid == 0:  # the writer: never returns
            try:
                _writer(command[1])
            except BaseException as exc:  # a crash we did not cause: tell the test
                _say(f"error {type(exc).__name__}: {exc}")
            finally:
                os._exit(3)
        _say(f"pid {pid}")
        _, status = os.waitpid(pid, 0)
        _say(f"exit {pid} {status}")


if __name__ == "__main__":
    main()
