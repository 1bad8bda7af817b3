"""The distribution archives of one CPython build, in dist/:

- cpython-{version}+{release}-{triple}-{options}-full.tar.zst: python/PYTHON.json
  (first member), python/install/ (the relocatable tree), python/build/ (object
  files, static libraries of the dependencies under build/lib/, config.c and its
  template, Setup files, the PGO profile), python/licenses/;
- …-install_only.tar.gz: python/ is the install tree itself, as installers unpack it;
- …-install_only_stripped.tar.gz: the same without debug information and without the
  stdlib's test packages.

Everything is written deterministically (sorted members, SOURCE_DATE_EPOCH mtimes,
no names or times in the compression headers) to a temporary name first."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pyfreight import toolchain
from pyfreight.archives import sbom
from pyfreight.archives.describe import Library, describe, object_file_format
from pyfreight.archives.flavours import (
    FLAVOURS,
    FULL,
    INSTALL_ONLY,
    INSTALL_ONLY_STRIPPED,
    PYTHON_JSON,
    Flavour,
    release_tag,
)
from pyfreight.container import images, libc_sysroot
from pyfreight.container.images import BuildImage
from pyfreight.container.run import Mount, RunSpec, run
from pyfreight.cpython.build import CPythonBuild
from pyfreight.cpython.buildinfo import read_build_info
from pyfreight.cpython.profiles import BOLT_PROFILE_NAME, PGO_PROFILE_NAME
from pyfreight.cpython.redistributable import license_text
from pyfreight.deps.graph import for_os
from pyfreight.errors import PyfreightError
from pyfreight.formats.elf import tree_elf_facts
from pyfreight.formats.tarball import extract, newest_mtime, read_member, walk_sorted, write_tar
from pyfreight.hashing import file_sha256, json_sha256
from pyfreight.leftovers import owned
from pyfreight.logs import say
from pyfreight.paths import IN_CONTAINER_DIR, Workspace
from pyfreight.platforms import installed_python_name, platform_of
from pyfreight.records import driver_code_digest, exclusive, record_matches, write_record
from pyfreight.runners import runner_for
from pyfreight.runners.container import PROBE_PREFIX
from pyfreight.runners.unavailable import BUILD_PYTHON_MOUNT
from pyfreight.sources.fetch import fetch_source
from pyfreight.sources.recipes import Recipe, load_all
from pyfreight.targets import Target, build_machine_target

DESCRIBE_SCRIPT = IN_CONTAINER_DIR / "describe_python.py"
FOREIGN_DESCRIBE_SCRIPT = IN_CONTAINER_DIR / "describe_foreign.py"
STATIC_LIBPYTHON = re.compile(r"lib/(python3[^/]*/config-[^/]+/)?libpython3[^/]*\.a")
RUN_TESTS = '''"""Runs CPython's test suite with this distribution's interpreter.
Usage: python build/run_tests.py [arguments of python -m test]"""

import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
python = os.path.join(here, "..", "install", {interpreter})
sys.exit(subprocess.call([python, "-m", "test", *sys.argv[1:]]))
'''


Members = list[tuple[str, Path]]  # (name in the archive, file)


class ArchiveCheck(Protocol):
    """Judges what is about to be published under `name` and raises when it must not be:
    `pyfreight validate`, which lives later in the flow (verify/), handed in as
    check-install is."""

    def tree(self, install: Path, document: dict[str, Any], name: str, target: Target) -> None:
        """The install tree, with the PYTHON.json it is to be packed with, before any
        archive of it is written."""

    def archive(self, written: Path, name: str, target: Target) -> None:
        """A written archive, under its temporary name."""


@dataclass(frozen=True)
class WrittenArchives:
    full: Path
    install_only: Path
    install_only_stripped: Path
    python_json: dict[str, Any]

    @property
    def archives(self) -> tuple[Path, Path, Path]:
        return (self.full, self.install_only, self.install_only_stripped)


def archive_paths(build: CPythonBuild, dist: Path, release: str) -> dict[Flavour, Path]:
    return {f: dist / f.file_name(build.spec, release) for f in FLAVOURS}


def source_epoch(build: CPythonBuild, ws: Workspace) -> int:
    """The build's date: its CPython source's newest member (SOURCE_DATE_EPOCH), every
    archive member's mtime and, as YYYYMMDD, the default release."""
    return newest_mtime(ws.downloads / build.source.source.file) or 0


