"""What a Mach-O file of ours may be, for its target: thin and of the target's CPU,
linked with two-level namespaces, for the target's macOS or older (LC_BUILD_VERSION),
loading only the target's system dylibs (libSystem) and dylibs the tree ships, by
@rpath/@loader_path/@executable_path names and rpaths (an absolute one points into
the build machine, or at whatever the user has there) that stay inside the tree,
setting no DYLD_* variable (LC_DYLD_ENVIRONMENT) and naming no dynamic linker but
/usr/lib/dyld, naming no build path, signed ad hoc with every page hash matching where
the target requires it (macOS on Apple silicon kills unsigned code), and the
interpreter's image exporting the C API and nothing of the libraries bundled into it.
In a macOS tree the interpreter (bin/python3.X) and every .dylib and .so file must be
such a file: a PE or ELF file under one of those names is named, not skipped.

Trees come from outside: check_macho_tree reads every file once, through
formats/untrusted (regular files only, 256 MiB at most, a walk of bounded depth), and
turns whatever a file holds into problem lines; it raises nothing. The facts come from
formats/macho.py."""

from __future__ import annotations

import re
import stat
from pathlib import Path, PurePosixPath

from pyfreight.formats.macho import (
    HEAD_BYTES,
    MachoFacts,
    UnreadableMacho,
    macho_facts_of,
    printable,
    starts_like_macho,
)
from pyfreight.formats.untrusted import UntrustedFile, read_binary, read_head, walk
from pyfreight.targets import Target
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
# The folder (of the tree) @executable_path stands for: the programs' own, bin/. A
# dylib's @loader_path is its own folder.
PROGRAMS_FOLDER = PurePosixPath("bin")
# The only dynamic linker a macOS program may name (LC_LOAD_DYLINKER).
DYLD = "/usr/lib/dyld"
LINKED = ("execute", "dylib", "bundle")  # what dyld loads; objects are not signed nor bound
# The interpreter's image: libpython3.X[t].dylib of a shared build, or the executable
# itself of a static one, whose symbols extension modules bind to (-undefined dynamic_lookup).
LIBPYTHON = re.compile(r"^libpython3\.\d+t?\.dylib$")
PYTHON_EXECUTABLE = re.compile(r"^python3\.\d+t?$")
# Names that must be Mach-O files in a macOS tree, whatever they hold: dyld loads a
# .dylib or .so by its name, and bin/python3.X is the interpreter run.
MACHO_SUFFIXES = (".dylib", ".so")
# What a file is, by its first bytes, when it is no Mach-O file: for the message.
OTHER_FORMATS = (
    (b"MZ", "a Windows (PE) file"),
    (b"\x7fELF", "an ELF file (Linux or another Unix)"),
    (b"#!", "a script"),
)


def is_interpreter_image(path: str, *, libpython_shipped: bool) -> bool:
    """Whether the file at `path` (relative to the tree) carries the C API: the
    libpython dylib, or bin/python3.X when the tree ships no libpython dylib."""
    pure = PurePosixPath(path)
    if LIBPYTHON.match(pure.name):
        return True
    return not libpython_shipped and pure.parent.name == "bin" and bool(PYTHON_EXECUTABLE.match(pure.name))


def must_be_macho(path: str) -> bool:
    """Whether the file at `path` (relative to the tree) is one a macOS tree's
    dyld or user runs as a Mach-O file: a .dylib, a .so or the interpreter."""
    pure = PurePosixPath(path)
    if pure.suffix in MACHO_SUFFIXES:
        return True
    return pure.parent.name == "bin" and bool(PYTHON_EXECUTABLE.match(pure.name))


