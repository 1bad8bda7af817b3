"""Reading ELF files: what each needs of the system (libraries, the newest glibc symbol
version), how it is linked and hardened, and which symbols it imports and exports. The
one ELF reader of the driver; what is allowed is decided in verify/ (elf_rules.py,
validate.py), not here."""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.constants import P_FLAGS
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile
from elftools.elf.gnuversions import GNUVerNeedSection
from elftools.elf.sections import SymbolTableSection
from elftools.elf.segments import InterpSegment

from pyfreight.errors import PyfreightError
from pyfreight.targets import ElfFiles, Target, all_targets

DF_BIND_NOW = 0x8  # DT_FLAGS
DF_1_NOW = 0x1  # DT_FLAGS_1


@dataclass(frozen=True)
class ElfFacts:
    path: str
    machine: str  # e_machine, as pyelftools names it
    needed: tuple[str, ...]
    glibc: tuple[int, ...] | None  # newest GLIBC_x.y version needed
    kind: str  # e_type: ET_EXEC, ET_DYN (PIEs and shared objects), ET_REL
    loader: str | None  # PT_INTERP's file name; None: no loader (static, or a library)
    executable_stack: bool  # no PT_GNU_STACK, or one marked executable
    relro: bool  # a PT_GNU_RELRO segment
    text_relocations: bool  # DT_TEXTREL
    bind_now: bool  # DF_BIND_NOW, DF_1_NOW or DT_BIND_NOW (True without a dynamic section)
    imported: frozenset[str]  # undefined .dynsym names
    exported: frozenset[str]  # global and weak .dynsym names of default or protected visibility
    soname: str | None = None  # DT_SONAME: the name a program that links the library needs it by
    search_paths: tuple[str, ...] = ()  # DT_RPATH and DT_RUNPATH entries, in order


def elf_facts(path: Path, root: Path) -> ElfFacts | None:
    """The facts of `path` (named relative to `root`), or None when it is not a readable ELF file."""
    with path.open("rb") as fh:
        if fh.read(4) != b"\x7fELF":
            return None
        fh.seek(0)
        try:
            elf = ELFFile(fh)
            return _read(elf, str(path.relative_to(root)))
        except ELFError:
            return None


def _read(elf: ELFFile, name: str) -> ElfFacts:
    needed: list[str] = []
    versions: list[tuple[int, ...]] = []
    tags: dict[str, int] = {}
    soname: str | None = None
    search_paths: list[str] = []
    dynamic = False
    for section in elf.iter_sections():
        if isinstance(section, DynamicSection):
            dynamic = True
            # pyelftools sets `needed` on a DT_NEEDED tag with setattr, so its types do not know it.
            needed += [t.needed for t in section.iter_tags() if t.entry.d_tag == "DT_NEEDED"]  # type: ignore[attr-defined]
            # pyelftools names these tags' strings likewise (soname, rpath, runpath).
            for tag in section.iter_tags():
                if tag.entry.d_tag == "DT_SONAME":
                    soname = tag.soname  # type: ignore[attr-defined]
                elif tag.entry.d_tag in ("DT_RPATH", "DT_RUNPATH"):
                    text = tag.rpath if tag.entry.d_tag == "DT_RPATH" else tag.runpath  # type: ignore[attr-defined]
                    search_paths += [entry for entry in text.split(":")]
            tags |= {t.entry.d_tag: t.entry.d_val for t in section.iter_tags()}
        if isinstance(section, GNUVerNeedSection):
            for _, auxes in section.iter_versions():
                versions += [
                    tuple(int(x) for x in aux.name[len("GLIBC_") :].split("."))
                    for aux in auxes
                    if aux.name.startswith("GLIBC_") and aux.name[6:7].isdigit()
                ]
    segments = {segment["p_type"]: segment for segment in elf.iter_segments()}
    interp = segments.get("PT_INTERP")
    stack = segments.get("PT_GNU_STACK")
    imported, exported = _dynamic_symbols(elf)
    return ElfFacts(
        path=name,
        machine=elf["e_machine"],
        needed=tuple(needed),
        glibc=max(versions) if versions else None,
        kind=elf["e_type"],
        loader=Path(interp.get_interp_name()).name if isinstance(interp, InterpSegment) else None,
        executable_stack=stack is None or bool(stack["p_flags"] & P_FLAGS.PF_X),
        relro="PT_GNU_RELRO" in segments,
        text_relocations="DT_TEXTREL" in tags,
        bind_now=not dynamic
        or bool(tags.get("DT_FLAGS", 0) & DF_BIND_NOW or tags.get("DT_FLAGS_1", 0) & DF_1_NOW)
        or "DT_BIND_NOW" in tags,
        imported=imported,
        exported=exported,
        soname=soname,
        search_paths=tuple(search_paths),
    )


def _dynamic_symbols(elf: ELFFile) -> tuple[frozenset[str], frozenset[str]]:
    table = elf.get_section_by_name(".dynsym")
    if not isinstance(table, SymbolTableSection):
        return frozenset(), frozenset()
    imported, exported = set(), set()
    for sym in table.iter_symbols():
        if not sym.name:
            continue
        if sym["st_shndx"] == "SHN_UNDEF":
            imported.add(sym.name)
        elif sym["st_info"]["bind"] in ("STB_GLOBAL", "STB_WEAK") and sym["st_other"]["visibility"] in (
            "STV_DEFAULT",
            "STV_PROTECTED",
        ):
            exported.add(sym.name)
    return frozenset(imported), frozenset(exported)


