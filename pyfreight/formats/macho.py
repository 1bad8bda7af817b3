"""Reading Mach-O files (macOS executables, .dylib and extension-module .so files) for the
facts our checks judge: the CPU, the file type and header flags, the minimum macOS and
SDK (LC_BUILD_VERSION), the dylibs loaded, the install name and rpaths, the symbols
exported and needed, and the code signature, whose page hashes are recomputed here.
Reading only; the rules live in verify/macho_rules.py.

A compact reader of our own, not macholib: every fact we need is a fixed-layout
structure of <mach-o/loader.h> or <kern/cs_blobs.h>, a few lines each, while macholib
(1.16) carries no type information for mypy, does not read code signatures at all
(the part Apple silicon needs, which we would write ourselves anyway), and on hostile input
raises whatever it meets (struct.error, ValueError, short reads taken as data) after
reading every section into memory. Here the whole file is read once and every
structure is bounds-checked before it is unpacked: a malformed file raises
UnreadableMacho, in one line naming the file and the structure, and nothing else.
Files come from outside: they are read through formats/untrusted (regular files only,
at most 256 MiB), and what reading one costs grows with its size, never faster: every
loop is bounded by a count checked against the file's size first, a structure a file
has once (the symbol table, the export trie, the signature) is refused the second
time, and the names read, with every byte copied to build them, are bounded in total
(a string table whose names all overlap, or an export trie that is one long chain,
would otherwise cost time quadratic in its size). Every string (symbol names, the load
commands' paths, the signature's identifier) is looked for within the table, command
or blob holding it and no further than MAX_NAME_BYTES, and charged before it is copied."""

from __future__ import annotations

import hashlib
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pyfreight.errors import PyfreightError
from pyfreight.formats.untrusted import read_binary, read_head, regular_files
from pyfreight.targets import MachOFiles, Target, all_targets

# The first four bytes, as a little-endian number: a thin 64-bit little-endian file
# (the only kind we read), and the kinds we recognise only to refuse.
MH_MAGIC_64 = 0xFEEDFACF
OTHER_THIN_MAGICS = {0xFEEDFACE, 0xCEFAEDFE, 0xCFFAEDFE}  # 32-bit, big-endian 32/64-bit
# Fat (universal) headers are big-endian: these are their magics as written, with the
# layout of one slice's header (fat_arch, fat_arch_64): cputype, cpusubtype, offset, size.
FAT_MAGICS = {b"\xca\xfe\xba\xbe": struct.Struct(">iiII"), b"\xca\xfe\xba\xbf": struct.Struct(">iiQQ")}
FAT_ARCH_SIZES = {b"\xca\xfe\xba\xbe": 20, b"\xca\xfe\xba\xbf": 32}  # with align (and reserved)
# Every file starting with a fat magic is refused, whatever its slice count: file(1)
# tells a Java class file (0xcafebabe too) by a count of 20 or more, but a fat file can
# declare that many, and dyld would load its slice. A refusal lists a few slices only.
FAT_SLICES_LISTED = 4
# The bytes that tell a Mach-O file of any kind: the magic and, for a fat file, its count.
HEAD_BYTES = 8

CPU_TYPES = {0x0100000C: "ARM64", 0x01000007: "X86_64", 0x0200000C: "ARM64_32", 12: "ARM", 7: "I386"}
FILE_TYPES = {
    1: "object", 2: "execute", 3: "fvmlib", 4: "core", 5: "preload", 6: "dylib", 7: "dylinker",
    8: "bundle", 9: "dylib_stub", 10: "dsym", 11: "kext_bundle", 12: "fileset",
}  # fmt: skip
# MH_* flags of the header, by the lower-case name our rules use.
HEADER_FLAGS = {
    "noundefs": 0x1, "incrlink": 0x2, "dyldlink": 0x4, "bindatload": 0x8, "prebound": 0x10,
    "split_segs": 0x20, "lazy_init": 0x40, "twolevel": 0x80, "force_flat": 0x100,
    "nomultidefs": 0x200, "nofixprebinding": 0x400, "prebindable": 0x800, "allmodsbound": 0x1000,
    "subsections_via_symbols": 0x2000, "canonical": 0x4000, "weak_defines": 0x8000,
    "binds_to_weak": 0x10000, "allow_stack_execution": 0x20000, "root_safe": 0x40000,
    "setuid_safe": 0x80000, "no_reexported_dylibs": 0x100000, "pie": 0x200000,
    "dead_strippable_dylib": 0x400000, "has_tlv_descriptors": 0x800000,
    "no_heap_execution": 0x1000000, "app_extension_safe": 0x2000000,
}  # fmt: skip
PLATFORMS = {
    1: "macos", 2: "ios", 3: "tvos", 4: "watchos", 5: "bridgeos", 6: "maccatalyst",
    7: "iossimulator", 8: "tvossimulator", 9: "watchossimulator", 10: "driverkit",
    11: "visionos", 12: "visionossimulator",
}  # fmt: skip

