"""PYTHON.json: the machine-readable description of a distribution, field for field in
python-build-standalone's format version 8, so that existing packers can read our
archives. Every value comes from the build itself: the interpreter's own answers
(pyfreight/in_container/describe_python.py), the exported build folder (buildinfo) and
the dependency artifacts; schema/PYTHON.json.schema.json is checked on every write.
Reading it back is pyfreight/python_json.py's job."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pyfreight import toolchain
from pyfreight.cpython.buildinfo import FRAMEWORK, BuildInfo
from pyfreight.cpython.options import BuildOptions
from pyfreight.errors import PyfreightError
from pyfreight.platforms import platform_of
from pyfreight.platforms.windows import interpreter_dll
from pyfreight.python_json import schema, schema_errors
from pyfreight.targets import Target

FORMAT_VERSION = "8"
# CPython's own licence (the PSF licence stack), as SPDX identifiers.
CPYTHON_LICENSES = ["Python-2.0", "CNRI-Python"]
# Built-in modules whose code the core calls directly (signal handling, faulthandler,
# tracemalloc and the os layer while it initializes; atexit's hooks and, since 3.13,
# datetime's static types from pylifecycle), beyond those imported at start-up (which
# the interpreter reports): a packer must keep all of them or libpython does not link.
# tests/test_python_json_reader.py links the required set alone to hold this true.
CALLED_BY_CORE = frozenset({"_datetime", "_signal", "_tracemalloc", "atexit", "faulthandler", "posix"})
ELF_MAGIC = b"\x7fELF"
BITCODE_MAGIC = b"BC\xc0\xde"
# A COFF object starts with its machine, little-endian: what Windows' objects are.
COFF_MACHINES = {b"\x64\x86": "AMD64", b"\x64\xaa": "ARM64", b"\x4c\x01": "I386"}
MACHO_MAGIC = b"\xcf\xfa\xed\xfe"  # MH_MAGIC_64, little-endian: a 64-bit Mach-O object


@dataclass(frozen=True)
class Library:
    """A static library shipped under python/build/lib, and the recipe it came from."""

    name: str  # as in -lNAME
    path: str  # relative to python/
    recipe: str
    licenses: tuple[str, ...]  # SPDX expression(s) of the recipe
    license_paths: tuple[str, ...]  # relative to python/


# The system libraries PYTHON.json may name, for any target (the schema's list); which
# of them a build may link is its target's `system_libraries` (targets/*.yaml).
SCHEMA_SYSTEM_LIBRARIES = frozenset(schema()["$defs"]["link"]["then"]["properties"]["name"]["enum"])


def object_file_format(first_object: Path, target: Target) -> str:
    """What the objects are, read from their bytes: ELF, COFF, or LLVM bitcode (LTO) of
    the LLVM that compiled them (a zig target's own, else the build image's clang)."""
    magic = first_object.read_bytes()[:4]
    if magic == ELF_MAGIC:
        return "elf"
    if magic == BITCODE_MAGIC:
        return f"llvm-bitcode:{target.toolchain.zig_llvm or toolchain.LLVM}"
    if magic[:2] in COFF_MACHINES:
        return "coff"
    if magic == MACHO_MAGIC:
        return "mach-o"
    raise PyfreightError(f"{first_object}: neither ELF, COFF, Mach-O nor LLVM bitcode (magic {magic.hex()})")


def _relative(path: str, prefix: str, tree: Path) -> str:
    """An absolute path inside the install tree (at `prefix` when the interpreter was
    asked: /install, or C:\\install under Wine) as a path relative to python/. Windows
    matches names whatever their case (sysconfig says Include, the tree has include):
    a Windows path is given the case the tree's own entries have."""
    windows = "\\" in prefix
    if windows:
        path, prefix = path.replace("\\", "/"), prefix.replace("\\", "/")
    if path.rstrip("/") == prefix:
        return "install"
    if not (path.lower() if windows else path).startswith((prefix.lower() if windows else prefix) + "/"):
        raise PyfreightError(f"{path} is not inside the install tree {prefix}")
    parts = path[len(prefix) + 1 :].rstrip("/").split("/")
    if windows:
        folder, named = tree, []
        for part in parts:
            entries = {p.name.lower(): p.name for p in folder.iterdir()} if folder.is_dir() else {}
            named.append(entries.get(part.lower(), part))
            folder = folder / named[-1]
        parts = named
    return "install/" + "/".join(parts)


