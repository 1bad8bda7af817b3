"""`pyfreight reproduce ARCHIVE`: rebuilds a full archive from scratch in a fresh build
folder (the dependencies, CPython and the archives), reusing only the verified
downloads and, for pgo builds, the profile the archive carries, then compares the
result with ARCHIVE byte for byte and names the first member that differs."""

from __future__ import annotations

import json
import os
import shutil
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pyfreight.cpython.build import build_cpython
from pyfreight.dist.flavours import PYTHON_JSON, parse_full_name
from pyfreight.dist.write import write_distribution
from pyfreight.errors import PyfreightError
from pyfreight.formats.tarball import open_tar, read_member
from pyfreight.hashing import stream_sha256
from pyfreight.leftovers import owned
from pyfreight.logs import say
from pyfreight.paths import Workspace


@dataclass(frozen=True)
class Comparison:
    identical: bool
    first_difference: str | None  # a member name, or what differs about the archives


def parse_name(archive: Path) -> dict[str, str]:
    fields = parse_full_name(archive.name)
    if fields is None:
        raise PyfreightError(
            f"{archive.name} is not a full archive name (cpython-VERSION+RELEASE-TRIPLE-OPTIONS-full.tar.zst)"
        )
    return fields


def _member_digests(archive: Path) -> list[tuple[str, str]]:
    """(name, digest of type, mode, link target and content) of every member, in order."""
    found = []
    with open_tar(archive) as tar:
        for member in tar:
            header = f"{member.type!r}{member.mode}{member.linkname}{member.mtime}".encode()
            content = tar.extractfile(member) if member.isreg() else None
            found.append((member.name, stream_sha256(content, header)))
    return found


def compare(first: Path, second: Path) -> Comparison:
    if first.read_bytes() == second.read_bytes():
        return Comparison(True, None)
    a, b = _member_digests(first), _member_digests(second)
    for (name_a, digest_a), (name_b, digest_b) in zip(a, b, strict=False):
        if name_a != name_b:
            return Comparison(False, f"member order or names differ: {name_a} / {name_b}")
        if digest_a != digest_b:
            return Comparison(False, name_a)
    if len(a) != len(b):
        return Comparison(False, f"member count differs: {len(a)} / {len(b)}")
    return Comparison(False, "the members agree; the compressed bytes differ")


def _check_described(archive: Path, fields: dict[str, str]) -> None:
    """The archive's content must be a full archive whose PYTHON.json says what its
    name says: the rebuild is chosen from the name."""
    try:
        document = json.loads(read_member(archive, PYTHON_JSON))
    except (KeyError, ValueError, OSError, tarfile.TarError) as exc:
        raise PyfreightError(
            f"{archive.name}: no readable {PYTHON_JSON}; not a full archive ({exc})"
        ) from None
    said = {
        "version": document.get("python_version"),
        "options": document.get("build_options"),
        "target": document.get("target_triple"),
    }
    differ = [f"{k} {fields[k]} in the name, {v} in PYTHON.json" for k, v in said.items() if v != fields[k]]
    if differ:
        raise PyfreightError(f"{archive.name}: the name and PYTHON.json disagree: {'; '.join(differ)}")


def reproduce(archive: Path, ws: Workspace, jobs: int) -> Comparison:
    fields = parse_name(archive)
    _check_described(archive, fields)
    minor = ".".join(fields["version"].split(".")[:2])
    ws.scratch.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=ws.scratch, prefix=owned("reproduce")) as tmp:
        fresh = Workspace(Path(tmp) / "build", Path(tmp) / "dist")
        fresh.downloads.mkdir(parents=True)
        for source in sorted(ws.downloads.iterdir()):  # verified again before any use
            if source.is_file() and not source.name.startswith("."):
                try:
                    os.link(source, fresh.downloads / source.name)
                except OSError:  # another file system
                    shutil.copy(source, fresh.downloads / source.name)
        (fresh.build / "images").mkdir()
        profile = None
        if "pgo" in fields["options"]:
            profile = Path(tmp) / "pgo.profdata"
            with open_tar(archive) as tar:
                member = next((m for m in tar if m.name == "python/build/pgo.profdata"), None)
                if member is None:
                    raise PyfreightError(f"{archive.name}: a pgo build without python/build/pgo.profdata")
                fh = tar.extractfile(member)
                assert fh is not None
                profile.write_bytes(fh.read())
        say(f"reproduce: rebuilding {archive.name} from scratch in {fresh.build}")
        build = build_cpython(
            minor, fields["options"], fields["target"], fresh, jobs=jobs, pgo_profile=profile
        )
        result = write_distribution(build, fresh, fresh.dist, release=fields["release"])
        if result.full.name != archive.name:
            raise PyfreightError(f"the rebuild is named {result.full.name}, not {archive.name}")
        return compare(archive, result.full)
