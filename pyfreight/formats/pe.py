"""Reading PE files (Windows .exe, .dll, .pyd) for the facts our checks judge: the
machine, the DLLs imported, the names exported (and which of them forward elsewhere),
the security flags of the optional header, the link timestamp and the debug directory.
Reading only; the rules live in verify/pe_rules.py. pefile does the parsing."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pefile

from pyfreight.errors import PyfreightError

MZ = b"MZ"
SUFFIXES = (".exe", ".dll", ".pyd")
# IMAGE_DLLCHARACTERISTICS_* of the optional header, by the name our rules use.
FLAGS = {
    "high_entropy_va": 0x0020,  # 64-bit ASLR
    "dynamic_base": 0x0040,  # ASLR
    "nx_compat": 0x0100,  # DEP
    "guard_cf": 0x4000,  # Control Flow Guard
}
MACHINE_PREFIX = "IMAGE_FILE_MACHINE_"
IMAGE_FILE_DLL = 0x2000
_DIRECTORIES = [
    pefile.DIRECTORY_ENTRY[name]
    for name in (
        "IMAGE_DIRECTORY_ENTRY_IMPORT",
        "IMAGE_DIRECTORY_ENTRY_DELAY_IMPORT",
        "IMAGE_DIRECTORY_ENTRY_EXPORT",
        "IMAGE_DIRECTORY_ENTRY_DEBUG",
    )
]


@dataclass(frozen=True)
class PeFacts:
    path: str  # relative to the tree read
    machine: str  # the COFF machine name, e.g. AMD64
    is_dll: bool
    imports: tuple[str, ...]  # DLL names as written (Windows matches them case-insensitively)
    exported: frozenset[str]  # exported names (ordinal-only exports have none)
    forwarded: frozenset[str]  # exported names that forward to another DLL ("python314.Py_...")
    flags: frozenset[str]  # the FLAGS set in DllCharacteristics
    timestamp: int  # the header's TimeDateStamp
    debug_entries: int  # entries of the debug directory (CodeView records and the like)


class UnreadablePe(PyfreightError):
    """A file that starts like a PE image but cannot be read as one (said in one line)."""


def pe_facts(path: Path, root: Path) -> PeFacts | None:
    """The facts of `path` (None when it is not a PE image at all); a file that starts
    with MZ but does not parse raises UnreadablePe, naming the file."""
    with path.open("rb") as handle:
        if handle.read(2) != MZ:
            return None
    try:
        image = pefile.PE(str(path), fast_load=True)
        image.parse_data_directories(directories=_DIRECTORIES)
    except (pefile.PEFormatError, OSError, ValueError, IndexError) as exc:
        raise UnreadablePe(f"{path.relative_to(root).as_posix()}: not a readable PE image ({exc})") from None
    try:
        return _read(image, path.relative_to(root).as_posix())
    finally:
        image.close()


def _read(image: pefile.PE, name: str) -> PeFacts:
    imports = tuple(
        entry.dll.decode(errors="replace")
        for directory in ("DIRECTORY_ENTRY_IMPORT", "DIRECTORY_ENTRY_DELAY_IMPORT")
        for entry in getattr(image, directory, [])
    )
    exported, forwarded = set(), set()
    export_directory = getattr(image, "DIRECTORY_ENTRY_EXPORT", None)
    for symbol in export_directory.symbols if export_directory is not None else []:
        if symbol.name is None:
            continue
        exported.add(symbol.name.decode(errors="replace"))
        if symbol.forwarder:
            forwarded.add(symbol.name.decode(errors="replace"))
    characteristics = image.OPTIONAL_HEADER.DllCharacteristics
    machine = pefile.MACHINE_TYPE.get(image.FILE_HEADER.Machine, hex(image.FILE_HEADER.Machine))
    return PeFacts(
        path=name,
        machine=str(machine).removeprefix(MACHINE_PREFIX),
        is_dll=bool(image.FILE_HEADER.Characteristics & IMAGE_FILE_DLL),
        imports=imports,
        exported=frozenset(exported),
        forwarded=frozenset(forwarded),
        flags=frozenset(flag for flag, bit in FLAGS.items() if characteristics & bit),
        timestamp=image.FILE_HEADER.TimeDateStamp,
        debug_entries=len(getattr(image, "DIRECTORY_ENTRY_DEBUG", [])),
    )


def pe_files(root: Path) -> Iterator[Path]:
    """The files below `root` named like PE images, in a stable order (symlinks are not
    followed: a tree of ours holds none)."""
    for path in sorted(root.rglob("*")):
        if path.suffix.lower() in SUFFIXES and path.is_file() and not path.is_symlink():
            yield path
