"""The one way pyfreight opens an archive that came from outside (validate, test-dist,
embed, reproduce, bench-import): every member is judged before anything of it is
written, and a refusal is one line naming the member and the rule.

Refused: absolute, escaping or unnormalized names; names that are not UTF-8;
duplicate names; device nodes, fifos and anything but files, folders and links;
symlinks whose target, resolved through the archive's earlier symlinks, leaves the
tree; members below a symlink (writing them would follow it); hard links other than to
an earlier regular member; paths deeper than any tree of ours (untrusted.MAX_TREE_DEPTH:
what unpacks them would recurse past Python's limit); an empty archive. Caps on the member count and on the
expanded bytes (the declared size of a member is checked before its data is read, so
a small archive declaring a huge member is refused at once, and a compression bomb is
refused long before it fills the disk)."""

from __future__ import annotations

import contextlib
import gzip
import lzma
import os
import posixpath
import shutil
import tarfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, cast

import zstandard

from pyfreight.errors import PyfreightError
from pyfreight.formats.untrusted import MAX_TREE_DEPTH
from pyfreight.leftovers import remove_tree

# Defaults that fit real archives with a wide margin: a full pgo+lto archive holds about
# 14,000 members and expands to about 6 times its compressed size (0.5-0.8 GB).
DEFAULT_MAX_MEMBERS = 200_000
DEFAULT_MAX_BYTES = 16 * 2**30
# Beyond the absolute cap, an archive may not expand to more than this many times its
# own size (or RATIO_FLOOR, for small archives), which stops compression bombs early.
MAX_RATIO = 50
RATIO_FLOOR = 64 * 2**20

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
GZIP_MAGIC = b"\x1f\x8b"
XZ_MAGIC = b"\xfd7zXZ\x00"


class UnsafeArchive(PyfreightError):
    """An archive (or one of its members) that pyfreight refuses to open."""

    def __init__(self, archive: Path, member: str, rule: str) -> None:
        super().__init__(f"{archive}: {member}: {rule}; refusing the archive")
        self.member = member
        self.rule = rule


@dataclass(frozen=True)
class Limits:
    max_members: int = DEFAULT_MAX_MEMBERS
    max_bytes: int = DEFAULT_MAX_BYTES

    def byte_cap(self, archive_size: int) -> int:
        return min(self.max_bytes, max(RATIO_FLOOR, MAX_RATIO * archive_size))


DEFAULT_LIMITS = Limits()


@contextlib.contextmanager
def _stream(archive: Path) -> Iterator[IO[bytes]]:
    """The decompressed bytes of `archive`, the compression told by its magic number."""
    with archive.open("rb") as raw:
        magic = raw.read(6)
        raw.seek(0)
        if magic.startswith(ZSTD_MAGIC):
            with zstandard.ZstdDecompressor().stream_reader(raw) as reader:
                yield cast(IO[bytes], reader)
        elif magic.startswith(GZIP_MAGIC):
            with gzip.GzipFile(fileobj=raw, mode="rb") as gz:
                yield cast(IO[bytes], gz)
        elif magic.startswith(XZ_MAGIC):
            with lzma.LZMAFile(raw) as xz:
                yield cast(IO[bytes], xz)
        else:
            yield raw


def _refuse(archive: Path, member: str, rule: str) -> UnsafeArchive:
    return UnsafeArchive(archive, member, rule)


class _Judge:
    """The rules, applied to members in archive order."""

    def __init__(self, archive: Path, limits: Limits) -> None:
        self.archive = archive
        self.limits = limits
        self.cap = limits.byte_cap(archive.stat().st_size)
        self.count = 0
        self.expanded = 0
        self.names: set[str] = set()
        self.regular: set[str] = set()
        self.symlinks: dict[str, str] = {}

    def judge(self, member: tarfile.TarInfo) -> None:
        name = member.name.rstrip("/") if member.isdir() else member.name
        refuse = _refuse
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            raise refuse(self.archive, repr(name), "the name is not UTF-8") from None
        self.count += 1
        if self.count > self.limits.max_members:
            raise refuse(
                self.archive, name, f"more than {self.limits.max_members} members (raise --max-members)"
            )
        if name.startswith("/") or not name:
            raise refuse(self.archive, name or "(empty name)", "an absolute path")
        parts = name.split("/")
        if ".." in parts:
            raise refuse(self.archive, name, "a path that escapes the archive (..)")
        if "" in parts or "." in parts:
            raise refuse(self.archive, name, "a path that is not normalized")
        if len(parts) > MAX_TREE_DEPTH:
            raise refuse(
                self.archive,
                "/".join(parts[:3]) + f"/…/{parts[-1]}",
                f"{len(parts)} folders deep, deeper than any tree of ours ({MAX_TREE_DEPTH})",
            )
        if name in self.names:
            raise refuse(self.archive, name, "a duplicate member")
        for depth in range(1, len(parts)):
            if "/".join(parts[:depth]) in self.symlinks:
                raise refuse(self.archive, name, f"a member below the symlink {'/'.join(parts[:depth])}")
        if not (member.isreg() or member.isdir() or member.issym() or member.islnk()):
            raise refuse(
                self.archive, name, "not a file, folder or link (device nodes and fifos are refused)"
            )
        if member.size < 0 or member.size > self.cap - self.expanded:
            raise refuse(
                self.archive,
                name,
                f"declares {member.size} bytes, more than the {self.cap - self.expanded} left of the "
                f"{self.cap}-byte cap for this archive (raise --max-bytes if it is genuine)",
            )
        if member.issym():
            self._judge_symlink(name, member.linkname)
            self.symlinks[name] = member.linkname
            # A new link can change where an earlier one leads (a -> b/.., then b -> ..).
            for earlier, target in self.symlinks.items():
                self._judge_symlink(earlier, target)
        elif member.islnk():
            if member.linkname not in self.regular:
                raise refuse(
                    self.archive, name, f"a hard link to {member.linkname!r}, not an earlier regular member"
                )
        elif member.isreg():
            self.regular.add(name)
        self.expanded += member.size
        self.names.add(name)

    def _judge_symlink(self, name: str, target: str) -> None:
        if target.startswith("/"):
            raise _refuse(self.archive, name, f"a symlink to an absolute path ({target})")
        resolved = self._resolve(posixpath.join(posixpath.dirname(name), target))
        if resolved is None or resolved == ".." or resolved.startswith("../"):
            raise _refuse(self.archive, name, f"a symlink that leaves the archive (-> {target})")

    def _resolve(self, path: str, depth: int = 0) -> str | None:
        """`path` normalized, with earlier symlinks followed; None when it loops."""
        if depth > 40:
            return None
        parts: list[str] = []
        for part in path.split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                if not parts or parts[-1] == "..":
                    parts.append("..")
                else:
                    parts.pop()
                continue
            parts.append(part)
            here = "/".join(parts)
            if here in self.symlinks:
                target = self.symlinks[here]
                base = "/".join(parts[:-1])
                resolved = self._resolve(posixpath.join(base, target) if base else target, depth + 1)
                if resolved is None:
                    return None
                parts = resolved.split("/") if resolved not in ("", ".") else []
        return "/".join(parts) or "."


