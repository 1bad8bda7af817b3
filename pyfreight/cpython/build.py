"""Builds CPython in the build container, with every extension module built in,
into an install tree that is then made relocatable (pyfreight.cpython.relocate)."""

from __future__ import annotations

import contextlib
import re
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from pyfreight import toolchain
from pyfreight.container import images
from pyfreight.container.build_job import BuildJob, job_key, run_build_job
from pyfreight.cpython import recompile, relocate, windows_projects, windows_training
from pyfreight.cpython.naming import folder_stem
from pyfreight.cpython.options import INSTALL_PREFIX, OUTPUT_DIR, BuildOptions, compiler_env, configure_args
from pyfreight.cpython.profiles import BOLT_PROFILE_NAME, PGO_PROFILE_NAME, SavedProfiles
from pyfreight.cpython.progress import CPythonPhases
from pyfreight.cpython.setup_local import (
    load_extension_data,
    parse_setup,
    render_setup_local,
    required_recipes,
)
from pyfreight.cpython.spec import BuildSpec
from pyfreight.cpython.versions import CPythonSource
from pyfreight.deps.recipe_build import Artifact
from pyfreight.deps.scheduler import build_deps
from pyfreight.errors import PyfreightError
from pyfreight.formats.tarball import newest_mtime, read_member, walk_sorted, write_tar
from pyfreight.hashing import file_sha256
from pyfreight.leftovers import owned
from pyfreight.logs import say
from pyfreight.paths import REPO_ROOT, Workspace
from pyfreight.records import exclusive, record_matches, write_record
from pyfreight.sources.fetch import fetch_source
from pyfreight.targets import Target, build_machine_target

CPYTHON_DIR = REPO_ROOT / "cpython"
# Our patches to CPython's sources, each naming in its header the pinned minor
# versions it applies to (`Versions: 3.14 3.15`) and optionally the build modifiers it
# is only for (`Options: static`); docs/cpython-patches.md.
CPYTHON_PATCHES_DIR = REPO_ROOT / "cpython-patches"
# Files of cpython/ the container build uses.
RECIPE_FILES = ("build.sh", "export-build.sh", "print-vars.mk", "tkinter-tcl-library.py")
# A core object of the targets built for an x86-64 level (toolchain.cpu_level_check), and
# only theirs: the other targets' archives stay as they were, byte for byte.
CPU_LEVEL_CHECK = "cpu-level-check.c"
# Inside the build container: where saved profiles are handed in.
RECIPE_INPUTS = "/inputs/recipe"


@dataclass(frozen=True)
class CPythonBuild:
    spec: BuildSpec  # what was built: version, options, target
    source: CPythonSource  # its pinned source
    key: str  # the cache key: a hash of every input of the build
    tree: Path  # the relocatable install tree (install/ of the archive-to-be)
    artifact: Path  # deterministic tar of it
    profile: Path | None  # the merged PGO profile (pgo builds only)
    bolt_profile: Path | None  # llvm-bolt's merged profile (bolt builds only)
    objects: Path  # the exported build folder: objects, config.c, Setup files, make's lists
    dependencies: dict[str, Path]  # recipe name -> artifact it linked
    # A cross build's build python (this machine's tree of the same version): it also
    # answers for a tree whose own interpreter cannot run here (archives/write.py)
    build_python: Path | None = None


