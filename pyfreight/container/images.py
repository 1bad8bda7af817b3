"""Pinned images, built here (no registry is ever asked):

- base:    debootstrap of the pinned suite, `docker import`ed;
- sysroot: per target (targets/*.yaml): the pinned C library packages of the target's
           suite and architecture (or, for musl, Debian's kernel headers and musl built
           from libc-recipes/), absolute symlinks made relative, cut down to what
           compilers read, with glibc's floor header, as a tarball;
- build:   per target: dockerfiles/build.Dockerfile on the base, the pinned toolchain
           and the target's sysroot (a target whose C library is built from source has
           a second one, with the sysroot's Debian part only, to build that library in);
- runtime: the suite installs are checked in, of the target's architecture; for a
           target with `libc.runtime_tools` (musl), an image with no glibc at all.

Each tag is a hash of its inputs, so a changed pin makes a new image and an unchanged
one is reused."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from pyfreight import toolchain
from pyfreight.container import docker, glibc_floor, libc_only_image, libc_sysroot, zig_sysroot
from pyfreight.container.build_image import BuildImage
from pyfreight.container.run import RunSpec, run
from pyfreight.datafiles import load_yaml
from pyfreight.errors import PyfreightError
from pyfreight.formats.tarball import walk_sorted, write_tar
from pyfreight.hashing import text_sha256
from pyfreight.leftovers import owned
from pyfreight.logs import say
from pyfreight.paths import DOCKERFILES_DIR, Workspace
from pyfreight.records import exclusive
from pyfreight.sources.mirrors import DebianMirrors, find_debian_mirrors
from pyfreight.targets import RunsEmulated, Target, emulator_of

SPEC_FILE = DOCKERFILES_DIR / "images.yaml"
WINE_DOCKERFILE = "wine-runtime.Dockerfile"
BINFMT_MISC = Path("/proc/sys/fs/binfmt_misc")


def load_spec() -> dict[str, Any]:
    spec: dict[str, Any] = load_yaml(SPEC_FILE, "images.schema.json")
    return spec


def _digest(*parts: object) -> str:
    return text_sha256(json.dumps(parts, sort_keys=True, default=str))[:16]


def base_tag(spec: dict, section: str = "base") -> str:
    return f"pyfreight-{section}:{_digest(section, spec[section])}"


def sysroot_digest(target: Target, with_libc: bool = True) -> str:
    """The digest of the target's sysroot; `with_libc=False`: of its Debian part alone,
    before a C library built from source (`libc_recipe`) is added."""
    if target.toolchain.zig is not None:  # the wheel, and the compile that fills its cache in the image
        driver = zig_sysroot.DRIVER.read_text()
        overlay = zig_sysroot.overlay_digest_parts(target.toolchain.sysroot)
        patches = zig_sysroot.patches_digest(target.toolchain.sysroot)
        zig = ("sysroot", dict(target.toolchain.sysroot), toolchain.zig_warm_command(target), driver, overlay)
        # Patches join the digest only when there are some: an unpatched target's
        # sysroot (macOS's) keeps its digest, and its image.
        return _digest(*zig, patches) if patches else _digest(*zig)
    floor = (target.libc.ceiling, glibc_floor.FORMAT) if target.libc.glibc else None
    parts: list[object] = ["sysroot", target.debian_architecture, dict(target.toolchain.sysroot), floor]
    libc = libc_sysroot.libc_digest(target) if with_libc else None
    if libc is not None:
        parts.append(libc)
    return _digest(*parts)


def build_tag(spec: dict, target: Target, with_libc: bool = True) -> str:
    """The build image's tag; `with_libc=False`: of the image its C library is built in
    (libc_recipe), whose sysroot holds only the Debian part."""
    build = spec["build"]
    files = {name: (DOCKERFILES_DIR / build[name]).read_text() for name in ("dockerfile", "packages")}
    runtime = toolchain.compiler_runtime_package(target, files["packages"])
    sysroot = sysroot_digest(target, with_libc)
    return f"pyfreight-build:{_digest('build', base_tag(spec), sysroot, files, runtime)}"


def wine_runtime_tag(spec: dict, target: Target) -> str:
    """The runtime image of a target whose programs run under Wine (runners/wine.py)."""
    dockerfile = (DOCKERFILES_DIR / WINE_DOCKERFILE).read_text()
    parts = ("wine", _wine_base_tag(spec, target), dict(target.wine.packages), dockerfile)
    return f"pyfreight-runtime:{_digest(*parts)}"


def _wine_base_tag(spec: dict, target: Target) -> str:
    """The Debian Wine is installed on: this machine's architecture, or for a Wine of
    the target's own (run through its emulator), that architecture's, whose containers
    start with the emulator's CPU."""
    if target.wine.emulator is None:
        return base_tag(spec, "wine")
    return f"pyfreight-wine:{_digest('wine', spec['wine'], target.debian_architecture, target.emulator_env)}"