def default_release(build: CPythonBuild, ws: Workspace) -> str:
    return release_tag(source_epoch(build, ws))


def distribution_key(build: CPythonBuild, release: str) -> str:
    """What the archives are made of: the build, the release tag, the images that
    describe and strip it, and the driver's own code (which lays the archives out)."""
    spec, target = images.load_spec(), build.spec.target
    return json_sha256(
        {
            "build": build.key,
            "release": release,
            "images": [runner_for(target).runtime_tag(spec), images.build_tag(spec, target)],
            "driver": driver_code_digest(),
        }
    )


def _probe(tree: Path, target: Target, ws: Workspace, build_python: Path | None, objects: Path) -> dict:
    """The interpreter's own account of itself (pyfreight/in_container/describe_python.py),
    run where the target's programs run; for a target whose programs cannot run here,
    the build python's account of the tree (in_container/describe_foreign.py)."""
    facts = runner_for(target).describe(tree, ws, DESCRIBE_SCRIPT)
    return facts if facts is not None else _probe_foreign(tree, target, ws, build_python, objects)


def _probe_foreign(
    tree: Path, target: Target, ws: Workspace, build_python: Path | None, objects: Path
) -> dict:
    """describe_python.py's facts of a tree that cannot run here, as the cross build's
    build python reads them from the tree (in_container/describe_foreign.py), with its
    built-in modules from the build's inittab."""
    if build_python is None:
        raise PyfreightError(
            f"{tree.name}: {target.triple}'s programs cannot run here, and it has no build python"
        )
    python = installed_python_name(tree)
    own = installed_python_name(build_python)
    ws.scratch.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=ws.scratch, prefix=owned("describe")) as tmp:
        builtins = Path(tmp) / "builtins.txt"
        builtins.write_text("\n".join(sorted(read_build_info(objects).modules)) + "\n")
        spec = RunSpec(
            image=images.ensure_unix_runtime(ws, build_machine_target()),
            command=[
                f"{BUILD_PYTHON_MOUNT}/bin/{own}",
                "/describe/describe_foreign.py",
                f"{PROBE_PREFIX}/bin/{python}",
                "/describe/builtins.txt",
                target.uname_machine,
            ],
            what=f"describing {tree.name} with the build python",
            mounts=[
                Mount(tree, PROBE_PREFIX),
                Mount(build_python, BUILD_PYTHON_MOUNT),
                Mount(FOREIGN_DESCRIBE_SCRIPT, "/describe/describe_foreign.py"),
                Mount(DESCRIBE_SCRIPT, "/describe/describe_python.py"),
                Mount(builtins, "/describe/builtins.txt"),
            ],
            name_hint="describe",
        )
        facts: dict = json.loads(run(spec).stdout)
    return facts


def _stage_dependencies(build: CPythonBuild, scratch: Path) -> tuple[dict[str, Library], Members]:
    """Static libraries (build/lib/) and license texts (licenses/<recipe>/) of every
    dependency recipe, as archive members, and the libraries by -l name."""
    recipes = load_all()
    libraries: dict[str, Library] = {}
    members: list[tuple[str, Path]] = []
    for name, artifact in sorted(build.dependencies.items()):
        prefix = scratch / name
        extract(artifact, prefix)
        license_root = prefix / "share" / "licenses" / name
        license_paths = tuple(f"licenses/{name}/{rel}" for rel in walk_sorted(license_root)
                              if (license_root / rel).is_file())  # fmt: skip
        if not license_paths:
            raise PyfreightError(f"the {name} artifact has no license text (recipe.yaml license_files)")
        members += [(p, license_root / p.split("/", 2)[2]) for p in license_paths]
        for lib in sorted((prefix / "lib").glob("lib*.a")):
            link_name = lib.name.removeprefix("lib").removesuffix(".a")
            libraries[link_name] = Library(
                link_name, f"build/lib/{lib.name}", name, (recipes[name].license,), license_paths
            )
            members.append((f"build/lib/{lib.name}", lib))
    return libraries, members


