"""``python -m langchain_md_memory`` runs the ``md-memory`` CLI."""

from .integrations.cli import main

raise SystemExit(main())
