"""CPython for Windows from its own Visual Studio projects, read as data.

The pinned source's PCbuild/*.vcxproj say which files each project compiles, with which
definitions and include folders, and what it links; formats/msbuild.py evaluates them
and windows/projects.yaml holds only what stands in for Visual Studio and MSVC. From
both this module writes the Makefile the Windows build (windows/build.sh) runs in the
build container: one rule per object, then python3XX.dll with its import library,
python.exe and pythonw.exe."""

from __future__ import annotations

import shlex
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path, PureWindowsPath
from typing import Any

from pyfreight import toolchain
from pyfreight.cpython.options import INSTALL_PREFIX, OUTPUT_DIR, BuildOptions
from pyfreight.cpython.versions import CPythonSource
from pyfreight.datafiles import load_yaml
from pyfreight.errors import PyfreightError
from pyfreight.formats.msbuild import Project, read_project, split_list
from pyfreight.leftovers import owned
from pyfreight.paths import REPO_ROOT
from pyfreight.targets import Target

PROJECT_FILES = (".props", ".vcxproj")

WINDOWS_DIR = REPO_ROOT / "windows"
PROJECTS_FILE = WINDOWS_DIR / "projects.yaml"
# MSBuild's $(Platform) of each PE machine.
MSBUILD_PLATFORMS = {"AMD64": "x64", "ARM64": "ARM64"}
# Inside the build container: the unpacked source, and the frozen modules' headers the
# native _freeze_module writes (windows/build.sh), as the projects' $(GeneratedFrozenModulesDir).
FROZEN_DIR = f"{toolchain.WORK_DIR}/frozen/"
# Every link: -s, because zig's lld gives an unstripped PE image a random build id (a
# CodeView record of the debug directory), so two links of the same objects differ.
# Stripped, the same objects give the same bytes; the images carry no symbols anyway
# (Windows' debug information lives in separate .pdb files).
LINK_FLAGS = "-s"
# The programs, each from its project: the console interpreter and the windowed one.
PROGRAMS = {"python.exe": ("python", "-municode"), "pythonw.exe": ("pythonw", "-municode -mwindows")}


@dataclass(frozen=True)
class Compile:
    source: str  # inside the container
    obj: str  # relative to the build folder
    flags: tuple[str, ...]  # definitions, include folders, per-file flags


def load_settings() -> dict[str, Any]:
    settings: dict[str, Any] = load_yaml(PROJECTS_FILE, "windows-projects.schema.json")
    return settings


def read_pcbuild(tarball: Path, top_dir: str, scratch: Path) -> Path:
    """Unpacks the project files of PCbuild/ (nothing else) into `scratch`; returns the
    source folder they sit in, as the projects' relative paths expect."""
    with tarfile.open(tarball) as tar:
        folder = f"{top_dir}/PCbuild/"
        wanted = [
            m for m in tar if m.isfile() and m.name.startswith(folder) and m.name.endswith(PROJECT_FILES)
        ]
        tar.extractall(scratch, members=wanted, filter="data")
    return scratch / top_dir


def global_properties(target: Target, version: str, inner_source: str) -> dict[str, str]:
    """msbuild /p: values: the settings' own, and what this build computes."""
    if target.pe_machine not in MSBUILD_PLATFORMS:
        raise PyfreightError(f"{target.triple}: no MSBuild platform for PE machine {target.pe_machine}")
    major, minor = version.split(".")[:2]
    computed = {
        "Platform": MSBUILD_PLATFORMS[target.pe_machine],
        "PySourcePath": f"{inner_source}/",
        "MajorVersionNumber": major,
        "MinorVersionNumber": minor,
        "GeneratedFrozenModulesDir": FROZEN_DIR,
        # zlib-ng's folders (IncludeExternals): our zlib recipe's headers stand in
        "zlibNgDir": f"{toolchain.PREFIX}/include",
        "GeneratedZlibNgDir": f"{toolchain.PREFIX}/include",
    }
    return dict(load_settings()["msbuild_properties"]) | computed


def _inside(item_include: str, inner_source: str) -> str:
    """An item of PCbuild/ as the container's path (Windows separators made /)."""
    return f"{inner_source}/PCbuild/{PureWindowsPath(item_include).as_posix()}"


