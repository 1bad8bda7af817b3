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

import datetime
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pyfreight import toolchain
from pyfreight.container.run import Mount, RunSpec, run
from pyfreight.container import images
from pyfreight.dist import sbom
from pyfreight.cpython.buildinfo import read_build_info
from pyfreight.cpython.build import CPythonBuild
from pyfreight.verify.elfcheck import check_tree
from pyfreight.errors import PyfreightError
from pyfreight.logs import say
from pyfreight.paths import IN_CONTAINER_DIR, Workspace
from pyfreight.dist.python_json import Library, describe, object_file_format
from pyfreight.sources.recipes import load_all
from pyfreight.cpython.relocate import installed_python_name
from pyfreight.formats.tarball import extract, newest_mtime, walk_sorted, write_tar

DESCRIBE_SCRIPT = IN_CONTAINER_DIR / "describe_python.py"
# Where the tree is mounted while the interpreter describes itself: the prefix
# python-build-standalone's config vars name, so packers see familiar values.
PROBE_PREFIX = "/install"
STATIC_LIBPYTHON = re.compile(r"lib/(python3[^/]*/config-[^/]+/)?libpython3[^/]*\.a")
RUN_TESTS = '''"""Runs CPython's test suite with this distribution's interpreter.
Usage: python build/run_tests.py [arguments of python -m test]"""

import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
python = os.path.join(here, "..", "install", "bin", "{python}")
sys.exit(subprocess.call([python, "-m", "test", *sys.argv[1:]]))
'''


Members = list[tuple[str, Path]]  # (name in the archive, file)


@dataclass(frozen=True)
class Distribution:
    full: Path
    install_only: Path
    install_only_stripped: Path
    python_json: dict


def release_tag(epoch: int) -> str:
    """YYYYMMDD (UTC) of the source release's newest file: the default {release}."""
    return datetime.datetime.fromtimestamp(epoch, datetime.UTC).strftime("%Y%m%d")


def archive_stem(version: str, release: str, target: str, options: str) -> str:
    return f"cpython-{version}+{release}-{target}-{options}"


def install_only_stem(version: str, release: str, target: str, options: str) -> str:
    """python-build-standalone's names, which installers parse: the default pgo+lto
    build has no option segment, its free-threaded twin says "freethreaded"; other
    builds keep their option string."""
    variant = {"pgo+lto": "", "freethreaded+pgo+lto": "freethreaded-"}.get(options, f"{options}-")
    return f"cpython-{version}+{release}-{target}-{variant}install_only"


