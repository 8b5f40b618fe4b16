"""The fast chunker and keyword terms give byte for byte what the straightforward code gave.

``tests/support/reference_chunking.py`` holds the chunker, ``index_terms``, ``hidden_lines`` and
``strip_annotations`` as they were before their fast paths. Chunks (text, lines, heading path,
context, hash), index terms and query tokens must match on any Markdown: CJK, accents, fences,
headings, History sections, struck lines, annotations, over-long lines, odd line ends.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from langchain_md_memory.files.chunker import _SCAFFOLD_RE, _is_scaffold, chunk_markdown
from langchain_md_memory.files.facts import hidden_lines, strip_annotations
from langchain_md_memory.text import index_terms, query_terms, token_set
from langchain_md_memory.text.stopwords import content_terms
from tests.support.reference_chunking import (
    reference_chunk_markdown,
    reference_hidden_lines,
    reference_index_terms,
    reference_query_tokens,
    reference_stem,
    reference_strip_annotations,
)

_LINES = [
    "",
    " ",
    "\t",
    "# Goals",
    "## Retirement ##",
    "### History",
    "## history",
    "## HISTORY",
    "## Hiſtory",  # long s: casefolds to "history"
    "## 历史",
    "## Superseded",
    "#### deeper",
    "   # three spaces",
    "    # four spaces is not a heading",
    "#no space",
    "######## too deep",
    "```python",
    "```",
    "~~~",
    "````",
    "``` inline `tick`",
    "   ```",
    "- Retire at 55.",
    "- ~~Retire at 65~~ (superseded 2026-12-03)",
    "~~struck~~ at the start",
    "a ~~ not struck",
    "- Prefers tea <!-- src: thread=t1 msg=m2 2026-12-03 -->",
    "- Bond ladder ends 2031 <!-- expires: 2027-01-31 -->",
    "<!-- a plain comment -->",
    "- [ ] ",
    "- [x] done",
    "TODO:",
    "---",
    "***",
    "> ",
    "> quoted wisdom",
    "| a | b |",
    "|---|:-:|",
    "单只个股不超过总仓位 5%",
    "用户偏好：不碰杠杆，每月定投指数基金。",
    "NVDA仓位上限",
    "Café crème, naïve résumé",
    "ＮＶＤＡ ｆｕｌｌｗｉｄｔｈ",
    "zero\u200bwidth\u00adsoft",
    "日本語のテキスト・カタカナ",
    "한국어 문장",
    "emoji 🙂 and symbols © ™",
    "snake_case_word and dark-mode",
    "tab\tseparated\tcells",
    "trailing spaces   ",
    "\ufeff# BOM heading",
    "carriage\rreturn inside",
    "word " * 150,
    "长" * 700,
    "x" * 2000,
    "mixed 中文 and English " * 40,
    "-\u3000\u3000[ ]",
    "١٢٣٤٥٦٧.",
    "12) [X]   TODO :",
    "* [x] fixme",
    "<!-- a note -->",
    "| :--- | ---: |",
    "- - - - - - - - - -",
    ">>>",
    "N/A",
    "…",
    "- ~~old fact~~ new fact",
    "## Hiſtory",
]

_line = st.one_of(st.sampled_from(_LINES), st.text(max_size=60))
_text = st.lists(_line, max_size=40).map("\n".join) | st.lists(_line, max_size=40).map("\r\n".join)


def _assert_same_chunks(text: str, chunk_tokens: int, overlap: int, context: int) -> None:
    fast = chunk_markdown(text, chunk_tokens=chunk_tokens, overlap_tokens=overlap, context_tokens=context)
    slow = reference_chunk_markdown(text, chunk_tokens=chunk_tokens, overlap_tokens=overlap,
                                    context_tokens=context)
    assert fast == slow


def _assert_same_terms(text: str) -> None:
    assert index_terms(text) == reference_index_terms(text)
    assert strip_annotations(text) == reference_strip_annotations(text)
    tokens = reference_query_tokens(text)
    assert token_set(text) == frozenset(map(reference_stem, tokens))
    kept = content_terms(list(dict.fromkeys(tokens)))
    assert query_terms(text) == list(dict.fromkeys(map(reference_stem, kept)))


def test_every_sample_line_alone_chunks_and_tokenises_as_before() -> None:
    for line in _LINES:
        _assert_same_terms(line)
        wrapped = (f"# Title\n\n{line}\n", f"```\n{line}\n```\n", f"## History\n{line}\n# Next\n{line}")
        for text in (line, *wrapped):
            _assert_same_chunks(text, 400, 80, 128)
            _assert_same_chunks(text, 12, 4, 16)
            assert hidden_lines(text.split("\n")) == reference_hidden_lines(text.split("\n"))


def test_a_history_section_and_struck_lines_are_hidden_as_before() -> None:
    text = ("# Plan\n- Retire at 55\n## Hiſtory\n- Retire at 65\n```\n## History\n```\n"
            "# Later\n- ~~old~~ new\n")
    lines = text.split("\n")
    assert hidden_lines(lines) == reference_hidden_lines(lines)
    assert any(hidden_lines(lines))
    _assert_same_chunks(text, 400, 80, 128)


def test_the_bench_memory_chunks_as_before(tmp_path) -> None:
    from bench.synthetic import write_memory

    layout = write_memory(tmp_path, 600, sections_per_file=5)
    for name in layout.files[:40]:
        text = (tmp_path / name).read_text(encoding="utf-8")
        _assert_same_chunks(text, 400, 80, 128)
        for chunk in chunk_markdown(text):
            visible = strip_annotations(chunk.text)
            assert index_terms(f"{chunk.heading}\n{visible}") == reference_index_terms(
                f"{chunk.heading}\n{reference_strip_annotations(chunk.text)}"
            )


_SCAFFOLD_ALPHABET = "-*+_|:>.)[]xX0123 \t\u3000\u2026tToOdDbBfFiImMeEnN/aA<!>٣"


@settings(max_examples=500, deadline=None)
@given(st.text(_SCAFFOLD_ALPHABET, max_size=14) | st.sampled_from(_LINES))
def test_the_scaffold_prefilter_never_hides_a_line_the_regex_matches(line: str) -> None:
    stripped = line.strip()
    if stripped:
        assert _is_scaffold(stripped) == (_SCAFFOLD_RE.match(stripped) is not None)


_SIZES = [(400, 80, 128), (40, 10, 64), (8, 3, 8), (3, 1, 0), (1, 0, 128), (60, 59, 400)]


@settings(max_examples=300, deadline=None)
@given(_text, st.sampled_from(_SIZES))
def test_any_markdown_chunks_as_before(text: str, sizes: tuple[int, int, int]) -> None:
    _assert_same_chunks(text, *sizes)
    lines = text.split("\n")
    assert hidden_lines(lines) == reference_hidden_lines(lines)


@settings(max_examples=300, deadline=None)
@given(_text)
def test_any_text_has_the_same_index_terms_and_query_tokens_as_before(text: str) -> None:
    _assert_same_terms(text)
