"""Archive bombs are refused from their raw headers, before tarfile reads them.

Before the pre-scan, a small .tar.gz whose PAX header declared 1 GB was parsed whole by
tarfile (minutes, ~1 GB of memory) before any cap applied, even with max_bytes=1024.
"""

from __future__ import annotations

import gzip
import io
import resource
import tarfile
import time
from pathlib import Path

import pytest

from langchain_md_memory.features.archive import ArchiveError, import_archive

pytestmark = pytest.mark.timeout(30)


def _header(name: str, size: int, kind: bytes) -> bytes:
    info = tarfile.TarInfo(name)
    info.size = 0
    block = bytearray(info.tobuf(format=tarfile.USTAR_FORMAT))
    block[124:136] = f"{size:011o}\0".encode()
    block[156:157] = kind
    block[148:156] = b"        "
    block[148:156] = f"{sum(block[:512]):06o}\0 ".encode()
    return bytes(block[:512])


def _write_bomb(path: Path, declared: int, body: int) -> None:
    """A gzip'd tar whose first (PAX) header declares ``declared`` bytes; ``body`` zeros follow."""
    with gzip.open(path, "wb", compresslevel=9) as gz:
        gz.write(_header("././@PaxHeader", declared, b"x"))
        chunk = b"\0" * (1 << 20)
        for _ in range(body >> 20):
            gz.write(chunk)


def _rss_kb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


@pytest.mark.parametrize("declared", [1 << 30, 50 << 20])
def test_pax_header_bomb_is_refused_at_once_without_memory_growth(tmp_path: Path, declared: int) -> None:
    bomb = tmp_path / "bomb.tar.gz"
    _write_bomb(bomb, declared, body=64 << 20)
    before = _rss_kb()
    started = time.perf_counter()
    with pytest.raises(ArchiveError, match="extended header declares"):
        import_archive(bomb, tmp_path / "restored", max_bytes=1024)
    assert time.perf_counter() - started < 5  # generous: refused from the first 512 bytes
    assert _rss_kb() - before < 50 * 1024
    assert not (tmp_path / "restored").exists()


def test_a_member_declaring_more_than_the_cap_is_refused_before_extraction(tmp_path: Path) -> None:
    archive = tmp_path / "big.tar.gz"
    with gzip.open(archive, "wb") as gz:
        gz.write(_header("MEMORY.md", 40 << 20, b"0"))
    with pytest.raises(ArchiveError, match="max_member_bytes"):
        import_archive(archive, tmp_path / "restored")


def test_too_many_members_are_refused_from_the_headers(tmp_path: Path) -> None:
    archive = tmp_path / "many.tar.gz"
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for i in range(12):
            info = tarfile.TarInfo(f"n{i}.md")
            info.size = 2
            tar.addfile(info, io.BytesIO(b"x\n"))
    archive.write_bytes(gzip.compress(raw.getvalue()))
    with pytest.raises(ArchiveError, match="max_files=10"):
        import_archive(archive, tmp_path / "restored", max_files=10)
    assert not (tmp_path / "restored").exists()