LC_REQ_DYLD = 0x80000000
LC_SYMTAB = 0x2
LC_LOAD_DYLIB = 0xC
LC_ID_DYLIB = 0xD
LC_LOAD_DYLINKER = 0xE
LC_LOAD_WEAK_DYLIB = 0x18 | LC_REQ_DYLD
LC_SEGMENT_64 = 0x19
LC_RPATH = 0x1C | LC_REQ_DYLD
LC_CODE_SIGNATURE = 0x1D
LC_REEXPORT_DYLIB = 0x1F | LC_REQ_DYLD
LC_LAZY_LOAD_DYLIB = 0x20
LC_DYLD_INFO = 0x22
LC_DYLD_INFO_ONLY = 0x22 | LC_REQ_DYLD
LC_LOAD_UPWARD_DYLIB = 0x23 | LC_REQ_DYLD
LC_VERSION_MIN_MACOSX = 0x24
LC_DYLD_ENVIRONMENT = 0x27
LC_BUILD_VERSION = 0x32
LC_DYLD_EXPORTS_TRIE = 0x33 | LC_REQ_DYLD
# Every command that makes dyld load a dylib: the brief's four, and upward links, which
# load one just the same.
LOADING = {LC_LOAD_DYLIB, LC_LOAD_WEAK_DYLIB, LC_REEXPORT_DYLIB, LC_LAZY_LOAD_DYLIB, LC_LOAD_UPWARD_DYLIB}
# The commands whose one field is a string (lc_str), by what the string is.
LC_STR_NAMES = {LC_RPATH: "rpath", LC_LOAD_DYLINKER: "dynamic linker", LC_DYLD_ENVIRONMENT: "variable"}
# The commands a linker writes once at most, by name; a second is refused. Each of the
# first four makes the reader go through a table of the file: a thousand copies would
# cost a thousand times the file. (A second dynamic linker, the kernel refuses too.)
# LC_DYLD_INFO and LC_DYLD_INFO_ONLY are one kind.
ONCE = {
    LC_SYMTAB: "LC_SYMTAB", LC_DYLD_INFO: "LC_DYLD_INFO", LC_DYLD_INFO_ONLY: "LC_DYLD_INFO",
    LC_DYLD_EXPORTS_TRIE: "LC_DYLD_EXPORTS_TRIE", LC_CODE_SIGNATURE: "LC_CODE_SIGNATURE",
    LC_LOAD_DYLINKER: "LC_LOAD_DYLINKER",
}  # fmt: skip

# nlist_64's n_type bits.
N_STAB, N_PEXT, N_TYPE, N_EXT = 0xE0, 0x10, 0x0E, 0x01
N_UNDF, N_SECT = 0x0, 0xE

# The code signature (<kern/cs_blobs.h>), all big-endian.
CSMAGIC_EMBEDDED_SIGNATURE = 0xFADE0CC0
CSMAGIC_CODEDIRECTORY = 0xFADE0C02
CSSLOT_CODEDIRECTORY = 0
CSSLOT_CMS_SIGNATURE = 0x10000
# The special slots whose blob is hashed into the CodeDirectory (at -slot): the
# requirements, the entitlements and their DER form.
HASHED_SPECIAL_SLOTS = (2, 5, 7)
CS_ADHOC = 0x2
HASH_TYPES = {1: ("sha1", 20), 2: ("sha256", 32), 3: ("sha256", 20), 4: ("sha384", 48)}  # 3: truncated

_HEADER = struct.Struct("<IiiIIIII")
_LOAD_COMMAND = struct.Struct("<II")
_SEGMENT_64 = struct.Struct("<QQQQiiII")  # after the 16 bytes of segname
_FOUR = struct.Struct("<IIII")  # symtab_command's and build_version_command's words after cmd, cmdsize
_DYLIB = struct.Struct("<IIII")  # name offset, timestamp, current and compatibility version
_TWO = struct.Struct("<II")  # linkedit_data_command's dataoff, datasize; version_min's version, sdk
_ONE = struct.Struct("<I")
_DYLD_INFO = struct.Struct("<10I")
_NLIST_64 = struct.Struct("<IBBHQ")
_BE_TWO = struct.Struct(">II")
_BE_THREE = struct.Struct(">III")
_CODE_DIRECTORY = struct.Struct(">9I4BI")  # up to spare2: every version has these
# All the names of one file together (symbols, export trie) may take this many bytes,
# with every byte copied to build them; libpython's are a few hundred KiB.
NAME_BUDGET = 64 << 20
# No string the reader takes from a file is longer: a symbol's name (of the symbol
# table or the export trie), a path of a load command (dylib, rpath, dynamic linker,
# DYLD_* variable) and the CodeDirectory's identifier. C names are tens of bytes (C++'s
# mangled ones hundreds; MSVC, the one linker with a documented cap, truncates
# decorated names at 4096); a path dyld opens is at most MAXPATHLEN, 1024 bytes, once
# @loader_path and the like are expanded; the identifier is a file or bundle name. So
# no string is looked for further than this, and none is copied before it is charged
# (to NAME_BUDGET): a file of n bytes then costs at most n of names, however its
# strings overlap or however long one of them claims to be (a 60 MiB name decoded with
# its escapes took 3.7 GB). The cap also keeps the prefix one edge of the trie copies short.
MAX_NAME_BYTES = 4096