def compiles(project: Project, inner_source: str, prefix: str) -> list[Compile]:
    """Every ClCompile of `project`: its definitions and include folders from the
    project, our dependencies' headers, and the per-file flags of the settings."""
    per_file = load_settings().get("source_flags", {})
    found = []
    for item in project.items_of("ClCompile"):
        source = _inside(item.include, inner_source)
        name = PureWindowsPath(item.include).name
        defines = [f"-D{d}" for d in split_list(project.metadata(item, "PreprocessorDefinitions"))]
        folders = split_list(project.metadata(item, "AdditionalIncludeDirectories"))
        includes = [f"-I{PureWindowsPath(f).as_posix()}" for f in folders] + [f"-I{toolchain.PREFIX}/include"]
        extra = per_file.get(name, {}).get("flags", [])
        relative = PureWindowsPath(item.include).as_posix().removeprefix("../")
        obj = f"{prefix}/{relative.rsplit('.', 1)[0]}.o"
        found.append(Compile(source, obj, (*defines, *includes, *extra)))
    return found


def link_libraries(project: Project) -> list[str]:
    """-lNAME for each import library the project links, by mingw-w64's names."""
    renamed = load_settings().get("libraries", {})
    names = [
        lib.removesuffix(".lib")
        for lib in split_list(project.definitions.get("Link", {}).get("AdditionalDependencies") or "")
    ]
    return [f"-l{renamed.get(name, name)}" for name in names if not name.startswith("%")]


def makefile(pcbuild_root: Path, target: Target, version: str, inner_source: str) -> str:
    """The Makefile of the Windows build: the DLL's projects and the programs."""
    settings = load_settings()
    known = global_properties(target, version, inner_source)
    major_minor = "".join(version.split(".")[:2])
    dll = f"python{major_minor}.dll"
    lines = [
        "# Written by pyfreight/cpython/windows_projects.py from PCbuild/*.vcxproj.",
        f"all: {dll} " + " ".join(PROGRAMS),
        "",
    ]
    dll_objects: list[str] = []
    libraries: list[str] = []
    for name in settings["dll_projects"]:
        project = read_project(pcbuild_root / "PCbuild" / f"{name}.vcxproj", known, pcbuild_root)
        units = compiles(project, inner_source, f"obj/{name}")
        lines += _rules(units)
        dll_objects += [u.obj for u in units]
        libraries += [lib for lib in link_libraries(project) if lib not in libraries]
    link = f"-Wl,--out-implib,libs/python{major_minor}.lib -L{toolchain.PREFIX}/lib {' '.join(libraries)}"
    lines += [
        f"{dll}: {' '.join(dll_objects)}",
        "\t@mkdir -p libs",
        f"\t$(CC) $(LDFLAGS) {LINK_FLAGS} -shared -o $@ $^ {link}",
        "",
    ]
    for program, (project_name, flags) in PROGRAMS.items():
        project = read_project(pcbuild_root / "PCbuild" / f"{project_name}.vcxproj", known, pcbuild_root)
        units = compiles(project, inner_source, f"obj/{project_name}")
        lines += _rules(units)
        objects = " ".join(u.obj for u in units)
        lines += [
            f"{program}: {dll} {objects}",
            f"\t$(CC) $(LDFLAGS) {LINK_FLAGS} {flags} -o $@ {objects} libs/python{major_minor}.lib",
            "",
        ]
    return "\n".join(lines) + "\n"


def _rules(units: list[Compile]) -> list[str]:
    rules = []
    for unit in units:
        flags = " ".join(shlex.quote(f) for f in unit.flags)
        rules += [
            f"{unit.obj}: {unit.source}",
            "\t@mkdir -p $(@D)",
            f"\t$(CC) $(CFLAGS) {flags} -c $< -o $@",
            "",
        ]
    return rules


def job_inputs(
    src: CPythonSource, options: BuildOptions, target: Target, tarball: Path, scratch: Path
) -> tuple[dict[str, Path | bytes], dict[str, str]]:
    """The files and environment of CPython's Windows build job: windows/build.sh and
    the Makefile written from the pinned source's projects (cpython/build.py adds our
    patches, the source and the dependency artifacts)."""
    if str(options) != "noopt":
        raise PyfreightError(
            f"{target.triple} is built noopt only for now (issue 27); {options} is not made yet"
        )
    inner_source = f"{toolchain.WORK_DIR}/{src.top_dir}"
    scratch.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=scratch, prefix=owned("pcbuild")) as tmp:
        rules = makefile(read_pcbuild(tarball, src.top_dir, Path(tmp)), target, src.version, inner_source)
    files: dict[str, Path | bytes] = {"build.sh": WINDOWS_DIR / "build.sh", "windows.mk": rules.encode()}
    # The toolchain's own compiler variables (toolchain.build_environment) are the
    # build's: the projects' definitions come through the Makefile.
    env = {
        "INSTALL_DIR": INSTALL_PREFIX,
        "PY_TARBALL": src.source.file,
        "PY_TOPDIR": src.top_dir,
        "FROZEN_DIR": FROZEN_DIR,
        "OUTPUT_DIR": OUTPUT_DIR,
    }
    return files, env
