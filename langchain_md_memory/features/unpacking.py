"""What an archive must pass before a byte of it is unpacked: headers, sizes, names, member kinds.

:func:`~.archive.import_archive` streams the raw tar headers through :func:`prescan` (caps on header,
member and total sizes, file count and compression ratio, before :mod:`tarfile` parses anything), then
lets only :func:`checked_members` out of the archive (regular files with safe relative memory paths,
each once) and compares what landed in staging with them (:func:`verify_staging`).

Example:
    .. code-block:: python

        prescan(path, max_bytes=1 << 28, max_files=20_000, max_member_bytes=1 << 25)
        with tarfile.open(fileobj=open_stream(path), mode="r|") as tar: ...
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import stat
import tarfile
from pathlib import Path

from ..errors import MemoryPathError, MemoryStoreError
from ..files.paths import is_archived_file, normalize_relpath

__all__ = ["MAX_COMPRESSION_RATIO", "MAX_HEADER_BYTES", "ArchiveError", "checked_members", "open_stream",
           "prescan", "verify_staging"]

# Extended headers (PAX, GNU long names) are a few hundred bytes; tarfile reads them whole into memory.
MAX_HEADER_BYTES = 1024 * 1024
# More than this many uncompressed bytes per compressed byte (beyond the first MiB) is a bomb.
MAX_COMPRESSION_RATIO = 200


class ArchiveError(MemoryStoreError, ValueError):
    """An archive was refused (unsafe or over a cap) or could not be written or read."""


def open_stream(path: Path) -> io.BufferedIOBase:
    with path.open("rb") as probe:
        magic = probe.read(6)
    if magic.startswith(b"\x1f\x8b"):
        return gzip.open(path, "rb")
    if magic.startswith(b"BZh"):
        return bz2.open(path, "rb")
    if magic.startswith(b"\xfd7zXZ\x00"):
        return lzma.open(path, "rb")
    return path.open("rb")


def _header_size(block: bytes) -> int:
    field = block[124:136]
    if field[0] & 0x80:  # GNU base-256
        return int.from_bytes(field[1:], "big")
    digits = field.split(b"\0", 1)[0].strip() or b"0"
    try:
        return int(digits, 8)
    except ValueError as exc:
        raise ArchiveError("Refused archive: a member header has an unreadable size field") from exc


def prescan(path: Path, *, max_bytes: int, max_files: int, max_member_bytes: int) -> None:
    """Walk the raw tar headers and refuse oversized ones before :mod:`tarfile` parses anything.

    :mod:`tarfile` reads an extended (PAX) header whole before any cap of ours applies, so a small
    archive declaring a 1 GB header would cost minutes and gigabytes. This reads 512-byte blocks,
    skips member data, and stops at the first header, member, count, total or compression ratio
    over its cap.
    """
    compressed = max(path.stat().st_size, 1)
    total = files = read = 0
    with open_stream(path) as stream:
        while True:
            block = stream.read(512)
            read += len(block)
            if len(block) < 512 or not block.strip(b"\0"):
                return  # end of archive (or a truncated one, which tarfile then reports)
            size, kind = _header_size(block), block[156:157]
            name = block[:100].split(b"\0", 1)[0].decode("utf-8", "replace")
            if kind in (b"x", b"g", b"L", b"K"):
                if size > MAX_HEADER_BYTES:
                    raise ArchiveError(f"Refused archive: an extended header declares {size} bytes "
                                       f"(over {MAX_HEADER_BYTES})")
            elif kind in (b"0", b"\0", b"7"):
                files += 1
                total += size
                if size > max_member_bytes:
                    raise ArchiveError(f"Refused archive member {name!r}: {size} bytes, over "
                                       f"max_member_bytes={max_member_bytes}")
                if total > max_bytes:
                    raise ArchiveError(f"Refused archive: more than max_bytes={max_bytes} bytes uncompressed")
                if files > max_files:
                    raise ArchiveError(f"Refused archive: more than max_files={max_files} files")
            remaining = -(-size // 512) * 512
            while remaining:
                chunk = stream.read(min(remaining, 1 << 20))
                if not chunk:
                    return
                remaining -= len(chunk)
                read += len(chunk)
            if read > (1 << 20) + MAX_COMPRESSION_RATIO * compressed:
                raise ArchiveError(f"Refused archive: it expands over {MAX_COMPRESSION_RATIO} times its size")


def checked_members(tar: tarfile.TarFile, *, max_bytes: int, max_files: int,
                     max_member_bytes: int) -> dict[str, tarfile.TarInfo]:
    """Every file member by normalised name, after checking all of them; raises on the first problem."""
    files: dict[str, tarfile.TarInfo] = {}
    total = 0
    # tar.next() instead of getmembers(): stop at the first bad header rather than after a bomb's millionth.
    while (member := tar.next()) is not None:
        name = member.name
        if "\x00" in name or "\\" in name:
            raise ArchiveError(f"Refused archive member {name!r}: NUL or backslash in the name")
        if member.isdir() and name.strip("/") in ("", "."):
            continue  # the archive root, as `tar -C dir .` writes it
        try:
            rel = normalize_relpath(name)
        except MemoryPathError as exc:
            raise ArchiveError(f"Refused archive member {name!r}: {exc}") from exc
        if member.isdir():
            continue
        if member.issym() or member.islnk():
            raise ArchiveError(f"Refused archive member {name!r}: links are not allowed")
        if not member.isreg() or member.issparse():
            raise ArchiveError(f"Refused archive member {name!r}: only regular files are allowed")
        if not is_archived_file(rel):
            raise ArchiveError(
                f"Refused archive member {name!r}: only visible '.md' memory files "
                "(and unindexed store files) are allowed"
            )
        if rel in files:
            raise ArchiveError(f"Refused archive: {rel!r} appears twice")
        if member.size > max_member_bytes:
            raise ArchiveError(f"Refused archive member {name!r}: {member.size} bytes, over "
                               f"max_member_bytes={max_member_bytes}")
        total += member.size
        if total > max_bytes:
            raise ArchiveError(f"Refused archive: more than max_bytes={max_bytes} bytes uncompressed")
        if len(files) >= max_files:
            raise ArchiveError(f"Refused archive: more than max_files={max_files} files")
        files[rel] = member
    for rel in files:
        # "a.md" as a file and as the folder of "a.md/b.md" cannot both exist.
        for parent in Path(rel).parents:
            if parent.as_posix() in files:
                raise ArchiveError(f"Refused archive: {parent.as_posix()!r} is both a file and a folder")
    return files


def verify_staging(staging: Path, members: dict[str, tarfile.TarInfo]) -> None:
    found = {}
    for dirpath, _, names in os.walk(staging):
        for name in names:
            full = Path(dirpath) / name
            found[full.relative_to(staging).as_posix()] = full.lstat()
    if set(found) != set(members):
        raise ArchiveError("Refused archive: extraction produced unexpected files "
                           f"{sorted(set(found) ^ set(members))[:3]}")
    for rel, st in found.items():
        if not stat.S_ISREG(st.st_mode) or st.st_size != members[rel].size:
            raise ArchiveError(f"Refused archive member {rel!r}: extracted content does not match its header")