def unix_runtime_tag(spec: dict, target: Target) -> str:
    """The runtime image of a target whose programs run in a container of their own
    (runners/container.py): the older Debian suite of its architecture, or its own libc."""
    if target.libc.runtime_tools is not None:  # no Debian: the target's own libc and tools
        tools = libc_sysroot.libc_folder_recipe(target.libc.runtime_tools, target, "runtime_tools")
        parts: tuple[object, ...] = ("libc-only", sysroot_digest(target), libc_sysroot.recipe_digest(tools))
        return f"pyfreight-runtime:{_digest(*parts, target.emulator_env)}"
    parts = ("runtime", _runtime_base(spec, target), target.debian_architecture, target.emulator_env)
    return f"pyfreight-runtime:{_digest(*parts)}"


def _runtime_base(spec: dict, target: Target) -> dict:
    """The Debian installs of `target` are checked in: images.yaml's runtime suite, or
    the target's own where the mirror has none of its architecture in that one."""
    suite = target.run.debian_suite if isinstance(target.run, RunsEmulated) else None
    return spec["runtime"] if suite is None else dict(spec["runtime"], suite=suite)


def _debootstrap(
    suite: str,
    variant: str,
    dest: Path,
    mirror: str,
    log: Path,
    include: Iterable[str] = (),
    script: str | None = None,
    architecture: str | None = None,
    foreign: bool = False,
) -> None:
    """debootstrap into `dest`; `foreign` stops after the first stage, which downloads
    every package and unpacks only the essential ones (the second stage runs the
    target's own programs)."""
    if os.geteuid() != 0:
        raise PyfreightError(
            "making the base image and sysroot needs debootstrap as root; run as root "
            "(or with sudo) once, after which the images are reused"
        )
    exe = shutil.which("debootstrap") or "/usr/sbin/debootstrap"
    if not Path(exe).exists():
        raise PyfreightError("debootstrap is missing: apt-get install -y debootstrap")
    args = [exe, f"--variant={variant}"]
    if architecture:
        args.append(f"--arch={architecture}")
    if foreign:
        args.append("--foreign")
    if include:
        args.append("--include=" + ",".join(include))
    args += [suite, str(dest), mirror]
    if script:  # a suite newer than this debootstrap knows, bootstrapped like `script`
        args.append(f"/usr/share/debootstrap/scripts/{script}")
    arch = f", {architecture}" if architecture else ""
    say(f"  debootstrap {suite} ({variant}{arch}) from {mirror} (log: {log})")
    docker.run_logged(args, log, f"debootstrap {suite}")


def _apt_sources(suite: str, mirrors: DebianMirrors) -> str:
    lines = [f"deb {mirrors.archive} {suite} main", f"deb {mirrors.archive} {suite}-updates main"]
    if mirrors.security:
        lines.append(f"deb {mirrors.security} {suite}-security main")
    return "\n".join(lines) + "\n"


def _ensure_base(spec: dict, ws: Workspace, mirrors: DebianMirrors) -> str:
    """The build images' own Debian, debootstrapped and imported as an image."""
    return _ensure_rootfs_image(base_tag(spec), spec["base"], ws, mirrors)


