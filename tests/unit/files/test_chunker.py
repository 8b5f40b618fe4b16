"""chunk_markdown: line numbers, budgets, overlap, heading paths, scaffolding, totality."""

from __future__ import annotations

import hashlib
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from langchain_md_memory.files.chunker import CHUNKER_VERSION, chunk_markdown
from langchain_md_memory.files.facts import hidden_lines
from langchain_md_memory.text import estimate_tokens

DOC = """# Goals

Retire at 55 with a paid-off house.
Keep three months of expenses in cash.

## Risk

No single stock above 5% of the portfolio.
"""


def lines_of(text: str, start: int, end: int) -> str:
    return "\n".join(text.replace("\r\n", "\n").split("\n")[start - 1 : end])


def test_version_is_a_non_empty_string() -> None:
    assert isinstance(CHUNKER_VERSION, str) and CHUNKER_VERSION


def test_known_document_line_numbers_and_headings() -> None:
    chunks = chunk_markdown(DOC)
    assert [(c.start_line, c.end_line, c.heading) for c in chunks] == [
        (1, 4, "# Goals"),
        (6, 8, "# Goals > ## Risk"),
    ]
    assert chunks[0].text == (
        "# Goals\n\nRetire at 55 with a paid-off house.\nKeep three months of expenses in cash."
    )
    assert chunks[1].text == "## Risk\n\nNo single stock above 5% of the portfolio."


def test_chunk_text_is_exactly_its_lines() -> None:
    text = "\n\n".join(f"paragraph {i} " + "word " * 30 for i in range(20))
    chunks = chunk_markdown(text, chunk_tokens=100, overlap_tokens=20)
    assert len(chunks) > 3
    for chunk in chunks:
        assert chunk.text == lines_of(text, chunk.start_line, chunk.end_line)


def test_crlf_input_gives_lf_text_and_same_line_numbers() -> None:
    chunks = chunk_markdown(DOC.replace("\n", "\r\n"))
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 4), (6, 8)]
    assert "\r" not in chunks[0].text


def test_packing_fills_up_to_the_budget_and_no_further() -> None:
    paragraphs = [f"p{i:02d} " + "abcd " * 9 for i in range(12)]  # 50 chars -> 14 tokens each
    text = "\n\n".join(paragraphs)
    chunks = chunk_markdown(text, chunk_tokens=60, overlap_tokens=0)
    assert all(estimate_tokens(c.text) <= 60 for c in chunks)
    # 4 paragraphs + 3 blank lines = 206 characters = 59 tokens; a fifth would be 74.
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 7), (9, 15), (17, 23)]


def test_overlap_carries_the_last_paragraph_into_the_next_chunk() -> None:
    paragraphs = [f"p{i:02d} " + "abcd " * 9 for i in range(8)]
    text = "\n\n".join(paragraphs)
    chunks = chunk_markdown(text, chunk_tokens=60, overlap_tokens=20)
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 7), (7, 13), (13, 15)]
    assert chunks[1].text.startswith(paragraphs[3])
    assert chunks[0].text.endswith(paragraphs[3])


def test_overlap_never_exceeds_its_budget() -> None:
    paragraphs = [f"p{i:02d} " + "abcd " * 9 for i in range(8)]
    chunks = chunk_markdown("\n\n".join(paragraphs), chunk_tokens=60, overlap_tokens=13)
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 7), (9, 15)]


def test_heading_path_replaces_siblings_and_children() -> None:
    text = "# A\n\n## B\n\nbee\n\n### C\n\nsea\n\n## D\n\ndee\n\n# E\n\neee\n"
    chunks = chunk_markdown(text)
    assert [(c.heading, c.text.splitlines()[-1]) for c in chunks] == [
        ("# A", "bee"),
        ("# A > ## B > ### C", "sea"),
        ("# A > ## D", "dee"),
        ("# E", "eee"),
    ]


def test_hash_lines_inside_code_fences_are_not_headings() -> None:
    text = "# Setup\n\n```bash\n# install\npip install x\n```\n\n## Next\n\nafter\n"
    chunks = chunk_markdown(text)
    assert [c.heading for c in chunks] == ["# Setup", "# Setup > ## Next"]
    assert "# install" in chunks[0].text


def test_heading_closing_hashes_are_dropped_from_the_path() -> None:
    chunks = chunk_markdown("## Plans ##\n\nbuy bonds\n")
    assert chunks[0].heading == "## Plans"


