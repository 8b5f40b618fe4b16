"""MarkdownStore: the path guard, exact file contents after each change, atomic writes."""

from __future__ import annotations

import datetime as dt
import errno
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from langchain_md_memory.errors import MemoryInputError, MemoryPathError, MemoryStoreError
from langchain_md_memory.files.paths import HISTORY_DIR
from langchain_md_memory.files.store import LOCK_FILE, MarkdownStore

TODAY = dt.date(2026, 7, 14)


@pytest.fixture
def store(tmp_path: Path) -> MarkdownStore:
    return MarkdownStore(tmp_path / "mem")


def raw(store: MarkdownStore, rel: str) -> bytes:
    return (store.root / rel).read_bytes()


def no_temp_files(store: MarkdownStore) -> bool:
    return not [p for p in store.root.rglob("*") if p.name.endswith(".tmp")]


# -- construction and aliases ------------------------------------------------------


def test_constructor_creates_missing_parents(tmp_path: Path) -> None:
    store = MarkdownStore(tmp_path / "a" / "b")
    assert store.root == (tmp_path / "a" / "b").resolve()
    assert store.root.is_dir()


def test_long_term_alias_writes_memory_md(store: MarkdownStore) -> None:
    store.append("long_term", "- likes tea")
    assert raw(store, "MEMORY.md") == b"- likes tea\n"
    assert store.relpath("long_term") == "MEMORY.md"


def test_daily_alias_names_todays_file(store: MarkdownStore) -> None:
    today = f"{dt.date.today().isoformat()}.md"
    store.append("daily", "bought VTI")
    assert store.relpath("daily") == today
    assert store.read(today) == "bought VTI\n"
    assert store.resolve("daily") == store.root / today


def test_relpath_normalises_dots_and_slashes(store: MarkdownStore) -> None:
    assert store.relpath("./notes//goals.md") == "notes/goals.md"


# -- reading -----------------------------------------------------------------------


def test_read_missing_file_names_it(store: MarkdownStore) -> None:
    with pytest.raises(MemoryPathError, match=r"'nope\.md' does not exist"):
        store.read("nope.md")


def test_read_replaces_invalid_utf8(store: MarkdownStore) -> None:
    (store.root / "x.md").write_bytes(b"caf\xe9\n")
    assert store.read("x.md") == "caf\ufffd\n"


def test_read_lines_returns_inclusive_range_with_newlines(store: MarkdownStore) -> None:
    store.write("x.md", "one\ntwo\nthree\nfour\n")
    assert store.read_lines("x.md", 2, 3) == "two\nthree\n"
    assert store.read_lines("x.md", 3) == "three\nfour\n"
    assert store.read_lines("x.md", None, 1) == "one\n"
    assert store.read_lines("x.md") == "one\ntwo\nthree\nfour\n"


def test_read_lines_clamps_end_past_eof(store: MarkdownStore) -> None:
    store.write("x.md", "one\ntwo")
    assert store.read_lines("x.md", 2, 99) == "two"
    assert store.read_lines("x.md", 5, 9) == ""


def test_read_lines_counts_only_newlines_as_line_ends(store: MarkdownStore) -> None:
    (store.root / "x.md").write_bytes(b"a\x0cb\r\nc\rd\ne\n")
    assert store.read_lines("x.md", 2, 2) == "c\rd\n"
    assert store.read_lines("x.md", 3, 3) == "e\n"


@pytest.mark.parametrize(("start", "end", "message"), [(0, None, "start_line"), (3, 2, "before start_line")])
def test_read_lines_rejects_bad_ranges(
    store: MarkdownStore, start: int, end: int | None, message: str
) -> None:
    store.write("x.md", "one\ntwo\nthree\n")
    with pytest.raises(ValueError, match=message):
        store.read_lines("x.md", start, end)


def test_stat_reports_size_and_none_when_missing(store: MarkdownStore) -> None:
    assert store.stat("x.md") is None
    store.write("x.md", "12345")
    st = store.stat("x.md")
    assert st is not None and st[1] == 5 and st[0] == os.stat(store.root / "x.md").st_mtime_ns
    assert store.exists("x.md") and not store.exists("y.md")


# -- append / edit / delete --------------------------------------------------------


def test_append_adds_separator_only_when_missing(store: MarkdownStore) -> None:
    (store.root / "MEMORY.md").write_text("- a")
    store.append("MEMORY.md", "- b")
    assert raw(store, "MEMORY.md") == b"- a\n- b\n"
    store.append("MEMORY.md", "- c\n")
    assert raw(store, "MEMORY.md") == b"- a\n- b\n- c\n"


def test_append_creates_file_and_parent_folders(store: MarkdownStore) -> None:
    store.append("sessions/2026-07-14-chat.md", "hello")
    assert raw(store, "sessions/2026-07-14-chat.md") == b"hello\n"


