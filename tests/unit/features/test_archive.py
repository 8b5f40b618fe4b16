"""Archive: exports hold exactly the Markdown, byte for byte; hostile imports write nothing."""

from __future__ import annotations

import gzip
import io
import os
import re
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from langchain_md_memory import MarkdownMemory
from langchain_md_memory.features.archive import (
    ArchiveError,
    ArchiveTargetNotEmptyError,
    export_archive,
    import_archive,
)

FILES = {
    "MEMORY.md": "# Profile\n\n- 单只个股不超过总仓位 5%\n- Retire at 55\n".encode(),
    "2026-07-14.md": b"- Bought VTI\r\n- Sold AAPL\r\n",  # CRLF survives
    "topics/fees.md": b"# Fees\n\nKeep TER under 0.2%\n",
    "sessions/2026-07-14-main.md": b"no trailing newline",
    "odd.md": b"\xff\xfe not utf-8 \x00 bytes\n",
}


def _tree(root: Path) -> dict[str, bytes | str]:
    """Every entry under ``root``: file bytes, or "dir"/"link"."""
    out: dict[str, bytes | str] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        out[rel] = "link" if path.is_symlink() else "dir" if path.is_dir() else path.read_bytes()
    return out


@pytest.fixture
def full_memory(memory_dir: Path) -> MarkdownMemory:
    for rel, data in FILES.items():
        (memory_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (memory_dir / rel).write_bytes(data)
    mem = MarkdownMemory(memory_dir, embeddings="none")
    mem.sync()
    return mem


def test_round_trip_preserves_every_markdown_byte(full_memory: MarkdownMemory, tmp_path: Path) -> None:
    archive = full_memory.export_archive(tmp_path / "out" / "memory.tar.gz")
    full_memory.close()
    restored = MarkdownMemory.import_archive(archive, tmp_path / "restored", embeddings="none")
    try:
        got = {rel: (tmp_path / "restored" / rel).read_bytes() for rel in restored.store.list_files()}
        assert got == FILES
        assert restored.status()["files"] == len(FILES)  # the index was rebuilt from the imported files
        assert "Retire at 55" in restored.search("retire")[0].text
    finally:
        restored.close()


def test_round_trip_keeps_unindexed_store_items_out_of_search(memory_dir: Path, tmp_path: Path) -> None:
    with MarkdownMemory(memory_dir, embeddings="none") as mem:
        store = mem.as_store()
        store.put(("users", "alice"), "visible", {"content": "Likes index funds"})
        store.put(("users", "alice"), "hidden", {"content": "Private zebra note"}, index=False)
        archive = mem.export_archive(tmp_path / "memory.tar.gz")
    with tarfile.open(archive) as tar:
        assert sorted(tar.getnames()) == ["users/alice/.store.unindexed.md", "users/alice/store.md"]
    restored = MarkdownMemory.import_archive(archive, tmp_path / "restored", embeddings="none")
    try:
        item = restored.as_store().get(("users", "alice"), "hidden")
        assert item is not None and item.value == {"content": "Private zebra note"}
        assert restored.search("zebra") == []
        assert restored.search("index funds")
    finally:
        restored.close()


def test_round_trip_keeps_a_namespace_with_a_colon(memory_dir: Path, tmp_path: Path) -> None:
    with MarkdownMemory(memory_dir, embeddings="none") as mem:
        mem.as_store().put(("u:42",), "food", {"content": "Loves hotpot"})
        archive = mem.export_archive(tmp_path / "memory.tar.gz")
    with tarfile.open(archive) as tar:
        assert tar.getnames() == ["u:42/store.md"]
    restored = MarkdownMemory.import_archive(archive, tmp_path / "restored", embeddings="none")
    try:
        item = restored.as_store().get(("u:42",), "food")
        assert item is not None and item.value == {"content": "Loves hotpot"}
    finally:
        restored.close()


def test_round_trip_carries_the_state_file(full_memory: MarkdownMemory, tmp_path: Path) -> None:
    full_memory.state.set("dream_last_run", 1767225600.0)
    archive = export_archive(full_memory, tmp_path / "out.tar.gz")
    with MarkdownMemory.import_archive(archive, tmp_path / "restored", embeddings="none") as restored:
        assert restored.state.get("dream_last_run") == 1767225600.0
        assert restored.search("dream_last_run") == []  # bookkeeping is never searchable


def test_export_holds_only_managed_markdown(full_memory: MarkdownMemory, tmp_path: Path) -> None:
    root = full_memory.memory_dir
    (root / ".history").mkdir()
    (root / ".history" / "MEMORY-old.md").write_text("# old\n", encoding="utf-8")
    (root / "credentials.json").write_text('{"key": "sk-secret"}', encoding="utf-8")
    (root / ".env").write_text("OPENAI_API_KEY=sk-secret", encoding="utf-8")
    (root / ".MEMORY.md.123.tmp").write_text("temp", encoding="utf-8")
    outside = tmp_path / "outside.md"
    outside.write_text("secret outside", encoding="utf-8")
    os.symlink(outside, root / "escape.md")
    os.symlink(root / "MEMORY.md", root / "alias.md")  # inside, but a link: left out too

    archive = export_archive(full_memory, tmp_path)

    assert archive == tmp_path / "memory.tar.gz"
    with tarfile.open(archive) as tar:
        members = tar.getmembers()
        assert sorted(m.name for m in members) == sorted(FILES)
        assert {(m.type, m.mode, m.uid, m.gid, m.uname, m.gname) for m in members} == {
            (tarfile.REGTYPE, 0o644, 0, 0, "", "")}
        for m in members:
            handle = tar.extractfile(m)
            assert handle is not None and handle.read() == FILES[m.name]
    full_memory.close()


def test_export_is_deterministic(full_memory: MarkdownMemory, tmp_path: Path) -> None:
    first = full_memory.export_archive(tmp_path / "a.tar.gz").read_bytes()
    second = full_memory.export_archive(tmp_path / "b.tar.gz").read_bytes()
    full_memory.close()
    assert first == second


def test_import_into_an_empty_target_moves_the_tree_in(full_memory: MarkdownMemory, tmp_path: Path) -> None:
    archive = full_memory.export_archive(tmp_path / "m.tar.gz")
    full_memory.close()
    target = tmp_path / "empty"
    target.mkdir()
    names = import_archive(archive, target)
    assert names == sorted(FILES)
    assert {k: v for k, v in _tree(target).items() if v not in ("dir",)} == FILES
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no staging left


def test_import_refuses_a_target_with_memory_unless_overwrite(full_memory: MarkdownMemory,
                                                             tmp_path: Path) -> None:
    archive = full_memory.export_archive(tmp_path / "m.tar.gz")
    full_memory.close()
    target = tmp_path / "existing"
    target.mkdir()
    (target / "MEMORY.md").write_bytes(b"# Mine\n")
    (target / "keep.md").write_bytes(b"# Keep me\n")
    with pytest.raises(ArchiveError, match="already holds 2 memory file"):
        import_archive(archive, target)
    assert _tree(target) == {"MEMORY.md": b"# Mine\n", "keep.md": b"# Keep me\n"}

    import_archive(archive, target, overwrite=True)
    assert (target / "MEMORY.md").read_bytes() == FILES["MEMORY.md"]
    assert (target / "keep.md").read_bytes() == b"# Keep me\n"
    assert (target / "topics" / "fees.md").read_bytes() == FILES["topics/fees.md"]


def test_overwrite_import_does_not_follow_a_symlinked_subfolder(full_memory: MarkdownMemory,
                                                               tmp_path: Path) -> None:
    archive = full_memory.export_archive(tmp_path / "m.tar.gz")
    full_memory.close()
    target, elsewhere = tmp_path / "target", tmp_path / "elsewhere"
    target.mkdir()
    elsewhere.mkdir()
    (target / "MEMORY.md").write_bytes(b"# Mine\n")
    os.symlink(elsewhere, target / "topics")
    with pytest.raises(Exception, match="outside the memory directory"):
        import_archive(archive, target, overwrite=True)
    assert list(elsewhere.iterdir()) == []


# -- hostile archives ----------------------------------------------------------------


def _file(name: str, data: bytes = b"# x\n") -> Callable[[tarfile.TarFile], None]:
    def add(tar: tarfile.TarFile) -> None:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return add


def _pax_named(name: str) -> Callable[[tarfile.TarFile], None]:
    """A member whose real name comes from a pax header (the only way a NUL survives in a name)."""
    def add(tar: tarfile.TarFile) -> None:
        info = tarfile.TarInfo("innocent.md")
        info.pax_headers = {"path": name}
        info.size = 4
        tar.addfile(info, io.BytesIO(b"# x\n"))
    return add


def _special(name: str, kind: bytes, linkname: str = "") -> Callable[[tarfile.TarFile], None]:
    def add(tar: tarfile.TarFile) -> None:
        info = tarfile.TarInfo(name)
        info.type = kind
        info.linkname = linkname
        tar.addfile(info)
    return add


def _declared(name: str, size: int) -> Callable[[tarfile.TarFile], None]:
    """A header claiming ``size`` bytes, with only a little data behind it."""
    def add(tar: tarfile.TarFile) -> None:
        info = tarfile.TarInfo(name)
        info.size = size
        tar.fileobj.write(info.tobuf(tar.format, tar.encoding, tar.errors))
        tar.fileobj.write(b"\0" * 1024)
    return add


HOSTILE = {
    "absolute": [_file("/tmp/evil.md")],
    "dotdot": [_file("../evil.md")],
    "dotdot-nested": [_file("ok.md"), _file("topics/../../evil.md")],
    "symlink": [_special("link.md", tarfile.SYMTYPE, "/etc/passwd")],
    "symlink-then-write": [_special("sessions", tarfile.SYMTYPE, ".."), _file("sessions/evil.md")],
    "hardlink": [_file("ok.md"), _special("hard.md", tarfile.LNKTYPE, "/etc/passwd")],
    "char-device": [_special("dev.md", tarfile.CHRTYPE)],
    "block-device": [_special("blk.md", tarfile.BLKTYPE)],
    "fifo": [_special("fifo.md", tarfile.FIFOTYPE)],
    "not-markdown": [_file("MEMORY.md"), _file("index.sqlite", b"SQLite format 3\0")],
    "hidden": [_file(".history/MEMORY-old.md")],
    "backslash": [_file("..\\evil.md")],
    "nul": [_pax_named("evil.md\x00.txt")],
    "pax-dotdot": [_pax_named("../../evil.md")],
    "duplicate": [_file("MEMORY.md", b"# one\n"), _file("./MEMORY.md", b"# two\n")],
    "member-too-big": [_declared("big.md", 40 * 1024 * 1024)],
    "total-too-big": [_file(f"f{i}.md", b"x" * 600) for i in range(4)],
    "too-many-files": [_file(f"f{i}.md") for i in range(6)],
}


REASON = {
    "absolute": "absolute path", "dotdot": "'..' is not allowed", "dotdot-nested": "'..' is not allowed",
    "pax-dotdot": "'..' is not allowed", "symlink": "links are not allowed",
    "symlink-then-write": "links are not allowed", "hardlink": "links are not allowed",
    "char-device": "only regular files", "block-device": "only regular files", "fifo": "only regular files",
    "not-markdown": "'index.sqlite': only visible '.md'", "hidden": "only visible '.md'",
    "backslash": "NUL or backslash", "nul": "NUL or backslash",
    "duplicate": "appears twice", "member-too-big": "41943040 bytes, over max_member_bytes",
    "total-too-big": "more than max_bytes=2000", "too-many-files": "more than max_files=5",
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_archive_is_refused_and_nothing_is_written(tmp_path: Path, case: str) -> None:
    archive = tmp_path / "hostile.tar.gz"
    with tarfile.open(archive, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for add in HOSTILE[case]:
            add(tar)
    target = tmp_path / "box" / "memory"
    target.parent.mkdir()
    before = _tree(tmp_path)

    with pytest.raises(ArchiveError, match=re.escape(REASON[case])):
        import_archive(archive, target, max_bytes=2000, max_files=5)

    assert _tree(tmp_path) == before  # nothing inside the target, nothing beside it
    assert not (tmp_path / "evil.md").exists() and not (tmp_path / "box" / "evil.md").exists()


def test_refusal_leaves_an_existing_target_untouched(tmp_path: Path) -> None:
    archive = tmp_path / "hostile.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        _file("fine.md")(tar)
        _special("zz.md", tarfile.SYMTYPE, "/etc/passwd")(tar)
    target = tmp_path / "memory"
    target.mkdir()
    (target / "index.sqlite").write_bytes(b"not memory")
    before = _tree(tmp_path)
    with pytest.raises(ArchiveError, match="links are not allowed"):
        import_archive(archive, target, overwrite=True)
    assert _tree(tmp_path) == before


def test_corrupt_archive_is_refused_cleanly(tmp_path: Path) -> None:
    archive = tmp_path / "broken.tar.gz"
    archive.write_bytes(b"\x1f\x8b not really gzip")
    before = _tree(tmp_path)
    with pytest.raises(ArchiveError, match="Cannot read the archive"):
        import_archive(archive, tmp_path / "memory")
    assert _tree(tmp_path) == before


def test_a_refused_import_creates_no_folder_on_the_way_to_the_target(tmp_path: Path) -> None:
    archive = tmp_path / "broken.tar.gz"
    archive.write_bytes(b"\x1f\x8b not really gzip")
    before = _tree(tmp_path)
    with pytest.raises(ArchiveError):
        import_archive(archive, tmp_path / "new" / "deeper" / "memory")
    assert _tree(tmp_path) == before  # neither new/ nor new/deeper/ was left behind


def test_a_file_that_is_no_archive_gets_a_whole_one_line_message(tmp_path: Path) -> None:
    archive = tmp_path / "notes.tar.gz"  # gzip-compressed text: tarfile lists each format it tried
    archive.write_bytes(gzip.compress(b"a short note, not a tar archive\n"))
    with pytest.raises(ArchiveError) as caught:
        import_archive(archive, tmp_path / "memory")
    message = str(caught.value)
    assert message.endswith("not a tar archive (plain, gzip, bzip2 or xz)")
    assert "\n" not in message


def test_a_target_with_memory_names_the_keyword_that_overwrites(full_memory: MarkdownMemory,
                                                                 tmp_path: Path) -> None:
    archive = full_memory.export_archive(tmp_path / "m.tar.gz")
    with pytest.raises(ArchiveTargetNotEmptyError, match=r"import with overwrite=True to replace") as caught:
        import_archive(archive, full_memory.memory_dir)
    assert caught.value.target == full_memory.memory_dir and "MEMORY.md" in caught.value.existing


def test_missing_archive_is_reported_and_creates_nothing(tmp_path: Path) -> None:
    with pytest.raises(ArchiveError, match="No archive file at"):
        import_archive(tmp_path / "nope.tar.gz", tmp_path / "memory")
    assert list(tmp_path.iterdir()) == []


def test_archive_with_directory_entries_from_plain_tar_is_accepted(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "topics").mkdir(parents=True)
    (src / "MEMORY.md").write_bytes(b"# M\n")
    (src / "topics" / "a.md").write_bytes(b"# A\n")
    archive = tmp_path / "plain.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(src, arcname=".")
    assert import_archive(archive, tmp_path / "memory") == ["MEMORY.md", "topics/a.md"]
    assert (tmp_path / "memory" / "topics" / "a.md").read_bytes() == b"# A\n"


def test_cli_export_then_import(full_memory: MarkdownMemory, tmp_path: Path) -> None:
    from langchain_md_memory.cli import main

    full_memory.close()
    out, err = io.StringIO(), io.StringIO()
    archive = tmp_path / "cli.tar.gz"
    assert main(["--dir", str(full_memory.memory_dir), "--embeddings", "none", "export", str(archive)],
                out=out, err=err) == 0, err.getvalue()
    assert str(archive) in out.getvalue()
    target = tmp_path / "cli-restored"
    assert main(["--dir", str(target), "--embeddings", "none", "import", str(archive)], out=out, err=err) == 0
    assert f"({len(FILES)} files indexed)" in out.getvalue()
    assert {rel: (target / rel).read_bytes() for rel in FILES} == FILES
    err = io.StringIO()
    assert main(["--dir", str(target), "--embeddings", "none", "import", str(archive)], out=out, err=err) == 2
    assert err.getvalue().startswith("md-memory: error: ") and "overwrite" in err.getvalue()