def test_hashtag_is_not_a_heading() -> None:
    chunks = chunk_markdown("#finance note about bonds\n")
    assert [(c.heading, c.text) for c in chunks] == [("", "#finance note about bonds")]


def test_heading_only_and_scaffolding_chunks_are_dropped() -> None:
    template = "# Daily\n\n## Tasks\n\n- [ ]\n-\nTODO\n\n<!-- fill in -->\n\n---\n\n## Notes\n"
    assert chunk_markdown(template) == []
    assert chunk_markdown("") == []
    assert chunk_markdown("\n\n   \n") == []


def test_scaffolding_beside_real_content_is_kept() -> None:
    chunks = chunk_markdown("## Tasks\n\n- [ ] call the bank\n-\n")
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 4)]


def test_oversized_paragraph_is_split_by_lines() -> None:
    lines = [f"line {i} " + "x" * 60 for i in range(30)]  # ~20 tokens per line
    chunks = chunk_markdown("\n".join(lines), chunk_tokens=50, overlap_tokens=0)
    assert [(c.start_line, c.end_line) for c in chunks][:2] == [(1, 2), (3, 4)]
    assert chunks[-1].end_line == 30
    assert all(estimate_tokens(c.text) <= 50 for c in chunks)


def test_long_single_line_is_cut_into_bounded_pieces() -> None:
    line = "a" * 2_000_000
    chunks = chunk_markdown(f"# Big\n\n{line}\n\nafter\n", chunk_tokens=400)
    pieces = [c for c in chunks if c.start_line == 3]
    assert len(pieces) == 1428  # 2_000_000 / 1401 characters per 400-token piece
    assert "".join(c.text for c in pieces) == line
    assert all(c.end_line == 3 and c.heading == "# Big" for c in pieces)
    assert max(estimate_tokens(c.text) for c in chunks) <= 400
    assert chunks[-1].text == "after" and chunks[-1].start_line == 5


def test_long_cjk_line_pieces_respect_the_budget() -> None:
    line = "单只个股不超过总仓位" * 1000
    chunks = chunk_markdown(line, chunk_tokens=300)
    assert "".join(c.text for c in chunks) == line
    assert [len(c.text) for c in chunks] == [300] * 33 + [100]


def test_hash_is_sha256_of_text() -> None:
    for chunk in chunk_markdown(DOC + "\n中文 记忆\n"):
        assert chunk.hash == hashlib.sha256(chunk.text.encode("utf-8")).hexdigest()


def test_lone_surrogates_do_not_raise() -> None:
    chunks = chunk_markdown("bad \ud800 text\n")
    assert chunks[0].hash == hashlib.sha256(chunks[0].text.encode("utf-8", "surrogatepass")).hexdigest()


def test_degenerate_budgets_still_terminate() -> None:
    text = "alpha beta\n\ngamma\n\n中文内容"
    for tokens, overlap in [(0, 0), (1, 5), (-3, -1), (2, 2)]:
        chunks = chunk_markdown(text, chunk_tokens=tokens, overlap_tokens=overlap)
        assert "".join(c.text for c in chunks).count("gamma") >= 1


# -- properties --------------------------------------------------------------------

_LINE = st.one_of(
    st.text(max_size=60),
    st.sampled_from(
        ["", "# Title", "## Sub", "### ", "- [ ]", "-", "TODO", "<!-- x -->", "---", "```", "~~~",
         "- fact about bonds", "中文记忆内容", "    ", "> quote", "1.", "|---|---|"]
    ),
)
_DOC = st.lists(_LINE, max_size=40).map("\n".join)
_SCAFFOLD_WORDS = re.compile(r"^(?:[-*+]\s*)?(?:\[[ xX]?\]\s*)?(?:todo|tbd|fixme|xxx|n/?a)\s*:?$", re.I)


def _must_be_covered(line: str) -> bool:
    """A conservative 'real content' test: has a letter or digit and looks like no markup."""
    s = line.strip().lstrip("\ufeff")
    if not any(ch.isalnum() for ch in s):
        return False
    return not (s.startswith(("#", "<!--", "1.", "`", "~")) or _SCAFFOLD_WORDS.match(s))