def _linked_libc(build: CPythonBuild, ws: Workspace, scratch: Path) -> tuple[Recipe | None, Members]:
    """For a fully static interpreter, the C library built into it (the target's
    sysroot.libc_recipe, e.g. musl) and its license texts as archive members: the
    executable carries that library's code, so the archive carries its license. A
    dynamically linked interpreter uses the system's C library and bundles none."""
    target = build.spec.target
    recipe = libc_sysroot.libc_recipe(target) if build.spec.options.static else None
    if recipe is None:
        return None, []
    members: Members = []
    for license_file in recipe.license_files:
        # The license files are named as the recipe's source tarball holds them
        # (sha256-verified again here before it is read).
        texts = []
        for source in recipe.sources:
            fetch_source(source, ws.downloads, log=say)
            try:
                texts.append(read_member(ws.downloads / source.file, license_file))
            except KeyError:
                continue
        if not texts:
            raise PyfreightError(
                f"libc-recipes/{recipe.name}/recipe.yaml: license file {license_file!r} "
                "is in none of its sources"
            )
        # As the build entry script lays license texts out: below the unpacked top folder.
        relative = license_file.split("/", 1)[-1]
        if ".." in Path(relative).parts or Path(relative).is_absolute():
            raise PyfreightError(
                f"libc-recipes/{recipe.name}/recipe.yaml: license file {license_file!r} leaves its folder"
            )
        path = scratch / recipe.name / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(texts[0])
        members.append((f"licenses/{recipe.name}/{relative}", path))
    return recipe, members


def _redistributed_license(target: Target, ws: Workspace, scratch: Path) -> Members:
    """The terms of the vendor's files the tree ships as they are (the VC runtime of a
    Windows tree), as their wheel carries them: licenses/<name>/LICENSE."""
    vendor = target.redistributable
    if vendor is None:
        return []
    path = scratch / vendor.name / "LICENSE"
    path.parent.mkdir(parents=True)
    path.write_bytes(license_text(vendor, ws.downloads))
    return [(f"licenses/{vendor.name}/LICENSE", path)]


def write_distribution(
    build: CPythonBuild, ws: Workspace, dist: Path, validate: ArchiveCheck, release: str | None = None
) -> WrittenArchives:
    """The three archives of `build` in `dist`, reused when an earlier run wrote them from
    the same inputs and they are still intact (they passed `validate` when written, and
    a changed validator is changed driver code: part of the key)."""
    build.spec.target.require("archives")
    release = release or default_release(build, ws)
    paths = archive_paths(build, dist, release)
    key = distribution_key(build, release)
    record_path = ws.build / f"{build.tree.name}.dist.json"
    with exclusive(record_path, "dist"):
        record = record_matches(record_path, key)
        wanted = {str(path): None for path in paths.values()}
        if record is not None and set(record.get("archives", {})) == set(wanted):
            intact = all(p.is_file() and file_sha256(p) == record["archives"][str(p)] for p in paths.values())
            if intact:
                say(f"dist: up to date ({paths[FULL].name} and its install_only archives)")
                document = json.loads(read_member(paths[FULL], PYTHON_JSON))
                full, plain, stripped = paths[FULL], paths[INSTALL_ONLY], paths[INSTALL_ONLY_STRIPPED]
                return WrittenArchives(full, plain, stripped, document)
        record_path.unlink(missing_ok=True)
        result = _write_archives(build, ws, paths, validate)
        archives = {str(p): file_sha256(p) for p in result.archives}
        write_record(record_path, {"key": key, "release": release, "archives": archives})
        return result