@dataclass(frozen=True)
class CodeSignature:
    flags: int  # the CodeDirectory's flags (zig's linker writes 0x20002: linker-signed, ad hoc)
    adhoc: bool  # CS_ADHOC: signed with no certificate, as every build of ours is
    identifier: str  # the CodeDirectory's identifier (the file name, for a linker's signature)
    hash_type: str  # hashlib's name of the page hash: sha256 (or sha1, for old signers)
    problems: tuple[str, ...]  # why macOS would refuse it; empty when every hash matches


@dataclass(frozen=True)
class MachoFacts:
    path: str  # relative to the tree read
    cpu: str  # ARM64, X86_64, another CPU_TYPES name or the number in hex
    filetype: str  # execute, dylib, bundle, object, ... (FILE_TYPES), or the number
    flags: frozenset[str]  # the HEADER_FLAGS set in the header
    platform: str | None  # LC_BUILD_VERSION's platform (macos), None when it has none
    minimum_os: tuple[int, int] | None  # LC_BUILD_VERSION's minos, else LC_VERSION_MIN_MACOSX's
    sdk: tuple[int, int] | None  # the SDK it was linked against, from the same command
    dylibs: tuple[tuple[str, str], ...]  # (install name, compatibility version "1.0.0") loaded
    install_name: str | None  # LC_ID_DYLIB: the name others load it by
    rpaths: tuple[str, ...]  # LC_RPATH, in order
    # Mach-O prefixes every C symbol with an underscore (_Py_Initialize); these names are
    # without it, as C and verify/exports.py spell them. Exported: external symbols
    # defined in a section (not private-external) of the symbol table, which nm and the
    # linker read, and every name of the export trie, which dyld binds by.
    exported: frozenset[str]
    undefined: frozenset[str]  # external undefined symbols, likewise without the underscore
    signature: CodeSignature | None  # None when there is no LC_CODE_SIGNATURE
    dylinker: str | None = None  # LC_LOAD_DYLINKER: the dynamic linker a program names (/usr/lib/dyld)
    environment: tuple[str, ...] = ()  # LC_DYLD_ENVIRONMENT: DYLD_* variables set for the program


class UnreadableMacho(PyfreightError):
    """A file that starts like a Mach-O file but cannot be read as one (said in one line)."""


class FatMacho(UnreadableMacho):
    """A fat (universal) file: several thin files in one, which our trees never ship."""


class _Malformed(Exception):
    """A structure that does not fit the file; becomes UnreadableMacho, with the name."""


def starts_like_macho(head: bytes) -> bool:
    """Whether a file's first HEAD_BYTES bytes are those of a Mach-O file of any kind."""
    return _kind(head) is not None


def _kind(head: bytes) -> str | None:
    if len(head) < 4:
        return None
    if int.from_bytes(head[:4], "little") == MH_MAGIC_64:
        return "thin"
    if int.from_bytes(head[:4], "little") in OTHER_THIN_MAGICS:
        return "other"
    if head[:4] in FAT_MAGICS:
        return "fat"
    return None


def macho_files(root: Path) -> Iterator[Path]:
    """The regular files below `root` that start like Mach-O files, in a stable order
    (by content, not name: extension modules end in .so, executables in nothing).
    Symlinks are not followed: libpython3.X.dylib's links name a file read anyway.
    A tree deeper than any of ours raises UntrustedFile."""
    for path in regular_files(root):
        try:
            head = read_head(path, path.name, HEAD_BYTES)
        except PyfreightError:
            continue  # replaced by something else since it was listed
        if starts_like_macho(head):
            yield path


def printable(raw: bytes) -> str:
    """Bytes from the file or the tree as one printable line: they go into our messages,
    and a hostile file's names may hold newlines or terminal escapes."""
    return _text(raw)


def macho_cpu(path: Path, name: str) -> str | None:
    """The CPU a Mach-O file is for, from its header alone (None when it is no Mach-O
    file at all), `name` in messages: what tells an interpreter's target, before its
    tree's rules read the whole file and name what is wrong with it by its place in
    the tree. A fat or 32-bit file raises as macho_facts does."""
    head = read_head(path, name, _HEADER.size)
    if _kind(head) == "thin" and len(head) == _HEADER.size:
        return _cpu_name(_HEADER.unpack(head)[1])
    facts = macho_facts_of(read_binary(path, name), name)  # None, or raises saying what it is
    return None if facts is None else facts.cpu


def macho_facts(path: Path, root: Path) -> MachoFacts | None:
    """The facts of `path` (None when it is no Mach-O file at all). One that starts
    like one but does not parse raises UnreadableMacho, a fat file FatMacho; anything
    but a regular file, or one larger than any binary of ours, UntrustedFile: each
    naming it in one line."""
    name = printable(bytes(path.relative_to(root)))
    return macho_facts_of(read_binary(path, name), name)


