"""What a PE file of ours may be, for its target: the machine, the DLLs it imports (the
target's `libc.needed`, Windows' own and the UCRT's, or a DLL the tree itself ships),
ASLR with 64-bit entropy and DEP, Control Flow Guard where the target has it, no
debug directory (a CodeView record names the build's files), and the interpreter's DLL
exporting the C API and nothing of the libraries bundled into it. The facts come from
formats/pe.py; the Windows checks and validate judge trees by these rules."""

from __future__ import annotations

import re
from pathlib import Path

from pyfreight.cpython.relocate import FORBIDDEN
from pyfreight.formats.pe import PeFacts, UnreadablePe, pe_facts, pe_files
from pyfreight.targets import Target
from pyfreight.verify.exports import bundled_exports, missing_c_api

REQUIRED_FLAGS = ("dynamic_base", "high_entropy_va", "nx_compat")
# The interpreter's DLL, python3XX.dll: it carries the C API (python3.dll forwards to it).
INTERPRETER_DLL = re.compile(r"^python3\d+\.dll$", re.IGNORECASE)


def check_pe_tree(root: Path, target: Target) -> tuple[list[PeFacts], list[str]]:
    """All PE files below `root`, and the problems found among them for `target`, one
    line each, naming the file; the build's paths are searched for in every image's bytes."""
    facts: list[PeFacts] = []
    problems: list[str] = []
    for path in pe_files(root):
        try:
            found = pe_facts(path, root)
        except UnreadablePe as exc:
            problems.append(str(exc))
            continue
        if found is not None:
            facts.append(found)
            problems += [f"{found.path}: {leak}" for leak in build_paths_in(path.read_bytes())]
    shipped = {Path(f.path).name.lower() for f in facts if f.is_dll}
    allowed = {name.lower() for name in target.allowed_needed} | shipped
    for f in facts:
        problems += [f"{f.path}: {problem}" for problem in pe_problems(f, target, allowed)]
    return facts, problems


def pe_problems(facts: PeFacts, target: Target, allowed_imports: set[str]) -> list[str]:
    """The rules for one PE file; `allowed_imports` are lower-case DLL names."""
    problems = []
    if facts.machine != target.pe_machine:
        problems.append(f"machine {facts.machine}, not {target.pe_machine} ({target.triple})")
    extra = sorted({name for name in facts.imports if name.lower() not in allowed_imports})
    if extra:
        problems.append(f"imports DLLs outside the allow-list: {', '.join(extra)}")
    missing = [flag for flag in REQUIRED_FLAGS if flag not in facts.flags]
    if target.control_flow_cflags and "guard_cf" not in facts.flags:
        missing.append("guard_cf")
    if missing:
        problems.append(f"lacks security flags: {', '.join(missing)}")
    if facts.debug_entries:
        problems.append(f"has a debug directory ({facts.debug_entries} entries): link it stripped")
    bundled = bundled_exports(facts.exported - facts.forwarded)
    if bundled:
        problems.append(f"exports symbols of bundled libraries: {', '.join(bundled[:5])}")
    if INTERPRETER_DLL.match(Path(facts.path).name):
        lacking = missing_c_api(facts.exported)
        if lacking:
            problems.append(f"does not export the C API extension modules need: {', '.join(lacking)}")
    return problems


def build_paths_in(image: bytes) -> list[str]:
    """The build environment's paths an image names, as narrow or wide (UTF-16LE, the
    Windows API's) strings: a debug record, __FILE__ or a compiled-in default."""
    return [
        f"names the build path {path}"
        for path in FORBIDDEN
        if path.encode() in image or path.encode("utf-16-le") in image
    ]
