"""``python -m bench.quality``: run the retrieval-quality harness (see :mod:`bench.quality.run`)."""

from __future__ import annotations

import sys

from .run import main

if __name__ == "__main__":
    sys.exit(main())