def macho_facts_of(data: bytes, name: str) -> MachoFacts | None:
    """The facts of a file's bytes, `name` in messages: as macho_facts."""
    kind = _kind(data[:HEAD_BYTES])
    if kind is None:
        return None
    try:
        if kind == "fat":
            raise FatMacho(f"{name}: fat/universal file ({_fat_slices(data)}): ship thin files")
        if kind == "other":
            raise _Malformed("a 32-bit or big-endian Mach-O file; ours are 64-bit little-endian")
        return _read(data, name)
    except _Malformed as exc:
        raise UnreadableMacho(f"{name}: not a readable Mach-O file ({exc})") from None


def _fat_slices(data: bytes) -> str:
    """A fat file's first few slices, by CPU, each header and slice checked to lie
    inside the file and clear of the others: the refusal describes the file, whatever
    it declares, at a cost that does not grow with it."""
    if len(data) < HEAD_BYTES:
        return "its header is cut short"
    layout, arch_size = FAT_MAGICS[data[:4]], FAT_ARCH_SIZES[data[:4]]
    count = int.from_bytes(data[4:8], "big")
    headers_end = HEAD_BYTES + count * arch_size
    described: list[str] = []
    taken: list[tuple[int, int]] = []
    for index in range(min(count, FAT_SLICES_LISTED)):
        at = HEAD_BYTES + index * arch_size
        if at + arch_size > len(data):
            described.append(f"slice {index}'s header past the end of the file")
            break
        cputype, _, offset, size = layout.unpack_from(data, at)
        cpu = _cpu_name(cputype)
        if offset < headers_end or offset + size > len(data) or size == 0:
            described.append(f"{cpu} outside the file (bytes {offset}-{offset + size})")
        elif any(offset < end and start < offset + size for start, end in taken):
            described.append(f"{cpu} overlapping another slice")
        else:
            described.append(cpu)
        taken.append((offset, offset + size))
    listed = ", ".join(described) or "no slices"
    return f"{count} slices: {listed}, …" if count > FAT_SLICES_LISTED else listed


def _cpu_name(cputype: int) -> str:
    return CPU_TYPES.get(cputype, hex(cputype & 0xFFFFFFFF))


def _unpack(
    layout: struct.Struct, data: bytes, offset: int, what: str, within: str = "the file"
) -> tuple[int, ...]:
    if offset < 0 or offset + layout.size > len(data):
        raise _Malformed(f"{what} at byte {offset} runs past the end of {within} ({len(data)} bytes)")
    return layout.unpack_from(data, offset)


def _fields(layout: struct.Struct, command: bytes, what: str) -> tuple[int, ...]:
    """A load command's own fields, after its cmd and cmdsize."""
    return _unpack(layout, command, _LOAD_COMMAND.size, what, "its command")


def _within(data: bytes, offset: int, size: int, what: str) -> None:
    """Checks that data[offset:offset+size] lies inside the file, copying nothing."""
    if offset + size > len(data):
        raise _Malformed(
            f"{what} (bytes {offset}-{offset + size}) runs past the end of the file ({len(data)} bytes)"
        )


def _span(data: bytes, offset: int, size: int, what: str) -> bytes:
    """data[offset:offset+size], which must lie inside the file."""
    _within(data, offset, size, what)
    return data[offset : offset + size]


def _version(word: int) -> tuple[int, int]:
    """Mach-O's xxxx.yy.zz version word, as (major, minor)."""
    return word >> 16, (word >> 8) & 0xFF


def _text(raw: bytes) -> str:
    """A name from the file as one printable line: it goes into our messages, and a
    hostile file's names may hold newlines or terminal escapes."""
    text = raw.decode(errors="backslashreplace")
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def _dylib_version(word: int) -> str:
    return f"{word >> 16}.{(word >> 8) & 0xFF}.{word & 0xFF}"


class _Names:
    """Decodes the strings of a file, within NAME_BUDGET bytes for the whole file, each
    charged before it is copied."""

    def __init__(self, budget: int = NAME_BUDGET) -> None:
        self.budget = self.left = budget

    def charge(self, size: int) -> None:
        """Counts `size` bytes read or copied to build names against the budget."""
        self.left -= size
        if self.left < 0:
            raise _Malformed(f"its names add up to more than {self.budget / (1 << 20):g} MiB")

    def take(self, raw: bytes) -> str:
        """A symbol's name (`raw`, of at most MAX_NAME_BYTES, already charged)."""
        name = _text(raw)
        # Every C symbol carries Mach-O's leading underscore: the names we judge lack it.
        return name[1:] if name.startswith("_") else name

    def end_of(self, block: bytes, start: int, what: str, within: str) -> int:
        """Where the NUL-terminated string at `start` of `block` ends, looked for no
        further than MAX_NAME_BYTES (so never past `block`, the table or command that
        holds it), its bytes charged: the caller may then copy block[start:end]."""
        if start < 0 or start >= len(block):
            raise _Malformed(f"{what} (at {start}) is outside {within}")
        end = block.find(b"\0", start, start + MAX_NAME_BYTES + 1)
        if end < 0:
            raise _Malformed(
                f"{what} (at {start}) is unterminated or longer than {MAX_NAME_BYTES} bytes, "
                f"the longest a linker writes"
            )
        self.charge(end - start)
        return end

    def string(self, block: bytes, start: int, what: str, within: str) -> str:
        """The NUL-terminated string at `start` of `block` (a load command, a blob),
        bounded and charged (end_of) before it is copied."""
        return _text(block[start : self.end_of(block, start, what, within)])


