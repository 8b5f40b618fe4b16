"""The Markdown memory as a LangGraph ``BaseStore``: namespaces as folders, items as ``## key`` sections."""

from .adapter import NAMESPACE_FILE, AsyncMarkdownBaseStore, MarkdownBaseStore, unindexed_file_name

__all__ = ["NAMESPACE_FILE", "AsyncMarkdownBaseStore", "MarkdownBaseStore", "unindexed_file_name"]
