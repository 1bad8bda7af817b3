"""CPython for Windows from its own Visual Studio projects, read as data.

The pinned source's PCbuild/*.vcxproj say which files each project compiles, with which
definitions and include folders, and what it links; formats/msbuild.py evaluates them
and windows/projects.yaml holds only what stands in for Visual Studio and MSVC. From
both this module writes the Makefile the Windows build (windows/build.sh) runs in the
build container: one rule per object, then python3XX.dll with its import library,
python.exe and pythonw.exe.

Every extension module pcbuild.proj builds as a .pyd is compiled into python3XX.dll
instead, as Setup.local does on Linux: the module's project gives its sources and
definitions, PC/config.c's table gains its entry (at the markers CPython keeps for
freeze), and what the project would compile or link from a library's own sources comes
from our recipe of that library (cpython/extensions.yaml's `linked`, as on Linux)."""

from __future__ import annotations

import json
import re
import shlex
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path, PureWindowsPath
from typing import Any

from pyfreight import toolchain
from pyfreight.cpython.buildinfo import BUILD_INFO_FILE, inittab
from pyfreight.cpython.options import INSTALL_PREFIX, OUTPUT_DIR, BuildOptions
from pyfreight.cpython.profiles import PGO_PROFILE_NAME
from pyfreight.cpython.redistributable import vendor_files
from pyfreight.cpython.setup_local import load_extension_data
from pyfreight.cpython.versions import CPythonSource
from pyfreight.datafiles import load_yaml
from pyfreight.errors import PyfreightError
from pyfreight.formats.msbuild import Project, read_project, split_list
from pyfreight.formats.tarball import read_member
from pyfreight.leftovers import owned
from pyfreight.paths import REPO_ROOT
from pyfreight.sources.recipes import load_all
from pyfreight.targets import Target

PROJECT_FILES = (".props", ".vcxproj", ".proj")
# A pgo build's merged profile where its build job finds it (cpython/build.py hands it
# in beside build.sh), and the profile runtime the instrumented interpreter of its
# training links (recipes/llvm-profile-runtime, built only for that).
PROFILE_INSIDE = f"{toolchain.RECIPE_DIR}/{PGO_PROFILE_NAME}"
PROFILE_RUNTIME_RECIPE = "llvm-profile-runtime"
PROFILE_RUNTIME = f"{toolchain.PREFIX}/lib/libclang_rt.profile.a"

WINDOWS_DIR = REPO_ROOT / "windows"
PROJECTS_FILE = WINDOWS_DIR / "projects.yaml"
# MSBuild's $(Platform) of each PE machine.
MSBUILD_PLATFORMS = {"AMD64": "x64", "ARM64": "ARM64", "I386": "Win32"}
# Inside the build container: the unpacked source, and the frozen modules' headers the
# native _freeze_module writes (windows/build.sh), as the projects' $(GeneratedFrozenModulesDir).
FROZEN_DIR = f"{toolchain.WORK_DIR}/frozen/"
# Where windows/build.sh writes pyconfig.h from PC/pyconfig.h.in for a release whose
# projects generate it (3.13's pythoncore; later releases ship PC/pyconfig.h).
PYCONFIG_DIR = f"{toolchain.WORK_DIR}/pyconfig/"
INTERMEDIATE_DIR = f"{toolchain.WORK_DIR}/intermediate/"
# $(ExternalsDir) of the projects: where Visual Studio builds find the libraries' own
# sources and binaries. Nothing is there here; an item or folder under it is what one
# of our recipes builds, and is taken from the recipe instead.
EXTERNALS_DIR = "/externals-of-visual-studio-builds/"
# The table of built-in modules, and the markers CPython keeps in it for freeze.
CONFIG_C = "PC/config.c"
CONFIG_MARKERS = ("/* -- ADDMODULE MARKER 1 -- */", "/* -- ADDMODULE MARKER 2 -- */")
# Every link: -s, because zig's lld gives an unstripped PE image a random build id (a
# CodeView record of the debug directory), so two links of the same objects differ.
# Stripped, the same objects give the same bytes; the images carry no symbols anyway
# (Windows' debug information lives in separate .pdb files).
LINK_FLAGS = "-s"
# How a program's Link SubSystem is linked: a console program, or a windowed one (no
# console). Every program here starts at wmain/wWinMain (-municode).
SUBSYSTEM_FLAGS = {"Console": "-municode", "Windows": "-municode -mwindows"}