def symbol_names(data: bytes, name: str) -> list[tuple[int, bytes]]:
    """(index, name) of every entry of the symbol table of `data`, a thin Mach-O file
    (an object's, a static library member's), as the file holds them: each looked for
    within the string table and no further than MAX_NAME_BYTES, and all of them
    together bounded by twice the file's size (a real object's names take less than
    it). Anything else raises UnreadableMacho, naming `name`."""
    try:
        if _kind(data[:HEAD_BYTES]) != "thin":
            raise _Malformed("not a thin 64-bit little-endian Mach-O file, as ours are")
        _, _, _, _, ncmds, sizeofcmds, _, _ = _unpack(_HEADER, data, 0, "the header")
        names = _Names(2 * len(data) + (1 << 16))
        for cmd, command, what in _load_commands(data, ncmds, sizeofcmds):
            if cmd == LC_SYMTAB:
                symoff, nsyms, stroff, strsize = _fields(_FOUR, command, what)
                table = _span(data, symoff, nsyms * _NLIST_64.size, "the symbol table")
                strings = _span(data, stroff, strsize, "the string table")
                found = []
                for index in range(nsyms):
                    (strx,) = _ONE.unpack_from(table, index * _NLIST_64.size)
                    end = names.end_of(strings, strx, f"symbol {index}'s name", "the string table")
                    found.append((index, strings[strx:end]))
                return found
        return []
    except _Malformed as exc:
        raise UnreadableMacho(f"{name}: not a readable Mach-O file ({exc})") from None


def _read(data: bytes, name: str) -> MachoFacts:
    _, cputype, _, filetype, ncmds, sizeofcmds, flags, _ = _unpack(_HEADER, data, 0, "the header")
    found = _Commands(data)
    for cmd, command, what in _load_commands(data, ncmds, sizeofcmds):
        found.take(cmd, command, what)
    # LC_BUILD_VERSION says what the older LC_VERSION_MIN_MACOSX says, and wins.
    minimum_os, sdk = found.build_minimum or found.version_min or (None, None)
    return MachoFacts(
        path=name,
        cpu=_cpu_name(cputype),
        filetype=FILE_TYPES.get(filetype, hex(filetype)),
        flags=frozenset(flag for flag, bit in HEADER_FLAGS.items() if flags & bit),
        platform=found.platform,
        minimum_os=minimum_os,
        sdk=sdk,
        dylibs=tuple(found.dylibs),
        install_name=found.install_name,
        rpaths=tuple(found.rpaths),
        exported=frozenset(found.exported),
        undefined=frozenset(found.undefined),
        signature=(
            None if found.signature_range is None else _signature(data, *found.signature_range, found.names)
        ),
        dylinker=found.dylinker,
        environment=tuple(found.environment),
    )


def _load_commands(data: bytes, ncmds: int, sizeofcmds: int) -> Iterator[tuple[int, bytes, str]]:
    """Each load command: its cmd, its bytes and how messages name it."""
    end_of_commands = _HEADER.size + sizeofcmds
    if end_of_commands > len(data):
        raise _Malformed(
            f"its load commands ({sizeofcmds} bytes) run past the end of the file ({len(data)} bytes)"
        )
    offset = _HEADER.size
    # ncmds is bounded by sizeofcmds: each command takes 8 bytes at least.
    for index in range(ncmds):
        what = f"load command {index}"
        if offset + _LOAD_COMMAND.size > end_of_commands:
            raise _Malformed(f"{what} runs past the header's {sizeofcmds} bytes of commands")
        cmd, cmdsize = _LOAD_COMMAND.unpack_from(data, offset)
        if cmdsize < _LOAD_COMMAND.size or offset + cmdsize > end_of_commands:
            raise _Malformed(f"{what} has size {cmdsize}, past the header's {sizeofcmds} bytes of commands")
        yield cmd, data[offset : offset + cmdsize], what
        offset += cmdsize


