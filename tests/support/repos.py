"""Real git checkouts for the project-memory tests."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git_repo(path: Path, remote: str | None = None) -> Path:
    """``git init`` at ``path`` (created if needed), with ``origin`` set to ``remote`` when given."""
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "-c", "init.defaultBranch=main", "init", "-q", str(path)], check=True)
    if remote is not None:
        subprocess.run(["git", "-C", str(path), "remote", "add", "origin", remote], check=True)
    return path