def test_append_empty_content_is_a_noop(store: MarkdownStore) -> None:
    store.append("MEMORY.md", "")
    assert not store.exists("MEMORY.md")


def test_edit_of_text_that_occurs_twice_is_refused_with_the_count(store: MarkdownStore) -> None:
    store.write("MEMORY.md", "## A\nrisk: low\n## B\nrisk: low\n")
    with pytest.raises(MemoryInputError, match="occurs 2 times"):
        store.edit("MEMORY.md", "risk: low", "risk: medium")
    with pytest.raises(MemoryInputError, match="occurs 2 times"):
        store.delete_text("MEMORY.md", "risk: low")
    assert raw(store, "MEMORY.md") == b"## A\nrisk: low\n## B\nrisk: low\n"
    assert store.edit("MEMORY.md", "## B\nrisk: low", "## B\nrisk: medium") is True  # more context: one match
    assert raw(store, "MEMORY.md") == b"## A\nrisk: low\n## B\nrisk: medium\n"


def test_whitespace_only_old_text_is_refused(store: MarkdownStore) -> None:
    store.write("MEMORY.md", "- one\n- two\n")
    for needle in ("\n", "  ", "\t\n"):
        with pytest.raises(MemoryInputError, match="only whitespace"):
            store.delete_text("MEMORY.md", needle)
    assert raw(store, "MEMORY.md") == b"- one\n- two\n"


def test_lines_with_invalid_utf8_can_be_replaced_by_number(store: MarkdownStore) -> None:
    (store.root / "MEMORY.md").write_bytes(b"- good\n- bad \xff\xfe bytes\n- last\n")
    assert "\ufffd" in store.read("MEMORY.md")
    assert store.edit("MEMORY.md", "- bad \ufffd\ufffd bytes", "- fixed") is False  # never matchable as text
    old = store.replace_lines("MEMORY.md", 2, 2, "- fixed")
    assert "bad" in old
    assert raw(store, "MEMORY.md") == b"- good\n- fixed\n- last\n"
    store.replace_lines("MEMORY.md", 3, 3, "")
    assert raw(store, "MEMORY.md") == b"- good\n- fixed\n"
    with pytest.raises(MemoryPathError, match="has 2 line"):
        store.replace_lines("MEMORY.md", 5, 5, "x")


def test_append_keeps_every_existing_line_ending(store: MarkdownStore) -> None:
    mixed = b"- crlf one\r\n- lf two\n- crlf three\r\n"
    (store.root / "MEMORY.md").write_bytes(mixed)
    store.append("MEMORY.md", "- new")
    assert raw(store, "MEMORY.md") == mixed + b"- new\r\n"
    (store.root / "n.md").write_bytes(b"- lf\n- crlf\r\n- no line end")
    store.append("n.md", "- next")  # the last line break the file used is CRLF
    assert raw(store, "n.md") == b"- lf\n- crlf\r\n- no line end\r\n- next\r\n"


def test_edit_returns_false_when_text_or_file_absent(store: MarkdownStore) -> None:
    assert store.edit("MEMORY.md", "x", "y") is False
    assert not store.exists("MEMORY.md")
    store.write("MEMORY.md", "abc\n")
    assert store.edit("MEMORY.md", "zzz", "y") is False
    assert raw(store, "MEMORY.md") == b"abc\n"


def test_edit_rejects_empty_old_text(store: MarkdownStore) -> None:
    store.write("MEMORY.md", "abc\n")
    with pytest.raises(ValueError, match="old_text is empty"):
        store.edit("MEMORY.md", "", "x")


def test_edit_keeps_invalid_bytes_on_other_lines(store: MarkdownStore) -> None:
    (store.root / "x.md").write_bytes(b"caf\xe9 \xff\xfe\nprice 10\n")
    assert store.edit("x.md", "price 10", "price 12")
    assert raw(store, "x.md") == b"caf\xe9 \xff\xfe\nprice 12\n"


def test_edit_of_crlf_file_matches_lf_text_and_keeps_crlf(store: MarkdownStore) -> None:
    (store.root / "x.md").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    assert store.read("x.md") == "one\ntwo\nthree\n"
    assert store.edit("x.md", "two\nthree", "2\n3")
    assert raw(store, "x.md") == b"one\r\n2\r\n3\r\n"


def test_edit_keeps_permission_bits(store: MarkdownStore) -> None:
    store.write("x.md", "a\n")
    os.chmod(store.root / "x.md", 0o600)
    store.edit("x.md", "a", "b")
    assert (store.root / "x.md").stat().st_mode & 0o777 == 0o600


