import datetime as dt

import pytest

from langchain_md_memory.errors import MemoryPathError
from langchain_md_memory.files import paths
from langchain_md_memory.files.paths import (
    daily_date,
    file_kind,
    is_managed_file,
    is_memory_file,
    is_unindexed_file,
    normalize_relpath,
    resolve_alias,
    resolve_memory_path,
)


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("MEMORY.md", "evergreen"),
        ("goals.md", "evergreen"),
        ("topics/2026-01-02-notes.md", "evergreen"),
        ("2026-07-14.md", "daily"),
        ("archive/2026-07-14.md", "daily"),
        ("sessions/2026-07-14-main.md", "session"),
        ("sessions/2026-07-14.md", "session"),
        ("2026-13-45.md", "evergreen"),
    ],
)
def test_file_kind_follows_folder_and_date_name(path, kind):
    assert file_kind(path) == kind


def test_daily_date_parses_only_real_dates():
    assert daily_date("2026-02-28.md") == dt.date(2026, 2, 28)
    assert daily_date("2026-02-30.md") is None
    assert daily_date("sessions/2026-02-28.md") is None


def test_aliases_map_to_long_term_and_todays_file():
    assert resolve_alias("long_term") == "MEMORY.md"
    assert resolve_alias("daily", dt.date(2026, 7, 14)) == "2026-07-14.md"
    assert resolve_alias("goals.md") == "goals.md"


@pytest.mark.parametrize(
    ("path", "managed", "unindexed"),
    [
        ("MEMORY.md", True, False),
        ("notes.txt", False, False),
        ("index.sqlite", False, False),
        (".MEMORY.md.abc.tmp", False, False),
        (".obsidian/x.md", False, False),
        ("users/alice/.store.unindexed.md", False, True),
        (".history/.store.unindexed.md", False, False),
        (".unindexed.md", False, False),
    ],
)
def test_managed_and_unindexed_files_are_told_apart(path, managed, unindexed):
    assert is_managed_file(path) is managed
    assert is_unindexed_file(path) is unindexed
    assert is_memory_file(path) is (managed or unindexed)


def test_normalize_relpath_drops_dot_parts_and_keeps_posix_form():
    assert normalize_relpath("./a/./b.md") == "a/b.md"


@pytest.mark.parametrize("path", ["u:42/store.md", "a:b.md", "C:/x.md", "c:x.md", "notes/12:30.md"])
def test_a_colon_is_an_ordinary_character_of_a_memory_path(path):
    assert normalize_relpath(path) == path


def test_on_windows_a_colon_is_refused_where_it_would_name_a_drive_or_a_stream(monkeypatch, tmp_path):
    monkeypatch.setattr(paths, "_WINDOWS", True)
    for path in ("C:x.md", "MEMORY.md:hidden", "u:42/store.md"):
        with pytest.raises(MemoryPathError, match=r"':'.*Windows"):
            resolve_memory_path(tmp_path, path)
    assert resolve_memory_path(tmp_path, "MEMORY.md") == tmp_path.resolve() / "MEMORY.md"
