"""What a Mach-O file of ours may be, for its target: thin and of the target's CPU,
linked with two-level namespaces, for the target's macOS or older (LC_BUILD_VERSION),
loading only the target's system dylibs (libSystem) and dylibs the tree ships, by
@rpath/@loader_path/@executable_path names and rpaths (an absolute one points into
the build machine, or at whatever the user has there), naming no build path, signed
ad hoc with every page hash matching where the target requires it (macOS on Apple silicon kills
unsigned code), and the interpreter's image exporting the C API and nothing of the
libraries bundled into it. The facts come from formats/macho.py."""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from pyfreight.errors import PyfreightError
from pyfreight.formats.macho import MachoFacts, UnreadableMacho, macho_facts, macho_files
from pyfreight.targets import Target, all_targets
from pyfreight.verify.exports import bundled_exports, missing_c_api
from pyfreight.verify.pe_rules import build_paths_in

# Where a dylib may be found relative to the file loading it (or the program), rather
# than at a path of the machine: all a relocatable tree can use.
RELATIVE_PREFIXES = ("@rpath/", "@loader_path/", "@executable_path/")
# The name a shipped dylib is loaded by: found through the loader's rpaths or beside it.
# (@executable_path/ would tie it to one program's folder, which the lib-dynload
# modules loading it do not share.)
INSTALL_NAME_PREFIXES = ("@rpath/", "@loader_path/")
RPATH_PREFIXES = ("@loader_path/", "@executable_path/")
LINKED = ("execute", "dylib", "bundle")  # what dyld loads; objects are not signed nor bound
# The interpreter's image: libpython3.X[t].dylib of a shared build, or the executable
# itself of a static one, whose symbols extension modules bind to (-undefined dynamic_lookup).
LIBPYTHON = re.compile(r"^libpython3\.\d+t?\.dylib$")
PYTHON_EXECUTABLE = re.compile(r"^python3\.\d+t?$")


def is_interpreter_image(path: str, *, libpython_shipped: bool) -> bool:
    """Whether the file at `path` (relative to the tree) carries the C API: the
    libpython dylib, or bin/python3.X when the tree ships no libpython dylib."""
    pure = PurePosixPath(path)
    if LIBPYTHON.match(pure.name):
        return True
    return not libpython_shipped and pure.parent.name == "bin" and bool(PYTHON_EXECUTABLE.match(pure.name))


def check_macho_tree(root: Path, target: Target) -> tuple[list[MachoFacts], list[str]]:
    """All Mach-O files below `root`, and the problems found among them for `target`,
    one line each, naming the file; the build's paths are searched for in every file's
    bytes (a load command, __FILE__ or a compiled-in default may name one)."""
    facts: list[MachoFacts] = []
    problems: list[str] = []
    for path in macho_files(root):
        try:
            found = macho_facts(path, root)
        except UnreadableMacho as exc:  # a fat file too: it says so
            problems.append(str(exc))
            continue
        if found is not None:
            facts.append(found)
            problems += [f"{found.path}: {leak}" for leak in build_paths_in(path.read_bytes())]
    shipped = frozenset(f.install_name for f in facts if f.filetype == "dylib" and f.install_name)
    for f in facts:
        problems += [f"{f.path}: {problem}" for problem in macho_problems(f, target, shipped)]
    return facts, problems