@dataclass
class _Commands:
    """What the load commands say, gathered as each is read."""

    data: bytes
    names: _Names = field(default_factory=_Names)
    dylibs: list[tuple[str, str]] = field(default_factory=list)
    rpaths: list[str] = field(default_factory=list)
    environment: list[str] = field(default_factory=list)
    install_name: str | None = None
    dylinker: str | None = None
    platform: str | None = None
    build_minimum: tuple[tuple[int, int], tuple[int, int]] | None = None
    version_min: tuple[tuple[int, int], tuple[int, int]] | None = None
    exported: set[str] = field(default_factory=set)
    undefined: set[str] = field(default_factory=set)
    signature_range: tuple[int, int] | None = None
    seen: set[str] = field(default_factory=set)  # the ONCE kinds met

    def take(self, cmd: int, command: bytes, what: str) -> None:
        if cmd in ONCE:
            if ONCE[cmd] in self.seen:
                raise _Malformed(f"{what} is a second {ONCE[cmd]}, which a file has once at most")
            self.seen.add(ONCE[cmd])
        if cmd == LC_SEGMENT_64:
            _, _, fileoff, filesize, *_ = _unpack(_SEGMENT_64, command, 24, what, "its command")
            segment = _text(command[8:24].rstrip(b"\0"))
            _within(self.data, fileoff, filesize, f"segment {segment}")
        elif cmd in LOADING or cmd == LC_ID_DYLIB:
            self._dylib(cmd, command, what)
        elif cmd in (LC_RPATH, LC_LOAD_DYLINKER, LC_DYLD_ENVIRONMENT):
            # Each is one lc_str: the offset of a string inside the command.
            at = _fields(_ONE, command, what)[0]
            text = self.names.string(command, at, f"{what}'s {LC_STR_NAMES[cmd]}", "its command")
            if cmd == LC_LOAD_DYLINKER:
                self.dylinker = text
            else:
                (self.rpaths if cmd == LC_RPATH else self.environment).append(text)
        elif cmd == LC_BUILD_VERSION:
            found, minos, sdk_word, _ = _fields(_FOUR, command, what)
            # Several are allowed (a zippered file names macOS and Mac Catalyst): macOS's wins.
            if self.platform is None or PLATFORMS.get(found) == "macos":
                self.platform = PLATFORMS.get(found, str(found))
                self.build_minimum = _version(minos), _version(sdk_word)
        elif cmd == LC_VERSION_MIN_MACOSX:
            version, sdk_word = _fields(_TWO, command, what)
            self.version_min = _version(version), _version(sdk_word)
        else:
            self._linkedit(cmd, command, what)

    def _dylib(self, cmd: int, command: bytes, what: str) -> None:
        at, _, _, compatibility = _fields(_DYLIB, command, what)
        dylib = self.names.string(command, at, f"{what}'s dylib name", "its command")
        if cmd == LC_ID_DYLIB:
            self.install_name = self.install_name or dylib
        else:
            self.dylibs.append((dylib, _dylib_version(compatibility)))

    def _linkedit(self, cmd: int, command: bytes, what: str) -> None:
        """The commands naming tables of __LINKEDIT: symbols, export trie, signature."""
        if cmd == LC_SYMTAB:
            symoff, nsyms, stroff, strsize = _fields(_FOUR, command, what)
            _symbols(self.data, symoff, nsyms, stroff, strsize, self.names, self.exported, self.undefined)
        elif cmd in (LC_DYLD_INFO, LC_DYLD_INFO_ONLY, LC_DYLD_EXPORTS_TRIE):
            layout, first = (_TWO, 0) if cmd == LC_DYLD_EXPORTS_TRIE else (_DYLD_INFO, 8)
            dataoff, datasize = _fields(layout, command, what)[first : first + 2]
            self.exported |= _trie(_span(self.data, dataoff, datasize, "the export trie"), self.names)
        elif cmd == LC_CODE_SIGNATURE:
            dataoff, datasize = _fields(_TWO, command, what)
            _within(self.data, dataoff, datasize, "the code signature")
            self.signature_range = dataoff, datasize


def _symbols(
    data: bytes,
    symoff: int,
    nsyms: int,
    stroff: int,
    strsize: int,
    names: _Names,
    exported: set[str],
    undefined: set[str],
) -> None:
    """The external symbols of the symbol table (nlist_64 entries) into `exported` and
    `undefined`; debugging entries (N_STAB) and private externals are neither."""
    table = _span(data, symoff, nsyms * _NLIST_64.size, "the symbol table")
    strings = _span(data, stroff, strsize, "the string table")
    for index in range(nsyms):
        strx, n_type, _, _, value = _NLIST_64.unpack_from(table, index * _NLIST_64.size)
        if n_type & N_STAB or not n_type & N_EXT or n_type & N_PEXT:
            continue
        kind = n_type & N_TYPE
        # An undefined entry with a value is a common symbol (of an object file): defined.
        if kind == N_SECT or (kind == N_UNDF and value):
            into = exported
        elif kind == N_UNDF:
            into = undefined
        else:
            continue
        end = names.end_of(strings, strx, f"symbol {index}'s name", "the string table")
        into.add(names.take(strings[strx:end]))


def _uleb(block: bytes, at: int) -> tuple[int, int]:
    """The ULEB128 number at `at`, and where it ends (at most 10 bytes: 64 bits)."""
    value = shift = 0
    for index in range(at, min(at + 10, len(block))):
        value |= (block[index] & 0x7F) << shift
        shift += 7
        if not block[index] & 0x80:
            return value, index + 1
    raise _Malformed(f"the export trie has an unterminated number at byte {at}")


