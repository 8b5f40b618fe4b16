"""``md-memory inspect``: the example memory read page by page in a real headless Chromium.

The server runs as a real process on 127.0.0.1; the browser is Debian's ``chromium`` (``.ci/run``
installs it), which loads each page and hands back the DOM it rendered. Every screenshot it takes lands
in the test's folder, and in ``$MD_MEMORY_INSPECT_SCREENSHOTS`` when that names one (how docs/ got its
pictures).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import html
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, urlencode

import httpx
import pytest

from langchain_md_memory import MarkdownMemory

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180), pytest.mark.enable_socket,
              pytest.mark.allow_hosts(["127.0.0.1"])]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "memory"
MD_MEMORY = shutil.which("md-memory", path=str(Path(sys.executable).parent))
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SUPERSEDED_ON = dt.date(2026, 12, 1)
SCREENSHOTS = os.environ.get("MD_MEMORY_INSPECT_SCREENSHOTS")

needs_browser = pytest.mark.skipif(CHROMIUM is None and not os.environ.get("CI"),
                                   reason="no chromium here (.ci/run installs Debian's)")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def md_memory(*args: str, token: str | None = None) -> subprocess.Popen[str]:
    assert MD_MEMORY is not None
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "MD_MEMORY_MCP_TOKEN")}
    if token is not None:
        env["MD_MEMORY_MCP_TOKEN"] = token
    return subprocess.Popen([MD_MEMORY, *args], env=env, text=True, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example memory, with one goal superseded on 2026-12-01 so goals.md has a History."""
    folder = tmp_path_factory.mktemp("inspect") / "memory"
    shutil.copytree(EXAMPLES, folder, ignore=shutil.ignore_patterns("index.sqlite*"))
    with MarkdownMemory(folder, embeddings="local") as mem:
        assert mem.supersede("Retire at 60 with 2 million USD invested.",
                             "Retire at 62 with 2.2 million USD invested.", file="goals.md",
                             today=SUPERSEDED_ON)
        mem.sync()
    return folder


@contextlib.contextmanager
def serving(folder: Path, *, embeddings: str = "local", token: str | None = None) -> Iterator[str]:
    """``md-memory inspect`` on the folder until the block ends: the address it printed."""
    port = free_port()
    proc = md_memory("--dir", str(folder), "--embeddings", embeddings, "inspect", "--port", str(port),
                     token=token)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        address = re.search(r"http://\S+/", line)
        assert address is not None, f"no address printed: {line!r}"
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                assert time.monotonic() < deadline, "the inspect page did not start listening"
                time.sleep(0.2)
        yield address[0].rstrip("/")
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@pytest.fixture(scope="module")
def page(folder: Path) -> Iterator[str]:
    with serving(folder) as address:
        yield address


def browse(url: str, screenshot: str | None = None, *, tmp: Path) -> str:
    """The DOM Chromium rendered for ``url`` (and a screenshot of it, when named)."""
    assert CHROMIUM is not None, "chromium is missing: .ci/run installs Debian's chromium"
    base = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
            f"--user-data-dir={tmp / 'chromium'}", "--window-size=1100,900"]
    dom = subprocess.run([*base, "--dump-dom", url], capture_output=True, text=True, timeout=90, check=True)
    if screenshot is not None:
        shot = tmp / f"{screenshot}.png"
        subprocess.run([*base, f"--screenshot={shot}", url], capture_output=True, timeout=90, check=True)
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        if SCREENSHOTS:
            shutil.copyfile(shot, Path(SCREENSHOTS) / f"inspect-{screenshot}.png")
    return dom.stdout


def text_of(dom: str) -> str:
    """The page's text as it reads: inline tags dropped, others a space; entities read; spaces collapsed."""
    inline = re.sub(r"</?(?:a|b|s|span|mark)\b[^>]*>", "", dom)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", inline)).split())


def element(dom: str, element_id: str) -> str:
    """The markup from the element with ``element_id`` up to the next element with an id of its kind."""
    start = dom.index(f'id="{element_id}"')
    stop = dom.find(' id="hit-', start + 1)
    return dom[start: stop if stop > 0 else len(dom)]


