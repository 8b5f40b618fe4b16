"""One role of the all-together kill test (spawned by test_kill_everything.py).

Roles, each looping until killed, all on one memory folder through the public facade:
``append`` (prints ``a I`` after fact I is in facts.md), ``session`` (writes session logs),
``dream`` (consolidates them into MEMORY.md with a scripted model), ``rebuild`` (swaps in a
fresh index), ``watch`` (a running watcher that searches now and then).
"""

from __future__ import annotations

import os
import sys
import time

from langchain_core.language_models.fake_chat_models import FakeListChatModel

from langchain_md_memory import MarkdownMemory

DREAMED = "# Profile\n\n- Retire at 55\n\n## Sessions\n\n- consolidated\n"


def fact(i: int) -> str:
    return f"- fact {i}: chaos token c{i}x"


def main(role: str, root: str, start: int) -> None:
    with MarkdownMemory(root, embeddings="none") as mem:
        os.write(1, b"ready\n")
        i = start
        while True:
            if role == "append":
                mem.append(fact(i), file="facts.md")
                os.write(1, f"a {i}\n".encode())
            elif role == "session":
                name = f"sessions/2026-07-{1 + i % 28:02d}-s{i}.md"
                mem.write(name, f"# Session\n\nTalked about item {i}.\n")
            elif role == "dream":
                mem.dream(FakeListChatModel(responses=[DREAMED]), min_sessions=1, min_interval=0,
                          recency_guard=0, keep_newest=2)
            elif role == "rebuild":
                mem.rebuild()
            elif role == "watch":
                mem.start_watching(debounce_ms=50)
                mem.search("chaos token")
                time.sleep(0.05)
            i += 1


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
