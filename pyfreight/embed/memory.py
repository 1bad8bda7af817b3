"""`pyfreight embed --memory-importer`: an interpreter whose standard library is packed
into its own read-only data and imported from memory (see docs/memory-importer.md).

The archive's own interpreter compiles the stdlib (so the bytecode matches its magic
number) into one blob; an assembly file `.incbin`s the blob; the importer module and a
main() that installs it before the first stdlib import are compiled against the
archive's headers; then everything links as `embed` links any interpreter."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from pyfreight import memimport
from pyfreight.cpython.spec import BuildSpec
from pyfreight.cpython.versions import versions_with
from pyfreight.embed import application
from pyfreight.embed.application import MainSpec
from pyfreight.embed.archive_python import run_archive_python
from pyfreight.embed.link import EmbedPlan, Linker, build_libpython, link_executable
from pyfreight.embed.windows_packages import install_offline, refuse_compiled
from pyfreight.errors import PyfreightError
from pyfreight.logs import say, tail
from pyfreight.paths import Workspace, default_workspace
from pyfreight.python_json import Distribution
from pyfreight.runners import runner_for


@dataclass(frozen=True)
class PackOptions:
    optimize: int = 0  # bytecode optimization level, as python -O / -OO
    # Whose .py sources are packed (inspect.getsource, source lines in tracebacks): "all",
    # "app" (the --app folders'), "none"; None: an application's own, an interpreter's all.
    sources: str | None = None
    apps: Sequence[Path] = field(default=())  # sys.path-like folders packed beside the stdlib
    main: MainSpec | None = None  # what the executable runs when started (an application)
    wheels: Sequence[Path] = field(default=())  # third-party packages, as wheel files
    requirements: Path | None = None  # third-party packages, as a pip requirements file
    filesystem: Sequence[str] = field(default=())  # top-level modules kept beside the executable
    static_code: bool = False  # code objects laid out in the executable's data (3.13-3.15)
    # An application packs the stdlib modules its code reaches, these (with their
    # submodules) too, or the whole stdlib.
    include: Sequence[str] = field(default=())
    whole_stdlib: bool = False
    # Each module compressed with zstd, decompressed in memory at its first import (where
    # the archive has zstd: 3.14 and newer).
    compress: bool = True


@dataclass(frozen=True)
class Staged:
    """An application made ready to pack: the folders packed beside the stdlib, the
    top-level modules kept out of the blob, and (for an application that packs only what
    it reaches) reach.py's answer."""

    apps: list[Path]
    exclude: list[str]
    reach: Path | None = None
    reached_builtins: frozenset[str] = frozenset()

    def extensions(self, archive: Distribution) -> str | None:
        """The extension modules to link: those the application reaches (the minimal ones
        are always added), or None when it packs the whole stdlib."""
        if self.reach is None:
            return None
        reached = sorted(self.reached_builtins & set(archive.extensions))
        return ",".join(reached) if reached else "minimal"


def _run_step(
    archive: Distribution, linker: Linker, what: str, arguments: list[str | Path], ws: Workspace
) -> list[str]:
    """Runs a step of the packer with the archive's interpreter, its output to the log;
    says its last line and returns the lines before it, or stops with the log's tail."""
    if not archive.python_exe.is_file():
        raise PyfreightError(
            f"{archive.python_exe}: the archive's interpreter is missing; is it a full archive?"
        )
    say(f"embed: {what} with {archive.python_exe.name} (log {linker.log})")
    with linker.log.open("a") as log:
        returncode, stdout = run_archive_python(archive, ws, linker.work, arguments, log)
        log.write(stdout)
    if returncode != 0:
        raise PyfreightError(f"embed: {what} failed; log {linker.log}:\n{tail(linker.log)}")
    *before, last = stdout.strip().splitlines() or [""]
    if last:
        say(f"embed: {last}")
    return before


def pack_stdlib(
    plan: EmbedPlan,
    linker: Linker,
    options: PackOptions,
    staged: Staged,
    ws: Workspace | None = None,
) -> Path:
    """Runs the packer with the archive's interpreter; returns the blob."""
    archive, ws = plan.archive, ws or default_workspace()
    blob = linker.work / "stdlib.blob"
    arguments: list[str | Path] = ["-I", memimport.PACKER, "--stdlib", archive.stdlib_dir, "--out", blob]
    arguments += ["--optimize", str(options.optimize)]
    sources = options.sources or ("app" if options.main is not None else "all")
    arguments += ["--sources"] if sources == "all" else []
    for app in staged.apps:
        # Paths are compared here, not in pack.py: under Wine each arrives under its own mount.
        with_sources = sources == "app" and app in options_apps(options)
        arguments += ["--app-sources" if with_sources else "--app", app]
    for name in staged.exclude:
        arguments += ["--exclude", name]
    if staged.reach is not None:
        arguments += ["--reach", staged.reach]
        for name in plan.dropped:
            arguments += ["--left-out", name]
    arguments += ["--compress"] if zstd_library(archive, options) else []
    _run_step(archive, linker, "packing the stdlib", arguments, ws)
    return blob


