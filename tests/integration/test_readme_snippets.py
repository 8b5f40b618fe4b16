"""Every ```python block of the README runs as written, offline.

Each block runs on its own in a fresh working directory (so ``"memory"`` is a
new folder). ``langchain_openai.ChatOpenAI`` is replaced by a scripted fake, so
the LCEL, LangGraph and ``create_agent`` snippets run end to end without a key.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import langchain_openai
import pytest
from langchain_core.messages import AIMessage

from tests.support.models import ToolAcceptingListModel

README = Path(__file__).resolve().parents[2] / "README.md"
SNIPPETS = re.findall(r"^```python\n(.*?)^```$", README.read_text(encoding="utf-8"), re.S | re.M)
ANSWER = "Keep any single stock at or below 5% [MEMORY.md#L1-L1]."


class FakeChatOpenAI(ToolAcceptingListModel):
    """Stands in for ``ChatOpenAI(...)``: any arguments, one scripted answer, tools accepted."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(responses=[AIMessage(ANSWER)])


def test_readme_has_the_documented_python_snippets() -> None:
    assert len(SNIPPETS) >= 6
    text = "\n".join(SNIPPETS)
    for name in ("create_memory_tools", "create_session_context_node", "create_memory_flush_node",
                 "MarkdownMemoryMiddleware", "as_retriever", "search_detailed", "MemoryConfig"):
        assert name in text, name


@pytest.mark.parametrize("index", range(len(SNIPPETS)))
def test_readme_snippet_runs(index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setattr(langchain_openai, "ChatOpenAI", FakeChatOpenAI)
    code = compile(SNIPPETS[index], f"README.md python snippet {index + 1}", "exec")
    exec(code, {"__name__": f"readme_snippet_{index + 1}"})
    printed = capsys.readouterr().out
    if "mem.append(" in SNIPPETS[index]:
        # The snippet wrote its memory where it said, as Markdown.
        assert (tmp_path / "memory" / "MEMORY.md").read_text(encoding="utf-8").startswith("- ")
    if "print(" in SNIPPETS[index]:
        assert printed.strip()
    if "ChatOpenAI(" in SNIPPETS[index]:
        assert ANSWER in printed  # the chain, graph or agent ran through to the model's answer