def _write_archives(
    build: CPythonBuild, ws: Workspace, paths: dict[Flavour, Path], validate: ArchiveCheck
) -> WrittenArchives:
    """The full archive (PYTHON.json first), then the install_only archives of the tree
    and of its stripped copy, all with the source's date as every member's mtime. The
    tree is judged before anything is packed, and each archive under its temporary
    name, so an archive that fails is never published."""
    full, install_only, stripped = paths[FULL], paths[INSTALL_ONLY], paths[INSTALL_ONLY_STRIPPED]
    epoch = source_epoch(build, ws)
    target = build.spec.target
    # The build image: the SBOM names it, and its llvm-strip strips the stripped copy.
    image = images.ensure_images(ws, build.spec.target)
    ws.scratch.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=ws.scratch, prefix=owned("dist")) as tmp:
        scratch = Path(tmp)
        document, members = _full_members(build, ws, image, scratch, full.name, epoch)
        validate.tree(build.tree, document, full.name, target)
        say(f"dist: writing {full.name}")
        write_tar(
            full, members, epoch, compression=FULL.compression, first=(PYTHON_JSON,),
            verify=lambda tmp: validate.archive(tmp, full.name, target),
        )  # fmt: skip

        say(f"dist: writing {install_only.name}")
        write_tar(
            install_only, _install_members(build.tree), epoch, compression=INSTALL_ONLY.compression,
            verify=lambda tmp: validate.archive(tmp, install_only.name, target),
        )  # fmt: skip

        stripped_tree = _stripped_copy(
            build.tree, scratch / "stripped", document["python_paths"]["stdlib"].removeprefix("install/"),
            document["python_stdlib_test_packages"], image,
        )  # fmt: skip
        say(f"dist: writing {stripped.name}")
        write_tar(
            stripped, _install_members(stripped_tree), epoch, compression=INSTALL_ONLY_STRIPPED.compression,
            verify=lambda tmp: validate.archive(tmp, stripped.name, target),
        )  # fmt: skip
    for path in (full, install_only, stripped):
        say(f"dist: {path.name}: {path.stat().st_size / 1e6:.1f} MB")
    return WrittenArchives(full, install_only, stripped, document)


def _full_members(
    build: CPythonBuild, ws: Workspace, image: BuildImage, scratch: Path, full_name: str, epoch: int
) -> tuple[dict[str, Any], Members]:
    """PYTHON.json and the full archive's members: the document, the licenses and the
    SBOM first, then the tree, the objects, the profiles and the dependencies' libraries
    and license texts (staged in `scratch`)."""
    tree, objects, target = build.tree, build.objects, build.spec.target
    layout = platform_of(target).layout
    libraries, dep_members = _stage_dependencies(build, scratch / "deps")
    libc, libc_members = _linked_libc(build, ws, scratch / "libc")
    dep_members += libc_members + _redistributed_license(target, ws, scratch / "vendor")
    cpython_license = tree / layout.license(tree)
    if not cpython_license.is_file():
        raise PyfreightError(f"{cpython_license} is missing: the install has no CPython license text")
    run_tests = scratch / "run_tests.py"
    interpreter = layout.interpreter(tree)
    run_tests.write_text(RUN_TESTS.format(interpreter=", ".join(f'"{p}"' for p in interpreter.split("/"))))
    document = _python_json(build, ws, libraries, f"install/{interpreter}")
    python_json = scratch / "PYTHON.json"
    python_json.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    sbom_file = scratch / "sbom.cdx.json"
    sbom_document = _sbom(build, full_name, libraries, document, epoch, image, libc)
    sbom_file.write_text(json.dumps(sbom_document, indent=2) + "\n")

    members = [
        (PYTHON_JSON, python_json),
        ("python/licenses/cpython/LICENSE.txt", cpython_license),
        ("python/licenses/sbom.cdx.json", sbom_file),
    ]
    members += [(f"python/install/{p}", tree / p) for p in walk_sorted(tree)]
    members += [(f"python/build/{p}", objects / p) for p in walk_sorted(objects) if p != "make-vars.txt"]
    members += [("python/build/run_tests.py", run_tests)]
    if build.profile:
        members.append((f"python/build/{PGO_PROFILE_NAME}", build.profile))
    if build.bolt_profile:
        members.append((f"python/build/{BOLT_PROFILE_NAME}", build.bolt_profile))
    members += [(f"python/{name}", path) for name, path in dep_members]
    return document, members + _parent_folders(members)