@settings(max_examples=300, deadline=None)
@given(text=_DOC, tokens=st.integers(1, 80), overlap=st.integers(0, 100))
def test_chunks_are_well_formed_for_any_document(text: str, tokens: int, overlap: int) -> None:
    chunks = chunk_markdown(text, chunk_tokens=tokens, overlap_tokens=overlap)
    n_lines = len(text.replace("\r\n", "\n").split("\n")) - text.replace("\r\n", "\n").endswith("\n")
    starts = [c.start_line for c in chunks]
    assert starts == sorted(starts)
    covered: set[int] = set()
    for chunk in chunks:
        assert chunk.text.strip()
        assert 1 <= chunk.start_line <= chunk.end_line <= n_lines
        assert estimate_tokens(chunk.text) <= tokens
        exact = lines_of(text, chunk.start_line, chunk.end_line)
        if chunk.start_line != chunk.end_line:
            assert chunk.text == exact
        else:
            assert chunk.text in exact
        covered.update(range(chunk.start_line, chunk.end_line + 1))
    lines = text.replace("\r\n", "\n").split("\n")
    for number, (line, superseded) in enumerate(zip(lines, hidden_lines(lines), strict=True), 1):
        if _must_be_covered(line) and not superseded:  # a History section or struck line is never indexed
            assert number in covered, (number, line)


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=3000), tokens=st.integers(1, 50))
def test_any_string_terminates_and_pieces_concatenate_to_their_line(text: str, tokens: int) -> None:
    chunks = chunk_markdown(text, chunk_tokens=tokens, overlap_tokens=tokens // 2)
    by_line: dict[int, list[str]] = {}
    for chunk in chunks:
        if chunk.start_line == chunk.end_line:
            by_line.setdefault(chunk.start_line, []).append(chunk.text)
    for number, parts in by_line.items():
        line = lines_of(text, number, number)
        pos = 0
        for part in parts:  # pieces appear in order, and only blank pieces are left out
            found = line.find(part, pos)
            assert found >= 0 and not line[pos:found].strip()
            pos = found + len(part)
        assert not line[pos:].strip()


TRANSCRIPT = """# Session

## Assistant

Did you book the blood test at the clinic?

## User

Yes, last Tuesday.

## Assistant

""" + "Good. Fasting for twelve hours before it keeps the cholesterol figures honest. " * 8 + "\n"


def test_a_short_chunk_carries_the_lines_around_it_as_context() -> None:
    chunks = chunk_markdown(TRANSCRIPT)
    reply = next(c for c in chunks if "last Tuesday" in c.text)
    assert reply.context.startswith("Did you book the blood test at the clinic?\nGood. Fasting")
    assert estimate_tokens(reply.context) <= 128 + 2  # cut to the budget, headings left out
    assert "##" not in reply.context
    long = next(c for c in chunks if "Fasting" in c.text)
    assert long.context == ""  # long enough to mean something alone
    assert all(c.context == "" for c in chunk_markdown(TRANSCRIPT, context_tokens=0))


def test_context_never_holds_superseded_text() -> None:
    text = "# Goals\n\n- Retire at 60\n\n## History\n\n- 2026-01-02: Retire at 55\n"
    (chunk,) = chunk_markdown(text)
    assert "Retire at 55" not in chunk.context and chunk.context == ""


def test_small_chunks_asked_for_get_no_context() -> None:
    # With chunk_tokens=16 every chunk is small by request, not cut short by a heading.
    assert all(c.context == "" for c in chunk_markdown(TRANSCRIPT, chunk_tokens=16, overlap_tokens=0))
    assert any(c.context for c in chunk_markdown(TRANSCRIPT, chunk_tokens=400))


def test_context_stops_at_lines_written_in_another_script() -> None:
    # A daily log: a Chinese entry, then a short English one. Read with the Chinese lines, the
    # English facts would be embedded as a Chinese text about the family.
    log = ("## 13:00 好消息\n- 妹妹打电话说她怀孕了，预产期在明年春天。\n\n"
           "## Flush\n- Prefers aisle seats on flights.\n\n## 14:00\n- Dentist moved to Friday.\n\n"
           "## 15:00\n- 给爸妈打了电话。\n")
    chunks = {c.start_line: c for c in chunk_markdown(log)}
    assert chunks[4].context == "- Dentist moved to Friday."  # the English neighbour after, no Chinese
    assert chunks[10].context == ""  # only English lines stand next to the last Chinese entry
    assert chunks[1].context == ""
