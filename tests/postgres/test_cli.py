"""``md-memory --postgres URL --tenant T``: the CLI on a PostgreSQL memory, tenants kept apart."""

from __future__ import annotations

import io
import json
import re

import pytest

from langchain_md_memory.cli import main


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_add_search_get_and_status_on_a_tenant(pg_url: str, tenant: str):
    opts = ["--postgres", pg_url, "--tenant", tenant, "--embeddings", "none"]
    assert run(*opts, "add", "- 单只个股不超过总仓位 5%")[0] == 0
    code, out, _ = run(*opts, "search", "仓位", "--json")
    assert code == 0 and json.loads(out)["results"][0]["path"] == "MEMORY.md"
    assert run(*opts, "get", "MEMORY.md")[1] == "- 单只个股不超过总仓位 5%\n"
    code, out, _ = run(*opts, "status", "--json")
    assert code == 0 and json.loads(out)["files"] == 1 and tenant in json.loads(out)["memory_dir"]


@pytest.mark.parametrize("url_env", ["MD_MEMORY_POSTGRES_URL", "MD_MEMORY_POSTGRES"])  # the older name too
def test_the_environment_names_the_server_and_tenant(pg_url: str, tenant: str, url_env: str,
                                                    monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("MD_MEMORY_POSTGRES_URL", raising=False)
    monkeypatch.setenv(url_env, pg_url)
    monkeypatch.setenv("MD_MEMORY_TENANT", tenant)
    assert run("--embeddings", "none", "add", "- Prefers oolong")[0] == 0
    code, out, _ = run("--embeddings", "none", "--tenant", f"{tenant}-other", "search", "oolong", "--json")
    assert code == 0 and json.loads(out)["results"] == []  # another tenant sees nothing
    code, out, _ = run("--embeddings", "none", "search", "oolong", "--json")
    assert code == 0 and "oolong" in json.loads(out)["results"][0]["text"]


def test_missing_tenant_and_folder_commands_are_one_line_errors(pg_url: str, tenant: str):
    code, _, err = run("--postgres", pg_url, "search", "x")
    assert code == 2 and "--tenant" in err and len(err.strip().splitlines()) == 1
    code, _, err = run("--postgres", pg_url, "--tenant", tenant, "watch")
    assert code == 2 and "needs a folder memory" in err


def test_a_tenant_name_over_the_limit_is_one_line_naming_it(pg_url: str):
    for command in ("status", "index"):
        code, _, err = run("--postgres", pg_url, "--tenant", "x" * 6000, "--embeddings", "none", command)
        assert code == 2 and "over 255 bytes" in err and len(err.strip().splitlines()) == 1


def test_an_unreachable_server_is_one_line(tmp_path):
    code, _, err = run("--postgres", f"postgresql://postgres@/postgres?host={tmp_path}", "--tenant", "a",
                       "--embeddings", "none", "status")
    assert code == 2 and err.startswith("md-memory: error: Cannot reach PostgreSQL")
    assert len(err.strip().splitlines()) == 1


def test_migrate_into_postgres_and_back_is_byte_identical(pg_url: str, tenant: str, tmp_path):
    source = tmp_path / "source"
    source.mkdir()
    files = {"MEMORY.md": "# M\r\n\r\n- crlf kept\r\n", "topics/中文.md": "- 仓位上限 5%\n",
             "sessions/2026-01-02-a.md": "## user\nhi\n"}
    for rel, text in files.items():
        (source / rel).parent.mkdir(parents=True, exist_ok=True)
        (source / rel).write_bytes(text.encode())
    opts = ["--postgres", pg_url, "--tenant", tenant, "--embeddings", "none"]
    assert run(*opts, "migrate", "--from", str(source))[0] == 0
    assert "仓位" in run(*opts, "search", "仓位")[1]
    assert run(*opts, "migrate", "--to", str(tmp_path / "back"))[0] == 0
    for rel, text in files.items():
        assert (tmp_path / "back" / rel).read_bytes() == text.encode()


def test_a_push_after_a_server_edit_is_refused_and_changes_nothing(pg_url: str, tenant: str, tmp_path):
    opts = ["--postgres", pg_url, "--tenant", tenant, "--embeddings", "none"]
    assert run(*opts, "add", "- first")[0] == 0
    copy = tmp_path / "copy"
    assert run(*opts, "pull", str(copy))[0] == 0
    (copy / "MEMORY.md").write_text("- first, edited by a person\n", encoding="utf-8")
    assert run(*opts, "add", "- written by an agent meanwhile")[0] == 0  # the server moves on
    code, _, err = run(*opts, "push", str(copy))
    assert code == 2 and "MEMORY.md" in err
    assert run(*opts, "get", "MEMORY.md")[1] == "- first\n- written by an agent meanwhile\n"


def test_the_example_memory_goes_into_postgres_and_back_byte_for_byte(pg_url: str, tenant: str, tmp_path):
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "examples" / "memory"
    originals = {p.relative_to(example).as_posix(): p.read_bytes() for p in example.rglob("*.md")}
    opts = ["--postgres", pg_url, "--tenant", tenant, "--embeddings", "none"]
    assert run(*opts, "migrate", "--from", str(example))[0] == 0
    code, out, _ = run(*opts, "search", "单只个股 仓位上限", "--json")
    assert code == 0 and json.loads(out)["results"][0]["path"] == "MEMORY.md"
    assert run(*opts, "migrate", "--to", str(tmp_path / "back"))[0] == 0
    back = tmp_path / "back"
    assert {p.relative_to(back).as_posix(): p.read_bytes() for p in back.rglob("*.md")} == originals


@pytest.mark.slow
def test_a_3000_file_memory_migrates_into_postgres_and_back_byte_for_byte(pg_url: str, tenant: str, tmp_path):
    source = tmp_path / "source"
    originals: dict[str, bytes] = {}
    for i in range(3000):
        rel = f"memory/2026-{1 + i % 12:02d}-{1 + i % 28:02d}-{i:04d}.md" if i % 3 else f"topics/t{i:04d}.md"
        data = f"# Note {i}\r\n\r\n- fact {i}: walnut{i} 仓位 {i % 7}\n".encode() if i % 2 else \
            f"## {i}\n- plain LF note {i}, kiwi{i}".encode()
        (source / rel).parent.mkdir(parents=True, exist_ok=True)
        (source / rel).write_bytes(data)
        originals[rel] = data
    opts = ["--postgres", pg_url, "--tenant", tenant, "--embeddings", "none", "--json"]
    code, out, err = run(*opts, "migrate", "--from", str(source))
    assert code == 0, err
    assert len(json.loads(out)["copied"]) == 3000
    code, out, _ = run(*opts, "search", "walnut2999")
    assert [h["path"] for h in json.loads(out)["results"]] == ["memory/2026-12-04-2999.md"]
    back = tmp_path / "back"
    assert run(*opts, "migrate", "--to", str(back))[0] == 0
    assert {p.relative_to(back).as_posix(): p.read_bytes() for p in back.rglob("*.md")} == originals


def test_no_cli_command_reaches_another_tenants_text(pg_url: str, tenant: str, tmp_path):
    alice = ["--postgres", pg_url, "--tenant", f"{tenant}-alice", "--embeddings", "none"]
    bob = ["--postgres", pg_url, "--tenant", f"{tenant}-bob", "--embeddings", "none"]
    assert run(*alice, "add", "- alice's secret plan: buy the blue house", "--file", "plans.md")[0] == 0
    assert run(*bob, "add", "- bob's own note")[0] == 0

    code, out, _ = run(*bob, "--json", "search", "blue house plan")
    assert code == 0 and all("alice" not in h["text"] for h in json.loads(out)["results"])
    code, _, err = run(*bob, "get", "plans.md")
    assert code == 2 and "plans.md" in err
    assert run(*bob, "pull", str(tmp_path / "bob"))[0] == 0
    assert sorted(p.name for p in (tmp_path / "bob").rglob("*.md")) == ["MEMORY.md"]
    code, out, _ = run(*bob, "--json", "status")
    assert json.loads(out)["files"] == 1
    # A folder pulled from alice cannot be pushed into bob's tenant.
    assert run(*alice, "pull", str(tmp_path / "alice"))[0] == 0
    (tmp_path / "alice" / "plans.md").write_text("- overwritten\n", encoding="utf-8")
    code, _, err = run(*bob, "push", str(tmp_path / "alice"))
    assert code == 2 and "pulled from" in err
    code, out, _ = run(*alice, "get", "plans.md")
    assert out == "- alice's secret plan: buy the blue house\n"


def test_the_inspect_page_reads_a_tenants_memory(pg_memory, tenant: str):
    """What ``md-memory --postgres URL --tenant T inspect`` serves: the same pages as for a folder."""
    import datetime as dt

    from starlette.testclient import TestClient

    from langchain_md_memory.integrations.inspect_page import create_inspect_app

    pg_memory.append("- Retire at 65")
    assert pg_memory.supersede("Retire at 65", "Retire at 67", today=dt.date(2026, 12, 3))
    page = TestClient(create_inspect_app(pg_memory))

    home = page.get("/")
    found = page.get("/search", params={"q": "retire"})
    file = page.get("/file/MEMORY.md")
    assert home.status_code == 200 and tenant in home.text
    row = r'MEMORY.md</a></td><td><span class="tag">evergreen</span></td>\s*<td class="num">\d+</td>'
    assert re.search(row + r'<td class="num">1</td><td>\d{4}-\d\d-\d\d', home.text)
    assert found.status_code == 200 and "MEMORY.md#L1-L1" in found.text
    assert "<mark>Retire</mark>" in found.text
    assert 'class="until">2026-12-03<' in file.text and "Retire at 67" in file.text