def link_entry(word: str, libraries: dict[str, Library], target: Target) -> dict:
    """PYTHON.json's entry for one word of a module's link line: a static library the
    archive ships, or a system library of the target; anything else is refused."""
    if word.startswith(FRAMEWORK):  # a macOS framework the target's binaries may load
        name = word.removeprefix(FRAMEWORK)
        if name not in target.frameworks:
            raise PyfreightError(
                f"the build links framework {name}, which {target.triple}'s files may not load "
                f"(libc.needed of targets/{target.triple}.yaml)"
            )
        return {"name": name, "framework": True}
    if word.endswith(".a"):  # an archive CPython built itself (HACL*)
        name = Path(word).name.removeprefix("lib").removesuffix(".a")
        return {"name": name, "path_static": f"build/{word}"}
    name = word.removeprefix("-l")
    if name in libraries:
        return {"name": name, "path_static": libraries[name].path}
    if name in target.libc.system_libraries:
        return {"name": name, "system": True}
    raise PyfreightError(
        f"the build links -l{name}, which is neither a system library of {target.triple} "
        f"({', '.join(sorted(target.libc.system_libraries))}) nor a static library of a dependency recipe"
    )


def _interpreter_dll(tree: Path) -> str:
    """python3XX.dll of a Windows tree (python3.dll only forwards to it)."""
    found = interpreter_dll(tree)
    if found is None:
        raise PyfreightError(f"{tree}: expected one python3XX.dll (or python3XXt.dll) at its top")
    return found


TEST_FOLDERS = frozenset({"test", "tests", "idle_test"})


def stdlib_test_packages(stdlib: Path) -> list[str]:
    """Dotted names of the stdlib's test packages (test, idlelib.idle_test, …), outermost only."""
    found = []
    for init in sorted(stdlib.rglob("__init__.py")):
        package = init.parent.relative_to(stdlib)
        names = package.parts
        if names[-1] in TEST_FOLDERS and not set(names[:-1]) & (TEST_FOLDERS | {"site-packages"}):
            found.append(".".join(names))
    return sorted(found)


def inittab_cflags(options: BuildOptions) -> list[str]:
    """Flags to compile a config.c against the archive's headers (pyconfig.h carries
    the ABI: free-threading, debug); NDEBUG as the build used it."""
    return ["-std=c11", "-DPy_BUILD_CORE"] + ([] if options.base == "debug" else ["-DNDEBUG"])


def crt_features(target: Target, static: bool, glibc_max: tuple[int, ...] | None) -> list[str]:
    """What the binaries need of the C runtime (PYTHON.json `crt_features`): nothing
    when the C library is linked in, else which one, and for glibc the newest symbol
    version any of them needs."""
    if static:
        return ["static"]
    if not target.libc.glibc:
        return [f"{target.libc.name}-dynamic"]
    return ["glibc-dynamic", "glibc-max-symbol-version:" + ".".join(map(str, glibc_max or ()))]


