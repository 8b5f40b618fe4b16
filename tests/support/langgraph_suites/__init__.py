"""LangGraph's own store test suites, run against MarkdownBaseStore (see suite_conftest.py)."""
