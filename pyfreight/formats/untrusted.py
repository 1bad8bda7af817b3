"""Files and folders that came from outside (an unpacked archive, a tree given to
check-install), read the one bounded way: a binary is read only when it is a regular
file (a fifo would block the reader, a device never ends) and no larger than any file
of ours can be, so what a reader holds is proportional to the file, never to what the
file declares; a tree is walked without recursion and no deeper than any tree of ours;
and what a hostile archive unpacked is removed however deep (leftovers.remove_tree)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

from pyfreight.errors import PyfreightError

# The largest PE or Mach-O file of any tree we build is the interpreter with every
# module and library linked in: tens of MB (python314.dll of a noopt build: about
# 40 MB). A binary beyond this is refused before a byte of it is read.
MAX_BINARY_BYTES = 256 << 20
# The deepest file of our trees (a full archive's build/ objects, pip's vendored
# packages) lies about 15 folders down; Python's own recursion (rglob, rmtree) breaks
# near 1000. The archive rules (safe_archive) refuse deeper members before unpacking.
MAX_TREE_DEPTH = 64


class UntrustedFile(PyfreightError):
    """A file or folder from outside that the readers refuse (said in one line)."""


class UntrustedTree(UntrustedFile):
    """A tree whose binaries broke the rules (each problem printed already): nothing of
    it is run. `where` names it as the user gave it (test-dist names its archive)."""

    def __init__(self, where: Path | str, problems: int, binaries: str) -> None:
        super().__init__(
            f"{where}: {problems} problem(s) in its {binaries} files (above); it is not trusted "
            "and nothing of it was run"
        )
        self.problems = problems
        self.binaries = binaries


def _open_regular(path: Path, name: str) -> tuple[int, os.stat_result]:
    """An open descriptor of `path`, which must be a regular file: opened without
    blocking (a fifo answers at once) and without following a final symlink."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        if path.is_symlink():
            raise UntrustedFile(
                f"{name}: a symlink where a file is expected; the tree is not trusted"
            ) from None
        raise UntrustedFile(f"{name}: cannot be read ({exc.strerror}); the tree is not trusted") from None
    info = os.fstat(fd)
    if stat.S_ISDIR(info.st_mode):
        os.close(fd)
        raise UntrustedFile(f"{name}: a folder where a file is expected; the tree is not trusted")
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise UntrustedFile(f"{name}: not a regular file (a fifo, device or socket); the tree is not trusted")
    return fd, info


def read_binary(path: Path, name: str, limit: int = MAX_BINARY_BYTES) -> bytes:
    """The bytes of the regular file `path` (`name` in messages), at most `limit` of
    them: a larger one (a sparse file declaring gigabytes, say) is refused unread."""
    fd, info = _open_regular(path, name)
    try:
        if info.st_size > limit:
            raise UntrustedFile(
                f"{name}: {info.st_size} bytes, larger than any binary of ours ({limit >> 20} MiB); "
                "the tree is not trusted"
            )
        return _read_all(fd, info.st_size)
    finally:
        os.close(fd)


def read_head(path: Path, name: str, size: int) -> bytes:
    """The first `size` bytes (fewer when the file is shorter) of the regular file
    `path`, to tell its format; anything but a regular file is refused."""
    fd, _ = _open_regular(path, name)
    try:
        return _read_all(fd, size)
    finally:
        os.close(fd)


def _read_all(fd: int, size: int) -> bytes:
    chunks, left = [], size
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def walk(root: Path, max_depth: int = MAX_TREE_DEPTH) -> Iterator[Path]:
    """Every entry below `root` (folders, files, symlinks, not followed), in sorted
    order as rglob("*") gives them, walked with a stack rather than recursion; a tree
    deeper than `max_depth` is refused, naming its first entry that deep."""
    if not root.is_dir():
        return  # as rglob: a missing root holds nothing
    entries = []
    stack: list[tuple[Path, int]] = [(root, 0)]
    while stack:
        folder, depth = stack.pop()
        try:
            children = sorted(folder.iterdir())
        except OSError as exc:
            raise UntrustedFile(f"{folder}: cannot be listed ({exc.strerror})") from None
        for child in children:
            if depth + 1 > max_depth:
                parts = child.relative_to(root).parts
                raise UntrustedFile(
                    f"{'/'.join(parts[:3])}/…/{parts[-1]}: more than {max_depth} folders deep, deeper "
                    "than any tree of ours; the tree is not trusted"
                )
            entries.append(child)
            if child.is_dir() and not child.is_symlink():
                stack.append((child, depth + 1))
    yield from sorted(entries)


def judge_tree(root: Path, max_depth: int = MAX_TREE_DEPTH) -> None:
    """Refuses a tree from outside that holds what none of ours does: entries deeper than
    `max_depth`, fifos, devices or sockets (a reader would block on one, or never end).
    The entry is named by its path below `root` as given, the tree the user named."""
    try:
        entries = list(walk(root, max_depth))
    except UntrustedFile as exc:
        raise UntrustedFile(f"{root}/{exc}") from None
    for path in entries:
        if path.is_symlink() or path.is_dir() or path.is_file():
            continue
        raise UntrustedFile(
            f"{path}: not a file, folder or symlink (a fifo, device or socket); the tree is not trusted"
        )


def regular_files(root: Path, max_depth: int = MAX_TREE_DEPTH) -> Iterator[Path]:
    """The regular files below `root` (symlinks not followed, fifos and devices left
    out), in sorted order."""
    for path in walk(root, max_depth):
        if not path.is_symlink() and path.is_file():
            yield path
