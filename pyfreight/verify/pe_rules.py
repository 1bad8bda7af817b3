"""What a PE file of ours may be, for its target: a PE image at all when it is named
like one (.exe, .dll, .pyd: Windows runs or loads it by that name, whatever it holds),
the machine, every DLL it makes Windows load (imported, delay-loaded, named in its bound
import directory or by a forwarded export: the target's `libc.needed`, Windows' own and
the UCRT's, or a DLL the tree itself ships), ASLR with 64-bit entropy and DEP, Control
Flow Guard where the target has it, no debug directory (a CodeView record names the
build's files), the interpreter's programs carrying a manifest that names Windows 10 and
11 and long paths (formats/manifest.py says why), and the
interpreter's DLL exporting the C API and nothing of the
libraries bundled into it. A vendor's DLL the target ships as it is (the Visual C++
runtime, targets/*.yaml pe.redistributed) is judged by its machine and sha256 alone, and so are
pip's script launchers (pe.launchers) and the console scripts made from them, whose
shebang must name the interpreter relative to the launcher. The facts
come from formats/pe.py; the Windows checks and validate judge trees by these rules,
which say what is wrong in one line per problem, naming the file, whatever the file
holds."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from pyfreight.cpython.relocate import FORBIDDEN
from pyfreight.formats import untrusted
from pyfreight.formats.manifest import WINDOWS_10, UnreadableManifest, manifest_facts
from pyfreight.formats.pe import PeFacts, UnreadablePe, image_facts, pe_files, printable
from pyfreight.targets import Target
from pyfreight.verify.exports import bundled_exports, missing_c_api

REQUIRED_FLAGS = ("dynamic_base", "high_entropy_va", "nx_compat")
# A 32-bit image (PE32) has a 32-bit address space: no 64-bit ASLR to ask for.
THIRTY_TWO_BIT_MACHINES = frozenset({"I386"})
# The interpreter's DLL, python3XX.dll: it carries the C API (python3.dll forwards to it).
INTERPRETER_DLL = re.compile(r"^python3\d+\.dll$", re.IGNORECASE)
# The programs CPython's projects link with its manifest (python.manifest): the
# interpreter under each of its names at the top of the tree, and the venv launchers,
# which a venv's python.exe is a copy of.
MANIFESTED_PROGRAM = re.compile(
    r"^(pythonw?(\d+(\.\d+)?t?)?|Lib/venv/scripts/nt/venvw?launchert?)\.exe$", re.IGNORECASE
)


def check_pe_tree(root: Path, target: Target) -> tuple[list[PeFacts], list[str]]:
    """All PE files below `root`, and the problems found among them for `target`, one
    line each, naming the file; the build's paths are searched for in every image's
    bytes. Raises nothing for any content of the tree."""
    facts: list[PeFacts] = []
    problems: list[str] = []
    try:
        paths = list(pe_files(root))
    except untrusted.UntrustedFile as exc:
        return facts, [str(exc)]
    redistributed: list[PeFacts] = []
    for path in paths:
        found, found_problems, by_hash = _read_image(path, root, target)
        problems += found_problems
        if found is not None:
            (redistributed if by_hash else facts).append(found)
    shipped = {Path(f.path).name.lower() for f in facts + redistributed if f.is_dll}
    allowed = {name.lower() for name in target.libc.needed} | shipped
    for f in facts:
        problems += [f"{f.path}: {problem}" for problem in pe_problems(f, target, allowed)]
    return facts + redistributed, problems


def _redistributed_problem(name: str, facts: PeFacts, data: bytes, target: Target) -> str | None:
    """A vendor's DLL (targets/*.yaml pe.redistributed) is judged by its machine and its
    hash alone: our rules are for what we link, and its terms allow it unmodified only.
    The machine is named first: a runtime of another architecture is a mistake of its
    own (PyPI's msvc-runtime win32 wheels hold x64 DLLs), which a hash alone hides."""
    pinned = target.pe.redistributed.get(name)
    if pinned is None:
        return None
    if facts.machine != target.pe.machine:
        return (
            f"{name}: machine {facts.machine}, not {target.pe.machine} ({target.triple}): a vendor's DLL "
            "of another architecture, which Windows refuses to load; ship the pinned wheel's file"
        )
    found = hashlib.sha256(data).hexdigest()
    if found == pinned:
        return None
    return (
        f"{name}: sha256 {found[:16]}… is not the pinned {pinned[:16]}… (targets/{target.triple}.yaml "
        "pe.redistributed): ship the file of the pinned wheel unmodified"
    )


def _is_launcher(name: str, data: bytes, target: Target) -> bool:
    """Whether the file is one of pip's launchers (pe.launchers), in their folder or at
    the start of a console script: _launcher_problem judges it, not our rules."""
    launchers = target.pe.launchers
    if launchers is None:
        return False
    folder, _, file = name.rpartition("/")
    if folder == launchers.folder:
        return file in launchers.sha256
    return folder == "Scripts" and _starts_with_console_launcher(data, target)


def _starts_with_console_launcher(data: bytes, target: Target) -> bool:
    launchers = target.pe.launchers
    if launchers is None:
        return False
    size = launchers.size[launchers.console]
    return hashlib.sha256(data[:size]).hexdigest() == launchers.sha256[launchers.console]


def _launcher_problem(name: str, data: bytes, target: Target) -> str | None:
    """A launcher in its folder not as pinned, or a console script whose shebang does
    not name the interpreter relative to itself (it would run only where it was made)."""
    launchers = target.pe.launchers
    if launchers is None:
        return None
    folder, _, file = name.rpartition("/")
    if folder == launchers.folder and file in launchers.sha256:
        found = hashlib.sha256(data).hexdigest()
        if found == launchers.sha256[file]:
            return None
        return (
            f"{name}: sha256 {found[:16]}… is not the pinned {launchers.sha256[file][:16]}… "
            f"(targets/{target.triple}.yaml pe.launchers): ship pip's launcher unmodified"
        )
    size = launchers.size[launchers.console]
    if folder != "Scripts" or not _starts_with_console_launcher(data, target):
        return None
    if data[size:].startswith(launchers.shebang):
        return None
    # What is shown is 120 characters at most: no more of the file is copied or decoded
    # (a first line of megabytes of escapes would take gigabytes to print).
    found_line = printable(data[size : size + 120].split(b"\n", 1)[0].decode("utf-8", "replace"))[:120]
    return (
        f"{name}: the console script's shebang is {found_line!r}, not "
        f"{launchers.shebang.decode().strip()!r}: name the interpreter relative to the launcher, "
        "so the tree runs from any folder"
    )


def _read_image(path: Path, root: Path, target: Target) -> tuple[PeFacts | None, list[str], bool]:
    """The facts of the file `path`, named like a PE image, the problems its bytes show
    before any rule is asked (the build paths they name, a vendor's DLL or pip's launcher
    not as pinned, a console script's absolute shebang; with no facts, why it is no image
    we can judge), and whether its hash judges it instead of our rules. Only the bytes
    untrusted.read_binary gives are read."""
    name = printable(path.relative_to(root).as_posix())
    try:
        data = untrusted.read_binary(path, name)
        found = image_facts(data, name)
    except (UnreadablePe, untrusted.UntrustedFile) as exc:
        return None, [str(exc)], False
    vendor = _redistributed_problem(name, found, data, target) or _launcher_problem(name, data, target)
    by_hash = name in target.pe.redistributed or _is_launcher(name, data, target)
    problems = [f"{name}: {leak}" for leak in build_paths_in(data)] + ([vendor] if vendor else [])
    return found, problems, by_hash


def pe_problems(facts: PeFacts, target: Target, allowed_imports: set[str]) -> list[str]:
    """The rules for one PE file; `allowed_imports` are lower-case DLL names."""
    if facts.machine != target.pe.machine:
        # A file of another architecture, which Windows refuses to load: what else it
        # lacks is judged by another machine's rules (a 32-bit file needs no 64-bit ASLR).
        return [f"machine {facts.machine}, not {target.pe.machine} ({target.triple})"]
    problems = _loading_problems(facts, allowed_imports)
    required = [
        f for f in REQUIRED_FLAGS if f != "high_entropy_va" or facts.machine not in THIRTY_TWO_BIT_MACHINES
    ]
    missing = [flag for flag in required if flag not in facts.flags]
    if target.toolchain.control_flow_cflags and "guard_cf" not in facts.flags:
        missing.append("guard_cf")
    if missing:
        problems.append(f"lacks security flags: {', '.join(missing)}")
    if facts.debug_entries:
        problems.append(f"has a debug directory ({facts.debug_entries} entries): link it stripped")
    bundled = bundled_exports(facts.exported - facts.forwarded)
    if bundled:
        problems.append(f"exports symbols of bundled libraries: {', '.join(bundled[:5])}")
    if MANIFESTED_PROGRAM.match(facts.path) and not facts.is_dll:
        problems += manifest_problems(facts.manifest)
    if INTERPRETER_DLL.match(Path(facts.path).name):
        lacking = missing_c_api(facts.exported)
        if lacking:
            problems.append(f"does not export the C API extension modules need: {', '.join(lacking)}")
    return problems


def manifest_problems(manifest: bytes | None) -> list[str]:
    """What a program's manifest lacks of what CPython's python.exe declares."""
    if manifest is None:
        return ["has no manifest: Windows would tell it it runs on Windows 8 and refuse it long paths"]
    try:
        found = manifest_facts(manifest)
    except UnreadableManifest as exc:
        return [str(exc)]
    problems = []
    if WINDOWS_10 not in found.supported_os:
        problems.append(
            "its manifest names no Windows after 8 (supportedOS): Windows would tell it it runs on 8"
        )
    if not found.long_path_aware:
        problems.append("its manifest is not longPathAware: paths past 260 characters would fail")
    return problems


def _loading_problems(facts: PeFacts, allowed_imports: set[str]) -> list[str]:
    """A DLL outside the allow-list, in each of the four ways an image makes Windows
    load one: any of them runs the DLL's code in the process."""
    problems = []
    for names, how in (
        (facts.imports, "imports DLLs"),
        (facts.delay_imports, "delay-loads DLLs"),
        (facts.bound_imports, "names DLLs in its bound import directory"),
        (facts.forwarder_dlls, "forwards exports to DLLs"),
    ):
        extra = sorted({name for name in names if name.lower() not in allowed_imports})
        if extra:
            problems.append(f"{how} outside the allow-list: {', '.join(extra)}")
    return problems


def build_paths_in(image: bytes) -> list[str]:
    """The build environment's paths an image names, as narrow or wide (UTF-16LE, the
    Windows API's) strings: a debug record, __FILE__ or a compiled-in default."""
    return [
        f"names the build path {path}"
        for path in FORBIDDEN
        if path.encode() in image or path.encode("utf-16-le") in image
    ]