GLIBC_VERSION_MARK = b"@GLIBC_"


def object_glibc_references(data: bytes) -> dict[str, tuple[int, ...]]:
    """The versioned glibc symbols an object file (ET_REL) refers to, `name@GLIBC_x.y`
    as `.symver` left them, with their versions: what a link of it will need. An
    unversioned reference binds to whatever glibc the link finds. {} for anything that
    is not an ELF object (LLVM bitcode of LTO builds included)."""
    if not data.startswith(b"\x7fELF"):
        return {}
    if GLIBC_VERSION_MARK not in data:
        # A versioned reference's name holds the mark in the string table; without it
        # there is none, and reading every symbol of thousands of objects costs the
        # most of a full archive's validate.
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
    elf_targets = [t for t in all_targets().values() if isinstance(t.files, ElfFiles)]
    for found in elf_targets:
        if found.elf.machine == machine and found.elf.loader == loader:
            return found
    # A static executable names no loader: the target of that machine whose C library
    # links statically (musl's), when there is exactly one.
    static = [t for t in elf_targets if t.elf.machine == machine and t.libc.static_linking]
    if loader is None and len(static) == 1:
        return static[0]
    raise PyfreightError(
        f"{executable}: an ELF {machine} executable with loader {loader or '(none)'}, "
        "which no target of targets/*.yaml describes"
    )


class UnreadableElfObject(PyfreightError):
    """An ELF object whose symbol table does not fit it (said in one line)."""


# The longest symbol name read (as formats/macho.py and formats/coff.py): MSVC's cap on
# decorated names, 4096 bytes, far past C's tens of bytes. A longer one is refused.
MAX_NAME_BYTES = 4096
# e_ident[EI_CLASS] -> (the section header's layout: sh_name, sh_type, sh_flags, sh_addr,
# sh_offset, sh_size, sh_link, sh_info, sh_addralign, sh_entsize; a symbol's size).
_CLASSES = {1: ("IIIIIIIIII", 16), 2: ("IIQQQQIIQQ", 24)}
SHT_SYMTAB = 2


def object_symbol_names(data: bytes) -> list[tuple[int, bytes]]:
    """(index, name) of every symbol of the ELF file `data`'s .symtab (an object's, a
    static library member's), as the file holds them, read by our own bounds checks
    (pyelftools reads a name to its NUL however far, and decodes it as Latin-1): each
    name within its string table and no longer than MAX_NAME_BYTES, all of them
    together at most twice the file's size. A symbol table that does not fit raises
    UnreadableElfObject."""
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] not in _CLASSES or data[5] not in (1, 2):
        raise UnreadableElfObject("its ELF header is cut short or of no class and byte order")
    order = "<" if data[5] == 1 else ">"
    fields, symbol_size = _CLASSES[data[4]]
    header = struct.Struct(order + fields)
    if data[4] == 2:
        shoff, shentsize, shnum = struct.unpack_from(order + "Q10xHH", data, 40)
    else:
        shoff, shentsize, shnum = struct.unpack_from(order + "I10xHH", data, 32)
    if shnum == 0 and shoff and shoff + header.size <= len(data):
        shnum = header.unpack_from(data, shoff)[5]  # extended numbering: section 0's sh_size
    if shnum and (shentsize < header.size or shoff + shnum * shentsize > len(data)):
        raise UnreadableElfObject(f"its {shnum} section headers at byte {shoff} run past its end")
    sections = [header.unpack_from(data, shoff + i * shentsize) for i in range(shnum)]
    budget = 2 * len(data) + (1 << 16)
    for section in sections:
        if section[1] != SHT_SYMTAB:
            continue
        offset, size, link = section[4], section[5], section[6]
        if offset + size > len(data) or link >= shnum:
            raise UnreadableElfObject(f"its symbol table (bytes {offset}-{offset + size}) does not fit it")
        strings_at, strings_size = sections[link][4], sections[link][5]
        strings_end = strings_at + strings_size
        if strings_end > len(data):
            raise UnreadableElfObject(f"its string table (bytes {strings_at}-{strings_end}) does not fit it")
        found = []
        for index in range(size // symbol_size):
            (at,) = struct.unpack_from(order + "I", data, offset + index * symbol_size)
            start = strings_at + at
            if start >= strings_end:
                raise UnreadableElfObject(f"symbol {index}'s name (at {at}) is outside the string table")
            end = data.find(b"\0", start, min(strings_end, start + MAX_NAME_BYTES + 1))
            if end < 0:
                raise UnreadableElfObject(
                    f"symbol {index}'s name (at {at}) is unterminated or longer than {MAX_NAME_BYTES} "
                    "bytes, the longest a linker writes"
                )
            budget -= end - start
            if budget < 0:
                raise UnreadableElfObject("its symbols' names add up to more than twice its size")
            found.append((index, data[start:end]))
        return found  # an object has one symbol table
    return []