def _ensure_rootfs_image(
    tag: str,
    base: dict,
    ws: Workspace,
    mirrors: DebianMirrors,
    architecture: str | None = None,
    env: dict[str, str] | None = None,
) -> str:
    """A debootstrapped Debian (suite, variant, optional include and script), imported
    as the image `tag`, its containers started with `env`. A foreign `architecture` is
    bootstrapped through its emulator (binfmt_misc), and the image keeps the host's
    platform label: binfmt_misc runs its programs whatever the label says."""
    if docker.image_id(tag):
        return tag
    with _making(ws, tag):
        if not docker.image_id(tag):  # another run may have made it while this one waited
            _bootstrap_image(tag, base, ws, mirrors, architecture, env)
    return tag


def _making(ws: Workspace, tag: str) -> AbstractContextManager[None]:
    """Held while `tag` is made: two runs on one build folder (a build and a test beside
    it) would both debootstrap the same image, and write one log at once."""
    return exclusive(ws.images / f"{tag.replace(':', '-')}.image", f"image {tag}")


def _bootstrap_image(
    tag: str,
    base: dict,
    ws: Workspace,
    mirrors: DebianMirrors,
    architecture: str | None,
    env: dict[str, str] | None,
) -> None:
    say(f"image {tag}: building")
    log = ws.logs / f"image-{tag.replace(':', '-')}.log"
    ws.scratch.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=ws.scratch, prefix=owned("rootfs")) as tmp:
        rootfs = Path(tmp) / "rootfs"
        _debootstrap(
            base["suite"],
            base["variant"],
            rootfs,
            mirrors.archive,
            log,
            base.get("include", ()),
            base.get("script"),
            architecture,
        )
        (rootfs / "etc/apt/sources.list").write_text(_apt_sources(base["suite"], mirrors))
        docker.import_rootfs(rootfs, tag, env or {}, log)


def relativize_symlinks(root: Path) -> int:
    """Rewrites absolute symlinks inside `root` as relative ones, so that a linker
    given --sysroot=root does not escape to the host's files. Returns how many."""
    changed = 0
    for rel in walk_sorted(root):
        path = root / rel
        if path.is_symlink():
            target = os.readlink(path)
            if target.startswith("/"):
                new = os.path.relpath(root / target.lstrip("/"), path.parent)
                path.unlink()
                path.symlink_to(new)
                changed += 1
    return changed