@dataclass(frozen=True)
class Compile:
    source: str  # inside the container
    obj: str  # relative to the build folder
    flags: tuple[str, ...]  # definitions, include folders, per-file flags


def load_settings() -> dict[str, Any]:
    settings: dict[str, Any] = load_yaml(PROJECTS_FILE, "windows-projects.schema.json")
    return settings


def core_projects() -> frozenset[str]:
    """The projects that are python3XX.dll itself or its stable-ABI forwarders, which an
    extension project references for their import libraries."""
    settings = load_settings()
    return frozenset(settings["dll_projects"]) | frozenset(settings["forwarder_dlls"])


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


def global_properties(
    target: Target, version: str, inner_source: str, disable_gil: bool = False
) -> dict[str, str]:
    """msbuild /p: values: the settings' own, and what this build computes (DisableGil:
    a free-threaded build, whose projects name their outputs python3.14t.exe,
    python314t.dll, python3t.dll and venvlaunchert.exe)."""
    if target.pe.machine not in MSBUILD_PLATFORMS:
        raise PyfreightError(f"{target.triple}: no MSBuild platform for PE machine {target.pe.machine}")
    major, minor = version.split(".")[:2]
    computed = {
        "Platform": MSBUILD_PLATFORMS[target.pe.machine],
        "PySourcePath": f"{inner_source}/",
        "MajorVersionNumber": major,
        "MinorVersionNumber": minor,
        "Field3Value": field3_value(version),
        "GeneratedFrozenModulesDir": FROZEN_DIR,
        "GeneratedPyConfigDir": PYCONFIG_DIR,
        # MSBuild's folder of a project's intermediate files (computed with a property
        # function), which resource scripts search; nothing here is written there.
        "IntDir": INTERMEDIATE_DIR,
        # zlib-ng's folders (IncludeExternals): our zlib recipe's headers stand in
        "zlibNgDir": f"{toolchain.PREFIX}/include",
        "GeneratedZlibNgDir": f"{toolchain.PREFIX}/include",
        "ExternalsDir": EXTERNALS_DIR,
        "DisableGil": "true" if disable_gil else "false",
        **_tcltk_versions(),
    }
    return dict(load_settings()["msbuild_properties"]) | computed


class PCBuild:
    """The pinned source's PCbuild projects as this build's msbuild evaluates them (its
    target, version and GIL, as global properties computed once); each project is read
    the first time a step asks for it and then shared."""

    def __init__(
        self, root: Path, target: Target, version: str, inner_source: str, disable_gil: bool
    ) -> None:
        self.root = root
        self.target = target
        self.inner_source = inner_source
        self.properties = global_properties(target, version, inner_source, disable_gil)
        self._read: dict[str, Project] = {}

    def has(self, name: str) -> bool:
        return (self.root / "PCbuild" / f"{name}.vcxproj").is_file()

    def project(self, file_name: str) -> Project:
        """PCbuild/`file_name` (a project's name is its .vcxproj's)."""
        if "." not in file_name:
            file_name += ".vcxproj"
        if file_name not in self._read:
            self._read[file_name] = read_project(
                self.root / "PCbuild" / file_name, self.properties, self.root
            )
        return self._read[file_name]


def field3_value(version: str) -> str:
    """python.props' Field3Value of `version`, the third number of the version resources
    (FILEVERSION 3,14,FIELD3,API): micro*1000 + release level*10 + serial, the level 10
    for alpha, 11 beta, 12 release candidate and 15 final (3.14.7: 7150; 3.15.0rc1:
    121). MSBuild computes it with property functions, as python.props does from an
    OverrideVersion of this form."""
    match = re.fullmatch(r"\d+\.\d+\.(\d+)(?:(a|b|rc)(\d+))?", version)
    if not match:
        raise PyfreightError(f"CPython version {version!r} is not MAJOR.MINOR.MICRO[a|b|rcN]")
    micro, level, serial = match.groups()
    levels = {"a": 10, "b": 11, "rc": 12, None: 15}
    return str(int(micro) * 1000 + levels[level] * 10 + int(serial or 0))