def check_macho_tree(root: Path, target: Target) -> tuple[list[MachoFacts], list[str]]:
    """All Mach-O files below `root`, and the problems found among them for `target`,
    one line each, naming the file; the build's paths are searched for in every file's
    bytes (a load command, __FILE__ or a compiled-in default may name one). Each file
    is read once; whatever the tree holds becomes a line, nothing is raised."""
    facts: list[MachoFacts] = []
    problems: list[str] = []
    try:
        entries = list(walk(root))
    except UntrustedFile as exc:  # deeper than any tree of ours, or a folder unlisted
        return [], [str(exc)]
    for path in entries:
        name = printable(bytes(path.relative_to(root)))
        try:
            read = _read_entry(path, name, root, target)
        except (UntrustedFile, UnreadableMacho) as exc:  # a fat file too: it says so
            problems.append(str(exc))
            continue
        if read is not None:
            found, data = read
            facts.append(found)
            problems += [f"{found.path}: {leak}" for leak in build_paths_in(data)]
    shipped = frozenset(f.install_name for f in facts if f.filetype == "dylib" and f.install_name)
    for f in facts:
        problems += [f"{f.path}: {problem}" for problem in macho_problems(f, target, shipped)]
    return facts, problems


def _read_entry(path: Path, name: str, root: Path, target: Target) -> tuple[MachoFacts, bytes] | None:
    """The facts and bytes of one entry of the tree when it is a Mach-O file; None for a
    folder, a symlink (what it names is read in its own place) and a file of another
    kind. A name that must be a Mach-O file (must_be_macho) raises UntrustedFile when
    it is anything else, or a symlink to anything else; a Mach-O file that cannot be
    read raises UnreadableMacho."""
    required = must_be_macho(name)
    try:
        mode = path.lstat().st_mode
    except OSError as exc:
        raise UntrustedFile(f"{name}: cannot be read ({exc.strerror})") from None
    if stat.S_ISDIR(mode):
        return None
    if stat.S_ISLNK(mode):  # libpython3.X.dylib's links: what they name is judged there
        if required:
            _expect_macho(read_head(_inside(path, name, root), name, HEAD_BYTES), name, target)
        return None
    try:
        head = read_head(path, name, HEAD_BYTES)
    except UntrustedFile:
        if required:
            raise
        return None  # a fifo or a device, where no binary is looked for: never opened blocking
    if not starts_like_macho(head):
        if required:
            _expect_macho(head, name, target)
        return None
    data = read_binary(path, name)
    found = macho_facts_of(data, name)
    if found is None:  # replaced since its first bytes were read
        raise UntrustedFile(f"{name}: changed while it was read; the tree is not trusted")
    return found, data


def _inside(link: Path, name: str, root: Path) -> Path:
    """The file the symlink `link` names, which must lie inside the tree at `root`."""
    try:
        resolved = link.resolve(strict=True)
        inside = resolved.is_relative_to(root.resolve(strict=True))
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop, before Python 3.13
        raise UntrustedFile(f"{name}: a symlink naming nothing; the tree is not trusted") from None
    if not inside:
        raise UntrustedFile(f"{name}: a symlink leading outside the tree; the tree is not trusted")
    return resolved


def _expect_macho(head: bytes, name: str, target: Target) -> None:
    """Raises UntrustedFile, saying what the file is, unless `head` starts a Mach-O file."""
    if not starts_like_macho(head):
        raise UntrustedFile(
            f"{name}: {_format_of(head)}, not a thin Mach-O file for {target.macho.cpu} ({target.triple})"
        )


def _format_of(head: bytes) -> str:
    """What a file is, by its first bytes, for a message."""
    for magic, what in OTHER_FORMATS:
        if head.startswith(magic):
            return what
    return f"a file starting with bytes {head[:4].hex()}" if head else "an empty file"


