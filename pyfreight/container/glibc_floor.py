"""Holding what is compiled against a sysroot's glibc to an older glibc (the floor).

A program linked against glibc 2.31 needs 2.31's version of every symbol glibc gave a
new version since (exp, log and pow became GLIBC_2.29 when their error handling
changed), and any function glibc added since (sem_clockwait, 2.30). The sysroot stays
as it is; a header generated from its own libraries, force-included in every compile
(toolchain.GLIBC_FLOOR_HEADER), does the holding:

- a symbol whose new version kept the same calling convention (SAME_ABI) is bound to
  its newest version at or below the floor (`.symver exp, exp@GLIBC_2.2.5`), which
  lands in objects and linked files alike, with and without LTO;
- any other symbol whose default version is above the floor (a function glibc added
  later, or one whose signature changed, like totalorder in 2.31) is bound to a
  version no library defines (`sem_clockwait@PYFREIGHT_GLIBC_2.28_LACKS_IT`), so
  configure's link checks find it missing and take the fallback, and code that still
  calls it fails to link naming the floor, instead of silently raising it. (A macro
  renaming it would not do: autoconf's function checks #undef the name first.)"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from elftools.elf.elffile import ELFFile
from elftools.elf.gnuversions import GNUVerDefSection, GNUVerSymSection
from elftools.elf.sections import SymbolTableSection

# Part of the sysroot's cache key: bump it when the generated header would change.
FORMAT = 2
VERSION_PREFIX = "GLIBC_"
HIDDEN = 0x8000  # the versym bit of a version kept only for old binaries (name@VER)

# Symbols glibc gave a new version without changing how they are called, so that the
# old version is a drop-in: only their error reporting changed (the old ones also set
# errno through the SVID wrapper). 2.27 did the same for the float variants, 2.35 for
# hypot and hypotf (a new default version on the architectures that had the wrapper,
# such as POWER and IBM Z, against a 2.34 floor).
SAME_ABI = frozenset(
    ["exp", "exp2", "log", "log2", "pow", "expf", "exp2f", "logf", "log2f", "powf", "hypot", "hypotf"]
)


def parse_version(name: str) -> tuple[int, ...] | None:
    """(2, 2, 5) for GLIBC_2.2.5; None for GLIBC_PRIVATE and other libraries' versions."""
    if not name.startswith(VERSION_PREFIX):
        return None
    parts = name[len(VERSION_PREFIX) :].split(".")
    return tuple(map(int, parts)) if all(p.isdigit() for p in parts) else None


@dataclass(frozen=True)
class VersionedSymbol:
    name: str
    version: tuple[int, ...]
    default: bool  # what a new link binds to (name@@VER), else kept for old binaries


def defined_symbols(library: Path) -> list[VersionedSymbol]:
    """The GLIBC_-versioned symbols a shared library defines."""
    with library.open("rb") as fh:
        elf = ELFFile(fh)
        verdef = next((s for s in elf.iter_sections() if isinstance(s, GNUVerDefSection)), None)
        versym = next((s for s in elf.iter_sections() if isinstance(s, GNUVerSymSection)), None)
        dynsym = elf.get_section_by_name(".dynsym")
        if verdef is None or versym is None or not isinstance(dynsym, SymbolTableSection):
            return []
        names = {entry["vd_ndx"]: next(iter(auxes)).name for entry, auxes in verdef.iter_versions()}
        found = []
        for index, symbol in enumerate(dynsym.iter_symbols()):
            if symbol["st_shndx"] in ("SHN_UNDEF", "SHN_ABS") or not symbol.name:
                continue  # SHN_ABS: the version names themselves
            ndx = versym.get_symbol(index)["ndx"]
            if not isinstance(ndx, int):  # VER_NDX_LOCAL / VER_NDX_GLOBAL
                continue
            version = parse_version(names.get(ndx & ~HIDDEN, ""))
            if version is not None:
                found.append(VersionedSymbol(symbol.name, version, not ndx & HIDDEN))
        return found


@dataclass(frozen=True)
class FloorPlan:
    rebind: dict[str, tuple[int, ...]]  # symbol -> the version at or below the floor to use
    missing: dict[str, tuple[int, ...]]  # symbol -> its default version, above the floor


def plan(symbols: Iterable[VersionedSymbol], floor: tuple[int, ...]) -> FloorPlan:
    by_name: dict[str, list[VersionedSymbol]] = {}
    for symbol in symbols:
        by_name.setdefault(symbol.name, []).append(symbol)
    rebind, missing = {}, {}  # missing: name -> its default version
    for name, versions in sorted(by_name.items()):
        defaults = [s.version for s in versions if s.default]
        if not defaults or max(defaults) <= floor:
            continue
        old = [s.version for s in versions if s.version <= floor]
        if old and name in SAME_ABI:
            rebind[name] = max(old)
        else:
            missing[name] = max(defaults)
    return FloorPlan(rebind, missing)


def _text(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


def missing_version(floor: tuple[int, ...]) -> str:
    """The version no library defines, that symbols above the floor are bound to."""
    return f"PYFREIGHT_GLIBC_{_text(floor)}_LACKS_IT"


def header(plan: FloorPlan, floor: tuple[int, ...], sysroot_glibc: str) -> str:
    lines = [
        "/* Generated by pyfreight (pyfreight/container/glibc_floor.py) from the sysroot's",
        f"   glibc {sysroot_glibc}: what is compiled with it needs glibc {_text(floor)} at most. */",
        "#ifndef PYFREIGHT_GLIBC_FLOOR_H",
        "#define PYFREIGHT_GLIBC_FLOOR_H",
        "#ifndef __ASSEMBLER__",
    ]
    lines += [
        f'__asm__(".symver {name}, {name}@{VERSION_PREFIX}{_text(version)}");'
        for name, version in sorted(plan.rebind.items())
    ]
    lines += [
        f'__asm__(".symver {name}, {name}@{missing_version(floor)}"); /* {VERSION_PREFIX}{_text(version)} */'
        for name, version in sorted(plan.missing.items())
    ]
    lines += ["#endif", "#endif", ""]
    return "\n".join(lines)


def floor_header(libraries: Iterable[Path], floor: tuple[int, ...]) -> str:
    """The header for `floor`, from the sysroot's glibc `libraries` (libc.so.6, libm.so.6…)."""
    symbols = [s for library in libraries for s in defined_symbols(library)]
    newest = max((s.version for s in symbols), default=floor)
    return header(plan(symbols, floor), floor, _text(newest))