def options_apps(options: PackOptions) -> list[Path]:
    """The application's own folders (not the installed packages), as pack.py is given them."""
    return [app.resolve() for app in options.apps]


def zstd_library(archive: Distribution, options: PackOptions) -> list[Path]:
    """The static zstd library that decompresses the packed modules, when they are
    compressed: the one the archive's _zstd module links (3.14 and newer have it)."""
    if not options.compress or "_zstd" not in archive.extensions:
        return []
    return [archive.path(link.path_static) for link in archive.default("_zstd").links if link.path_static]


def reach_application(
    archive: Distribution, linker: Linker, options: PackOptions, apps: list[Path], ws: Workspace
) -> tuple[Path, frozenset[str]]:
    """reach.py's answer for the application (run by the archive's interpreter, whose
    built-in modules are the extensions it can link): the file pack.py reads, and the
    built-in modules reached."""
    assert options.main is not None
    start = linker.work / "start.py"
    start.write_text(options.main.start_code())
    on_disk = linker.work / "on-disk"
    answer = linker.work / "reach.json"
    arguments: list[str | Path] = ["-I", "-S", memimport.REACH, "--start", start, "--out", answer]
    for folder in [*apps, on_disk, archive.stdlib_dir]:
        arguments += ["--path", folder]
    for folder in [*apps, on_disk]:
        arguments += ["--app", folder]
    arguments += ["--root", options.main.module]
    for name in options.include:
        arguments += ["--whole", name]
    _run_step(archive, linker, "finding the modules the application reaches", arguments, ws)
    reached = json.loads(answer.read_text())
    _check_included(options.include, reached)
    return answer, frozenset(reached["builtins"])


def _check_included(names: Sequence[str], reached: dict[str, list[str]]) -> None:
    found = {*reached["modules"], *reached["builtins"]}
    for name in names:
        if name not in found:
            raise PyfreightError(
                f"--include-module {name}: no such module in the apps, packages, stdlib or built-in "
                "modules (give a dotted module or package name, e.g. email.mime)"
            )


def static_code_refusal(build: BuildSpec) -> str | None:
    """Why --static-code does not apply to an archive of `build` (its layouts are those
    of default builds of the listed versions), or None when it does."""
    version, options = build.minor, build.options
    # The versions staticcode.py (and static_code.h) lay out: cpython/versions.yaml's
    # static_code feature (tests/test_staticcode.py holds the generator to the same list).
    laid_out = versions_with("static_code")
    if version in laid_out and not options.freethreaded and options.base != "debug":
        return None
    return (
        f"--static-code lays out the code objects of CPython {', '.join(laid_out)} default "
        f"builds; this archive is {version} {options}: leave --static-code out"
    )


def static_code_objects(
    plan: EmbedPlan, linker: Linker, blob: Path, cflags: list[str], ws: Workspace | None = None
) -> list[Path]:
    """The packed modules' code objects as C data (the archive's interpreter writes it from
    the blob, under Wine for a Windows archive), and their runtime, compiled."""
    data = linker.work / "static_code_data.c"
    arguments: list[str | Path] = ["-I", memimport.STATIC_CODE_GENERATOR, "--blob", blob]
    arguments += ["--include-dir", plan.archive.include_dir, "--out", data]
    # Its last line is the summary; the lines before it name the modules left marshalled.
    ws = ws or default_workspace()
    for line in _run_step(plan.archive, linker, "writing the static code objects", arguments, ws):
        say(f"embed: {line}")
    for source in memimport.STATIC_CODE_RUNTIME:
        (linker.work / source.name).write_bytes(source.read_bytes())
    # NDEBUG as in the archive's own non-debug build: the internal headers' asserts would
    # otherwise put the work folder's path (__FILE__) into the object. The data is large and
    # has no code worth optimizing: -O1 compiles it in a fraction of -O2's time.
    cflags = [*cflags, "-DNDEBUG"]
    return [linker.compile(data, [*cflags, "-O1"]), linker.compile(linker.work / "static_code.c", cflags)]