def macho_problems(facts: MachoFacts, target: Target, shipped_install_names: frozenset[str]) -> list[str]:
    """The rules for one Mach-O file; `shipped_install_names` are the install names of
    the dylibs the tree ships. A libpython3.X dylib among them makes the build a shared
    one, whose bin/python3.X need not carry the C API (is_interpreter_image)."""
    problems = []
    linked = facts.filetype in LINKED
    if facts.cpu != target.macho.cpu:
        problems.append(f"cpu {facts.cpu}, not {target.macho.cpu} ({target.triple})")
    if linked and "twolevel" not in facts.flags:
        problems.append(
            "is not linked with two-level namespaces (MH_TWOLEVEL): link it without -flat_namespace"
        )
    problems += _minimum_os_problems(facts, target)
    problems += _loading_problems(facts, target, shipped_install_names)
    problems += _dyld_problems(facts)
    if facts.signature is None:
        if target.macho.code_signature_required and linked:
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
        name for name in bundled_exports(facts.exported) if name not in target.macho.exported_by_the_toolchain
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
    wanted = target.macho.minimum_os_text
    if facts.platform is None:
        # The older LC_VERSION_MIN_MACOSX is what a linker writes for macOS before 10.14.
        older = "" if facts.minimum_os is None else f" (only LC_VERSION_MIN_MACOSX {_text(facts.minimum_os)})"
        return [f"has no LC_BUILD_VERSION{older}: link it for macOS {wanted} with the pinned zig"]
    if facts.platform != "macos":
        return [f"is built for {facts.platform}, not macos"]
    if facts.minimum_os is not None and facts.minimum_os > target.macho.minimum_os:
        return [f"asks for macOS {_text(facts.minimum_os)}, newer than the target's {wanted}"]
    return []


def _loading_problems(facts: MachoFacts, target: Target, shipped: frozenset[str]) -> list[str]:
    """The dylibs a file loads, its install name and its rpaths."""
    problems = [
        problem for name, _ in facts.dylibs if (problem := _dylib_problem(facts.path, name, target, shipped))
    ]
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
        elif _leaves_the_tree(facts.path, rpath):
            problems.append(
                f"rpath {rpath} leads outside the tree (from {_shown(_base_folder(facts.path, rpath))}): "
                "dyld would look for its libraries there"
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


def _dylib_problem(path: str, name: str, target: Target, shipped: frozenset[str]) -> str:
    """What is wrong with a dylib the file at `path` loads, by any of the commands
    that load one (LC_LOAD_DYLIB, weak, re-exported, lazy or upward alike); "" if nothing."""
    if name in target.libc.needed:
        return ""
    if not name.startswith(RELATIVE_PREFIXES):
        return (
            f"loads {name}, which is not a system library of the target: "
            f"ship it and load it as @rpath/{PurePosixPath(name).name}"
        )
    if name.startswith("@rpath/"):
        # Appended to each rpath, which stays inside the tree: a .. may climb out of it.
        if ".." in name.split("/"):
            return f"loads {name}: a .. in an @rpath/ name can lead dyld outside the tree"
    elif _leaves_the_tree(path, name):
        return f"loads {name}, outside the tree (from {_shown(_base_folder(path, name))})"
    if name not in shipped:
        return f"loads {name}, but no dylib of the tree has that install name"
    return ""


def _base_folder(path: str, reference: str) -> PurePosixPath:
    """The folder of the tree an @loader_path/ or @executable_path/ `reference` made by
    the file at `path` starts from: the file's own, or the programs' (bin/)."""
    if reference.startswith("@executable_path/"):
        return PROGRAMS_FOLDER
    return PurePosixPath(path).parent


def _shown(folder: PurePosixPath) -> str:
    return f"{folder}/" if folder.parts else "the top of the tree"


def _leaves_the_tree(path: str, reference: str) -> bool:
    """Whether `reference` (@loader_path/… or @executable_path/…, made by the file at
    `path`), resolved as dyld would, reaches above the tree's root at any step."""
    depth = len(_base_folder(path, reference).parts)
    for part in reference.split("/")[1:]:
        if part == "..":
            depth -= 1
            if depth < 0:
                return True
        elif part not in ("", "."):
            depth += 1
    return False


def _dyld_problems(facts: MachoFacts) -> list[str]:
    """What a file asks of dyld itself: variables set, another dynamic linker."""
    problems = []
    if facts.environment:
        problems.append(
            f"sets dyld's environment (LC_DYLD_ENVIRONMENT {', '.join(facts.environment)}): "
            "no file of ours changes how dyld loads"
        )
    if facts.dylinker is not None and facts.dylinker != DYLD:
        problems.append(f"names the dynamic linker {facts.dylinker} (LC_LOAD_DYLINKER), not {DYLD}")
    return problems


def _text(version: tuple[int, int]) -> str:
    return ".".join(map(str, version))