def _tcltk_versions() -> dict[str, str]:
    """The Tcl/Tk version properties of tcltk.props (MSBuild computes the parts with a
    property function), of the Tcl and Tk our recipes build."""
    recipes = load_all()
    found: dict[str, str] = {}
    for name, prefix in (("tcl", "Tcl"), ("tk", "Tk")):
        major, minor, patch = recipes[name].version.split(".")
        found |= {
            f"{prefix}Version": f"{major}.{minor}.{patch}.0",
            f"{prefix}MajorVersion": major,
            f"{prefix}MinorVersion": minor,
            f"{prefix}PatchLevel": patch,
            f"{prefix}Revision": "0",
        }
    return found


def _inside(item_include: str, inner_source: str) -> str:
    """An item of PCbuild/ as the container's path (Windows separators made /)."""
    return f"{inner_source}/PCbuild/{PureWindowsPath(item_include).as_posix()}"


def _from_recipe(path: str, inner_source: str, recipe_folders: list[str]) -> bool:
    """Whether a source or include folder of a project is a library's own, which one of
    our recipes builds instead: under $(ExternalsDir), or a folder of the CPython source
    holding a copy of the library."""
    posix = PureWindowsPath(path).as_posix()
    if posix.startswith(EXTERNALS_DIR.rstrip("/")):
        return True
    relative = posix.removeprefix(f"{inner_source}/").removeprefix("../").removeprefix("PCbuild/../")
    return any(relative == f or relative.startswith(f"{f}/") for f in recipe_folders)


def compiles(
    project: Project, inner_source: str, prefix: str, extra_definitions: tuple[str, ...] = ()
) -> list[Compile]:
    """Every ClCompile of `project` but a library's own sources: its definitions and
    include folders from the project, our dependencies' headers, and the per-file flags
    of the settings."""
    settings = load_settings()
    per_file, recipe_folders = settings.get("source_flags", {}), list(settings["recipe_source_folders"])
    found = []
    for item in project.items_of("ClCompile"):
        if _from_recipe(item.include, inner_source, recipe_folders):
            continue
        source = _inside(item.include, inner_source)
        name = PureWindowsPath(item.include).name
        defines = [f"-D{d}" for d in split_list(project.metadata(item, "PreprocessorDefinitions"))]
        defines += [f"-D{d}" for d in extra_definitions]
        folders = split_list(project.metadata(item, "AdditionalIncludeDirectories"))
        includes = [
            f"-I{PureWindowsPath(f).as_posix()}"
            for f in folders
            if not _from_recipe(f, inner_source, recipe_folders)
        ] + [f"-I{toolchain.PREFIX}/include"]
        extra = per_file.get(name, {}).get("flags", [])
        relative = PureWindowsPath(item.include).as_posix().removeprefix("../")
        obj = f"{prefix}/{relative.rsplit('.', 1)[0]}.o"
        if name == PureWindowsPath(CONFIG_C).name and project.path.stem in core_projects():
            source = f"{toolchain.RECIPE_DIR}/config.c"  # with the built-in extensions' entries
        found.append(Compile(source, obj, (*defines, *includes, *extra)))
    return found


def resources(project: Project, inner_source: str, prefix: str, output: str) -> list[Compile]:
    """Every ResourceCompile of `project` as an object $(RC) writes: the manifest naming
    the Windows versions CPython supports (without it Windows tells the program it runs
    on Windows 8), the icon and the version information Explorer shows. `output`: the
    file the resources go into, which ORIGINAL_FILENAME names (the projects build it
    from $(TargetExt), which Visual Studio's own props define)."""
    found = []
    for item in project.items_of("ResourceCompile"):
        # A quote in a definition stays escaped (\"), as the projects write it for rc.exe:
        # windres, like GNU windres, takes its definitions in that form.
        definitions = [
            d
            for d in split_list(project.metadata(item, "PreprocessorDefinitions"))
            if d.split("=", 1)[0] != "ORIGINAL_FILENAME"
        ] + [f'ORIGINAL_FILENAME=\\"{output}\\"']
        folders = split_list(project.metadata(item, "AdditionalIncludeDirectories"))
        culture = project.metadata(item, "Culture")
        relative = PureWindowsPath(item.include).as_posix().removeprefix("../")
        flags = (
            *(f"-D{d}" for d in definitions),
            *(f"-I{PureWindowsPath(f).as_posix()}" for f in folders),
            *((f"--language={culture}",) if culture else ()),
        )
        found.append(Compile(_inside(item.include, inner_source), f"{prefix}/{relative}.o", flags))
    return found