def hit_numbers(dom: str) -> list[dict[str, str]]:
    """Each hit's citation and ``data-name``/``data-value`` pairs, in page order."""
    hits = []
    for n in range(1, 100):
        if f'id="hit-{n}"' not in dom:
            break
        block = element(dom, f"hit-{n}")
        found = dict(re.findall(r'data-name="([a-z_]+)" data-value="([^"]*)"', block))
        found["citation"] = html.unescape(re.search(r'class="citation"[^>]*>([^<]+)<', block)[1])  # type: ignore[index]
        hits.append(found)
    return hits


def search_url(page: str, **params: str) -> str:
    return f"{page}/search?{urlencode(params)}"


@needs_browser
def test_home_lists_the_files_the_index_status_and_the_session_context(page: str, tmp_path: Path) -> None:
    dom = browse(page + "/", "home", tmp=tmp_path)
    files = text_of(element(dom, "files"))
    for path, kind in [("MEMORY.md", "evergreen"), ("goals.md", "topic"), ("2026-11-20.md", "daily"),
                       ("2026-11-28.md", "daily")]:
        assert re.search(rf"{re.escape(path)} {kind} \d+ [1-9]\d* \d{{4}}-\d\d-\d\d", files), (path, files)
    status = text_of(element(dom, "status"))
    assert "files 4" in status and "waiting 0" in status and "health ok" in status
    assert "watcher not watching" in status
    assert re.search(r"MEMORY\.md \d+ \d+ \d+", text_of(element(dom, "session-context")))


@needs_browser
def test_search_shows_each_hit_with_its_file_text_numbers_and_label(page: str, tmp_path: Path) -> None:
    dom = browse(search_url(page, q="单只个股 仓位上限"), "search", tmp=tmp_path)
    first = element(dom, "hit-1")
    assert 'href="/file/MEMORY.md?from=1&amp;to=5#L1"' in first
    assert "<mark>单只个股</mark>" in first  # the matched terms are marked
    words = text_of(first)
    for label in ("found by both", "keyword score", "keyword rank 1", "vector cosine", "merged", "decay",
                  "final score", "MMR kept at 1", "relevance", "confident yes"):
        assert label in words, (label, words)
    assert re.search(r"vector \d+ keyword \d+ merged \d+", text_of(element(dom, "funnel")))


@needs_browser
def test_the_page_shows_the_numbers_search_detailed_returns(page: str, folder: Path, tmp_path: Path) -> None:
    query = "retire with how many million USD"
    dom = browse(search_url(page, q=query, k="4"), tmp=tmp_path)
    with MarkdownMemory(folder, embeddings="local") as mem:
        ranked = mem.search_detailed(query, max_results=4)
    shown = hit_numbers(dom)

    assert [h["citation"] for h in shown] == [h.citation for h in ranked.hits]
    for on_page, hit in zip(shown, ranked.hits, strict=True):
        for name in ("score", "keyword_score", "vector_score", "merged_score", "weight", "decay",
                     "relevance"):
            value = getattr(hit, name)
            assert on_page[name] == ("" if value is None else repr(value)), (hit.citation, name)
        assert on_page["retrieved_by"] == hit.retrieved_by
        assert on_page["relevance_rank"] == str(hit.relevance_rank)
        assert on_page["confident"] == str(hit.confident)
    funnel = dict(re.findall(r'data-stage="([a-z_]+)">(\d+)<', dom))
    assert {stage: int(count) for stage, count in funnel.items()} == ranked.funnel


@needs_browser
def test_an_as_of_search_shows_what_the_memory_held_that_day(page: str, tmp_path: Path) -> None:
    query = "retire with how many million USD"
    today = text_of(browse(search_url(page, q=query), tmp=tmp_path))
    then = browse(search_url(page, q=query, as_of="2026-11-15"), "as-of", tmp=tmp_path)

    assert "As of 2026-11-15" in text_of(then)
    first = text_of(element(then, "hit-1"))
    assert "goals.md#L11-L11" in first and "Retire at 60 with 2 million USD" in first
    assert "held always → 2026-12-01" in first
    assert "MMR not ranked by MMR: held on the day asked" in first  # put first by the as-of stage
    assert "MMR kept at 1" in text_of(element(then, "hit-2"))
    assert "Retire at 60 with 2 million USD" not in today and "Retire at 62" in today