Visitor = Callable[[tarfile.TarInfo, tarfile.TarFile], None]


def scan(
    archive: Path, limits: Limits = DEFAULT_LIMITS, visit: Visitor | None = None
) -> list[tarfile.TarInfo]:
    """Judges every member of `archive` in order (raising UnsafeArchive at the first
    refusal) and returns them; `visit(member, tar)` is called for each accepted member
    while its data can still be read (tar.extractfile)."""
    if not archive.exists():
        raise PyfreightError(f"{archive}: no such file")
    if not archive.is_file():
        raise PyfreightError(f"{archive}: not a file; give the archive itself (a .tar.zst or .tar.gz)")
    judge = _Judge(archive, limits)
    found: list[tarfile.TarInfo] = []
    try:
        with _stream(archive) as stream, tarfile.open(fileobj=stream, mode="r|") as tar:
            for member in tar:
                judge.judge(member)
                found.append(member)
                if visit is not None:
                    visit(member, tar)
    except UnsafeArchive:
        raise
    except (tarfile.TarError, zstandard.ZstdError, OSError, EOFError, lzma.LZMAError) as exc:
        raise UnsafeArchive(archive, "(archive)", f"not a readable tar archive ({exc})") from None
    if not found:
        raise UnsafeArchive(archive, "(archive)", "an empty archive")
    return found


def extract(
    archive: Path, dest: Path, limits: Limits = DEFAULT_LIMITS, wanted: Callable[[str], bool] | None = None
) -> list[tarfile.TarInfo]:
    """Extracts the accepted members of `archive` (those `wanted` names, by default all)
    into `dest`, which must not exist yet. Files get modes 0644 or 0755 and no owner;
    links are made only after the rules above. On any refusal `dest` is removed."""
    if dest.exists():
        raise PyfreightError(f"{dest}: already exists; extraction needs a fresh folder")
    dest.mkdir(parents=True)

    def write(member: tarfile.TarInfo, tar: tarfile.TarFile) -> None:
        name = member.name.rstrip("/")
        if wanted is not None and not wanted(name):
            return
        path = dest / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if member.isdir():
            path.mkdir(exist_ok=True)
        elif member.issym():
            os.symlink(member.linkname, path)
        elif member.islnk():
            source = dest / member.linkname
            if not source.is_file():  # not extracted: not wanted, so copy nothing
                return
            os.link(source, path)
        else:
            data = tar.extractfile(member)
            with path.open("xb") as out:
                if data is not None:
                    shutil.copyfileobj(data, out, 1 << 20)
            path.chmod(0o755 if member.mode & 0o111 else 0o644)

    try:
        return scan(archive, limits, write)
    except BaseException:
        remove_tree(dest)
        raise


def read_member(archive: Path, name: str, limits: Limits = DEFAULT_LIMITS, first_only: bool = False) -> bytes:
    """One member's bytes, after judging the whole archive (or, with `first_only`, only
    as far as its first member, which must be `name`)."""
    found: list[bytes] = []

    class _Stop(Exception):
        pass

    def grab(member: tarfile.TarInfo, tar: tarfile.TarFile) -> None:
        if member.name == name and member.isreg():
            data = tar.extractfile(member)
            found.append(data.read() if data is not None else b"")
        elif first_only:
            raise UnsafeArchive(archive, member.name, f"the first member must be {name}")
        if first_only:
            raise _Stop

    with contextlib.suppress(_Stop):
        scan(archive, limits, grab)
    if not found:
        raise UnsafeArchive(archive, name, "not in the archive")
    return found[0]
