"""Smoke test of an installed wheel: a pip user's first hour, from `init --example` to a search.

Run with the python of a venv the wheel was installed into (with the `local` extra), from a
folder outside the checkout: `md-memory` is looked for next to that python.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

CLI = Path(sys.executable).with_name("md-memory")


def md_memory(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CLI), *argv], capture_output=True, text=True, check=False, timeout=300)


def main() -> int:
    assert CLI.exists(), f"no md-memory next to {sys.executable}"
    with tempfile.TemporaryDirectory() as tmp:
        demo = str(Path(tmp) / "demo")
        done = md_memory("--dir", demo, "init", "--example")
        assert done.returncode == 0, done.stderr
        assert (Path(demo) / "MEMORY.md").is_file() and (Path(demo) / ".gitignore").is_file()

        done = md_memory("--dir", demo, "--embeddings", "local", "--json", "search", "单只个股 仓位上限")
        assert done.returncode == 0, done.stderr
        found = json.loads(done.stdout)
        assert found["results"], found
        assert found["results"][0]["path"] == "MEMORY.md", found["results"][0]
        assert found["degraded"] is None, found["degraded"]  # the bundled model answered, not keywords alone

        before = {p.name: p.read_bytes() for p in Path(demo).iterdir() if p.suffix == ".md"}
        done = md_memory("--dir", demo, "init", "--example")
        assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
        assert "MEMORY.md" in done.stderr and done.stderr.startswith("md-memory: error: "), done.stderr
        assert {p.name: p.read_bytes() for p in Path(demo).iterdir() if p.suffix == ".md"} == before
    print(f"init --example, search, refusal: ok ({CLI})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