def link_libraries(project: Project, target: Target) -> list[str]:
    """-lNAME for each library the project links: Windows' own by their Windows names
    (what PYTHON.json tells packers; `toolchain_link_words` gives the pinned
    toolchain's), a recipe's library by its name (zlib-ng is our zlib); a library our
    recipes build instead is left out (the module's recipe links say it). Anything else
    is refused: a shipped binary imports only what the target allows."""
    settings = load_settings()
    renamed, from_recipes = settings["libraries"], set(settings["recipe_libraries"])
    found = []
    for entry in split_list(project.definitions.get("Link", {}).get("AdditionalDependencies") or ""):
        if entry.startswith("%"):
            continue
        name = PureWindowsPath(entry).name.removesuffix(".lib").lower()
        if name in from_recipes:
            continue
        if name not in renamed and name not in target.libc.system_libraries:
            raise PyfreightError(
                f"{project.path.name} links {entry}, which is neither one of {target.triple}'s "
                "system_libraries nor built by a recipe (windows/projects.yaml recipe_libraries)"
            )
        found.append(f"-l{name if name in target.libc.system_libraries else renamed[name]}")
    return found


def toolchain_link_words(words: list[str]) -> list[str]:
    """Link words as the pinned toolchain names the libraries (windows/projects.yaml
    `libraries`: mingw-w64 calls pathcch.lib by its API set's name)."""
    renamed = load_settings()["libraries"]
    return [f"-l{renamed.get(w[2:], w[2:])}" if w.startswith("-l") else w for w in words]


def builtin_extensions(pcbuild: PCBuild) -> dict[str, Project]:
    """The extension projects pcbuild.proj builds (ExtensionModules), with the extension
    projects they reference, but those the settings leave out; by module name (a
    project builds the module of its own name)."""
    settings = load_settings()["builtin_extensions"]
    recipe_projects = load_settings()["recipe_projects"]
    pending = [i.include for i in pcbuild.project("pcbuild.proj").items_of("ExtensionModules")]
    found: dict[str, Project] = {}
    while pending:
        name = pending.pop(0)
        if name in found or name in settings["excluded"]:
            continue
        project = found[name] = pcbuild.project(name)
        for reference in project.items_of("ProjectReference"):
            referenced = PureWindowsPath(reference.include).stem
            if referenced not in core_projects() and referenced not in recipe_projects:
                pending.append(referenced)
    return dict(sorted(found.items()))


def recipe_links(module: str, target: Target) -> list[str]:
    """The libraries of our recipes a built-in module links (cpython/extensions.yaml, the
    same fact as on Linux), when those recipes are built for the target at all (the
    Unix-only ones are not: the module's project then links Windows' own)."""
    linked = load_extension_data().linked.get(module)
    if not linked:
        return []
    recipes = load_all()
    if any(target.os in recipes[r].unavailable_on for r in linked["recipes"]):
        return []
    return [f"-l{name}" for name in linked["links"]]


def builtin_config(original: str, modules: list[str]) -> str:
    """PC/config.c with an entry for each module built into the DLL, at the markers
    CPython keeps for freeze's additions."""
    if any(marker not in original for marker in CONFIG_MARKERS):
        raise PyfreightError(f"{CONFIG_C} of this CPython lacks freeze's ADDMODULE markers")
    externs = "".join(f"extern PyObject* PyInit_{m}(void);\n" for m in modules)
    entries = "".join(f'    {{"{m}", PyInit_{m}}},\n' for m in modules)
    first, second = CONFIG_MARKERS
    return original.replace(first, f"{first}\n{externs}").replace(second, f"{second}\n{entries}")


