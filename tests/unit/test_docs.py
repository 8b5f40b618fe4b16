"""The documentation: its links land on a file and a heading, and it names what the code has.

README.md, docs/*.md and the two result files in bench/ link to each other; a page that moves or a
heading that is renamed breaks a link silently on GitHub, so every link to a file of the repository is
followed here, anchors included (GitHub's heading ids). The settings page names every ``MemoryConfig``
field and the search-pipeline page every key of a search's funnel, so a new setting or a renamed step
cannot go undocumented.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import BaseModel

from langchain_md_memory import MarkdownMemory, MemoryConfig

ROOT = Path(__file__).resolve().parents[2]
REPO = "https://github.com/langchain-md-memory/langchain-md-memory/blob/main/"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
         ROOT / "bench" / "RESULTS.md", ROOT / "bench" / "QUALITY.md"]
README_MAX_LINES = 400
"""The README says what the package is and how to start; the rest lives in docs/."""


def prose(text: str) -> str:
    """``text`` without its fenced code blocks (a ``#`` there is a comment, a link there is code)."""
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def heading_ids(page: Path) -> set[str]:
    """The ids GitHub gives the headings of ``page``: lower case, punctuation dropped, spaces to hyphens,
    ``-1``, ``-2`` ... after a repeated one."""
    seen: dict[str, int] = {}
    ids = set()
    for title in re.findall(r"^#{1,6} (.+)$", prose(page.read_text(encoding="utf-8")), re.M):
        base = re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")
        n = seen.get(base, 0)
        seen[base] = n + 1
        ids.add(base if n == 0 else f"{base}-{n}")
    return ids


def links(page: Path) -> list[tuple[Path, str]]:
    """Every link of ``page`` to a file of this repository, as (that file, its anchor or "")."""
    found = []
    for target in re.findall(r"\]\(([^)\s]+)\)", prose(page.read_text(encoding="utf-8"))):
        if target.startswith(REPO):
            target = str(ROOT / target.removeprefix(REPO))
        elif "://" in target or target.startswith("mailto:"):
            continue
        path, _, anchor = target.partition("#")
        found.append(((page.parent / path).resolve() if path else page, anchor))
    return found


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_every_link_lands_on_a_file_and_a_heading(page: Path) -> None:
    for target, anchor in links(page):
        assert target.exists(), f"{page.name} links to {target}, which does not exist"
        if anchor and target.suffix == ".md":
            assert anchor in heading_ids(target), f"{page.name} links to {target.name}#{anchor}: no heading"


def test_the_readme_links_to_every_page_of_the_docs() -> None:
    linked = {target for target, _ in links(ROOT / "README.md")}
    assert {p.resolve() for p in (ROOT / "docs").glob("*.md")} <= linked


def test_the_readme_stays_short() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move detail to a page in docs/"


def _setting_names(model: type[BaseModel]) -> list[str]:
    names = []
    for name, field in model.model_fields.items():
        names.append(field.alias or name)
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            names += _setting_names(annotation)
    return names


def test_the_settings_page_names_every_setting() -> None:
    page = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    quoted = " ".join(re.findall(r"`([^`\n]+)`", prose(page)))
    missing = [name for name in _setting_names(MemoryConfig) if not re.search(rf"\b{name}\b", quoted)]
    assert missing == [], f"docs/settings.md does not name {missing}"


def test_the_search_pipeline_page_names_every_funnel_key(kw_memory: MarkdownMemory) -> None:
    kw_memory.append("- Rent €1,650 for the Arroios flat")
    funnel = kw_memory.search_detailed("rent").funnel
    page = (ROOT / "docs" / "search-pipeline.md").read_text(encoding="utf-8")
    assert [key for key in funnel if f"`{key}`" not in page] == []
