"""Every ```python block of the README and of the pages in docs/ runs as written, offline.

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

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def python_blocks(page: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", page.read_text(encoding="utf-8"), re.S | re.M)


SNIPPETS: list[tuple[str, str]] = [
    (f"{page.relative_to(ROOT).as_posix()} python snippet {n}", code)
    for page in PAGES for n, code in enumerate(python_blocks(page), start=1)
]
"""(where it is, the code) of every snippet, README first."""
README_SNIPPETS = python_blocks(ROOT / "README.md")
ANSWER = "Keep any single stock at or below 5% [MEMORY.md#L1-L1]."
OFFLINE_ANSWER = "Offline answer:"
"""How each snippet's offline stand-in starts its answer."""


class FakeChatOpenAI(ToolAcceptingListModel):
    """Stands in for ``ChatOpenAI(...)``: any arguments, one scripted answer, tools accepted."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(responses=[AIMessage(ANSWER)])


class NoChatOpenAI:
    """Stands in for ``ChatOpenAI`` in the offline runs: constructing it fails the test."""

    def __init__(self, **kwargs: Any) -> None:
        raise AssertionError("the offline form of a documented snippet constructed ChatOpenAI")


MODEL_SNIPPETS = [i for i, (_, snippet) in enumerate(SNIPPETS) if "ChatOpenAI(" in snippet]


def test_the_documented_python_snippets_are_there() -> None:
    assert len(SNIPPETS) >= 6
    text = "\n".join(code for _, code in SNIPPETS)
    for name in ("create_memory_tools", "create_session_context_node", "create_memory_flush_node",
                 "MarkdownMemoryMiddleware", "as_retriever", "search_detailed", "MemoryConfig"):
        assert name in text, name


def test_the_readme_shows_each_way_in_with_a_snippet() -> None:
    text = "\n".join(README_SNIPPETS)
    for name in ("mem.search(", "MarkdownMemoryMiddleware(", "as_retriever(", "as_store("):
        assert name in text, name


def test_every_snippet_with_a_chat_model_has_an_offline_form() -> None:
    assert len(MODEL_SNIPPETS) >= 3
    for index in MODEL_SNIPPETS:
        where, snippet = SNIPPETS[index]
        assert 'if os.environ.get("OPENAI_API_KEY"):' in snippet, where
        assert "from langchain_core.language_models import Fake" in snippet, where
        assert OFFLINE_ANSWER in snippet, where


POSTGRES_SNIPPETS = [i for i, (_, snippet) in enumerate(SNIPPETS) if "from_postgres(" in snippet]


# capfd, not capsys: a snippet starting an MCP server over stdio hands sys.stderr to the child process,
# which needs a real file descriptor.
def run_snippet(index: int, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> str:
    where, snippet = SNIPPETS[index]
    code = compile(snippet, where, "exec")
    exec(code, {"__name__": f"documented_snippet_{index + 1}"})
    printed = capfd.readouterr().out
    if "mem.append(" in snippet:
        # The snippet wrote its memory where it said, as Markdown.
        assert (tmp_path / "memory" / "MEMORY.md").read_text(encoding="utf-8").startswith("- ")
    if "print(" in snippet:
        assert printed.strip()
    return printed


@pytest.mark.parametrize("index", range(len(SNIPPETS)), ids=[where for where, _ in SNIPPETS])
def test_documented_snippet_runs_offline(index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capfd: pytest.CaptureFixture[str],
                                         request: pytest.FixtureRequest) -> None:
    monkeypatch.chdir(tmp_path)
    if index in POSTGRES_SNIPPETS:  # the run's own throwaway server stands in for the deployment's
        monkeypatch.setenv("MD_MEMORY_POSTGRES_URL", request.getfixturevalue("pg_url"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setattr(langchain_openai, "ChatOpenAI", NoChatOpenAI)
    printed = run_snippet(index, tmp_path, capfd)
    if index in MODEL_SNIPPETS:
        assert OFFLINE_ANSWER in printed  # the chain, graph or agent ran through to the fake's answer


@pytest.mark.parametrize("index", MODEL_SNIPPETS, ids=[SNIPPETS[i][0] for i in MODEL_SNIPPETS])
def test_documented_snippet_runs_with_chat_openai(index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capfd: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.setattr(langchain_openai, "ChatOpenAI", FakeChatOpenAI)
    printed = run_snippet(index, tmp_path, capfd)
    assert ANSWER in printed and OFFLINE_ANSWER not in printed
