"""Runs one recipe's build.sh in a fresh build container and turns what it installed
into a deterministic artifact tarball.

The container has no network, runs as an unprivileged user, and sees only the
recipe's declared inputs: its verified sources and recipe folder (read-only under
/inputs) and its dependencies' artifacts (unpacked into the prefix). What build.sh
adds to the prefix is the artifact."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from pyfreight import toolchain
from pyfreight.container.build_image import BuildImage
from pyfreight.container.build_job import BuildJob, job_key, run_build_job
from pyfreight.errors import PyfreightError
from pyfreight.formats import macho_symbols
from pyfreight.formats.arfile import nondeterministic_members
from pyfreight.formats.macho_symbols import hide_in_library
from pyfreight.formats.tarball import newest_mtime, walk_sorted, write_tar
from pyfreight.hashing import file_sha256
from pyfreight.logs import say
from pyfreight.paths import Workspace
from pyfreight.platforms import platform_of
from pyfreight.records import record_matches, write_record
from pyfreight.sources.recipes import Recipe
from pyfreight.targets import Target

# Fallback SOURCE_DATE_EPOCH when the first source is not a tarball (2025-01-01).
DEFAULT_EPOCH = 1735689600

# What build.sh may install that the artifact does not keep: libtool archives and
# documentation.
PRUNED = re.compile(r"(\.la$|^share/(man|doc|info|gtk-doc)(/|$))")
SHARED_LIBRARY = re.compile(r"\.so(\.[0-9]+)*$")
# Strings that must not appear in any artifact file.
FORBIDDEN = (b"/build/work", b"/inputs/")
# ... except inside the text of the flag that removes them: some libraries (OpenSSL's
# OpenSSL_version(OPENSSL_CFLAGS)) record their compiler flags.
ALLOWED_MENTION = f"-ffile-prefix-map={toolchain.WORK_DIR}=.".encode()


@dataclass(frozen=True)
class Artifact:
    name: str
    version: str
    target: str
    key: str
    path: Path


def artifact_stem(recipe: Recipe, target: Target) -> str:
    return f"{recipe.name}-{recipe.version}-{target.triple}"


def recipe_job(
    recipe: Recipe, dependency_keys: dict[str, str], target: Target, artifacts: list[Path] | None = None
) -> BuildJob:
    """A recipe's build job; for a macOS target, the code that hides its libraries'
    symbols afterwards is part of what the artifact is keyed by."""
    job = BuildJob.from_recipe(recipe, dependency_keys, artifacts or [])
    flags = toolchain.common_cflags(target, recipe.optimization, recipe.frame_pointers)
    if flags != toolchain.common_cflags(target):
        # the recipe's own flags replace the toolchain's; the job's env is in its key
        job = replace(job, env={**job.env, "CFLAGS": flags, "CXXFLAGS": flags})
    if platform_of(target).hides_library_symbols:
        job = replace(job, host_code={"macho_symbols.py": Path(macho_symbols.__file__)})
    return job


def recipe_key(recipe: Recipe, image: BuildImage, target: Target, dependency_keys: dict[str, str]) -> str:
    return job_key(recipe_job(recipe, dependency_keys, target), image, target)


def cached_artifact(ws: Workspace, recipe: Recipe, target: Target, key: str) -> Artifact | None:
    """The artifact built earlier with this exact key, if it is there and intact."""
    stem = artifact_stem(recipe, target)
    tar = ws.artifacts / f"{stem}.tar"
    record = record_matches(ws.artifacts / f"{stem}.json", key)
    if record is None or not tar.exists() or file_sha256(tar) != record.get("sha256"):
        return None
    return Artifact(recipe.name, recipe.version, target.triple, key, tar)


def _produced_files(prefix: Path, before: frozenset[str]) -> list[str]:
    """Files and symlinks build.sh added to the prefix, minus what is pruned, plus the
    folders that hold them. Fails on shared libraries: everything here is static."""
    kept: set[str] = set()
    for rel in walk_sorted(prefix):
        path = prefix / rel
        if rel in before or (path.is_dir() and not path.is_symlink()) or PRUNED.search(rel):
            continue
        if SHARED_LIBRARY.search(rel):
            raise PyfreightError(
                f"build.sh installed a shared library {rel}; build it static only "
                "(e.g. configure --disable-shared)"
            )
        kept.add(rel)
        parent = Path(rel).parent
        while parent != Path("."):
            kept.add(parent.as_posix())
            parent = parent.parent
    return sorted(kept)


def _output_problems(prefix: Path, files: list[str]) -> list[str]:
    """Build paths anywhere, and static libraries whose members carry timestamps."""
    problems = []
    for rel in files:
        path = prefix / rel
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes().replace(ALLOWED_MENTION, b"")
            problems += [f"{rel} contains {s.decode()}" for s in FORBIDDEN if s in data]
            if rel.endswith(".a") and (members := nondeterministic_members(path)):
                problems.append(
                    f"{rel}: ar members with timestamps/owners ({', '.join(members[:3])}…); "
                    "archive in deterministic mode (ar D, e.g. ARFLAGS=crD)"
                )
    return problems


def _hide_library_symbols(recipe: Recipe, prefix: Path, files: list[str]) -> None:
    """A macOS target's static libraries export nothing from what links them
    (formats/macho_symbols.py)."""
    hidden = sum(
        hide_in_library(prefix / f) for f in files if f.endswith(".a") and not (prefix / f).is_symlink()
    )
    say(f"  {recipe.name}: {hidden} external symbols of its static libraries made private extern")


def build_recipe(
    recipe: Recipe,
    image: BuildImage,
    target: Target,
    key: str,
    dependencies: list[Artifact],
    dependency_keys: dict[str, str],
    ws: Workspace,
    jobs: int,
) -> Artifact:
    """Builds `recipe` in a container; returns the artifact, written atomically."""
    stem = artifact_stem(recipe, target)
    job = recipe_job(recipe, dependency_keys, target, [d.path for d in dependencies])
    epoch = newest_mtime(ws.downloads / recipe.sources[0].file) or DEFAULT_EPOCH
    with run_build_job(job, image, target, jobs, epoch, ws, ws.logs / f"{stem}.log") as finished:
        prefix = finished.prefix
        files = _produced_files(prefix, finished.unpacked)
        if not files:
            raise PyfreightError(f"{recipe.name}: build.sh installed nothing into $PREFIX")
        problems = _output_problems(prefix, files)
        if problems:
            raise PyfreightError(
                f"{recipe.name}: the artifact would not be reproducible (fix it in build.sh):\n  "
                + "\n  ".join(problems[:20])
            )
        if platform_of(target).hides_library_symbols:
            _hide_library_symbols(recipe, prefix, files)
        tar = ws.artifacts / f"{stem}.tar"
        write_tar(tar, ((f, prefix / f) for f in files), epoch)
    write_record(
        ws.artifacts / f"{stem}.json",
        {
            "name": recipe.name,
            "version": recipe.version,
            "target": target.triple,
            "key": key,
            "sha256": file_sha256(tar),
            "files": len(files),
            "source_date_epoch": epoch,
            "image": image.tag,
            "dependencies": sorted(d.name for d in dependencies),
        },
    )
    return Artifact(recipe.name, recipe.version, target.triple, key, tar)