@dataclass(frozen=True)
class DllPart:
    """One project compiled into python3XX.dll: the core's, or a built-in extension's."""

    name: str
    units: tuple[Compile, ...]
    links: tuple[str, ...]  # -l words: our recipes' libraries, then Windows' by their names
    extension: bool


def dll_parts(pcbuild: PCBuild, extensions: dict[str, Project]) -> list[DllPart]:
    """What python3XX.dll is made of, project by project: the Makefile links it, and
    PYTHON.json tells packers (build_info) which objects are the core and which a module."""
    settings = load_settings()
    builtin = tuple(settings["builtin_extensions"]["definitions"])
    static = settings["builtin_extensions"].get("static", {})
    # the target's own (targets/*.yaml toolchain.cpython_definitions), in every part
    own = pcbuild.target.toolchain.cpython_definitions
    parts = [(name, pcbuild.project(name), own, False) for name in settings["dll_projects"]]
    parts += [
        (name, project, (*own, *builtin, *static.get(name, {}).get("definitions", ())), True)
        for name, project in extensions.items()
    ]
    return [
        DllPart(
            name,
            tuple(compiles(project, pcbuild.inner_source, f"obj/{name}", definitions)),
            tuple(
                dict.fromkeys(
                    recipe_links(name, pcbuild.target)
                    + link_libraries(project, pcbuild.target)
                    + [f"-l{w}" for w in static.get(name, {}).get("links", ())]
                )
            ),
            extension,
        )
        for name, project, definitions, extension in parts
    ]


def build_info(parts: list[DllPart], config_c: str) -> dict[str, Any]:
    """The build's account of python3XX.dll for PYTHON.json (cpython/buildinfo.py reads
    it back from the exported build folder): the core's objects and links, and for each
    entry of config.c's table its init function and, for a built-in extension, its own
    objects and links; the core's entries live in its objects. With the definitions
    config.c was compiled with, as a packer compiles its own table."""
    core = [p for p in parts if not p.extension]
    extensions = {p.name: p for p in parts if p.extension}
    table = inittab(config_c)
    if not set(extensions) <= set(table):
        raise PyfreightError(f"config.c lacks {sorted(set(extensions) - set(table))}")
    config_unit = next(u for p in core for u in p.units if PureWindowsPath(u.source).name == "config.c")
    return {
        "core_objs": [u.obj for p in core for u in p.units],
        "core_link_flags": list(dict.fromkeys(w for p in core for w in p.links)),
        "modules": {
            name: {
                "init_fn": init_fn,
                "in_core": name not in extensions,
                "objs": [u.obj for u in extensions[name].units] if name in extensions else [],
                "link_flags": list(extensions[name].links) if name in extensions else [],
            }
            for name, init_fn in sorted(table.items())
        },
        "inittab_object": config_unit.obj,
        "inittab_cflags": [f for f in config_unit.flags if f.startswith("-D")],
    }