def _installed_versions(rootfs: Path) -> dict[str, str]:
    out = subprocess.run(
        ["dpkg-query", f"--admindir={rootfs}/var/lib/dpkg", "-W", "-f", "${Package}=${Version}\n"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def _ensure_sysroot(spec: dict, target: Target, ws: Workspace, mirrors: DebianMirrors, base: str) -> Path:
    digest = sysroot_digest(target)
    out = ws.images / f"sysroot-{digest}.tar"
    if out.exists():
        return out
    if target.toolchain.zig is not None:
        overlay = zig_sysroot.overlay_folder(target.toolchain.sysroot)
        zig_sysroot.write_sysroot(
            target.toolchain.zig, ws, out, overlay, zig_sysroot.patch_files(target.toolchain.sysroot)
        )
        return out
    sysroot = target.toolchain.sysroot
    what = f"sysroot {sysroot['suite']} {target.debian_architecture}"
    say(f"{what} ({digest}): building")
    log = ws.logs / f"sysroot-{digest}.log"
    ws.scratch.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=ws.scratch, prefix=owned("sysroot")) as tmp:
        rootfs = Path(tmp) / "rootfs"
        pins: dict[str, str] = dict(sysroot["packages"])
        if target.native:
            _debootstrap(sysroot["suite"], sysroot["variant"], rootfs, mirrors.archive, log, pins)
            versions = _installed_versions(rootfs)
        else:
            # Nothing of the target's own code runs: debootstrap's first stage fetches
            # the packages, and the ones it left packed are unpacked here.
            _debootstrap(
                sysroot["suite"],
                sysroot["variant"],
                rootfs,
                mirrors.archive,
                log,
                pins,
                architecture=target.debian_architecture,
                foreign=True,
            )
            versions = _unpack_remaining(rootfs, log)
        wrong = {p: versions.get(p) for p, v in pins.items() if versions.get(p) != v}
        if wrong:
            detail = ", ".join(f"{p} is {wrong[p]} (pinned {pins[p]})" for p in sorted(wrong))
            raise PyfreightError(f"{what}: {detail}; update the pins in targets/{target.triple}.yaml")
        manifest = "".join(f"{p}={v}\n" for p, v in sorted(versions.items()))
        (ws.images / f"sysroot-{digest}.manifest.txt").write_text(manifest)
        relativize_symlinks(rootfs)
        kept = {k: k for k in sysroot["keep"]} | dict(sysroot.get("keep_as", {}))
        members = []
        for name, found in kept.items():
            if (rootfs / found).exists() or (rootfs / found).is_symlink():
                members += _tree_members(name, rootfs / found)
        if libc_sysroot.libc_recipe(target) is not None:
            members += _build_libc(spec, target, ws, base, members, Path(tmp))
        if target.libc.glibc:
            members += _floor_header(rootfs, target, Path(tmp) / "floor")
        write_tar(out, members, epoch=0)
    return out


def _build_libc(
    spec: dict, target: Target, ws: Workspace, base: str, debian_members: list[tuple[str, Path]], tmp: Path
) -> list[tuple[str, Path]]:
    """The sysroot members of the target's C library (libc_recipe), built in the target's
    own build image with only the sysroot's Debian part: a C library builds freestanding,
    but links the compiler runtime of its architecture, which only that image has for a
    foreign target (toolchain.foreign_compiler_runtime: LLVM's builtins)."""
    headers = tmp / "debian-part.tar"
    write_tar(headers, debian_members, epoch=0)
    tag = _ensure_build(spec, target, ws, base, headers, with_libc=False)
    image = docker.image_id(tag)
    assert image is not None
    builder = BuildImage(tag=tag, image_id=image, manifest=_write_manifest(tag, ws))
    return libc_sysroot.build_libc_into(target, ws, tmp / "libc", builder)


def _tree_members(name: str, path: Path) -> list[tuple[str, Path]]:
    """Tarball members for `path` named `name`, and everything below it."""
    members = [(name, path)]
    if path.is_dir() and not path.is_symlink():
        members += [(f"{name}/{r}", path / r) for r in walk_sorted(path)]
    return members


def _floor_header(rootfs: Path, target: Target, scratch: Path) -> list[tuple[str, Path]]:
    """The sysroot members of the header that holds compiles to the target's glibc
    ceiling (toolchain.GLIBC_FLOOR_HEADER), generated from the sysroot's own libraries."""
    libraries = [
        found.resolve()
        for name in sorted(target.libc.needed)
        for top in ("lib", "usr/lib")
        for found in sorted((rootfs / top).glob(f"*/{name}"))
    ]
    if not any(p.name.startswith("libc") for p in libraries):
        raise PyfreightError(f"sysroot of {target.triple}: no libc.so.6 under lib/ or usr/lib/")
    relative = Path(toolchain.GLIBC_FLOOR_HEADER).relative_to(toolchain.SYSROOT)
    path = scratch / relative
    path.parent.mkdir(parents=True)
    path.write_text(glibc_floor.floor_header(libraries, target.libc.held_ceiling))
    return [(str(relative.parent), path.parent), (str(relative), path)]


def _unpack_remaining(rootfs: Path, log: Path) -> dict[str, str]:
    """After debootstrap's first stage: unpacks the packages it only downloaded (its
    `base` list: what --include added beyond the essential set) into `rootfs`, as the
    first stage unpacked the others, and returns every downloaded package's version."""
    stage = rootfs / "debootstrap"
    debs = dict(line.split(" ", 1) for line in (stage / "debpaths").read_text().splitlines() if " " in line)
    for name in (stage / "base").read_text().split():
        deb = rootfs / debs[name].lstrip("/")
        with log.open("a") as out:
            out.write(f"unpacking {deb.name}\n")
        tar = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE)
        # --keep-directory-symlink: in a merged /usr (bookworm on), lib is a link to usr/lib,
        # which tar would otherwise replace by a folder of the package's ./lib files alone.
        docker.run_logged(
            ["tar", "-C", str(rootfs), "--keep-directory-symlink", "-xf", "-"],
            log,
            f"unpacking {deb.name}",
            stdin=tar.stdout,
        )
        if tar.wait() != 0:
            raise PyfreightError(f"dpkg-deb could not read {deb.name}; see {log}")
    versions = {}
    for name, path in sorted(debs.items()):
        fields = ["dpkg-deb", "--field", str(rootfs / path.lstrip("/")), "Version"]
        versions[name] = subprocess.run(fields, capture_output=True, text=True, check=True).stdout.strip()
    return versions


