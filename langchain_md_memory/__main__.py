"""``python -m langchain_md_memory`` runs the ``md-memory`` CLI."""

from .cli import main

raise SystemExit(main())