def test_delete_removes_whole_line(store: MarkdownStore) -> None:
    store.write("MEMORY.md", "- a\n- likes tea\n- b\n")
    assert store.delete_text("MEMORY.md", "- likes tea") is True
    assert raw(store, "MEMORY.md") == b"- a\n- b\n"


def test_delete_folds_blank_lines_left_behind(store: MarkdownStore) -> None:
    store.write("MEMORY.md", "a\n\n\nold fact\n\n\nb\n")
    assert store.delete_text("MEMORY.md", "old fact")
    assert raw(store, "MEMORY.md") == b"a\n\nb\n"


def test_delete_inside_a_line_keeps_the_rest(store: MarkdownStore) -> None:
    store.write("MEMORY.md", "I like tea and coffee\nnext\n")
    assert store.delete_text("MEMORY.md", " and coffee")
    assert raw(store, "MEMORY.md") == b"I like tea\nnext\n"


def test_delete_first_and_last_paragraphs_leaves_no_stray_blank_lines(store: MarkdownStore) -> None:
    store.write("MEMORY.md", "first\n\nmiddle\n\nlast\n")
    assert store.delete_text("MEMORY.md", "first")
    assert raw(store, "MEMORY.md") == b"middle\n\nlast\n"
    assert store.delete_text("MEMORY.md", "last")
    assert raw(store, "MEMORY.md") == b"middle\n"


def test_delete_returns_false_when_absent(store: MarkdownStore) -> None:
    assert store.delete_text("MEMORY.md", "x") is False
    store.write("MEMORY.md", "abc\n")
    assert store.delete_text("MEMORY.md", "zzz") is False
    assert raw(store, "MEMORY.md") == b"abc\n"


# -- atomic writes -----------------------------------------------------------------


def test_write_leaves_no_temp_file(store: MarkdownStore) -> None:
    store.write("x.md", "new\n")
    store.write("x.md", "newer\n")
    assert raw(store, "x.md") == b"newer\n"
    assert no_temp_files(store)


