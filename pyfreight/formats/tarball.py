"""Deterministic tar archives: the same files always give the same bytes.

Members are sorted by name; mtime is SOURCE_DATE_EPOCH; owner and group are 0 with
empty names; modes are normalized (0755 for directories and executables, 0644 for
other files); hard links become regular files. Writing goes to a temporary name that
is renamed into place only when the archive is complete."""

from __future__ import annotations

import contextlib
import gzip
import os
import stat
import tarfile
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

import zstandard

from pyfreight import interrupts
from pyfreight.leftovers import owned


def normalized_info(arcname: str, path: Path, epoch: int) -> tarfile.TarInfo:
    st = path.lstat()
    info = tarfile.TarInfo(arcname)
    info.mtime = epoch
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    if stat.S_ISLNK(st.st_mode):
        info.type = tarfile.SYMTYPE
        info.linkname = os.readlink(path)
        info.mode = 0o777
    elif stat.S_ISDIR(st.st_mode):
        info.type = tarfile.DIRTYPE
        info.mode = 0o755
    elif stat.S_ISREG(st.st_mode):
        info.type = tarfile.REGTYPE
        info.size = st.st_size
        info.mode = 0o755 if st.st_mode & 0o111 else 0o644
    else:
        raise ValueError(f"{path}: only files, folders and symlinks can go into an archive")
    return info


def walk_sorted(root: Path) -> list[str]:
    """Every path below root (relative, '/'-separated), sorted; symlinks not followed."""
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel = Path(dirpath).relative_to(root)
        for name in dirnames + filenames:
            found.append((rel / name).as_posix())
    return sorted(found)


# zstd's multi-threaded mode writes the same bytes whatever the number of workers
# (checked: 1, 2 and 4 workers give identical output), so all cores can be used.
ZSTD_LEVEL = 19


@contextlib.contextmanager
def _compressed(raw: BinaryIO, compression: str | None) -> Iterator[BinaryIO]:
    """A writer compressing into `raw` with no name or time recorded."""
    if compression is None:
        yield raw
    elif compression == "gz":
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0) as gz:
            yield gz  # type: ignore[misc]
    elif compression == "zst":
        with zstandard.ZstdCompressor(level=ZSTD_LEVEL, threads=-1).stream_writer(raw, closefd=False) as zw:
            yield zw
    else:
        raise ValueError(f"unknown compression {compression!r}")


def write_tar(
    out: Path,
    members: Iterable[tuple[str, Path]],
    epoch: int,
    compression: str | None = None,
    first: tuple[str, ...] = (),
    verify: Callable[[Path], None] | None = None,
) -> None:
    """Writes (arcname, path) pairs to `out` atomically, sorted by arcname except that
    the names in `first` lead in that order; `compression` is None, "gz" or "zst".
    `verify` judges the complete archive under its temporary name and raises to keep it
    from ever being published under `out`."""
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=owned(f".{out.name}"), suffix=".part", dir=out.parent)
    rank = {name: i for i, name in enumerate(first)}
    try:
        with (
            os.fdopen(fd, "wb") as raw,
            _compressed(raw, compression) as stream,
            tarfile.open(fileobj=stream, mode="w", format=tarfile.PAX_FORMAT) as tar,
        ):
            for arcname, path in sorted(members, key=lambda m: (rank.get(m[0], len(rank)), m[0])):
                info = normalized_info(arcname, path, epoch)
                if info.isreg():
                    with path.open("rb") as fh:
                        tar.addfile(info, fh)
                else:
                    tar.addfile(info)
        os.chmod(tmp_name, 0o644)
        if verify is not None:
            verify(Path(tmp_name))
        interrupts.check()  # nothing is published once a signal came
        os.replace(tmp_name, out)
    finally:
        if os.path.exists(tmp_name):
            os.unlink(tmp_name)


def tar_directory(root: Path, out: Path, epoch: int, only: Iterable[str] | None = None) -> None:
    """Archives the tree below `root` (or just the relative paths in `only`)."""
    names = walk_sorted(root) if only is None else sorted(only)
    write_tar(out, ((name, root / name) for name in names), epoch)


@contextlib.contextmanager
def open_tar(path: Path) -> Iterator[tarfile.TarFile]:
    """Reads any archive we write: plain, gzip or zstd (.zst, as a stream)."""
    if path.name.endswith(".zst"):
        with (
            path.open("rb") as fh,
            zstandard.ZstdDecompressor().stream_reader(fh) as zr,
            tarfile.open(fileobj=zr, mode="r|") as tar,
        ):
            yield tar
    else:
        with tarfile.open(path) as tar:
            yield tar


def members(path: Path) -> list[tarfile.TarInfo]:
    """The members of an archive, in archive order."""
    with open_tar(path) as tar:
        return list(tar)


def member_names(path: Path) -> list[str]:
    return [m.name for m in members(path)]


def newest_mtime(path: Path) -> int | None:
    """The newest member mtime of a tarball (any compression tarfile reads), or None when
    `path` is not a tarball. Used to derive SOURCE_DATE_EPOCH from a source release."""
    if not tarfile.is_tarfile(path):
        return None
    newest = 0
    with tarfile.open(path) as tar:
        for member in tar:
            newest = max(newest, int(member.mtime))
    return newest or None


def read_member(path: Path, name: str) -> bytes:
    """One member's bytes, from any archive open_tar reads (zstd streams included)."""
    with open_tar(path) as tar:
        for member in tar:
            if member.name == name:
                fh = tar.extractfile(member)
                if fh is not None:
                    return fh.read()
    raise KeyError(name)


def extract(path: Path, dest: Path) -> None:
    """Extracts one of our own artifacts (trusted: written by write_tar)."""
    with open_tar(path) as tar:
        tar.extractall(dest, filter="tar")


__all__ = [
    "extract",
    "member_names",
    "members",
    "newest_mtime",
    "open_tar",
    "read_member",
    "tar_directory",
    "walk_sorted",
    "write_tar",
]