def _ensure_build(
    spec: dict, target: Target, ws: Workspace, base: str, sysroot_tar: Path, with_libc: bool = True
) -> str:
    tag = build_tag(spec, target, with_libc)
    if docker.image_id(tag):
        return tag
    say(f"image {tag}: building")
    log = ws.logs / f"image-{tag.replace(':', '-')}.log"
    with tempfile.TemporaryDirectory(dir=ws.scratch, prefix=owned("context")) as ctx_dir:
        ctx = Path(ctx_dir)
        shutil.copy(DOCKERFILES_DIR / spec["build"]["dockerfile"], ctx / "Dockerfile")
        shutil.copy(DOCKERFILES_DIR / spec["build"]["packages"], ctx / "build-packages.txt")
        os.link(sysroot_tar, ctx / "sysroot.tar")
        say(f"  docker build (log: {log})")
        warm = (
            ["--build-arg", f"ZIG_WARM={toolchain.zig_warm_command(target)}"] if target.toolchain.zig else []
        )
        packages = (DOCKERFILES_DIR / spec["build"]["packages"]).read_text()
        runtime = ["--build-arg", f"COMPILER_RUNTIME={toolchain.compiler_runtime_package(target, packages)}"]
        docker.run_logged(
            ["docker", "build", "--build-arg", f"BASE={base}", *warm, *runtime, "-t", tag, str(ctx)],
            log,
            f"docker build {tag}",
        )
    return tag


def require_emulator(target: Target) -> None:
    """Stops unless this machine can run `target`'s programs."""
    emulator = emulator_of(target)
    if emulator is not None and not emulator_registered(emulator):
        raise PyfreightError(
            f"{target.triple} runs through {emulator}, which binfmt_misc does not have "
            f"registered here; run `make setup` as root (scripts/ensure-emulators.sh)"
        )


def emulator_registered(emulator: str) -> bool:
    entry = BINFMT_MISC / emulator
    try:
        return entry.read_text().startswith("enabled")
    except OSError:
        return False


def pinned_manifest(manifest: str) -> str:
    """The lines of a build image's package manifest that name a package the image pins
    (dockerfiles/build-packages.txt): its toolchain. The rest is Debian's base system as
    debootstrap found it on the day the image was made, which differs between machines
    and days for the same tag; what an archive records of its image (the SBOM) must not
    change with it, or no archive would reproduce a day later."""
    pins = (DOCKERFILES_DIR / load_spec()["build"]["packages"]).read_text().splitlines()
    pinned = {line.partition("=")[0].strip() for line in pins if "=" in line and not line.startswith("#")}
    kept = [line for line in manifest.splitlines(keepends=True) if line.partition("=")[0] in pinned]
    return "".join(kept)


def _write_manifest(tag: str, ws: Workspace) -> Path:
    path = ws.images / f"{tag.replace(':', '-')}.manifest.txt"
    if not path.exists():
        query = ["dpkg-query", "-W", "-f", "${Package}=${Version}\n"]
        text = run(RunSpec(image=tag, command=query, what=f"listing the packages of {tag}")).stdout
        tmp = path.with_name(f"{owned(f'.{path.name}')}part")
        tmp.write_text("".join(sorted(text.splitlines(keepends=True))))
        os.replace(tmp, path)
    return path