def makefile(pcbuild: PCBuild, parts: list[DllPart]) -> str:
    """The Makefile of the Windows build: python3XX.dll from `parts`, and the programs."""
    settings = load_settings()
    target, inner_source = pcbuild.target, pcbuild.inner_source
    core = pcbuild.project(settings["dll_projects"][0])
    dll_name = core.property("TargetName")  # python314, or python314t without the GIL
    if not dll_name:
        raise PyfreightError(f"{core.path.name} names no TargetName for the interpreter's DLL")
    dll = f"{dll_name}.dll"
    lines = [
        "# Written by pyfreight/cpython/windows_projects.py from PCbuild/*.vcxproj.",
        "all:",  # written below, once every output is known
        "",
    ]
    made: list[str] = []
    # Each project's output, by project name: windows/build.sh asks for them (make
    # print-OUTPUT_python), as a free-threaded build names them otherwise.
    outputs = {settings["dll_projects"][0]: dll}
    dll_objects: list[str] = []
    static: list[str] = []
    system: list[str] = []
    recipe_libraries = {w for p in parts for w in p.links if w[2:] not in target.libc.system_libraries}
    for part in parts:
        lines += _rules(list(part.units))
        dll_objects += [u.obj for u in part.units]
        static += [w for w in part.links if w in recipe_libraries and w not in static]
        system += [w for w in part.links if w not in recipe_libraries and w not in system]
    libraries = " ".join(toolchain_link_words(static + system))
    link = f"-Wl,--out-implib,libs/{dll_name}.lib -L{toolchain.PREFIX}/lib {libraries}"
    # The DLL's resources are its core project's: a built-in extension's project would
    # give its .pyd a version resource of its own, which one image cannot hold twice.
    core_resources = resources(core, inner_source, f"obj/{core.path.stem}", dll)
    lines += _rules(core_resources)
    dll_objects += [r.obj for r in core_resources]
    lines += [
        f"{dll}: {' '.join(dll_objects)}",
        "\t@mkdir -p libs",
        f"\t$(CC) $(LDFLAGS) {LINK_FLAGS} -shared -o $@ $^ {link}",
        "",
    ]
    for name in settings["programs"]:
        project = pcbuild.project(name)
        program = f"{project.property('TargetName') or name}.exe"
        units = compiles(project, inner_source, f"obj/{name}")
        units += resources(project, inner_source, f"obj/{name}", program)
        lines += _rules(units)
        objects = " ".join(u.obj for u in units)
        subsystem = project.definitions.get("Link", {}).get("SubSystem") or "Console"
        libraries = " ".join(toolchain_link_words(link_libraries(project, target)))
        lines += [
            f"{program}: {dll} {objects}",
            f"\t$(CC) $(LDFLAGS) {LINK_FLAGS} {SUBSYSTEM_FLAGS[subsystem]} -o $@ {objects} "
            f"libs/{dll_name}.lib {libraries}",
            "",
        ]
        made.append(program)
        outputs[name] = program
    forwarders = []
    for name in settings["forwarder_dlls"]:
        if not pcbuild.has(name):
            continue  # a forwarder project of another CPython version
        project = pcbuild.project(name)
        forwarder = f"{project.property('TargetName') or name}.dll"
        units = compiles(project, inner_source, f"obj/{name}")
        units += resources(project, inner_source, f"obj/{name}", forwarder)
        lines += _rules(units)
        objects = " ".join(u.obj for u in units)
        libraries = " ".join(toolchain_link_words(link_libraries(project, target)))
        lines += [
            f"{forwarder}: {dll} {objects}",
            f"\t$(CC) $(LDFLAGS) {LINK_FLAGS} -shared -o $@ {objects} {libraries}",
            "",
        ]
        made.append(forwarder)
        forwarders.append(forwarder)
    lines[1] = f"all: {dll} " + " ".join(made)
    lines += [f"OUTPUT_{name} = {output}" for name, output in sorted(outputs.items())]
    lines += [f"OUTPUT_forwarders = {' '.join(forwarders)}"]
    lines += ["print-%:", "\t@echo $($*)"]
    return "\n".join(lines) + "\n"


def _rules(units: list[Compile]) -> list[str]:
    """A make rule per unit: a C source compiled, or a resource script ($(RC), LLVM's
    windres: toolchain.resource_compiler) written as a COFF object the link takes."""
    rules = []
    for unit in units:
        flags = " ".join(shlex.quote(f) for f in unit.flags)
        if unit.source.endswith(".rc"):
            command = f"\t$(RC) {flags} -O coff -i $< -o $@"
        else:
            command = f"\t$(CC) $(CFLAGS) {flags} -c $< -o $@"
        rules += [f"{unit.obj}: {unit.source}", "\t@mkdir -p $(@D)", command, ""]
    return rules


