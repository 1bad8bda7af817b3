"""Runs one recipe's build.sh in a fresh build container and turns what it installed
into a deterministic artifact tarball.

The container has no network, runs as an unprivileged user, and sees only the
recipe's declared inputs: its verified sources and recipe folder (read-only under
/inputs) and its dependencies' artifacts (unpacked into the prefix). What build.sh
adds to the prefix is the artifact."""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pyfreight import toolchain
from pyfreight.container import docker
from pyfreight.container.images import BuildImage
from pyfreight.deps.cachekey import artifact_key, file_digest
from pyfreight.errors import PyfreightError
from pyfreight.formats.arfile import nondeterministic_members
from pyfreight.formats.tarball import extract, newest_mtime, walk_sorted, write_tar
from pyfreight.paths import Workspace
from pyfreight.sources.fetch import copy_verified
from pyfreight.sources.recipes import Recipe

ENTRY_SCRIPT = Path(__file__).resolve().parent.parent / "container" / "entry.sh"
CONTAINER_USER = "1000:1000"  # the image's `builder`
CONTAINER_HOSTNAME = "pyfreight"  # fixed, so no host name can reach an output
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


def artifact_stem(recipe: Recipe, target: str) -> str:
    return f"{recipe.name}-{recipe.version}-{target}"


def recipe_key(recipe: Recipe, image: BuildImage, target: str, dependency_keys: dict[str, str]) -> str:
    files = {p.relative_to(recipe.directory).as_posix(): file_digest(p) for p in recipe.files()}
    files["<runner>/container_entry.sh"] = file_digest(ENTRY_SCRIPT)
    return artifact_key(
        recipe_files=files,
        source_sha256s=[s.sha256 for s in recipe.sources],
        image_id=image.image_id,
        target=target,
        settings=toolchain.keyed_settings(target),
        dependency_keys=dependency_keys,
    )


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def cached_artifact(ws: Workspace, recipe: Recipe, target: str, key: str) -> Artifact | None:
    """The artifact built earlier with this exact key, if it is there and intact."""
    stem = artifact_stem(recipe, target)
    tar, meta = ws.artifacts / f"{stem}.tar", ws.artifacts / f"{stem}.json"
    try:
        recorded = json.loads(meta.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    if recorded.get("key") != key or not tar.exists() or _sha256(tar) != recorded.get("sha256"):
        return None
    return Artifact(recipe.name, recipe.version, target, key, tar)


def _write_json_atomic(path: Path, data: dict) -> None:
    tmp = path.with_name(f".{path.name}.part")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)


def _stage_inputs(recipe: Recipe, downloads: Path, inputs: Path) -> None:
    (inputs / "sources").mkdir(parents=True)
    for source in recipe.sources:
        copy_verified(source, downloads, inputs / "sources" / source.file)
    shutil.copytree(recipe.directory, inputs / "recipe")
    shutil.copy(ENTRY_SCRIPT, inputs / "entry.sh")
    for path in [inputs, *inputs.rglob("*")]:
        path.chmod(0o755 if path.is_dir() or os.access(path, os.X_OK) else 0o644)


def container_user(*writable: Path) -> str:
    """The container's user, owning the folders it writes to. As root we use the
    image's unprivileged `builder`; otherwise the caller's own ids."""
    if os.geteuid() != 0:
        return f"{os.getuid()}:{os.getgid()}"
    for path in writable:
        subprocess.run(["chown", "-R", CONTAINER_USER, str(path)], check=True)
    return CONTAINER_USER


def _produced_files(prefix: Path, before: set[str]) -> list[str]:
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


def docker_run_args(
    container: str,
    user: str,
    inputs: Path,
    prefix: Path,
    env: dict[str, str],
    image: BuildImage,
    extra_mounts: tuple[tuple[Path, str], ...] = (),
) -> list[str]:
    """No network, a fixed host name, an unprivileged user, read-only inputs; the image
    is named by id so the build runs on exactly the image its cache key names."""
    args = ["docker", "run", "--rm", "--name", container, "--network", "none"]
    args += ["--hostname", CONTAINER_HOSTNAME, "--user", user]
    args += ["-v", f"{inputs}:/inputs:ro", "-v", f"{prefix}:{toolchain.PREFIX}"]
    for host, inside in extra_mounts:
        args += ["-v", f"{host}:{inside}"]
    for name, value in sorted(env.items()):
        args += ["-e", f"{name}={value}"]
    return [*args, image.image_id, "bash", "/inputs/entry.sh"]


def build_recipe(
    recipe: Recipe,
    image: BuildImage,
    target: str,
    key: str,
    dependencies: list[Artifact],
    ws: Workspace,
    jobs: int,
) -> Artifact:
    """Builds `recipe` in a container; returns the artifact, written atomically."""
    stem = artifact_stem(recipe, target)
    log = ws.logs / f"{stem}.log"
    ws.logs.mkdir(parents=True, exist_ok=True)
    ws.scratch.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"run-{recipe.name}-", dir=ws.scratch))
    container = f"pyfreight-{recipe.name}-{secrets.token_hex(4)}"
    try:
        staging.chmod(0o755)
        inputs, prefix = staging / "inputs", staging / "prefix"
        _stage_inputs(recipe, ws.downloads, inputs)
        prefix.mkdir()
        for dep in dependencies:
            extract(dep.path, prefix)
        before = set(walk_sorted(prefix))
        user = container_user(prefix)
        epoch = newest_mtime(ws.downloads / recipe.sources[0].file) or DEFAULT_EPOCH
        env = toolchain.build_environment(target, jobs, epoch)
        env |= {
            "RECIPE_NAME": recipe.name,
            "RECIPE_VERSION": recipe.version,
            "LICENSE_FILES": "\n".join(recipe.license_files),
        }
        args = docker_run_args(container, user, inputs, prefix, env, image)
        log.write_text("")
        docker.run_logged(args, log, f"{recipe.name} {recipe.version} build.sh")
        files = _produced_files(prefix, before)
        if not files:
            raise PyfreightError(f"{recipe.name}: build.sh installed nothing into $PREFIX")
        problems = _output_problems(prefix, files)
        if problems:
            raise PyfreightError(
                f"{recipe.name}: the artifact would not be reproducible (fix it in build.sh):\n  "
                + "\n  ".join(problems[:20])
            )
        tar = ws.artifacts / f"{stem}.tar"
        write_tar(tar, ((f, prefix / f) for f in files), epoch)
        _write_json_atomic(
            ws.artifacts / f"{stem}.json",
            {
                "name": recipe.name,
                "version": recipe.version,
                "target": target,
                "key": key,
                "sha256": _sha256(tar),
                "files": len(files),
                "source_date_epoch": epoch,
                "image": image.tag,
                "dependencies": sorted(d.name for d in dependencies),
            },
        )
        return Artifact(recipe.name, recipe.version, target, key, tar)
    except BaseException:
        docker.remove_container(container)
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
