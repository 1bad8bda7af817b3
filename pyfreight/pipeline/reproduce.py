"""`pyfreight reproduce ARCHIVE`: rebuilds a full archive from scratch in a fresh build
folder (the dependencies, CPython and the archives), reusing only the verified
downloads and, for pgo builds, the profile the archive carries, then compares the
result with ARCHIVE byte for byte and names the first member that differs."""

from __future__ import annotations

import json
import os
import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path

from pyfreight.archives.flavours import PYTHON_JSON
from pyfreight.cpython.naming import FULL_NAME_PATTERN, parse_full_name
from pyfreight.cpython.profiles import BOLT_PROFILE_NAME, PGO_PROFILE_NAME, SavedProfiles
from pyfreight.cpython.spec import BuildSpec
from pyfreight.errors import PyfreightError
from pyfreight.formats.safe_archive import DEFAULT_LIMITS, Limits, read_member, scan
from pyfreight.hashing import file_sha256, stream_sha256
from pyfreight.leftovers import owned, scratch_folder
from pyfreight.logs import say
from pyfreight.paths import Workspace
from pyfreight.pipeline.distribute import distribute


@dataclass(frozen=True)
class Comparison:
    identical: bool
    first_difference: str | None  # a member name, or what differs about the archives


def parse_name(archive: Path) -> tuple[BuildSpec, str]:
    """The build and release a full archive's name names: what reproduce rebuilds."""
    named = parse_full_name(archive.name)
    if named is None:
        raise PyfreightError(f"{archive.name} is not a full archive name ({FULL_NAME_PATTERN})")
    return named


def _member_digests(archive: Path, limits: Limits) -> list[tuple[str, str]]:
    """(name, digest of type, mode, link target and content) of every member, in order."""
    found = []

    def digest(member: tarfile.TarInfo, tar: tarfile.TarFile) -> None:
        header = f"{member.type!r}{member.mode}{member.linkname}{member.mtime}".encode()
        content = tar.extractfile(member) if member.isreg() else None
        found.append((member.name, stream_sha256(content, header)))

    scan(archive, limits, digest)
    return found


def compare(first: Path, second: Path, limits: Limits = DEFAULT_LIMITS) -> Comparison:
    if file_sha256(first) == file_sha256(second):
        return Comparison(True, None)
    a, b = _member_digests(first, limits), _member_digests(second, limits)
    for (name_a, digest_a), (name_b, digest_b) in zip(a, b, strict=False):
        if name_a != name_b:
            return Comparison(False, f"member order or names differ: {name_a} / {name_b}")
        if digest_a != digest_b:
            return Comparison(False, name_a)
    if len(a) != len(b):
        return Comparison(False, f"member count differs: {len(a)} / {len(b)}")
    return Comparison(False, "the members agree; the compressed bytes differ")


def _described(archive: Path, limits: Limits) -> dict:
    """The archive's PYTHON.json: the whole archive is judged by the safe-archive rules
    before anything of it, its name included, is trusted."""
    data = read_member(archive, PYTHON_JSON, limits)  # judges the whole archive first
    try:
        document = json.loads(data)
        if not isinstance(document, dict):
            raise ValueError("not a JSON object")
    except (ValueError, UnicodeDecodeError) as exc:
        raise PyfreightError(
            f"{archive.name}: no readable {PYTHON_JSON}; not a full archive ({exc})"
        ) from None
    return document


def _check_described(archive: Path, spec: BuildSpec, document: dict) -> None:
    """The archive must be a full archive whose PYTHON.json says what its name says: the
    rebuild is chosen from the name."""
    named = {"version": spec.version, "options": str(spec.options), "target": spec.target.triple}
    said = {
        "version": document.get("python_version"),
        "options": document.get("build_options"),
        "target": document.get("target_triple"),
    }
    differ = [f"{k} {named[k]} in the name, {v} in PYTHON.json" for k, v in said.items() if v != named[k]]
    if differ:
        raise PyfreightError(f"{archive.name}: the name and PYTHON.json disagree: {'; '.join(differ)}")


def reproduce(archive: Path, ws: Workspace, jobs: int, limits: Limits = DEFAULT_LIMITS) -> Comparison:
    # A name that cannot be a full archive's is refused at once; the build a name names is
    # looked up (targets/*.yaml) only once the archive passed the safe-archive rules.
    if not archive.name.endswith("-full.tar.zst"):
        parse_name(archive)
    document = _described(archive, limits)
    spec, release = parse_name(archive)
    _check_described(archive, spec, document)
    ws.scratch.mkdir(parents=True, exist_ok=True)
    with scratch_folder(owned("reproduce"), ws.scratch) as tmp:
        fresh = Workspace(tmp / "build", tmp / "dist")
        fresh.downloads.mkdir(parents=True)
        for source in sorted(ws.downloads.iterdir()):  # verified again before any use
            if source.is_file() and not source.name.startswith("."):
                try:
                    os.link(source, fresh.downloads / source.name)
                except OSError:  # another file system
                    shutil.copy(source, fresh.downloads / source.name)
        (fresh.build / "images").mkdir()
        profiles = _saved_profiles(archive, spec, tmp, limits)
        say(f"reproduce: rebuilding {archive.name} from scratch in {fresh.build}")
        _, result = distribute(spec, fresh, jobs, release=release, profiles=profiles, check=False)
        if result.full.name != archive.name:
            raise PyfreightError(f"the rebuild is named {result.full.name}, not {archive.name}")
        return compare(archive, result.full, limits)


def _saved_profiles(archive: Path, spec: BuildSpec, tmp: Path, limits: Limits) -> SavedProfiles | None:
    """The profiles the archive's build trained (pgo builds), out of its python/build/,
    so the rebuild replays them instead of training again."""
    if not spec.options.pgo:
        return None
    found: dict[str, Path] = {}
    for name in (PGO_PROFILE_NAME, *([BOLT_PROFILE_NAME] if spec.bolt else [])):
        found[name] = tmp / name
        found[name].write_bytes(read_member(archive, f"python/build/{name}", limits))
    return SavedProfiles(found[PGO_PROFILE_NAME], found.get(BOLT_PROFILE_NAME))
