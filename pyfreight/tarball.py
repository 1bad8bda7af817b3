"""Deterministic tar archives: the same files always give the same bytes.

Members are sorted by name; mtime is SOURCE_DATE_EPOCH; owner and group are 0 with
empty names; modes are normalized (0755 for directories and executables, 0644 for
other files); hard links become regular files. Writing goes to a temporary name that
is renamed into place only when the archive is complete."""

from __future__ import annotations

import os
import stat
import tarfile
import tempfile
from collections.abc import Iterable
from pathlib import Path


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


def write_tar(out: Path, members: Iterable[tuple[str, Path]], epoch: int) -> None:
    """Writes (arcname, path) pairs, sorted by arcname, to `out` atomically."""
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".part", dir=out.parent)
    try:
        with (
            os.fdopen(fd, "wb") as raw,
            tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar,
        ):
            for arcname, path in sorted(members, key=lambda m: m[0]):
                info = normalized_info(arcname, path, epoch)
                if info.isreg():
                    with path.open("rb") as fh:
                        tar.addfile(info, fh)
                else:
                    tar.addfile(info)
        os.chmod(tmp_name, 0o644)
        os.replace(tmp_name, out)
    finally:
        if os.path.exists(tmp_name):
            os.unlink(tmp_name)


def tar_directory(root: Path, out: Path, epoch: int, only: Iterable[str] | None = None) -> None:
    """Archives the tree below `root` (or just the relative paths in `only`)."""
    names = walk_sorted(root) if only is None else sorted(only)
    write_tar(out, ((name, root / name) for name in names), epoch)


def member_names(path: Path) -> list[str]:
    with tarfile.open(path) as tar:
        return tar.getnames()


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
    with tarfile.open(path) as tar:
        fh = tar.extractfile(name)
        if fh is None:
            raise KeyError(name)
        return fh.read()


def extract(path: Path, dest: Path) -> None:
    """Extracts one of our own artifacts (trusted: written by write_tar)."""
    with tarfile.open(path) as tar:
        tar.extractall(dest, filter="tar")


__all__ = [
    "extract",
    "member_names",
    "newest_mtime",
    "read_member",
    "tar_directory",
    "walk_sorted",
    "write_tar",
]