def ensure_unix_runtime(ws: Workspace, target: Target) -> str:
    """The image installs for `target` are checked in (an older Debian than the
    builder's, of the target's architecture, or one holding only its own libc)."""
    docker.require_engine()
    require_emulator(target)
    spec = load_spec()
    tag = unix_runtime_tag(spec, target)
    if not docker.image_id(tag) and target.libc.runtime_tools is not None:
        image = ensure_images(ws, target)  # and the sysroot, whose loader and C library it holds
        sysroot_tar = ws.images / f"sysroot-{sysroot_digest(target)}.tar"
        return libc_only_image.ensure_libc_only_image(tag, target, ws, sysroot_tar, image)
    if not docker.image_id(tag):
        architecture = None if target.native else target.debian_architecture
        mirrors = find_debian_mirrors()
        _ensure_rootfs_image(tag, _runtime_base(spec, target), ws, mirrors, architecture, target.emulator_env)
    return tag


def ensure_wine_runtime(ws: Workspace, target: Target) -> str:
    """The image a Windows target's programs run in under Wine (runners/wine.py)."""
    docker.require_engine()
    spec = load_spec()
    tag = wine_runtime_tag(spec, target)
    return tag if docker.image_id(tag) else _ensure_wine(spec, target, ws, tag)


def _ensure_wine(spec: dict, target: Target, ws: Workspace, tag: str) -> str:
    """The Wine runtime image: the pinned Wine packages installed on the Debian that
    images.yaml names for Wine."""
    require_emulator(target)
    architecture = None if target.wine.emulator is None else target.debian_architecture
    base_image = _wine_base_tag(spec, target)
    env = target.emulator_env
    base = _ensure_rootfs_image(base_image, spec["wine"], ws, find_debian_mirrors(), architecture, env)
    say(f"image {tag}: building (Wine for {target.triple})")
    log = ws.logs / f"image-{tag.replace(':', '-')}.log"
    packages = " ".join(f"{name}={version}" for name, version in sorted(target.wine.packages.items()))
    ws.scratch.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=ws.scratch, prefix=owned("context")) as ctx_dir:
        shutil.copy(DOCKERFILES_DIR / WINE_DOCKERFILE, Path(ctx_dir) / "Dockerfile")
        say(f"  docker build (log: {log})")
        foreign = sorted({name.partition(":")[2] for name in target.wine.packages} - {""})
        command = ["docker", "build", "--build-arg", f"BASE={base}", "--build-arg", f"PACKAGES={packages}"]
        command += ["--build-arg", f"ARCHITECTURES={' '.join(foreign)}"]
        docker.run_logged([*command, "-t", tag, ctx_dir], log, f"docker build {tag}")
    return tag


def ensure_debian_python_image(ws: Workspace, minor: str) -> tuple[str, str] | None:
    """An image with Debian's own CPython `minor` (the yardstick of `pyfreight bench`)
    and the version Debian packaged, or None when images.yaml names no Debian suite
    serving that minor version."""
    docker.require_engine()
    suite = load_spec().get("debian_python", {}).get(minor)
    if suite is None:
        return None
    name = f"debian-python{minor}"
    tag = _ensure_rootfs_image(f"pyfreight-{name}:{_digest(name, suite)}", suite, ws, find_debian_mirrors())
    query = ["dpkg-query", "-W", "-f", "${Version}", f"python{minor}"]
    version = run(RunSpec(image=tag, command=query, what=f"asking {tag} for its python{minor}"))
    return tag, version.stdout.strip()


def ensure_images(ws: Workspace, target: Target) -> BuildImage:
    """Builds whatever image is missing and returns the build image of `target`. A
    target that does not run natively needs its emulator: builds run its programs
    (configure's test programs, tools a build makes and runs)."""
    docker.require_engine()
    require_emulator(target)
    spec = load_spec()
    ws.images.mkdir(parents=True, exist_ok=True)
    tag = build_tag(spec, target)
    if not docker.image_id(tag):
        with _making(ws, tag):
            if not docker.image_id(tag):
                started = time.monotonic()
                mirrors = find_debian_mirrors()
                base = _ensure_base(spec, ws, mirrors)
                sysroot_tar = _ensure_sysroot(spec, target, ws, mirrors, base)
                _ensure_build(spec, target, ws, base, sysroot_tar)
                say(f"images ready in {time.monotonic() - started:.0f} s")
    image = docker.image_id(tag)
    assert image is not None
    return BuildImage(tag=tag, image_id=image, manifest=_write_manifest(tag, ws))