def macho_problems(facts: MachoFacts, target: Target, shipped_install_names: frozenset[str]) -> list[str]:
    """The rules for one Mach-O file; `shipped_install_names` are the install names of
    the dylibs the tree ships. A libpython3.X dylib among them makes the build a shared
    one, whose bin/python3.X need not carry the C API (is_interpreter_image)."""
    assert target.macho_cpu is not None and target.macos_minimum is not None, f"{target.triple}: no Mach-O"
    problems = []
    linked = facts.filetype in LINKED
    if facts.cpu != target.macho_cpu:
        problems.append(f"cpu {facts.cpu}, not {target.macho_cpu} ({target.triple})")
    if linked and "twolevel" not in facts.flags:
        problems.append(
            "is not linked with two-level namespaces (MH_TWOLEVEL): link it without -flat_namespace"
        )
    problems += _minimum_os_problems(facts, target)
    problems += _loading_problems(facts, target, shipped_install_names)
    if facts.signature is None:
        if target.code_signature_required and linked:
            problems.append(
                f"has no code signature: {target.triple} runs no unsigned code; "
                "link it with the pinned zig, which signs it ad hoc"
            )
    elif facts.signature.problems:
        problems.append(
            f"code signature is invalid ({'; '.join(facts.signature.problems)}): "
            "sign it again (ad hoc) after the last change to the file"
        )
    # what the target's data names as exported by the pinned linker anyway, with why
    bundled = [
        name for name in bundled_exports(facts.exported) if name not in target.exported_by_the_toolchain
    ]
    if bundled:
        problems.append(f"exports symbols of bundled libraries: {', '.join(bundled[:5])}")
    libpython_shipped = any(LIBPYTHON.match(PurePosixPath(name).name) for name in shipped_install_names)
    if is_interpreter_image(facts.path, libpython_shipped=libpython_shipped):
        lacking = missing_c_api(facts.exported)
        if lacking:
            problems.append(f"does not export the C API extension modules need: {', '.join(lacking)}")
    return problems


def _minimum_os_problems(facts: MachoFacts, target: Target) -> list[str]:
    assert target.macos_minimum is not None
    wanted = target.macos_minimum_text
    if facts.platform is None:
        # The older LC_VERSION_MIN_MACOSX is what a linker writes for macOS before 10.14.
        older = "" if facts.minimum_os is None else f" (only LC_VERSION_MIN_MACOSX {_text(facts.minimum_os)})"
        return [f"has no LC_BUILD_VERSION{older}: link it for macOS {wanted} with the pinned zig"]
    if facts.platform != "macos":
        return [f"is built for {facts.platform}, not macos"]
    if facts.minimum_os is not None and facts.minimum_os > target.macos_minimum:
        return [f"asks for macOS {_text(facts.minimum_os)}, newer than the target's {wanted}"]
    return []


def _loading_problems(facts: MachoFacts, target: Target, shipped: frozenset[str]) -> list[str]:
    """The dylibs a file loads, its install name and its rpaths."""
    problems = []
    for name, _ in facts.dylibs:
        if name in target.allowed_needed:
            continue
        if not name.startswith(RELATIVE_PREFIXES):
            problems.append(
                f"loads {name}, which is not a system library of the target: "
                f"ship it and load it as @rpath/{PurePosixPath(name).name}"
            )
        elif name not in shipped:
            problems.append(f"loads {name}, but no dylib of the tree has that install name")
    if facts.filetype == "dylib":
        fix = f"link it with -Wl,-install_name,@rpath/{PurePosixPath(facts.path).name}"
        if facts.install_name is None:
            problems.append(f"has no install name (LC_ID_DYLIB): {fix}")
        elif not facts.install_name.startswith(INSTALL_NAME_PREFIXES):
            problems.append(f"install name {facts.install_name} is not @rpath/… or @loader_path/…: {fix}")
    for rpath in facts.rpaths:
        if not rpath.startswith(RPATH_PREFIXES):
            problems.append(
                f"rpath {rpath} is not relative to the file: use @loader_path/… or @executable_path/…"
            )
    # A program is the first to load: an @rpath/ name it loads is found by its own
    # rpaths only (a dylib's may come from the program that loads it).
    if facts.filetype == "execute" and not facts.rpaths:
        lost = [name for name, _ in facts.dylibs if name.startswith("@rpath/")]
        if lost:
            problems.append(
                f"loads {', '.join(lost)} but has no rpath to find it by: "
                "link it with -Wl,-rpath,@executable_path/../lib"
            )
    return problems


def _text(version: tuple[int, int]) -> str:
    return ".".join(map(str, version))


def macho_target(executable: Path) -> Target:
    """The macOS target of a Mach-O interpreter, by its CPU."""
    facts = macho_facts(executable, executable.parent)
    cpu = None if facts is None else facts.cpu
    for found in all_targets().values():
        if found.macho_cpu is not None and found.macho_cpu == cpu:
            return found
    raise PyfreightError(
        f"{executable}: a Mach-O {cpu} executable, which no target of targets/*.yaml describes"
    )
