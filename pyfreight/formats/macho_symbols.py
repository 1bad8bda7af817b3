"""The external symbols of the Mach-O objects in a static library made private extern
(N_PEXT): still bound between the objects of one link, never exported from the image
that links them. It is what -fvisibility=hidden makes of C code, done to a dependency's
objects afterwards, because some of their symbols escape it (OpenSSL's and libffi's
assembly, zstd's and liblzma's API macros, ncurses' data) and zig's Mach-O linker
ignores -exported_symbols_list. On ELF, lld's --exclude-libs does the same at the link.

Only the type byte of the symbol table's entries changes, in place: the library keeps
its size, its members' offsets and its symbol index."""

from __future__ import annotations

import os
import struct
from pathlib import Path

from pyfreight.errors import PyfreightError
from pyfreight.formats.arfile import HEADER_SIZE, MAGIC

MH_MAGIC_64 = 0xFEEDFACF
LC_SYMTAB = 0x2
N_STAB, N_PEXT, N_TYPE, N_EXT, N_SECT = 0xE0, 0x10, 0x0E, 0x01, 0x0E
NLIST_64 = 16  # n_strx u32, n_type u8, n_sect u8, n_desc u16, n_value u64


def hide_in_object(data: bytearray, start: int, end: int, name: str) -> int:
    """Marks every defined external symbol of the 64-bit Mach-O object at
    data[start:end] private extern; returns how many it marked."""
    if end - start < 32 or struct.unpack_from("<I", data, start)[0] != MH_MAGIC_64:
        return 0
    ncmds, sizeofcmds = struct.unpack_from("<II", data, start + 16)
    at, last = start + 32, min(end, start + 32 + sizeofcmds)
    hidden = 0
    for _ in range(ncmds):
        if at + 8 > last:
            raise PyfreightError(f"{name}: its load commands run past their end")
        cmd, cmdsize = struct.unpack_from("<II", data, at)
        if cmdsize < 8:
            raise PyfreightError(f"{name}: a load command of size {cmdsize}")
        if cmd == LC_SYMTAB:
            symoff, nsyms = struct.unpack_from("<II", data, at + 8)
            if start + symoff + nsyms * NLIST_64 > end:
                raise PyfreightError(f"{name}: its symbol table runs past the object's end")
            for index in range(nsyms):
                type_at = start + symoff + index * NLIST_64 + 4
                kind = data[type_at]
                if not kind & N_STAB and kind & N_EXT and kind & N_TYPE == N_SECT and not kind & N_PEXT:
                    data[type_at] = kind | N_PEXT
                    hidden += 1
        at += cmdsize
    return hidden


def hide_in_library(path: Path) -> int:
    """Every member of the static library `path` treated so (GNU or BSD ar), the file
    replaced atomically; returns how many symbols were made private extern."""
    data = bytearray(path.read_bytes())
    if not data.startswith(MAGIC):
        raise PyfreightError(f"{path}: not an ar archive")
    offset, hidden = len(MAGIC), 0
    while offset + HEADER_SIZE <= len(data):
        header = bytes(data[offset : offset + HEADER_SIZE])
        raw = header[0:16].decode(errors="replace").rstrip()
        size = int(header[48:58].strip() or b"0")
        body = offset + HEADER_SIZE
        if body + size > len(data):
            raise PyfreightError(f"{path}: member {raw} runs past the end of the archive")
        # A BSD long name (#1/LEN) is the first LEN bytes of the member's data.
        skip = int(raw[3:]) if raw.startswith("#1/") and raw[3:].isdigit() else 0
        hidden += hide_in_object(data, body + skip, body + size, f"{path.name}({raw})")
        offset = body + size + (size % 2)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_bytes(bytes(data))
    os.replace(partial, path)
    return hidden
