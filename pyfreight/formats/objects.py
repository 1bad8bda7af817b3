"""Object files and static libraries of any binary format, read for the names of their
symbols (what packers read when they link a full archive's objects): an object's
format told by its first bytes, each read by its format's own reader (formats/elf.py,
formats/macho.py, formats/coff.py), and a static library's members by formats/arfile.
Files come from outside: read through formats/untrusted (regular files, of a bounded
size), and each reader bounds every name by its table and in total."""

from __future__ import annotations

from pathlib import Path

from pyfreight.errors import PyfreightError
from pyfreight.formats import arfile, coff, elf, macho, untrusted

# A big object's header, the longest of the headers that tell a format.
HEAD_BYTES = 56


class UnreadableObject(PyfreightError):
    """An object file that starts like one of a known format but cannot be read as one."""


def object_parts(path: Path, name: str) -> list[tuple[str, bytes]]:
    """The objects of the file `path` (`name` in messages): each member of a static
    library, by its name, or the file itself, named "". A library whose headers do not
    fit it, or a file that is not regular or is larger than any of ours, raises."""
    data = untrusted.read_binary(path, name)
    if data.startswith(arfile.MAGIC):
        return list(arfile.members_of(data, name))
    return [("", data)]


def symbol_names(data: bytes, name: str) -> list[tuple[int, bytes]] | None:
    """(index, name as the file holds it) of every symbol of the object `data` (`name`
    in messages); None for what no reader of ours reads (LLVM bitcode, an import
    library's short members, text). One that does not parse raises UnreadableObject
    (UnreadableMacho for a Mach-O file)."""
    head = data[:HEAD_BYTES]
    try:
        if head.startswith(b"\x7fELF"):
            return elf.object_symbol_names(data)
        if macho.starts_like_macho(head):
            return macho.symbol_names(data, name)
        if coff.is_coff_object(head):
            return list(coff.symbol_names(data))
    except (elf.UnreadableElfObject, coff.UnreadableCoff) as exc:
        raise UnreadableObject(f"{name}: not a readable object ({exc})") from None
    return None
