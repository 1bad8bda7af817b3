"""A COFF object holding one application manifest as a resource (RT_MANIFEST, ID 1), the
object a resource compiler writes from `1 24 "app.manifest"` (rc.exe with cvtres, or
windres): linked into a PE program, it becomes the image's .rsrc section, where Windows
reads the manifest when it starts the program.

Written here rather than by a resource compiler because embed links Windows programs
with the target's pinned zig alone, and zig compiles its own resource compiler from
source the first time it is asked (about a minute and a half of CPU); the object is a
few fixed structures of winnt.h. formats/pe.py reads the manifest back from the linked
image, which is how the tests check this writer."""

from __future__ import annotations

import struct

from pyfreight.errors import PyfreightError

RT_MANIFEST = 24
# The ID Windows reads a program's manifest from when it creates the process.
CREATEPROCESS_MANIFEST_RESOURCE_ID = 1
LANG_EN_US = 0x409  # the language rc and windres give a resource when none is said
SUBDIRECTORY = 0x80000000  # a directory entry's high bit: it points to another directory

# IMAGE_FILE_MACHINE_* and the relocation that stores an image-relative address (RVA):
# the data entry holds the RVA of the manifest's bytes, known only once linked.
MACHINES = {"AMD64": (0x8664, 0x0003), "ARM64": (0xAA64, 0x0002), "I386": (0x014C, 0x0007)}
# IMAGE_SCN_CNT_INITIALIZED_DATA | IMAGE_SCN_ALIGN_4BYTES | IMAGE_SCN_MEM_READ
SECTION_FLAGS = 0x00000040 | 0x00300000 | 0x40000000
IMAGE_SYM_CLASS_STATIC = 3

_FILE_HEADER = struct.Struct("<HHIIIHH")
_SECTION_HEADER = struct.Struct("<8sIIIIIIHHI")
_DIRECTORY = struct.Struct("<IIHHHH")  # Characteristics, TimeDateStamp, versions, named and ID entry counts
_ENTRY = struct.Struct("<II")  # the ID, and the offset of what it points to in the section
_DATA_ENTRY = struct.Struct("<IIII")  # OffsetToData (an RVA), Size, CodePage, Reserved
_RELOCATION = struct.Struct("<IIH")
_SYMBOL = struct.Struct("<8sIhHBB")
_SECTION_AUX = struct.Struct("<IHHIHB3x")  # Length, relocations, line numbers, checksum, number, selection


def manifest_object(manifest: bytes, machine: str) -> bytes:
    """The bytes of a COFF object for `machine` (a COFF machine name: AMD64, ARM64, I386)
    whose .rsrc section holds `manifest` as the program's manifest, in one language."""
    if machine not in MACHINES:
        raise PyfreightError(f"no resource object for machine {machine}: one of {', '.join(MACHINES)}")
    machine_number, relocation_type = MACHINES[machine]
    # Three levels of one entry each (type, ID, language), then the data entry and the
    # manifest's bytes; an entry's offset is from the section's start.
    level = _DIRECTORY.size + _ENTRY.size
    data_entry_at = 3 * level
    data_at = data_entry_at + _DATA_ENTRY.size
    section = b""
    for depth, identifier in enumerate((RT_MANIFEST, CREATEPROCESS_MANIFEST_RESOURCE_ID, LANG_EN_US)):
        child = (depth + 1) * level
        section += _DIRECTORY.pack(0, 0, 0, 0, 0, 1) + _ENTRY.pack(
            identifier, child | (SUBDIRECTORY if depth < 2 else 0)
        )
    # OffsetToData holds the manifest's offset in the section; the relocation adds the
    # section's RVA to it.
    section += _DATA_ENTRY.pack(data_at, len(manifest), 0, 0) + manifest
    section += bytes(-len(section) % 8)
    raw_at = _FILE_HEADER.size + _SECTION_HEADER.size
    relocations_at = raw_at + len(section)
    symbols_at = relocations_at + _RELOCATION.size
    header = _FILE_HEADER.pack(machine_number, 1, 0, symbols_at, 2, 0, 0)
    section_header = _SECTION_HEADER.pack(
        b".rsrc", 0, 0, len(section), raw_at, relocations_at, 0, 1, 0, SECTION_FLAGS
    )
    relocation = _RELOCATION.pack(data_entry_at, 0, relocation_type)
    # The section's symbol (the relocation's), with its auxiliary record; an empty string table.
    symbol = _SYMBOL.pack(b".rsrc", 0, 1, 0, IMAGE_SYM_CLASS_STATIC, 1)
    aux = _SECTION_AUX.pack(len(section), 1, 0, 0, 0, 0)
    return header + section_header + section + relocation + symbol + aux + struct.pack("<I", 4)
