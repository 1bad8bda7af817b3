"""Reading COFF object files (a Windows build's .o and .obj files, and the members of
its static libraries) for what packers read of them: the names of their symbols.
Reading only; the rule on the names lives in verify/objects.py.

An object is recognised by its first bytes: a machine of formats/pe.py's MACHINES and
no optional header (a regular object), or the big-object header (clang's -mbig-obj,
MSVC's /bigobj). Import-library members and LLVM bitcode (an lto build's objects) are
none: their names are not read here. Every structure is bounds-checked before it is
unpacked; a malformed object raises UnreadableCoff, in one line. Each name is looked
for within the string table and no further than MAX_NAME_BYTES, and charged before it
is copied: what reading an object costs grows with its size, never faster."""

from __future__ import annotations

import struct
from collections.abc import Iterator

from pyfreight.errors import PyfreightError
from pyfreight.formats.pe import MACHINES

# Machine (2 bytes), NumberOfSections, TimeDateStamp, PointerToSymbolTable,
# NumberOfSymbols, SizeOfOptionalHeader, Characteristics.
_HEADER = struct.Struct("<HHIIIHH")
# ANON_OBJECT_HEADER_BIGOBJ: Sig1 (0), Sig2 (0xFFFF), Version (2), Machine, TimeDateStamp,
# ClassID, SizeOfData, Flags, MetaDataSize, MetaDataOffset, NumberOfSections,
# PointerToSymbolTable, NumberOfSymbols.
_BIG_HEADER = struct.Struct("<HHHHI16sIIIIIII")
BIGOBJ_CLASS_ID = bytes.fromhex("c7a1bad1eebaa94baf20faf66aa4dcb8")
_SYMBOL = struct.Struct("<8sIhHBB")  # Name, Value, SectionNumber, Type, StorageClass, NumberOfAuxSymbols
_BIG_SYMBOL = struct.Struct("<8sIiHBB")  # the same, with a 4-byte SectionNumber
_WORD = struct.Struct("<I")
# The longest name read: MSVC truncates decorated names at 4096 bytes (its documented
# cap), and C names are tens of bytes. A longer one is refused, not copied.
MAX_NAME_BYTES = 4096
# All the names of one object, read and copied, are bounded by a multiple of its size
# (a real object's names are fewer bytes than it): symbols all naming one long name of
# the string table would otherwise cost its length once each.
BUDGET_PER_BYTE = 2
BUDGET_FLOOR = 1 << 16


class UnreadableCoff(PyfreightError):
    """A file that starts like a COFF object but cannot be read as one (said in one line)."""


def is_coff_object(head: bytes) -> bool:
    """Whether a file's first bytes (20 at least) are a COFF object's header."""
    if len(head) < _HEADER.size:
        return False
    machine, _, _, _, _, optional_size, _ = _HEADER.unpack_from(head)
    if machine == 0:
        return _is_big(head)
    return machine in MACHINES and optional_size == 0


def _is_big(head: bytes) -> bool:
    if len(head) < _BIG_HEADER.size:
        return False
    sig1, sig2, version, machine, _, class_id, *_ = _BIG_HEADER.unpack_from(head)
    return (sig1, sig2) == (0, 0xFFFF) and version >= 2 and class_id == BIGOBJ_CLASS_ID and machine != 0


def symbol_names(data: bytes) -> Iterator[tuple[int, bytes]]:
    """(index, name) of every symbol of the COFF object `data` (its auxiliary records are
    no symbols), in order; raises UnreadableCoff where its tables do not fit it."""
    if _is_big(data):
        *_, symbol_table, count = _BIG_HEADER.unpack_from(data)
        layout = _BIG_SYMBOL
    else:
        _, _, _, symbol_table, count, _, _ = _HEADER.unpack_from(data)
        layout = _SYMBOL
    strings_at = symbol_table + count * layout.size
    if strings_at + _WORD.size > len(data):
        raise UnreadableCoff(
            f"its {count} symbols at byte {symbol_table} and their string table run past its end "
            f"({len(data)} bytes)"
        )
    (strings_size,) = _WORD.unpack_from(data, strings_at)
    # A size below its own 4 bytes is an empty table: the resource objects of the
    # Windows build (windres, its .rc.o files) say 0, and LLVM reads them so.
    strings_size = max(strings_size, _WORD.size)
    strings_end = strings_at + strings_size
    if strings_end > len(data):
        raise UnreadableCoff(f"its string table ({strings_size} bytes at byte {strings_at}) does not fit it")
    budget = BUDGET_PER_BYTE * len(data) + BUDGET_FLOOR
    index = 0
    while index < count:
        raw, *_, aux = layout.unpack_from(data, symbol_table + index * layout.size)
        if raw[:4] == b"\0\0\0\0":  # a long name: its offset in the string table
            offset = _WORD.unpack_from(raw, 4)[0]
            start = strings_at + offset
            if offset < _WORD.size or start >= strings_end:
                raise UnreadableCoff(f"symbol {index}'s name (at {offset}) is outside the string table")
            end = data.find(b"\0", start, min(strings_end, start + MAX_NAME_BYTES + 1))
            if end < 0:
                raise UnreadableCoff(
                    f"symbol {index}'s name (at {offset}) is unterminated or longer than {MAX_NAME_BYTES} "
                    "bytes, the longest a linker writes"
                )
            budget -= end - start
            if budget < 0:
                raise UnreadableCoff(
                    f"its symbols' names add up to more than {BUDGET_PER_BYTE} times its size"
                )
            yield index, data[start:end]
        else:  # a short name, in the record itself
            yield index, raw.split(b"\0", 1)[0]
        index += 1 + aux