def _trie(trie: bytes, names: _Names) -> set[str]:
    """Every name the export trie holds: the names dyld binds others' imports to.

    Each node is read once (a child offset met a second time is refused: a trie has no
    loops nor shared nodes), so the nodes read are fewer than the trie's bytes. Each
    edge copies its parent's name to make its child's (prefix + label), and that copy,
    not just the label, is charged to the names' budget, with no name longer than
    MAX_NAME_BYTES: a chain of a million one-byte edges would otherwise copy a growing
    prefix at every level, a cost quadratic in its length, where it is now refused
    after a few thousand."""
    found: set[str] = set()
    if not trie:
        return found
    claimed = {0}
    stack = [(0, b"")]
    while stack:
        node, prefix = stack.pop()
        info_size, at = _uleb(trie, node)
        if info_size:
            found.add(names.take(prefix))
        at += info_size
        if at >= len(trie):
            raise _Malformed(f"the export trie's node at {node} runs past its end")
        children, at = trie[at], at + 1
        for _ in range(children):
            name, at = _edge(trie, at, prefix, node, names)
            child, at = _uleb(trie, at)
            if child >= len(trie) or child in claimed:
                raise _Malformed(f"the export trie's node at {child} is revisited or outside it")
            claimed.add(child)
            stack.append((child, name))
    return found


def _edge(trie: bytes, at: int, prefix: bytes, node: int, names: _Names) -> tuple[bytes, int]:
    """The name an edge of `node` leads to (its label at `at` after `prefix`), and
    where the edge's child offset starts; the label is looked for no further than the
    longest name allowed, and what is copied is charged."""
    room = MAX_NAME_BYTES - len(prefix)
    end = trie.find(b"\0", at, at + room + 1)
    if end < 0:
        raise _Malformed(
            f"the export trie's node at {node} has an edge that is unterminated or makes a name "
            f"longer than {MAX_NAME_BYTES} bytes"
        )
    names.charge(2 * (end - at) + len(prefix))  # the label, then prefix + label
    return prefix + trie[at:end], end + 1


@dataclass(frozen=True)
class _Directory:
    """The CodeDirectory's fields the checks read."""

    blob: bytes
    hash_offset: int
    n_special: int
    n_code: int
    code_limit: int
    hash_size: int
    algorithm: str
    page_shift: int

    def stored(self, slot: int) -> bytes:
        """The hash kept for code page `slot`, or special slot -`slot` (a blob's)."""
        at = self.hash_offset + slot * self.hash_size
        return self.blob[at : at + self.hash_size]

    def digest(self, content: bytes) -> bytes:
        return hashlib.new(self.algorithm, content).digest()[: self.hash_size]


def _signature(data: bytes, dataoff: int, datasize: int, names: _Names) -> CodeSignature:
    """The code signature at `dataoff` (already inside the file), checked as macOS checks
    it before running the code: the CodeDirectory's hash of every page of the file up to
    the signature, and of the requirements and entitlements blobs it names."""
    blobs = _superblob(data, dataoff, datasize)
    if isinstance(blobs, str):
        return CodeSignature(0, False, "", "", (blobs,))
    blob = blobs.get(CSSLOT_CODEDIRECTORY, b"")
    if len(blob) < _CODE_DIRECTORY.size or _BE_TWO.unpack_from(blob)[0] != CSMAGIC_CODEDIRECTORY:
        return CodeSignature(0, False, "", "", ("it has no readable CodeDirectory",))
    (_, _, _, flags, hash_offset, ident_offset, n_special, n_code, code_limit,
     hash_size, hash_type, _, page_shift, _) = _CODE_DIRECTORY.unpack_from(blob)  # fmt: skip
    adhoc = bool(flags & CS_ADHOC)
    identifier, problem = _identifier(blob, ident_offset, names)
    problems = [] if problem is None else [problem]
    # A signature that is not ad hoc stands on a certificate: a CMS blob must carry it.
    if not adhoc and len(blobs.get(CSSLOT_CMS_SIGNATURE, b"")) <= _BE_TWO.size:
        problems.append("it is not ad hoc and carries no CMS signature")
    if hash_type not in HASH_TYPES:
        problems.append(f"hash type {hash_type} is none of SHA-1, SHA-256 and SHA-384")
        return CodeSignature(flags, adhoc, identifier, "", tuple(problems))
    algorithm, digest_size = HASH_TYPES[hash_type]
    if hash_size != digest_size:
        problems.append(f"hash size {hash_size} does not fit {algorithm}")
    else:
        directory = _Directory(
            blob, hash_offset, n_special, n_code, code_limit, hash_size, algorithm, page_shift
        )
        problems += _hash_problems(data, dataoff, blobs, directory)
    return CodeSignature(flags, adhoc, identifier, algorithm, tuple(problems))


