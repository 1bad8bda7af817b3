"""Builds CPython in the build container, with every extension module built in,
into an install tree that is then made relocatable (pyfreight.relocate)."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from pyfreight import toolchain
from pyfreight.container import docker, images
from pyfreight.cpython import relocate
from pyfreight.cpython.options import INSTALL_PREFIX, BuildOptions, compiler_env, configure_args
from pyfreight.cpython.setup_local import (
    load_extension_data,
    parse_setup,
    render_setup_local,
    required_recipes,
)
from pyfreight.cpython.versions import CPythonSource, cpython_source
from pyfreight.deps.cachekey import file_digest
from pyfreight.deps.recipe_build import container_user, docker_run_args
from pyfreight.deps.scheduler import build_deps
from pyfreight.errors import PyfreightError
from pyfreight.formats.tarball import extract, newest_mtime, read_member, walk_sorted, write_tar
from pyfreight.logs import say
from pyfreight.paths import REPO_ROOT, Workspace
from pyfreight.sources.fetch import copy_verified, fetch_source

CPYTHON_DIR = REPO_ROOT / "cpython"
ENTRY_SCRIPT = Path(__file__).resolve().parent.parent / "container" / "entry.sh"
# Files of cpython/ the container build uses.
RECIPE_FILES = ("build.sh", "export-build.sh", "print-vars.mk", "tkinter-tcl-library.py")
# Inside the build container: where build.sh leaves outputs other than the install
# tree (the merged PGO profile), and where a saved profile is handed in.
OUTPUT_DIR = "/outputs"
PGO_PROFILE_INPUT = "/inputs/recipe/pgo.profdata"


@dataclass(frozen=True)
class CPythonBuild:
    source: CPythonSource
    options: BuildOptions
    target: str
    tree: Path  # the relocatable install tree (install/ of the archive-to-be)
    artifact: Path  # deterministic tar of it
    profile: Path | None  # the merged PGO profile (pgo builds only)
    objects: Path  # the exported build folder: objects, config.c, Setup files, make's lists
    dependencies: dict[str, Path]  # recipe name -> artifact it linked


def _check_profile(options: BuildOptions, pgo_profile: Path | None) -> None:
    if pgo_profile is None:
        return
    if not options.pgo:
        raise PyfreightError(f"--pgo-profile is for pgo builds; {options} does not use a profile")
    if not pgo_profile.is_file():
        raise PyfreightError(f"PGO profile {pgo_profile} does not exist (give a .profdata a pgo build kept)")
    with pgo_profile.open("rb") as fh:
        magic = fh.read(8)
    # llvm-profdata's indexed format: the 64-bit magic 0x8169666f72706cff, little-endian.
    if magic != b"\xfflprofi\x81":
        raise PyfreightError(
            f"{pgo_profile} is not an indexed LLVM profile (llvm-profdata merge output); "
            "give the .profdata file a pgo build kept beside its install tree"
        )


def build_cpython(
    minor: str | None,
    options_text: str,
    target: str,
    ws: Workspace,
    jobs: int,
    force: bool = False,
    pgo_profile: Path | None = None,
) -> CPythonBuild:
    """Builds (or reuses) CPython `minor` with `options`. A pgo build trains in the
    container and keeps the merged profile beside the tree; given `pgo_profile`, it
    skips training and rebuilds from that profile instead."""
    src = cpython_source(minor)
    options = BuildOptions.parse(options_text)
    _check_profile(options, pgo_profile)
    tarball = fetch_source(src.source, ws.downloads, log=say)
    origin = f"{src.top_dir}/Modules/Setup.stdlib.in"
    modules = parse_setup(read_member(tarball, origin).decode())
    extension_data = load_extension_data()
    setup_local = render_setup_local(modules, extension_data, origin)
    deps = build_deps(required_recipes(modules, extension_data), target, ws, parallel=2, jobs=jobs)
    image = images.ensure_images(ws)
    dependencies = {name: a.path for name, a in sorted(deps.artifacts.items())}

    args = configure_args(src.version, options)
    flags = compiler_env(options)
    stem = f"cpython-{src.version}-{options}-{target}".replace("+", "_")
    key = json.dumps(
        {
            "source": src.source.sha256,
            "recipe": {name: file_digest(CPYTHON_DIR / name) for name in RECIPE_FILES},
            "entry": file_digest(ENTRY_SCRIPT),
            # the host-side rewriting of the installed tree is part of the product
            "relocate": file_digest(Path(relocate.__file__)),
            "setup_local": setup_local,
            "configure": args,
            "flags": flags,
            "image": image.image_id,
            "deps": {n: a.key for n, a in sorted(deps.artifacts.items())},
            "pgo_profile": file_digest(pgo_profile) if pgo_profile else None,
        },
        sort_keys=True,
    )
    tree = ws.build / stem
    artifact = ws.build / f"{stem}.tar"
    meta = ws.build / f"{stem}.json"
    profile = ws.build / f"{stem}.profdata" if options.pgo else None
    objects = ws.build / f"{stem}.build"
    fresh = meta.exists() and tree.is_dir() and artifact.exists() and objects.is_dir()
    fresh = fresh and (profile is None or profile.exists())
    if not force and fresh and json.loads(meta.read_text()).get("key") == key:
        say(f"cpython {src.version} {options}: up to date ({artifact.name})")
        return CPythonBuild(src, options, target, tree, artifact, profile, objects, dependencies)

    # From here on, nothing of an earlier build is trusted until the new record is written.
    meta.unlink(missing_ok=True)
    epoch = newest_mtime(tarball) or 0
    log = ws.logs / f"{stem}.log"
    ws.scratch.mkdir(parents=True, exist_ok=True)
    ws.logs.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="run-cpython-", dir=ws.scratch))
    container = f"pyfreight-cpython-{secrets.token_hex(4)}"
    started = time.monotonic()
    try:
        staging.chmod(0o755)
        inputs, prefix, install = staging / "inputs", staging / "prefix", staging / "install"
        outputs = staging / "outputs"
        (inputs / "sources").mkdir(parents=True)
        (inputs / "recipe").mkdir()
        copy_verified(src.source, ws.downloads, inputs / "sources" / src.source.file)
        for name in RECIPE_FILES:
            shutil.copy(CPYTHON_DIR / name, inputs / "recipe" / name)
        (inputs / "recipe" / "Setup.local").write_text(setup_local)
        if pgo_profile:
            shutil.copy(pgo_profile, inputs / "recipe" / Path(PGO_PROFILE_INPUT).name)
        shutil.copy(ENTRY_SCRIPT, inputs / "entry.sh")
        for path in [inputs, *inputs.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        for folder in (prefix, install, outputs):
            folder.mkdir()
        for name in sorted(deps.artifacts):
            extract(deps.artifacts[name].path, prefix)
        user = container_user(prefix, install, outputs)
        env = toolchain.build_environment(target, jobs, epoch) | flags
        env |= {
            "RECIPE_NAME": "cpython",
            "RECIPE_VERSION": src.version,
            "LICENSE_FILES": "",
            "INSTALL_DIR": INSTALL_PREFIX,  # not INSTALL: configure reads that as a program
            "PY_TARBALL": src.source.file,
            "PY_TOPDIR": src.top_dir,
            "CONFIGURE_ARGS": "\n".join(args),
            "OUTPUT_DIR": OUTPUT_DIR,
            "PGO_PROFILE": PGO_PROFILE_INPUT if pgo_profile else "",
        }
        training = "from the saved profile " if pgo_profile else ("with PGO training " if options.pgo else "")
        say(f"cpython {src.version} {options}: building {training}(log: {log})")
        log.write_text("")
        mounts = ((install, INSTALL_PREFIX), (outputs, OUTPUT_DIR))
        docker.run_logged(
            docker_run_args(container, user, inputs, prefix, env, image, mounts),
            log,
            f"CPython {src.version} {options} build",
        )
        if os.geteuid() == 0:  # the container wrote as its own user; hand the files back
            subprocess.run(["chown", "-R", "0:0", str(install), str(outputs)], check=True)
        if profile is not None:
            made = outputs / "pgo.profdata"
            if not made.is_file():
                raise PyfreightError(f"the {options} build left no merged PGO profile; see {log}")
            made.replace(profile)
        if objects.exists():
            shutil.rmtree(objects)
        shutil.move(outputs / "build", objects)
        relocate.make_relocatable(install, src.version)
        if tree.exists():
            shutil.rmtree(tree)
        shutil.move(install, tree)
        write_tar(artifact, ((f"install/{p}", tree / p) for p in walk_sorted(tree)), epoch)
        meta_tmp = meta.with_name(f".{meta.name}.part")
        recorded = {"key": key, "version": src.version, "options": str(options)}
        if profile is not None:
            recorded["pgo_profile_sha256"] = file_digest(profile)
        meta_tmp.write_text(json.dumps(recorded))
        meta_tmp.replace(meta)
        say(f"cpython {src.version} {options}: built in {time.monotonic() - started:.0f} s")
        return CPythonBuild(src, options, target, tree, artifact, profile, objects, dependencies)
    except BaseException:
        docker.remove_container(container)
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
