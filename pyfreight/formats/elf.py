"""ELF facts of an install tree: which system libraries each file needs, and the newest
glibc symbol version it asks for."""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile
from elftools.elf.gnuversions import GNUVerNeedSection
from elftools.elf.sections import SymbolTableSection
from elftools.elf.segments import InterpSegment

from pyfreight.errors import PyfreightError
from pyfreight.targets import Target, all_targets


@dataclass(frozen=True)
class ElfFacts:
    path: str
    machine: str  # e_machine, as pyelftools names it
    needed: tuple[str, ...]
    glibc: tuple[int, ...] | None  # newest GLIBC_x.y version needed


def elf_facts(path: Path, root: Path) -> ElfFacts | None:
    with path.open("rb") as fh:
        if fh.read(4) != b"\x7fELF":
            return None
        fh.seek(0)
        try:
            elf = ELFFile(fh)
        except ELFError:
            return None
        needed: list[str] = []
        versions: list[tuple[int, ...]] = []
        for section in elf.iter_sections():
            if isinstance(section, DynamicSection):
                # pyelftools sets `needed` on a DT_NEEDED tag with setattr, so its types do not know it.
                needed += [t.needed for t in section.iter_tags() if t.entry.d_tag == "DT_NEEDED"]  # type: ignore[attr-defined]
            if isinstance(section, GNUVerNeedSection):
                for _, auxes in section.iter_versions():
                    versions += [
                        tuple(int(x) for x in aux.name[len("GLIBC_") :].split("."))
                        for aux in auxes
                        if aux.name.startswith("GLIBC_") and aux.name[6:7].isdigit()
                    ]
        machine = elf["e_machine"]
    return ElfFacts(str(path.relative_to(root)), machine, tuple(needed), max(versions) if versions else None)


def object_glibc_references(data: bytes) -> dict[str, tuple[int, ...]]:
    """The versioned glibc symbols an object file (ET_REL) refers to, `name@GLIBC_x.y`
    as `.symver` left them, with their versions: what a link of it will need. An
    unversioned reference binds to whatever glibc the link finds. {} for anything that
    is not an ELF object (LLVM bitcode of LTO builds included)."""
    if not data.startswith(b"\x7fELF"):
        return {}
    try:
        elf = ELFFile(io.BytesIO(data))
        if elf["e_type"] != "ET_REL":
            return {}
        table = elf.get_section_by_name(".symtab")
        if not isinstance(table, SymbolTableSection):
            return {}
        found = {}
        for symbol in table.iter_symbols():
            name, _, version = symbol.name.partition("@")
            version = version.lstrip("@")
            if symbol["st_shndx"] == "SHN_UNDEF" and version.startswith("GLIBC_") and version[6:7].isdigit():
                found[name] = tuple(int(x) for x in version[6:].split("."))
        return found
    except ELFError:
        return {}


def tree_elf_facts(root: Path) -> list[ElfFacts]:
    """The facts of every ELF file below root, in path order."""
    return [
        f
        for path in sorted(root.rglob("*"))
        if path.is_file() and not path.is_symlink() and (f := elf_facts(path, root))
    ]


def check_tree(root: Path, target: Target) -> tuple[list[ElfFacts], list[str]]:
    """All ELF files below root, and the problems found among them for `target`."""
    facts, problems = tree_elf_facts(root), []
    for f in facts:
        if f.machine != target.elf_machine:
            problems.append(f"{f.path}: is {f.machine}, not {target.elf_machine}")
        extra = sorted(set(f.needed) - target.allowed_needed)
        if extra:
            problems.append(f"{f.path}: needs {', '.join(extra)}")
        if (libc := libc_problem(f, target)) is not None:
            problems.append(f"{f.path}: {libc}")
    return facts, problems


def libc_problem(facts: ElfFacts, target: Target) -> str | None:
    """What is wrong with the C library versions an ELF file needs, for `target`."""
    if facts.glibc is None:
        return None
    newest = ".".join(map(str, facts.glibc))
    if target.libc != "glibc":
        return f"needs GLIBC_{newest}, but {target.triple} is a {target.libc} target: it may need no glibc"
    if facts.glibc > target.libc_ceiling:
        return f"needs GLIBC_{newest}, newer than {target.ceiling_text} allowed for {target.triple}"
    return None


def interpreter_identity(executable: Path) -> tuple[str, str | None]:
    """The ELF machine of `executable` and the file name of its dynamic loader (None for
    a static executable): together they say which target it was built for."""
    with executable.open("rb") as fh:
        try:
            elf = ELFFile(fh)
        except ELFError as exc:
            raise PyfreightError(f"{executable}: not an ELF executable ({exc})") from None
        loader = None
        for segment in elf.iter_segments():
            if isinstance(segment, InterpSegment):
                loader = Path(segment.get_interp_name()).name
        return elf["e_machine"], loader


def tree_target(executable: Path) -> Target:
    """The target an interpreter was built for, from its ELF machine and loader (for a
    static one, its machine and a C library that links statically), matched against
    targets/*.yaml."""
    machine, loader = interpreter_identity(executable)
    for found in all_targets().values():
        if found.elf_machine == machine and found.loader == loader:
            return found
    # A static executable names no loader: the target of that machine whose C library
    # links statically (musl's), when there is exactly one.
    static = [t for t in all_targets().values() if t.elf_machine == machine and t.static_linking]
    if loader is None and len(static) == 1:
        return static[0]
    raise PyfreightError(
        f"{executable}: an ELF {machine} executable with loader {loader or '(none)'}, "
        "which no target of targets/*.yaml describes"
    )