def _identifier(blob: bytes, at: int, names: _Names) -> tuple[str, str | None]:
    """The CodeDirectory's identifier, and what is wrong with it: a signature problem
    (macOS refuses the signature, not the file), looked for no further than
    MAX_NAME_BYTES and charged before it is copied, as every string of the file."""
    if not 0 < at < len(blob):
        return "", "its CodeDirectory has no identifier"
    end = blob.find(b"\0", at, at + MAX_NAME_BYTES + 1)
    if end < 0:
        cut = at + MAX_NAME_BYTES + 1 > len(blob)  # no NUL before the blob's end
        return "", (
            "its CodeDirectory has no identifier (it runs to the blob's end)"
            if cut
            else f"its CodeDirectory's identifier is longer than {MAX_NAME_BYTES} bytes, the longest a "
            "linker writes"
        )
    if end == at:
        return "", "its CodeDirectory has no identifier"
    names.charge(end - at)
    return _text(blob[at:end]), None


# The blobs the signature's checks read; the others are not copied (a SuperBlob of n
# bytes may index n / 8 slots, each naming a blob of nearly n bytes).
READ_SLOTS = frozenset({CSSLOT_CODEDIRECTORY, CSSLOT_CMS_SIGNATURE, *HASHED_SPECIAL_SLOTS})


def _superblob(data: bytes, dataoff: int, datasize: int) -> dict[int, bytes] | str:
    """The blobs the checks read of the embedded signature at `dataoff` (inside the
    file), by slot, each copied once; or what is wrong with it."""
    head = data[dataoff : dataoff + min(datasize, _BE_THREE.size)]
    if len(head) < _BE_THREE.size or _BE_THREE.unpack_from(head)[0] != CSMAGIC_EMBEDDED_SIGNATURE:
        return "it is no embedded signature (SuperBlob magic 0xfade0cc0)"
    _, length, count = _BE_THREE.unpack_from(head)
    if length > datasize or _BE_THREE.size + count * _BE_TWO.size > length:
        return f"its SuperBlob's length {length} or count {count} does not fit"
    blobs: dict[int, bytes] = {}
    for index in range(count):
        slot, at = _BE_TWO.unpack_from(data, dataoff + _BE_THREE.size + index * _BE_TWO.size)
        if slot in READ_SLOTS and slot not in blobs and at + _BE_TWO.size <= length:
            size = _BE_TWO.unpack_from(data, dataoff + at)[1]
            if size >= _BE_TWO.size and at + size <= length:
                blobs[slot] = data[dataoff + at : dataoff + at + size]
    return blobs


def _hash_problems(data: bytes, dataoff: int, blobs: dict[int, bytes], cd: _Directory) -> list[str]:
    problems = []
    if cd.code_limit != dataoff:
        problems.append(f"it covers bytes 0-{cd.code_limit}, but the signature starts at byte {dataoff}")
    if cd.page_shift > 30:
        return [*problems, f"page size 2^{cd.page_shift} is not a page size"]
    # A page size of 0 means one page: everything up to the code limit.
    page = 1 << cd.page_shift if cd.page_shift else max(cd.code_limit, 1)
    pages = -(-cd.code_limit // page)
    if cd.n_code != pages:
        problems.append(f"it has {cd.n_code} page hashes for {pages} pages")
    specials_start = cd.hash_offset - cd.n_special * cd.hash_size
    if specials_start < 0 or cd.hash_offset + cd.n_code * cd.hash_size > len(cd.blob):
        return [*problems, "its hashes lie outside its CodeDirectory"]
    if cd.code_limit > dataoff:
        return problems  # said above; what lies past the signature is not code
    # n_code is bounded by the CodeDirectory's size (checked just above); the pages
    # beyond the code limit, when there are more hashes than pages, were said above.
    changed = [
        number
        for number in range(min(cd.n_code, pages))
        if cd.digest(data[number * page : min((number + 1) * page, cd.code_limit)]) != cd.stored(number)
    ]
    if changed:
        first = changed[0] * page
        problems.append(
            f"{len(changed)} of its {cd.n_code} pages do not match their hashes, the first at bytes "
            f"{first}-{min(first + page, cd.code_limit)}: the file changed after signing"
        )
    for slot in HASHED_SPECIAL_SLOTS:
        # All zero when the file has no such blob (as in zig's linker signature).
        stored = cd.stored(-slot) if slot <= cd.n_special else b""
        if slot in blobs and not stored.strip(b"\0"):
            problems.append(f"its blob of slot {slot} is not hashed into the CodeDirectory")
        elif stored.strip(b"\0") and cd.digest(blobs.get(slot, b"")) != stored:
            problems.append(f"its blob of slot {slot} does not match its hash")
    return problems


def macho_target(executable: Path) -> Target:
    """The macOS target of a Mach-O interpreter, by its CPU. `executable` may be a
    symlink (bin/python3): the file it names is read."""
    try:
        real = executable.resolve()
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop, before Python 3.13
        raise PyfreightError(f"{executable}: cannot be resolved ({exc})") from None
    # The header alone: the tree's rules read the whole file, and name what is wrong
    # with it by its place in the tree.
    cpu = macho_cpu(real, printable(os.fsencode(real.name)))
    for found in all_targets().values():
        if isinstance(found.files, MachOFiles) and found.files.cpu == cpu:
            return found
    raise PyfreightError(
        f"{executable}: a Mach-O {cpu} executable, which no target of targets/*.yaml describes"
    )