def _python_json(
    build: CPythonBuild, ws: Workspace, libraries: dict[str, Library], python_exe: str
) -> dict[str, Any]:
    """PYTHON.json: the interpreter's own account of itself (or the build python's, for
    a target that cannot run here), the build's account of its objects, and the tree."""
    tree, objects, target = build.tree, build.objects, build.spec.target
    layout = platform_of(target).layout
    say(f"dist: describing {tree.name}")
    facts = _probe(tree, target, ws, build.build_python, objects)
    info = read_build_info(objects)
    missing = sorted(set(info.modules) - set(facts["builtin_module_names"]))
    if missing:
        raise PyfreightError(
            f"config.c lists {', '.join(missing)}, which the interpreter does not have built in"
        )
    # What the tree's ELF files may need is judged by check-install before (pyfreight
    # build runs it) and validate after; PYTHON.json records the newest glibc they need.
    glibc = max((f.glibc for f in tree_elf_facts(tree) if f.glibc), default=None)
    return describe(
        facts=facts,
        info=info,
        options=build.spec.options,
        target=target,
        python_exe=python_exe,
        tree=tree,
        libraries=libraries,
        required_at_startup=set(facts["startup_modules"]),
        object_format=object_file_format(objects / info.core_objs[0], target),
        glibc_max=glibc,
        cpython_license_path="licenses/cpython/LICENSE.txt",
        tcl_folder=layout.tcl_folder,
        tcl_paths=layout.tcl_libraries(tree),
        run_tests="build/run_tests.py",
    )


def _sbom(
    build: CPythonBuild,
    archive_name: str,
    libraries: dict[str, Library],
    document: dict,
    epoch: int,
    image: BuildImage,
    libc: Recipe | None,
) -> dict:
    """The CycloneDX SBOM: the dependency closure (and a C library linked in), and
    which of it CPython's modules link."""
    recipes = for_os(load_all(), build.spec.target.os, None)
    bundled = {name: recipes[name] for name in build.dependencies}
    if libc is not None:
        bundled[libc.name] = libc
    linked = {libc.name} if libc is not None else set()
    linked |= {
        libraries[link["name"]].recipe
        for (variant,) in document["build_info"]["extensions"].values()
        for link in variant["links"]
        if link["name"] in libraries
    }
    return sbom.checked(
        sbom.make_sbom(
            archive_name=archive_name,
            cpython_version=build.source.version,
            cpython_source=build.source.source,
            recipes=bundled,
            linked_by_cpython=linked,
            image_tag=image.tag,
            image_manifest=images.pinned_manifest(image.manifest.read_text()),
            epoch=epoch,
            redistributed=build.spec.target.redistributable,
        )
    )


def _parent_folders(members: list[tuple[str, Path]]) -> list[tuple[str, Path]]:
    """Folder entries for every folder the members live in that has none yet, so that
    extracting gives normalized folder modes (they are made from a real folder)."""
    names = {name for name, _ in members}
    folder = Path(__file__).parent
    parents: set[str] = set()
    for name in names:
        parts = name.split("/")[:-1]
        parents.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    return [(p, folder) for p in sorted(parents - names)]


def _install_members(tree: Path) -> Members:
    """The tree as python/…, without libpython's static library: install-only archives
    are for running Python, the full archive is for linking it."""
    kept = [p for p in walk_sorted(tree) if not STATIC_LIBPYTHON.fullmatch(p)]
    return [("python", tree)] + [(f"python/{p}", tree / p) for p in kept]


def _stripped_copy(tree: Path, dest: Path, stdlib: str, test_packages: list[str], image: BuildImage) -> Path:
    """A copy of the tree without debug information (llvm-strip --strip-debug in the
    build container) and without the stdlib's test packages (below `stdlib`, relative to
    the tree). A Windows tree's images carry none: they are linked stripped."""
    shutil.copytree(tree, dest, symlinks=True)
    for package in test_packages:
        shutil.rmtree(dest / stdlib / package.replace(".", "/"), ignore_errors=True)
    elf_files = [f.path for f in tree_elf_facts(dest)]
    if not elf_files:
        return dest
    spec = RunSpec(
        image=image.image_id,
        command=[f"llvm-strip-{toolchain.LLVM}", "--strip-debug", *elf_files],
        what="llvm-strip",
        mounts=[Mount(dest, "/tree", read_only=False)],
        user=f"{os.getuid()}:{os.getgid()}",
        workdir="/tree",
        name_hint="strip",
    )
    run(spec)
    return dest