@needs_browser
def test_a_file_shows_its_lines_provenance_and_history_timeline(page: str, tmp_path: Path) -> None:
    dom = browse(page + "/file/" + quote("goals.md"), "file", tmp=tmp_path)
    history = text_of(element(dom, "history"))
    assert "Retire at 60 with 2 million USD invested." in history
    assert "written before the record, superseded 2026-12-01 (line 11)" in history
    assert "replaced by - Retire at 62 with 2.2 million USD invested." in history
    row = re.search(r'<tr id="L4".*?</tr>', dom, re.S)[0]  # type: ignore[index]
    assert text_of(row) == '4 - Retire at 62 with 2.2 million USD invested. via=supersede 2026-12-01'
    assert "<!--" not in row  # the comment is read out beside the line, not shown raw in it
    assert "Sections: Financial goals · Retirement · House · History" in text_of(element(dom, "sections"))


@needs_browser
def test_context_page_shows_the_session_context_as_the_agent_gets_it(page: str, folder: Path,
                                                                     tmp_path: Path) -> None:
    dom = browse(page + "/context", "context", tmp=tmp_path)
    with MarkdownMemory(folder, embeddings="none") as mem:
        expected = mem.load_session_context()
    shown = html.unescape(re.search(r'<pre id="context-text">(.*?)</pre>', dom, re.S)[1])  # type: ignore[index]
    assert shown == expected
    assert "Nothing is cut" in text_of(dom)


def test_ctrl_c_stops_the_page_with_one_line_of_its_own(folder: Path) -> None:
    port = free_port()
    command = [str(MD_MEMORY), "--dir", str(folder), "--embeddings", "none", "inspect", "--port", str(port)]
    proc = subprocess.Popen(command, text=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.stdout is not None
    assert "Ctrl-C to stop" in proc.stdout.readline()
    time.sleep(1)  # serving
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert err == "md-memory: stopped serving the inspect page\n"


def test_writing_methods_are_refused_and_change_no_byte(page: str, folder: Path) -> None:
    before = {p: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
    with httpx.Client(trust_env=False) as http:
        answers = [http.request(method, page + path, content=b"- injected")
                   for method in ("POST", "PUT", "DELETE", "PATCH")
                   for path in ("/", "/file/MEMORY.md", "/search?q=x", "/nowhere")]
        read = http.get(page + "/file/MEMORY.md")
        rebound = http.get(page + "/", headers={"Host": "evil.example"})
    after = {p: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}

    assert {a.status_code for a in answers} == {405}
    assert all(a.headers["allow"] == "GET, HEAD" for a in answers)
    assert after == before
    assert read.status_code == 200 and rebound.status_code == 421


def test_a_bad_day_or_count_gets_a_page_that_says_what_to_give(page: str) -> None:
    with httpx.Client(trust_env=False) as http:
        day = http.get(search_url(page, q="retire", as_of="15/11/2026"))
        count = http.get(search_url(page, q="retire", k="0"))
        missing = http.get(page + "/file/nowhere.md")

    assert day.status_code == 400 and "give it as YYYY-MM-DD" in html.unescape(day.text)
    assert count.status_code == 400 and "at least 1" in count.text
    assert missing.status_code == 404 and "nowhere.md" in missing.text


def test_with_a_token_every_request_must_carry_it(folder: Path) -> None:
    with serving(folder, embeddings="none", token="inspect-token-7") as address, \
            httpx.Client(trust_env=False) as http:
        without = http.get(address + "/")
        wrong = http.get(address + "/", headers={"Authorization": "Bearer nope"})
        right = http.get(address + "/", headers={"Authorization": "Bearer inspect-token-7"})

    assert (without.status_code, wrong.status_code, right.status_code) == (401, 401, 200)
    assert "MEMORY.md" in right.text and "MEMORY.md" not in without.text


@pytest.mark.parametrize("extra", [[], ["--allow-remote"]], ids=["no-flag", "flag-without-token"])
def test_a_non_loopback_host_without_a_token_is_refused_at_start(folder: Path, extra: list[str]) -> None:
    proc = md_memory("--dir", str(folder), "inspect", "--host", "0.0.0.0", "--port", str(free_port()), *extra)
    out, err = proc.communicate(timeout=60)

    assert proc.returncode == 2 and out == ""
    assert err.startswith("md-memory: error: refusing to serve the memory on 0.0.0.0")
    assert "MD_MEMORY_MCP_TOKEN" in err
