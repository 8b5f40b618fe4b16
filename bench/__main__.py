"""``python -m bench``: run the benchmark (see :mod:`bench.run`)."""

from __future__ import annotations

import sys

from .run import main

if __name__ == "__main__":
    sys.exit(main())