def _probe(tree: Path, ws: Workspace) -> dict:
    """The interpreter's own account of itself (pyfreight/in_container/describe_python.py)."""
    image = images.ensure_runtime_image(ws)
    python = installed_python_name(tree)
    spec = RunSpec(
        image=image,
        command=[f"{PROBE_PREFIX}/bin/{python}", "/describe.py"],
        what=f"describing {tree.name}",
        mounts=[Mount(tree, PROBE_PREFIX), Mount(DESCRIBE_SCRIPT, "/describe.py")],
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


def write_distribution(
    build: CPythonBuild, ws: Workspace, dist: Path, release: str | None = None
) -> Distribution:
    tree, objects = build.tree, build.objects
    version, target, options = build.source.version, build.target, str(build.options)
    epoch = newest_mtime(ws.downloads / build.source.source.file) or 0
    release = release or release_tag(epoch)
    python = installed_python_name(tree)
    say(f"dist: describing {tree.name}")
    facts = _probe(tree, ws)
    info = read_build_info(objects)
    missing = sorted(set(info.modules) - set(facts["builtin_module_names"]))
    if missing:
        raise PyfreightError(
            f"config.c lists {', '.join(missing)}, which the interpreter does not have built in"
        )
    elf_facts, problems = check_tree(tree)
    if problems:
        raise PyfreightError(f"{tree}: " + "; ".join(problems[:5]))
    glibc = max(f.glibc for f in elf_facts if f.glibc)

    ws.scratch.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=ws.scratch, prefix="dist-") as tmp:
        scratch = Path(tmp)
        libraries, dep_members = _stage_dependencies(build, scratch / "deps")
        cpython_license = tree / "lib" / python / "LICENSE.txt"
        if not cpython_license.is_file():
            raise PyfreightError(f"{cpython_license} is missing: the install has no CPython license text")
        run_tests = scratch / "run_tests.py"
        run_tests.write_text(RUN_TESTS.format(python=python))
        document = describe(
            facts=facts,
            info=info,
            options=build.options,
            target=target,
            python_exe=f"install/bin/{python}",
            tree=tree,
            libraries=libraries,
            required_at_startup=set(facts["startup_modules"]),
            object_format=object_file_format(objects / info.core_objs[0]),
            glibc_max=glibc,
            cpython_license_path="licenses/cpython/LICENSE.txt",
            tcl_paths=sorted(p.name for p in (tree / "lib").glob("t[ck]*[0-9].[0-9]*") if p.is_dir()),
            run_tests="build/run_tests.py",
        )
        python_json = scratch / "PYTHON.json"
        python_json.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
        stem = archive_stem(version, release, target, options)
        sbom_file = scratch / "sbom.cdx.json"
        sbom_file.write_text(json.dumps(_sbom(build, stem, libraries, document, epoch, ws), indent=2) + "\n")

        members = [
            ("python/PYTHON.json", python_json),
            ("python/licenses/cpython/LICENSE.txt", cpython_license),
            ("python/licenses/sbom.cdx.json", sbom_file),
        ]
        members += [(f"python/install/{p}", tree / p) for p in walk_sorted(tree)]
        members += [(f"python/build/{p}", objects / p) for p in walk_sorted(objects) if p != "make-vars.txt"]
        members += [("python/build/run_tests.py", run_tests)]
        if build.profile:
            members.append(("python/build/pgo.profdata", build.profile))
        members += [(f"python/{name}", path) for name, path in dep_members]
        members += _parent_folders(members)
        full = dist / f"{stem}-full.tar.zst"
        say(f"dist: writing {full.name}")
        write_tar(full, members, epoch, compression="zst", first=("python/PYTHON.json",))

        only_stem = install_only_stem(version, release, target, options)
        install_only = dist / f"{only_stem}.tar.gz"
        say(f"dist: writing {install_only.name}")
        write_tar(install_only, _install_members(tree), epoch, compression="gz")

        stripped_tree = _stripped_copy(
            tree, scratch / "stripped", document["python_stdlib_test_packages"], ws
        )
        stripped = dist / f"{only_stem}_stripped.tar.gz"
        say(f"dist: writing {stripped.name}")
        write_tar(stripped, _install_members(stripped_tree), epoch, compression="gz")
    for path in (full, install_only, stripped):
        say(f"dist: {path.name}: {path.stat().st_size / 1e6:.1f} MB")
    return Distribution(full, install_only, stripped, document)


def _sbom(
    build: CPythonBuild, stem: str, libraries: dict[str, Library], document: dict, epoch: int, ws: Workspace
) -> dict:
    """The CycloneDX SBOM: the dependency closure, and which of it CPython's modules link."""
    recipes = load_all()
    linked = {
        libraries[link["name"]].recipe
        for (variant,) in document["build_info"]["extensions"].values()
        for link in variant["links"]
        if link["name"] in libraries
    }
    image = images.ensure_images(ws)
    return sbom.checked(
        sbom.make_sbom(
            archive_name=f"{stem}-full.tar.zst",
            cpython_version=build.source.version,
            cpython_source=build.source.source,
            recipes={name: recipes[name] for name in build.dependencies},
            linked_by_cpython=linked,
            image_tag=image.tag,
            image_manifest=image.manifest.read_text(),
            epoch=epoch,
        )
    )


def _parent_folders(members: list[tuple[str, Path]]) -> list[tuple[str, Path]]:
    """Folder entries for every folder the members live in that has none yet, so that
    extracting gives normalized folder modes (they are made from a real folder)."""
    names = {name for name, _ in members}
    folder = Path(__file__).parent
    parents = set()
    for name in names:
        parts = name.split("/")[:-1]
        parents.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    return [(p, folder) for p in sorted(parents - names)]


def _install_members(tree: Path) -> Members:
    """The tree as python/…, without libpython's static library: install-only archives
    are for running Python, the full archive is for linking it."""
    kept = [p for p in walk_sorted(tree) if not STATIC_LIBPYTHON.fullmatch(p)]
    return [("python", tree)] + [(f"python/{p}", tree / p) for p in kept]


def _stripped_copy(tree: Path, dest: Path, test_packages: list[str], ws: Workspace) -> Path:
    """A copy of the tree without debug information (llvm-strip --strip-debug in the
    build container) and without the stdlib's test packages."""
    shutil.copytree(tree, dest, symlinks=True)
    stdlib = next((dest / "lib").glob("python3.*"))
    for package in test_packages:
        shutil.rmtree(stdlib / package.replace(".", "/"), ignore_errors=True)
    elf_files = [f.path for f in check_tree(dest)[0]]
    image = images.ensure_images(ws)
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