def job_inputs(
    src: CPythonSource,
    options: BuildOptions,
    target: Target,
    tarball: Path,
    scratch: Path,
    downloads: Path,
    instrumented: bool = False,
) -> tuple[dict[str, Path | bytes], dict[str, str]]:
    """The files and environment of CPython's Windows build job: windows/build.sh, the
    Makefile written from the pinned source's projects, install-pip.py, and the vendor's
    DLLs the tree ships (cpython/build.py adds our patches, the source, the dependency
    artifacts and a pgo build's profile). `instrumented`: the interpreter a pgo build
    trains, which links LLVM's profile runtime (the llvm-profile-runtime recipe)."""
    code_flags = optimization_flags(options, target, instrumented)
    inner_source = f"{toolchain.WORK_DIR}/{src.top_dir}"
    scratch.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=scratch, prefix=owned("pcbuild")) as tmp:
        root = read_pcbuild(tarball, src.top_dir, Path(tmp))
        pcbuild = PCBuild(root, target, src.version, inner_source, options.freethreaded)
        extensions = builtin_extensions(pcbuild)
        parts = dll_parts(pcbuild, extensions)
        rules = makefile(pcbuild, parts)
    original = read_member(tarball, f"{src.top_dir}/{CONFIG_C}").decode()
    config_c = builtin_config(original, list(extensions))
    info = json.dumps(build_info(parts, config_c), indent=1, sort_keys=True) + "\n"
    files: dict[str, Path | bytes] = {
        "build.sh": WINDOWS_DIR / "build.sh",
        "install-pip.py": WINDOWS_DIR / "install-pip.py",
        "windows.mk": rules.encode(),
        "config.c": config_c.encode(),
        BUILD_INFO_FILE: info.encode(),
    }
    if target.pe.redistributable is not None:
        files |= vendor_files(target.pe.redistributable, downloads, target.pe.machine)
    # The toolchain's own compiler variables (toolchain.build_environment) are the
    # build's: the projects' definitions come through the Makefile.
    launchers = target.pe.launchers
    env = {
        "INSTALL_DIR": INSTALL_PREFIX,
        "PY_TARBALL": src.source.file,
        "PY_TOPDIR": src.top_dir,
        "FROZEN_DIR": FROZEN_DIR,
        "PYCONFIG_DIR": PYCONFIG_DIR,
        "DISABLE_GIL": "true" if options.freethreaded else "false",
        "OUTPUT_DIR": OUTPUT_DIR,
        "CPYTHON_CFLAGS": code_flags,
        "CPYTHON_LDFLAGS": PROFILE_RUNTIME if instrumented else _stack_flags(target),
        # a pgo build's merged profile, handed in beside build.sh (cpython/build.py)
        "PGO_PROFILE": PROFILE_INSIDE if options.pgo and not instrumented else "",
        "COMPILER_LLVM": target.toolchain.zig_llvm or "",
        "REDISTRIBUTED_DLLS": " ".join(sorted(target.pe.redistributed)),  # beside build.sh
        "PYTHON_MINOR": src.minor,
        # pip's console scripts: the launcher for the target's machine, and the interpreter
        # their shebang names (none: the tree gets no pip).
        "PIP_LAUNCHER": launchers.console if launchers else "",
        "PIP_INTERPRETER": launchers.interpreter if launchers else "",
    }
    return files, env


def _stack_flags(target: Target) -> str:
    """The linker flag of the target's stack reserve (targets/*.yaml pe.stack_reserve).
    Not an instrumented interpreter's: its training recurses with larger frames, and
    CPython's own projects give that build a larger stack too (PGInstrument)."""
    reserve = target.pe.stack_reserve
    return f"-Wl,--stack,{reserve}" if reserve else ""


def optimization_flags(options: BuildOptions, target: Target, instrumented: bool = False) -> str:
    """The compiler flags of CPython's own code for `options` (its dependencies keep the
    toolchain's): lto compiles every object to LLVM bitcode, which lld optimizes as a
    whole when it links python3XX.dll and the programs. Full LTO: linked through zig,
    ThinLTO's parallel backends laid python314.dll's functions out in another order at
    each link of the same objects, and zig passes no flag that pins lld's threads; full
    LTO linked the same bytes each time (the target file refuses the fulllto modifier).
    The projects' Release configuration asks MSVC for the same (WholeProgramOptimization).
    pgo compiles with the merged profile of the training; the `instrumented` interpreter
    that training runs counts in every function, with no LTO: it is run, never shipped."""
    if options.base == "debug":
        # spec.check_target_has refuses it with the target's reasons; a target file that
        # stops refusing it must not get a build that silently lacks it.
        raise PyfreightError(f"the Windows build does not make {options} builds ({target.triple})")
    if instrumented:
        return "-fprofile-instr-generate"
    flags = [f"-fprofile-instr-use={PROFILE_INSIDE}"] if options.pgo else []
    if options.lto:
        flags.append("-flto=full")
    return " ".join(flags)
