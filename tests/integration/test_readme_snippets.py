"""Every ```python block of the README runs as written, offline.

Each block runs on its own in a fresh working directory (so ``"memory"`` is a
new folder). A snippet that calls a chat model has an offline form: without
``OPENAI_API_KEY`` it uses a scripted fake from langchain_core, and must not
touch ``ChatOpenAI``; the same snippet also runs with a key set, where
``langchain_openai.ChatOpenAI`` is replaced by a scripted fake, so both
branches run end to end.
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
OFFLINE_ANSWER = "Offline answer:"
"""How each README snippet's offline stand-in starts its answer."""


class FakeChatOpenAI(ToolAcceptingListModel):
    """Stands in for ``ChatOpenAI(...)``: any arguments, one scripted answer, tools accepted."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(responses=[AIMessage(ANSWER)])


class NoChatOpenAI:
    """Stands in for ``ChatOpenAI`` in the offline runs: constructing it fails the test."""

    def __init__(self, **kwargs: Any) -> None:
        raise AssertionError("the offline form of a README snippet constructed ChatOpenAI")


MODEL_SNIPPETS = [i for i, snippet in enumerate(SNIPPETS) if "ChatOpenAI(" in snippet]


def test_readme_has_the_documented_python_snippets() -> None:
    assert len(SNIPPETS) >= 6
    text = "\n".join(SNIPPETS)
    for name in ("create_memory_tools", "create_session_context_node", "create_memory_flush_node",
                 "MarkdownMemoryMiddleware", "as_retriever", "search_detailed", "MemoryConfig"):
        assert name in text, name


def test_every_snippet_with_a_chat_model_has_an_offline_form() -> None:
    assert len(MODEL_SNIPPETS) >= 3
    for index in MODEL_SNIPPETS:
        snippet = SNIPPETS[index]
        assert 'if os.environ.get("OPENAI_API_KEY"):' in snippet, f"snippet {index + 1}"
        assert "from langchain_core.language_models import Fake" in snippet, f"snippet {index + 1}"
        assert OFFLINE_ANSWER in snippet, f"snippet {index + 1}"


POSTGRES_SNIPPETS = [i for i, snippet in enumerate(SNIPPETS) if "from_postgres(" in snippet]


# capfd, not capsys: a snippet starting an MCP server over stdio hands sys.stderr to the child process,
# which needs a real file descriptor.
def run_snippet(index: int, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> str:
    code = compile(SNIPPETS[index], f"README.md python snippet {index + 1}", "exec")
    exec(code, {"__name__": f"readme_snippet_{index + 1}"})
    printed = capfd.readouterr().out
    if "mem.append(" in SNIPPETS[index]:
        # The snippet wrote its memory where it said, as Markdown.
        assert (tmp_path / "memory" / "MEMORY.md").read_text(encoding="utf-8").startswith("- ")
    if "print(" in SNIPPETS[index]:
        assert printed.strip()
    return printed


@pytest.mark.parametrize("index", range(len(SNIPPETS)))
def test_readme_snippet_runs_offline(index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capfd: pytest.CaptureFixture[str],
                                     request: pytest.FixtureRequest) -> None:
    monkeypatch.chdir(tmp_path)
    if index in POSTGRES_SNIPPETS:  # the run's own throwaway server stands in for the deployment's
        monkeypatch.setenv("MD_MEMORY_POSTGRES", request.getfixturevalue("pg_url"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setattr(langchain_openai, "ChatOpenAI", NoChatOpenAI)
    printed = run_snippet(index, tmp_path, capfd)
    if index in MODEL_SNIPPETS:
        assert OFFLINE_ANSWER in printed  # the chain, graph or agent ran through to the fake's answer


@pytest.mark.parametrize("index", MODEL_SNIPPETS)
def test_readme_snippet_runs_with_chat_openai(index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capfd: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.setattr(langchain_openai, "ChatOpenAI", FakeChatOpenAI)
    printed = run_snippet(index, tmp_path, capfd)
    assert ANSWER in printed and OFFLINE_ANSWER not in printed
