"""``python -m bench.startup``: how long the ``md-memory`` command takes to start, against ``python -c pass``.

Three commands, each run ``--runs`` times, interleaved (so load from other processes hits them alike),
median wall time, reported as a ratio to ``python -c pass`` measured in the same run:

- ``python -c pass``: the interpreter alone (the baseline);
- ``python -c "import langchain_md_memory"``: the package's import;
- ``md-memory --help``: the parser, nothing else;
- ``md-memory --dir <copy> --embeddings none search ...``: a cold keyword search (a new process each time)
  of a temporary copy of ``examples/memory`` (its index built by one untimed run first), with a Chinese
  query, an English one, and the English one with ``--no-cross-language``: the difference between the
  last two is what reading CC-CEDICT and translating the English words costs.

``--against DIR`` adds the same two commands for another checkout of the package, next to this checkout
run the same way: ``python -S -m langchain_md_memory`` with the checkout, then this environment's
site-packages, on ``PYTHONPATH`` (``-S`` keeps the editable install's import hook from picking this
checkout for both): a before/after comparison in one run, with the Chinese and the English query. Nothing
here asserts a time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

__all__ = ["main", "measure"]

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "memory"
QUERY = "单只个股 仓位上限"
ENGLISH_QUERY = "single stock position limit"
IMPORT = 'python -c "import langchain_md_memory"'


def _timed(argv: Sequence[str], env: dict[str, str] | None, cwd: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd,
                          check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode()[-500:]}")
    return elapsed


def _commands(memory: Path, against: Path | None) -> dict[str, tuple[list[str], dict[str, str] | None]]:
    script = shutil.which("md-memory", path=str(Path(sys.executable).parent)) or "md-memory"
    search = ["--dir", str(memory), "--embeddings", "none", "search", QUERY]
    english = ["--dir", str(memory), "--embeddings", "none", "search", ENGLISH_QUERY]
    commands: dict[str, tuple[list[str], dict[str, str] | None]] = {
        "python -c pass": ([sys.executable, "-c", "pass"], None),
        IMPORT: ([sys.executable, "-c", "import langchain_md_memory"], None),
        "md-memory --help": ([script, "--help"], None),
        "md-memory search (--embeddings none)": ([script, *search], None),
        "md-memory search, English (--embeddings none)": ([script, *english], None),
        "md-memory search, English (--embeddings none --no-cross-language)":
            ([script, "--no-cross-language", *english], None),
    }
    if against is not None:
        site_packages = [p for p in sys.path if p.endswith("site-packages")]
        for label, root in (("this checkout", REPO), ("--against", against)):
            env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), *site_packages])}
            module = [sys.executable, "-S", "-m", "langchain_md_memory"]
            commands[f"{label}: -m --help"] = ([*module, "--help"], env)
            commands[f"{label}: -m search"] = ([*module, *search], env)
            commands[f"{label}: -m search, English"] = ([*module, *english], env)
    return commands


def measure(runs: int = 15, against: Path | None = None) -> dict[str, dict[str, float]]:
    """Median wall seconds of each command and its ratio to ``python -c pass``."""
    # Run from a temporary folder: the working directory comes first on sys.path for ``-m``.
    with tempfile.TemporaryDirectory() as tmp:
        memory = Path(tmp) / "memory"
        shutil.copytree(EXAMPLES, memory, ignore=shutil.ignore_patterns("index.sqlite*", ".*"))
        commands = _commands(memory, against)
        for argv, env in commands.values():  # warm the file cache and build the index, untimed
            _timed(argv, env, Path(tmp))
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(runs):
            for name, (argv, env) in commands.items():
                times[name].append(_timed(argv, env, Path(tmp)))
    base = statistics.median(times["python -c pass"])
    return {name: {"median_s": round(statistics.median(ts), 4),
                   "ratio": round(statistics.median(ts) / base, 1)} for name, ts in times.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=15, help="runs per command (default 15)")
    parser.add_argument("--against", type=Path, default=None, help="another checkout to compare with")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    results = measure(args.runs, args.against)
    if args.json:
        print(json.dumps({"runs": args.runs, "results": results}, indent=2))
        return 0
    print(f"| command | median ms ({args.runs} runs) | × python -c pass |")
    print("|---|---|---|")
    for name, r in results.items():
        print(f"| {name} | {r['median_s'] * 1000:.0f} | {r['ratio']:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
