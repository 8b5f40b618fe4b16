"""Run a measuring worker in a fresh interpreter that imports the package from a given checkout.

Comparing two versions of the package means running each in its own process with
its own ``PYTHONPATH``; the worker prints one JSON line last, naming the file it
imported the package from, which is checked against the checkout asked for.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["run_worker"]


def run_worker(checkout: Path, code: str, args: Sequence[str], cwd: Path) -> dict[str, Any]:
    """Run ``code`` with ``args`` against ``checkout``; its last stdout line, parsed, minus ``package``.

    ``cwd`` should be away from any checkout: ``-c`` puts the working folder first on ``sys.path``.
    """
    site_packages = [p for p in sys.path if p.endswith("site-packages")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(checkout), *site_packages])}
    argv = [sys.executable, "-S", "-c", code, *args]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False, cwd=cwd)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-800:])
    result = dict(json.loads(done.stdout.strip().splitlines()[-1]))
    if not str(result.pop("package")).startswith(str(checkout)):  # another checkout would be measured
        raise RuntimeError(f"the worker did not import the package from {checkout}")
    return result