def test_failed_replace_keeps_old_content_and_cleans_up(
    store: MarkdownStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.write("x.md", "old\n")

    def boom(src: str, dst: object, **kwargs: object) -> None:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(MemoryStoreError, match="Permission denied") as info:
        store.append("x.md", "new")
    assert isinstance(info.value.__cause__, PermissionError)
    assert raw(store, "x.md") == b"old\n"
    assert no_temp_files(store)


def test_disk_full_surfaces_as_memory_store_error(
    store: MarkdownStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.write("x.md", "old\n")

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(MemoryStoreError, match=r"No space left on device.*unchanged"):
        store.edit("x.md", "old", "new")
    assert raw(store, "x.md") == b"old\n"
    assert no_temp_files(store)


def test_non_oserror_failure_also_cleans_temp_file(
    store: MarkdownStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.write("x.md", "old\n")

    def broken(src: str, dst: object, **kwargs: object) -> None:
        raise RuntimeError("injected")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(RuntimeError, match="injected"):
        store.write("x.md", "new\n")
    assert raw(store, "x.md") == b"old\n"
    assert no_temp_files(store)


# -- the path guard ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("../x.md", "outside"),
        ("/etc/passwd", "absolute"),
        ("a/../../x.md", "outside"),
        ("x\\..\\y.md", "backslash"),
        ("a\x00.md", "NUL"),
        ("~/x.md", "absolute"),
        ("", "empty"),
    ],
)
def test_guard_refuses_escaping_paths(store: MarkdownStore, path: str, problem: str) -> None:
    before = {p.name for p in store.root.iterdir()} - {LOCK_FILE}
    for call in (store.read, lambda p: store.write(p, "x"), lambda p: store.append(p, "x"), store.exists):
        with pytest.raises(MemoryPathError, match=problem):
            call(path)
    assert {p.name for p in store.root.iterdir()} - {LOCK_FILE} == before


def test_guard_refuses_symlink_leading_outside(store: MarkdownStore, tmp_path: Path) -> None:
    outside = tmp_path / "secret.md"
    outside.write_text("secret\n")
    (store.root / "link.md").symlink_to(outside)
    with pytest.raises(MemoryPathError, match="symlink"):
        store.read("link.md")
    with pytest.raises(MemoryPathError, match="symlink"):
        store.append("link.md", "pwned")
    (store.root / "dir").symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(MemoryPathError, match="symlink"):
        store.write("dir/new.md", "pwned")
    assert outside.read_text() == "secret\n"
    assert not (tmp_path / "new.md").exists()


def test_symlink_inside_root_writes_through_to_target(store: MarkdownStore) -> None:
    store.write("real.md", "a\n")
    (store.root / "alias.md").symlink_to(store.root / "real.md")
    store.append("alias.md", "b")
    assert raw(store, "real.md") == b"a\nb\n"
    assert (store.root / "alias.md").is_symlink()


def test_writing_to_a_directory_is_refused(store: MarkdownStore) -> None:
    (store.root / "notes.md").mkdir()
    with pytest.raises(MemoryPathError, match="is a directory"):
        store.write("notes.md", "x")


# -- listing -----------------------------------------------------------------------


def test_list_files_returns_managed_markdown_only(store: MarkdownStore, tmp_path: Path) -> None:
    for rel in ["MEMORY.md", "2026-07-14.md", "sessions/s1.md", "topics/deep/goals.md"]:
        store.write(rel, "x\n")
    for junk in ["index.sqlite", "index.sqlite-wal", "notes.txt", ".hidden.md", ".MEMORY.md.abc.tmp",
                 "~draft.md", ".obsidian/cache.md", "sessions/.x.md.tmp"]:
        (store.root / junk).parent.mkdir(parents=True, exist_ok=True)
        (store.root / junk).write_text("junk")
    (tmp_path / "outside.md").write_text("secret")
    (store.root / "escape.md").symlink_to(tmp_path / "outside.md")
    (store.root / "dangling.md").symlink_to(store.root / "gone.md")
    (store.root / "back\\slash.md").write_text("odd name")
    assert store.list_files() == ["2026-07-14.md", "MEMORY.md", "sessions/s1.md", "topics/deep/goals.md"]


def test_list_files_of_empty_directory_is_empty(store: MarkdownStore) -> None:
    assert store.list_files() == []


def test_sweep_removes_only_stale_temp_files_of_interrupted_writes(tmp_path: Path) -> None:
    store = MarkdownStore(tmp_path)
    store.write("MEMORY.md", "kept\n")
    (tmp_path / "sessions").mkdir()
    stale = tmp_path / "sessions" / ".a.md.x1y2.tmp"
    fresh = tmp_path / ".MEMORY.md.z9.tmp"
    other = tmp_path / ".notes.txt"
    for path in (stale, fresh, other):
        path.write_text("partial")
    old = time.time() - 7200
    os.utime(stale, (old, old))
    os.utime(other, (old, old))
    assert store.sweep_temp_files(max_age_s=3600) == 1
    assert not stale.exists()
    assert fresh.exists() and other.exists()
    assert (tmp_path / "MEMORY.md").read_text() == "kept\n"


def test_sweep_looks_inside_the_folders_the_package_writes_into(tmp_path: Path) -> None:
    # A dream killed while saving its backup leaves a temp file in the hidden history folder.
    store = MarkdownStore(tmp_path)
    (tmp_path / HISTORY_DIR).mkdir()
    (tmp_path / ".git").mkdir()
    dead = _dead_pid()
    orphan = tmp_path / HISTORY_DIR / f".MEMORY-20261203T090121Z.md.{dead}.6_u310qk.tmp"
    foreign = tmp_path / ".git" / f".index.{dead}.ab.tmp"
    for path in (orphan, foreign):
        path.write_text("partial")
    assert store.sweep_temp_files() == 1
    assert not orphan.exists() and foreign.exists()


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_read_stamped_gives_the_bytes_and_the_stamp_of_one_version(store: MarkdownStore) -> None:
    store.write("notes/a.md", "- one\n")
    assert store.read_stamped("notes/a.md", max_bytes=1_000) == (store.stat("notes/a.md"), b"- one\n")
    stamp, data = store.read_stamped("notes/a.md", max_bytes=3) or ((0, 0), b"")
    assert stamp == store.stat("notes/a.md") and data is None  # over the limit: stamped, not read
    assert store.read_stamped("notes/missing.md", max_bytes=1_000) is None
    assert store.read_stamped("missing/b.md", max_bytes=1_000) is None


def test_read_stamped_follows_a_symlink_inside_and_refuses_one_outside(
    store: MarkdownStore, tmp_path: Path
) -> None:
    store.write("real/a.md", "- inside\n")
    os.symlink("real", store.root / "linked")
    os.symlink("real/a.md", store.root / "alias.md")
    assert store.read_stamped("linked/a.md", max_bytes=1_000) == (store.stat("real/a.md"), b"- inside\n")
    assert store.read_stamped("alias.md", max_bytes=1_000) == (store.stat("real/a.md"), b"- inside\n")
    outside = tmp_path / "outside.md"
    outside.write_text("- secret\n")
    os.symlink(outside, store.root / "escape.md")
    with pytest.raises(MemoryPathError, match="outside the memory directory"):
        store.read_stamped("escape.md", max_bytes=1_000)
    with pytest.raises(MemoryPathError, match="outside"):
        store.read_stamped("../outside.md", max_bytes=1_000)