def _stage_application(
    archive: Distribution, linker: Linker, options: PackOptions, ws: Workspace
) -> tuple[list[Path], list[str]]:
    """The folders to pack (the apps, then the pure-Python third-party packages) and the
    top-level modules to keep out of the blob; fills linker.work/on-disk with what goes to
    the packages folder beside the executable."""
    for app in options.apps:
        if not app.is_dir():
            raise PyfreightError(f"--app {app}: no such folder")
    apps = [app.resolve() for app in options.apps]
    on_disk = linker.work / "on-disk"
    shutil.rmtree(on_disk, ignore_errors=True)
    on_disk.mkdir()
    exclude: list[str] = []
    if options.wheels or options.requirements:
        site, packed = linker.work / "site", linker.work / "site-packed"
        for folder in (site, packed):
            shutil.rmtree(folder, ignore_errors=True)
        if runner_for(archive.build.target).network:  # the archive's pip reaches an index
            application.install_third_party(
                archive.python_exe, options.wheels, options.requirements, site, linker.log
            )
        else:  # this machine's pip downloads the wheels, and the archive's installs them offline
            wheels = [w.resolve() for w in options.wheels]
            requirements = options.requirements.resolve() if options.requirements else None
            install_offline(archive, linker.work, wheels, requirements, site, linker.log, ws)
        exclude += application.split_site(site, packed, on_disk)
        if linker.toolchain.platform.interpreter_in_dll:  # what a compiled module imports
            refuse_compiled(on_disk, archive)
        apps.append(packed)
    for name in options.filesystem:
        found = application.find_top_level(name, [*apps, archive.stdlib_dir])
        if found is None:
            raise PyfreightError(
                f"--filesystem {name}: no such top-level module in the apps, packages or stdlib "
                "(give a module or package name, e.g. idlelib)"
            )
        if not (on_disk / found.name).exists():
            copy = shutil.copytree if found.is_dir() else shutil.copy2
            copy(found, on_disk / found.name)
        exclude.append(name)
    if options.main is not None:
        top = options.main.module.split(".")[0]
        if application.find_top_level(top, [*apps, on_disk, archive.stdlib_dir]) is None:
            raise PyfreightError(
                f"--main {options.main.module}: no module {top} in the --app folders or packages"
            )
    return apps, sorted(set(exclude))


def stage_memory_importer(
    archive: Distribution, linker: Linker, output: Path, options: PackOptions, ws: Workspace | None = None
) -> Staged:
    """What packing needs before the extensions are chosen: the options checked, the
    application's packages installed, and what it reaches."""
    ws = ws or default_workspace()
    application.packages_folder(output)  # refused before any work if it is not ours
    refusal = static_code_refusal(archive.build)
    if options.static_code and refusal:
        raise PyfreightError(refusal)
    if options.main is None and (options.include or options.whole_stdlib):
        flag = "--include-module" if options.include else "--whole-stdlib"
        raise PyfreightError(f"{flag} chooses what an application packs: add --main")
    apps, exclude = _stage_application(archive, linker, options, ws)
    if options.main is None or options.whole_stdlib:
        return Staged(apps, exclude)
    reach, builtins = reach_application(archive, linker, options, apps, ws)
    return Staged(apps, exclude, reach, builtins)


def link_memory_importer(
    plan: EmbedPlan,
    linker: Linker,
    output: Path,
    options: PackOptions,
    staged: Staged,
    extra_flags: Sequence[str] = (),
    ws: Workspace | None = None,
) -> Path | None:
    """Links the executable; returns the packages folder written beside it, if any."""
    blob = pack_stdlib(plan, linker, options, staged, ws)
    asm = linker.work / "blob.S"
    asm.write_text(memimport.blob_asm(blob, linker.toolchain.platform.blob_assembly()))
    on_disk = linker.work / "on-disk"
    has_packages = any(on_disk.iterdir())
    app_c = linker.work / "app.c"
    start = options.main.start_code() if options.main else ""
    app_c.write_text(memimport.app_c(start, application.PACKAGES_SUFFIX if has_packages else ""))
    # The ABI's one definition a compile against the headers must share with the build:
    # a free-threaded Windows build's pyconfig.h leaves Py_GIL_DISABLED to the compiler's
    # command line (PYTHON.json has it among the build's own definitions).
    abi = [f for f in plan.archive.inittab_cflags if f.split("=")[0] == "-DPy_GIL_DISABLED"]
    cflags = ["-O2", "-fPIE", "-Wall", *abi, f"-I{plan.archive.include_dir}"]
    objects = [linker.compile(app_c, cflags)]
    if options.static_code:
        objects += static_code_objects(plan, linker, blob, cflags, ws)
    zstd = zstd_library(plan.archive, options)
    for source in (memimport.MAIN_C, memimport.MODULE_C):
        copy = linker.work / source.name
        copy.write_bytes(source.read_bytes())
        defines = []
        if source == memimport.MODULE_C:
            defines += ["-DPYFREIGHT_STATIC_CODE"] if options.static_code else []
            defines += ["-DPYFREIGHT_ZSTD"] if zstd else []
        objects.append(linker.compile(copy, [*cflags, *defines]))
    objects.append(linker.compile(asm, []))
    library = build_libpython(plan, linker)
    if zstd:
        libraries = tuple(dict.fromkeys([*plan.inputs.static_libraries, *zstd]))
        plan = replace(plan, inputs=replace(plan.inputs, static_libraries=libraries))
    # An application loads extension modules from files only from its packages folder, and
    # only ctypes looks the C API up by name (ctypes.pythonapi).
    exports = options.main is None or has_packages or any(e.name == "_ctypes" for e in plan.extensions)
    link_executable(plan, linker, library, output, objects, [*extra_flags, *blob_placement(linker)], exports)
    return application.write_packages_folder(output, on_disk)


def blob_placement(linker: Linker) -> list[str]:
    """The link flags that put a program's blob at its end, where the platform's linker
    takes a script for it (memimport.BLOB_LINK_SCRIPT)."""
    return linker.toolchain.platform.blob_placement(linker.work, memimport.BLOB_LINK_SCRIPT)
