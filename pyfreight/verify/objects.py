"""The rules of a full archive's objects and static libraries (its build/ folder), which
packers link on their own machines, whatever their binary format (formats/objects.py
tells it from their bytes): every symbol's name is UTF-8, as packers read the names
as text (embed's nm, a linker's map or .def file, PYTHON.json's consumers); and on a
glibc target, no ELF object refers to a glibc symbol version above the target's
ceiling. validate reports every problem; test-dist refuses on the first."""

from __future__ import annotations

from pathlib import Path

from pyfreight.errors import PyfreightError
from pyfreight.formats.elf import object_glibc_references
from pyfreight.formats.objects import object_parts, symbol_names
from pyfreight.formats.pe import printable
from pyfreight.formats.untrusted import regular_files
from pyfreight.targets import Target

# Objects and static libraries of every format: Unix's and a Windows build's.
OBJECT_SUFFIXES = (".o", ".obj", ".a", ".lib")
SHOWN_NAME_BYTES = 80  # of a name that is not UTF-8, in the message


def object_problems(build: Path, prefix: str, target: Target | None = None) -> list[tuple[str, str]]:
    """(member, what is wrong) of every object below `build` (a full archive's build/,
    named `prefix` in the archive) that breaks a rule: its names, always; its glibc
    references, for `target` when it has a glibc ceiling. An object that cannot be read
    is a problem of its own."""
    if not build.is_dir():
        return []
    problems = []
    for path in regular_files(build):
        if path.suffix.lower() not in OBJECT_SUFFIXES:
            continue
        member = f"{prefix}/{printable(path.relative_to(build).as_posix())}"
        try:
            parts = object_parts(path, member)
        except PyfreightError as exc:
            problems.append((member, str(exc).removeprefix(f"{member}: ")))
            continue
        for part, data in parts:
            where = f"{member}({printable(part)})" if part else member
            problems += [(where, problem) for problem in _part_problems(data, where, target)]
    return problems


def _part_problems(data: bytes, where: str, target: Target | None) -> list[str]:
    problems = []
    try:
        names = symbol_names(data, where) or []
    except PyfreightError as exc:
        return [str(exc).removeprefix(f"{where}: ")]
    for index, raw in names:
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            shown = printable(raw[:SHOWN_NAME_BYTES].decode("utf-8", "backslashreplace"))
            problems.append(f"symbol {index}'s name ({shown}) is not UTF-8, as packers read the names")
            break  # one line an object: the first name says it
    if target is not None and target.libc.glibc:
        newer = {
            f"{symbol}@GLIBC_{'.'.join(map(str, version))}"
            for symbol, version in object_glibc_references(data).items()
            if version > target.libc.held_ceiling
        }
        if newer:
            problems.append(f"refers to {', '.join(sorted(newer))}, newer than {target.libc.ceiling_text}")
    return problems