def describe(
    *,
    facts: dict,
    info: BuildInfo,
    options: BuildOptions,
    target: Target,
    python_exe: str,
    tree: Path,
    libraries: dict[str, Library],
    required_at_startup: set[str],
    object_format: str,
    glibc_max: tuple[int, ...] | None,
    cpython_license_path: str,
    tcl_folder: str,
    tcl_paths: list[str],
    run_tests: str,
) -> dict:
    """The PYTHON.json document (not yet written); raises when it breaks the schema."""
    prefix = facts["prefix"]
    config = facts["config_vars"]
    paths = {k: _relative(v, prefix, tree) for k, v in sorted(facts["paths"].items())}
    extensions = {}
    for name, module in sorted(info.modules.items()):
        links = [link_entry(w, libraries, target) for w in module.link_flags]
        variant: dict = {
            "in_core": module.in_core,
            "init_fn": module.init_fn,
            "links": links,
            "objs": [f"build/{o}" for o in module.objs],
            "required": name in required_at_startup or name in CALLED_BY_CORE,
            "variant": "default",
        }
        shipped = [libraries[link["name"]] for link in links if link["name"] in libraries]
        if shipped:
            variant["licenses"] = sorted({lic for lib in shipped for lic in lib.licenses})
            variant["license_paths"] = sorted({p for lib in shipped for p in lib.license_paths})
        extensions[name] = [variant]
    if facts["python_platform_tag"] != target.python_platform_tag:
        raise PyfreightError(
            f"the interpreter says its platform is {facts['python_platform_tag']}, but {target.triple}'s "
            f"is {target.python_platform_tag} (targets/{target.triple}.yaml)"
        )
    in_dll = platform_of(target).interpreter_in_dll  # python.exe loads the interpreter's DLL
    core: dict = {
        "objs": [f"build/{o}" for o in info.core_objs],
        "links": [link_entry(w, libraries, target) for w in info.core_link_flags],
    }
    if in_dll:  # packers link its objects all the same
        core["shared_lib"] = "install/" + _interpreter_dll(tree)
    else:
        core["static_lib"] = f"{_relative(config['LIBPL'], prefix, tree)}/{config['LIBRARY']}"
        if config.get("Py_ENABLE_SHARED") == "1":  # libpython beside a static interpreter
            core["shared_lib"] = f"{_relative(config['LIBDIR'], prefix, tree)}/{config['INSTSONAME']}"
    document = {
        "version": FORMAT_VERSION,
        "target_triple": target.triple,
        "optimizations": options.base,
        "build_options": str(options),
        "python_tag": "cp" + facts["python_major_minor_version"].replace(".", ""),
        "python_abi_tag": facts["python_abi_tag"],
        "python_platform_tag": facts["python_platform_tag"],
        "python_version": facts["python_version"],
        "python_major_minor_version": facts["python_major_minor_version"],
        "python_implementation_cache_tag": facts["python_implementation_cache_tag"],
        "python_implementation_hex_version": facts["python_implementation_hex_version"],
        "python_implementation_name": facts["python_implementation_name"],
        "python_implementation_version": facts["python_implementation_version"],
        "python_bytecode_magic_number": facts["python_bytecode_magic_number"],
        "python_exe": python_exe,
        "python_paths": paths,
        "python_paths_abstract": dict(sorted(facts["paths_abstract"].items())),
        "python_config_vars": config,
        "python_stdlib_test_packages": stdlib_test_packages(tree / paths["stdlib"].removeprefix("install/")),
        "python_suffixes": facts["python_suffixes"],
        "python_symbol_visibility": "dllexport" if in_dll else "global-default",
        # Built-in modules, and extension modules from wheels unless the C library is
        # linked in (a static executable cannot load shared libraries).
        "python_extension_module_loading": ["builtin"] if options.static else ["builtin", "shared-library"],
        "libpython_link_mode": "shared" if in_dll else "static",
        "crt_features": crt_features(target, options.static, glibc_max),
        "run_tests": run_tests,
        "build_info": {
            "core": core,
            "extensions": extensions,
            "inittab_object": f"build/{info.inittab_object}",
            "inittab_source": f"build/{info.inittab_source}",
            "inittab_cflags": list(info.inittab_cflags or inittab_cflags(options)),
            "object_file_format": object_format,
        },
        "licenses": CPYTHON_LICENSES,
        "license_path": cpython_license_path,
    }
    if not in_dll:
        document["python_stdlib_platform_config"] = _relative(config["LIBPL"], prefix, tree)
    if tcl_paths:  # the Tcl/Tk script libraries tkinter needs, when the build has it
        document["tcl_library_path"] = f"install/{tcl_folder}"
        document["tcl_library_paths"] = tcl_paths
    problems = schema_errors(document)
    if problems:
        raise PyfreightError("PYTHON.json does not match its schema:\n  " + "\n  ".join(problems[:20]))
    return document