def build_cpython(
    spec: BuildSpec,
    ws: Workspace,
    jobs: int,
    force: bool = False,
    profiles: SavedProfiles | None = None,
) -> CPythonBuild:
    """Builds (or reuses) the build `spec` names. A pgo build trains in the container and
    keeps the merged profiles beside the tree; given saved `profiles`, it skips training
    and rebuilds from them instead."""
    src, options, target = spec.source(), spec.options, spec.target
    spec.check_target_has()
    if profiles is not None:
        profiles.check(spec)
    tarball = fetch_source(src.source, ws.downloads, log=say)
    build_python: CPythonBuild | None = None  # a cross build's interpreter of this machine
    if target.toolchain.cpython_build == "visual-studio-projects":
        deps = build_deps(None, target, ws, parallel=2, jobs=jobs)  # every recipe the target has
        image = images.ensure_images(ws, target)
        files, env = windows_projects.job_inputs(src, options, target, tarball, ws.scratch, ws.downloads)
        # A pgo build from saved profiles has its profile among its inputs; one that
        # trains gets it once trained (below), and is up to date while its other inputs are.
        saved: dict[str, Path | bytes] = {PGO_PROFILE_NAME: profiles.pgo} if profiles is not None else {}
        job = _job(src, files | patches_for(src, options, target) | saved, env, deps.artifacts)
    else:
        origin = f"{src.top_dir}/Modules/Setup.stdlib.in"
        modules = parse_setup(read_member(tarball, origin).decode())
        extension_data = load_extension_data(os_name=target.os)
        setup_local = render_setup_local(modules, extension_data, origin, options.static)
        deps = build_deps(required_recipes(modules, extension_data), target, ws, parallel=2, jobs=jobs)
        if not target.native:
            machine = build_machine_target()
            say(f"cpython {src.version} {options}: for {target.triple}; build python: {machine.triple} noopt")
            build_python = build_cpython(
                BuildSpec(spec.version, BuildOptions.parse("noopt"), machine), ws, jobs
            )
        image = images.ensure_images(ws, target)
        tkinter = "_tkinter" not in extension_data.excluded
        job = _cpython_job(src, options, target, setup_local, tkinter, deps.artifacts, profiles, build_python)
    key = job_key(job, image, target)

    build_python_tree = None if build_python is None else build_python.tree
    stem = folder_stem(spec)
    dependencies = {name: a.path for name, a in sorted(deps.artifacts.items())}
    build = CPythonBuild(
        spec=spec,
        source=src,
        key=key,
        tree=ws.build / stem,
        artifact=ws.build / f"{stem}.tar",
        profile=ws.build / f"{stem}.profdata" if options.pgo else None,
        bolt_profile=ws.build / f"{stem}.fdata" if spec.bolt else None,
        objects=ws.build / f"{stem}.build",
        dependencies=dependencies,
        build_python=build_python_tree,
    )
    record = ws.build / f"{stem}.json"
    with exclusive(record, f"cpython {src.version} {options}"):
        kept = [p for p in (build.profile, build.bolt_profile) if p is not None]
        outputs = [build.tree, build.artifact, build.objects, *kept]
        if not force and record_matches(record, key) and all(p.exists() for p in outputs):
            say(f"cpython {src.version} {options}: up to date ({build.artifact.name})")
            return build

        # From here on, nothing of an earlier build is trusted until the new record is written.
        record.unlink(missing_ok=True)
        epoch = newest_mtime(tarball) or 0
        log = ws.logs / f"{stem}.log"
        training = "from the saved profiles " if profiles else ("with PGO training " if options.pgo else "")
        say(f"cpython {src.version} {options}: building {training}(log: {log})")
        started = time.monotonic()
        # The profile a Windows pgo build's training merged: an input of its build job,
        # then kept from that job's outputs like every pgo build's.
        trained = ws.scratch / f"{owned(stem)}{PGO_PROFILE_NAME}"
        with contextlib.ExitStack() as cleanup:
            cleanup.callback(trained.unlink, missing_ok=True)
            if (
                target.toolchain.cpython_build == "visual-studio-projects"
                and options.pgo
                and profiles is None
            ):
                artifacts = deps.artifacts
                instrumented = _windows_instrumented_job(src, options, target, tarball, ws, jobs, artifacts)
                training_log = ws.logs / f"{stem}.training.log"
                say(f"cpython {src.version} {options}: instrumented build and training (log: {training_log})")
                windows_training.train(instrumented, image, target, jobs, epoch, ws, training_log, trained)
                job = replace(job, files={**job.files, PGO_PROFILE_NAME: trained})
            finished = cleanup.enter_context(
                run_build_job(job, image, target, jobs, epoch, ws, log, progress=CPythonPhases())
            )
            install, outputs_dir = finished.output(INSTALL_PREFIX), finished.output(OUTPUT_DIR)
            for kept_as, name in ((build.profile, PGO_PROFILE_NAME), (build.bolt_profile, BOLT_PROFILE_NAME)):
                if kept_as is not None:
                    made = outputs_dir / name
                    if not made.is_file():
                        raise PyfreightError(f"the {options} build left no merged profile {name}; see {log}")
                    made.replace(kept_as)
            _replace(build.objects, outputs_dir / "build")
            if (
                target.toolchain.cpython_build == "configure"
            ):  # a Windows tree finds its prefix beside python.exe
                say(f"cpython {src.version} {options}: making the tree relocatable")
                rewritten = relocate.make_relocatable(install, src.version)
                recompile.recompile(install, rewritten, target, ws, log, build_python_tree)
            _replace(build.tree, install)
        tree = build.tree
        write_tar(build.artifact, ((f"install/{p}", tree / p) for p in walk_sorted(tree)), epoch)
        recorded = {"key": key, "version": src.version, "options": str(options)}
        if build.profile is not None:
            recorded["pgo_profile_sha256"] = file_sha256(build.profile)
        if build.bolt_profile is not None:
            recorded["bolt_profile_sha256"] = file_sha256(build.bolt_profile)
        write_record(record, recorded)
        say(f"cpython {src.version} {options}: built in {time.monotonic() - started:.0f} s")
        return build


def _windows_instrumented_job(
    src: CPythonSource,
    options: BuildOptions,
    target: Target,
    tarball: Path,
    ws: Workspace,
    jobs: int,
    artifacts: Mapping[str, Artifact],
) -> BuildJob:
    """The build job of the interpreter a Windows pgo build trains: the same projects
    and patches, instrumented, linking LLVM's profile runtime (built for it alone)."""
    runtime = windows_projects.PROFILE_RUNTIME_RECIPE
    built = build_deps([runtime], target, ws, jobs=jobs).artifacts
    files, env = windows_projects.job_inputs(
        src, options, target, tarball, ws.scratch, ws.downloads, instrumented=True
    )
    return _job(src, files | patches_for(src, options, target), env, {**artifacts, runtime: built[runtime]})


def _replace(dest: Path, new: Path) -> None:
    if dest.exists():
        shutil.rmtree(dest)
    shutil.move(new, dest)


def patches_for(src: CPythonSource, options: BuildOptions, target: Target) -> dict[str, Path | bytes]:
    """Our patches for this build, staged as patches/<name> (the build script applies
    them in name order) and hashed into the key like every file: those whose header
    names the minor version (`Versions:`), and, where the header says, only for builds
    with every modifier named (`Options: static`) or for targets of an operating system
    named (`OS: windows`)."""
    files: dict[str, Path | bytes] = {}
    for patch in sorted(CPYTHON_PATCHES_DIR.glob("*.patch")):
        text = patch.read_text()
        versions = re.search(r"^Versions:(.*)$", text, re.MULTILINE)
        if versions is None:
            raise PyfreightError(f"{patch}: its header has no 'Versions:' line")
        only = re.search(r"^Options:(.*)$", text, re.MULTILINE)
        if only and not set(only[1].split()) <= set(options.modifiers):
            continue
        systems = re.search(r"^OS:(.*)$", text, re.MULTILINE)
        if systems and target.os not in systems[1].split():
            continue
        if src.minor in versions[1].split():
            files[f"patches/{patch.name}"] = patch
    return files


def _cpython_job(
    src: CPythonSource,
    options: BuildOptions,
    target: Target,
    setup_local: str,
    tkinter: bool,
    artifacts: Mapping[str, Artifact],
    profiles: SavedProfiles | None,
    build_python: CPythonBuild | None,
) -> BuildJob:
    """CPython as a recipe: cpython/'s build files plus the generated Setup.local (and
    saved profiles) and our patches for its version, the pinned source, every dependency
    artifact, and the configure arguments and compiler variables in the environment."""
    files: dict[str, Path | bytes] = {name: CPYTHON_DIR / name for name in RECIPE_FILES}
    files["Setup.local"] = setup_local.encode()
    files |= patches_for(src, options, target)
    if target.toolchain.cpu_level_check:
        files[CPU_LEVEL_CHECK] = CPYTHON_DIR / CPU_LEVEL_CHECK
    if profiles is not None:
        files[PGO_PROFILE_NAME] = profiles.pgo
        if profiles.bolt is not None:
            files[BOLT_PROFILE_NAME] = profiles.bolt
    env = compiler_env(options, target) | {
        "INSTALL_DIR": INSTALL_PREFIX,  # not INSTALL: configure reads that as a program
        "PY_TARBALL": src.source.file,
        "PY_TOPDIR": src.top_dir,
        "CONFIGURE_ARGS": "\n".join(configure_args(src, options, target)),
        "OUTPUT_DIR": OUTPUT_DIR,
        "PGO_PROFILE": f"{RECIPE_INPUTS}/{PGO_PROFILE_NAME}" if profiles else "",
        "BUILD_TKINTER": "yes" if tkinter else "",
        "CPU_LEVEL_CHECK": CPU_LEVEL_CHECK if target.toolchain.cpu_level_check else "",
        "LLVM_BIN": toolchain.LLVM_BIN,
    }
    if profiles is not None and profiles.bolt is not None:
        env["BOLT_PROFILE"] = f"{RECIPE_INPUTS}/{BOLT_PROFILE_NAME}"
    host_code = {"relocate.py": Path(relocate.__file__), "recompile.py": Path(recompile.__file__)}
    return _job(src, files, env, artifacts, build_python, host_code)


def _job(
    src: CPythonSource,
    files: dict[str, Path | bytes],
    env: dict[str, str],
    artifacts: Mapping[str, Artifact],
    build_python: CPythonBuild | None = None,
    host_code: Mapping[str, Path] | None = None,
) -> BuildJob:
    """CPython's build job: its files and environment, the pinned source, and every
    dependency artifact (and a cross build's build python) with their keys; `host_code`
    is driver code that shapes the tree after the build (the key covers it too)."""
    dependency_keys = {name: a.key for name, a in sorted(artifacts.items())}
    dependency_artifacts = [artifacts[name].path for name in sorted(artifacts)]
    if build_python is not None:  # a cross build's build python (options.BUILD_PYTHON_PREFIX)
        dependency_keys["<build-python>"] = build_python.key
        dependency_artifacts.append(build_python.artifact)
    return BuildJob(
        name="cpython",
        version=src.version,
        sources=[src.source],
        files=files,
        env=env,
        dependency_keys=dependency_keys,
        dependency_artifacts=dependency_artifacts,
        outputs=[INSTALL_PREFIX, OUTPUT_DIR],
        host_code=dict(host_code or {}),
    )
