"""Reading PE files (Windows .exe, .dll, .pyd) for the facts our checks judge: the
machine, every DLL the image makes Windows load (import descriptors, delay-load
descriptors, the bound import directory and the targets of forwarded exports), the
names exported, the security flags of the optional header, the link timestamp, the
debug directory and a program's manifest resource. Reading only; the rules live in
verify/pe_rules.py.

A compact reader of our own, not pefile: every fact we need is a fixed-layout structure
of winnt.h, a few lines each, while pefile (2024.8) takes the counts and sizes of a
hostile file on trust (0xFFFF sections, 2^31 export names, a debug directory of
gigabytes: minutes, or MemoryError), raises AttributeError on a debug entry of a type it
does not expect, runs a full gc.collect() each time an image is closed (40 ms: a tree of
3,000 small DLLs took 150 s), and drops as corrupt an import descriptor whose thunks hold
what it does not expect (an ordinal with bits set above 16), a descriptor whose DLL the
Windows loader still loads: so a hostile image could hide a DLL from our allow-list.

Here the whole file is read once (through formats/untrusted.py: a regular file, of a
bounded size) and every structure is bounds-checked before it is unpacked: a malformed
file raises UnreadablePe, in one line naming the file and the structure, and nothing
else. Every count is checked against the file's size and a limit no image of ours comes
near before a loop runs on it; every string taken from the file (a name, the manifest)
is looked for no further than its own limit and the section data holding it, and
charged to the file's budget before it is copied. The import structures (descriptors,
thunk arrays, names) are refused where they overlap as no linker lays them out. Where the file
is ambiguous (raw data the loader would read from elsewhere, sections that overlap, a
descriptor that names no DLL) it is refused rather than read one way of several, and
import descriptors are read up to their terminating entry, as the loader reads them,
whatever their thunks hold and whatever size the directory declares."""

from __future__ import annotations

import bisect
import codecs
import struct
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pyfreight.errors import PyfreightError
from pyfreight.formats import untrusted
from pyfreight.formats.manifest import MAX_MANIFEST
from pyfreight.targets import PeFiles, Target, all_targets

MZ = b"MZ"
NUL = b"\0"
PE_SIGNATURE = b"PE\0\0"
SUFFIXES = (".exe", ".dll", ".pyd")
# IMAGE_DLLCHARACTERISTICS_* of the optional header, by the name our rules use.
FLAGS = {
    "high_entropy_va": 0x0020,  # 64-bit ASLR
    "dynamic_base": 0x0040,  # ASLR
    "nx_compat": 0x0100,  # DEP
    "guard_cf": 0x4000,  # Control Flow Guard
}
IMAGE_FILE_DLL = 0x2000
# IMAGE_FILE_MACHINE_* (winnt.h) without the prefix, as pefile names them; any other
# machine is named by its number in hex.
MACHINES = {
    0x014C: "I386", 0x8664: "AMD64", 0xAA64: "ARM64", 0xA641: "ARM64EC", 0xA64E: "ARM64X",
    0x01C0: "ARM", 0x01C2: "THUMB", 0x01C4: "ARMNT", 0x0200: "IA64", 0x0EBC: "EBC",
    0x5032: "RISCV32", 0x5064: "RISCV64", 0x5128: "RISCV128",
    0x6232: "LOONGARCH32", 0x6264: "LOONGARCH64", 0x01F0: "POWERPC", 0x0166: "R4000",
}  # fmt: skip
PE32, PE32_PLUS = 0x10B, 0x20B  # the optional header's magic

# The data directories read, by their index (IMAGE_DIRECTORY_ENTRY_*).
EXPORT, IMPORT, RESOURCE, DEBUG, BOUND_IMPORT, DELAY_IMPORT = 0, 1, 2, 6, 11, 13
DIRECTORY_NAMES = {
    EXPORT: "export", IMPORT: "import", RESOURCE: "resource", DEBUG: "debug",
    BOUND_IMPORT: "bound import", DELAY_IMPORT: "delay-load import",
}  # fmt: skip

# Limits no image of ours comes near; a file beyond one is refused, not read.
MAX_SECTIONS = 96  # the limit of the Windows (XP) loader; our linker writes about ten
MAX_DIRECTORIES = 16  # there are 16 data directories: NumberOfRvaAndSizes may not say more
MAX_DESCRIPTORS = 1024  # per import directory (python3XX.dll imports a few dozen DLLs)
MAX_EXPORTS = 1 << 16  # functions and names: an ordinal is 16 bits (python3XX.dll: ~1,700)
MAX_DLL_NAME = 256
# Entries of one thunk array (an import descriptor's lookup or address table): a DLL
# exports at most 2^16 functions, an ordinal being 16 bits.
MAX_THUNKS = 1 << 16
MAX_EXPORT_NAME = 4096
NAME_BUDGET = 16 << 20  # all the names of one file together, in bytes
MAX_RESOURCE_ENTRIES = 4096  # per resource directory (a program has a handful of types)
# The loader reads a section's raw data from its PointerToRawData rounded down to this
# many bytes: an image whose pointer is not is one the loader reads elsewhere than a
# reader taking the pointer as written.
RAW_DATA_ALIGNMENT = 0x200

_WORD = struct.Struct("<H")
_DWORD = struct.Struct("<I")
_DOS_HEADER_SIZE = 0x40
_LFANEW_AT = 0x3C  # e_lfanew: where the NT headers start, "PE\0\0" and the file header
_FILE_HEADER = struct.Struct("<HHIIIHH")
# The optional header up to DllCharacteristics, alike in PE32 and PE32+: Magic,
# SectionAlignment, FileAlignment, SizeOfImage, SizeOfHeaders, DllCharacteristics.
_OPTIONAL = struct.Struct("<H30xII16xII6xH")
_IMAGE_BASE = {PE32: (struct.Struct("<I"), 28), PE32_PLUS: (struct.Struct("<Q"), 24)}
_DIRECTORY_COUNT_AT = {PE32: 92, PE32_PLUS: 108}  # NumberOfRvaAndSizes; the directories follow
_PAIR = struct.Struct("<II")  # a data directory: RVA, size
_SECTION = struct.Struct("<8xIIII16x")  # (Name), VirtualSize, VirtualAddress, SizeOfRawData, PointerToRawData
_EXPORT_DIRECTORY = struct.Struct("<12xIIIIIII")  # Name, Base, counts and the three tables' RVAs
# OriginalFirstThunk, TimeDateStamp, ForwarderChain, Name, FirstThunk
_IMPORT_DESCRIPTOR = struct.Struct("<IIIII")
_DELAY_DESCRIPTOR = struct.Struct("<8I")  # Attributes, DllNameRVA, then six more RVAs and a stamp
_BOUND_DESCRIPTOR = struct.Struct("<IHH")  # TimeDateStamp, OffsetModuleName, NumberOfModuleForwarderRefs
_DEBUG_ENTRY_SIZE = 28  # IMAGE_DEBUG_DIRECTORY
# IMAGE_RESOURCE_DIRECTORY: Characteristics, TimeDateStamp, versions, named and ID entry counts
_RESOURCE_DIRECTORY = struct.Struct("<12xHH")
_RESOURCE_DATA_ENTRY = struct.Struct("<II8x")  # OffsetToData (an RVA), Size
RESOURCE_SUBDIRECTORY = 0x80000000  # an entry's high bit: it points to another directory
RT_MANIFEST = 24
CREATEPROCESS_MANIFEST_RESOURCE_ID = 1  # the manifest Windows reads when it starts a program
DELAY_RVA_BASED = 0x1  # dlattrRva: the descriptor holds RVAs (else VAs, the VC6 form)

# What a file named like a PE image is instead, by its first bytes, for the message.
OTHER_FORMATS = (
    (b"\x7fELF", "an ELF file"),
    (b"\xcf\xfa\xed\xfe", "a Mach-O file"), (b"\xce\xfa\xed\xfe", "a Mach-O file"),
    (b"\xfe\xed\xfa\xcf", "a Mach-O file"), (b"\xfe\xed\xfa\xce", "a Mach-O file"),
    (b"\xca\xfe\xba\xbe", "a fat Mach-O file (or a Java class)"),
    (b"PK\x03\x04", "a zip archive"), (b"\x1f\x8b", "a gzip file"), (b"#!", "a script"),
    (b"!<arch>\n", "an ar archive (a static library)"),
)  # fmt: skip


@dataclass(frozen=True)
class PeFacts:
    path: str  # relative to the tree read
    machine: str  # the COFF machine name, e.g. AMD64
    is_dll: bool
    # DLL names as written (Windows matches them case-insensitively): every descriptor
    # of the import directory, whatever its thunks hold.
    imports: tuple[str, ...]
    exported: frozenset[str]  # exported names (ordinal-only exports have none)
    forwarded: frozenset[str]  # exported names that forward to another DLL ("python314.Py_...")
    flags: frozenset[str]  # the FLAGS set in DllCharacteristics
    timestamp: int  # the header's TimeDateStamp
    debug_entries: int  # entries of the debug directory (CodeView records and the like)
    delay_imports: tuple[str, ...] = ()  # the delay-load descriptors' DLL names
    bound_imports: tuple[str, ...] = ()  # the bound import directory's modules (and forwarder refs)
    # The DLLs forwarded exports (named or not) make the loader load: "python314.Py_X"
    # names python314.dll. Read as the loader may split the string, at its first dot
    # and at its last, when the two differ.
    forwarder_dlls: tuple[str, ...] = ()
    # A program's manifest resource (RT_MANIFEST, ID 1), as bytes (formats/manifest.py
    # reads them); None for a DLL, or a program without one.
    manifest: bytes | None = None


class UnreadablePe(PyfreightError):
    """A file that starts like a PE image, or is named like one, but cannot be read as
    one (said in one line, naming the file and the structure)."""


class NotPe(UnreadablePe):
    """A file named like a PE image that is none at all: a Mach-O or ELF file, text."""


class _Malformed(Exception):
    """A structure that does not fit the file; becomes UnreadablePe, with the name."""


def pe_facts(path: Path, root: Path) -> PeFacts | None:
    """The facts of `path` (None when it is not a PE image at all); a file that starts
    with MZ but does not parse raises UnreadablePe, naming the file, and one that is no
    regular file or is larger than any of ours untrusted.UntrustedFile."""
    name = printable(path.relative_to(root).as_posix())
    return read_pe(untrusted.read_binary(path, name), name)


def pe_image(path: Path, root: Path) -> PeFacts:
    """The facts of `path`, a file named like a PE image, which must be one: see
    image_facts."""
    name = printable(path.relative_to(root).as_posix())
    return image_facts(untrusted.read_binary(path, name), name)


def image_facts(data: bytes, name: str) -> PeFacts:
    """The facts of `data`, a file named like a PE image (Windows runs or loads it by
    that name, whatever it holds): NotPe when it is none at all ("named like a PE image
    but is a Mach-O file"), UnreadablePe when it starts like one but does not parse."""
    found = read_pe(data, name)
    if found is None:
        raise NotPe(f"{name}: named like a PE image but is {what_it_is(data)}")
    return found


def read_pe(data: bytes, name: str) -> PeFacts | None:
    """The facts of the image `data` (`name` in messages); None when it does not start
    with MZ."""
    if data[:2] != MZ:
        return None
    try:
        return _Image(data).facts(name)
    except _Malformed as exc:
        raise UnreadablePe(f"{name}: not a readable PE image ({exc})") from None


def what_it_is(data: bytes) -> str:
    """What a file that is no PE image is, from its first bytes, for a message:
    "a Mach-O file", "an ELF file", "a text file", ..."""
    if not data:
        return "an empty file"
    for magic, kind in OTHER_FORMATS:
        if data.startswith(magic):
            return kind
    try:  # not final: a character the 4096 bytes cut in two is no reason to say binary
        text = codecs.getincrementaldecoder("utf-8")().decode(data[:4096])
    except UnicodeDecodeError:
        text = None
    if text is not None and all(c.isprintable() or c in "\t\r\n\f" for c in text):
        return "a text file"
    return f"data of no format we know (it starts with {data[:8].hex(' ')})"


def pe_files(root: Path) -> Iterator[Path]:
    """The regular files below `root` named like PE images, in a stable order (symlinks
    are not followed, fifos and devices left out: untrusted.regular_files)."""
    for path in untrusted.regular_files(root):
        if path.suffix.lower() in SUFFIXES:
            yield path


def printable(text: str) -> str:
    """`text` as one printable line: names from a file or a tree go into our messages,
    and a hostile one may hold newlines, terminal escapes or undecodable bytes."""
    if text.isprintable():
        return text
    return "".join(
        c if c.isprintable() else c.encode("unicode_escape", errors="backslashreplace").decode("ascii")
        for c in text
    )


def _text(raw: bytes) -> str:
    return printable(raw.decode(errors="backslashreplace"))


def _unpack(layout: struct.Struct, data: bytes, offset: int, what: str) -> tuple[int, ...]:
    if offset < 0 or offset + layout.size > len(data):
        raise _Malformed(f"{what} at byte {offset} runs past the end of the file ({len(data)} bytes)")
    return layout.unpack_from(data, offset)


@dataclass(frozen=True)
class _Section:
    rva: int
    mapped: int  # bytes of the section that come from the file (the rest is zero-filled)
    raw: int  # where its bytes start in the file


@dataclass(frozen=True)
class _FileHeader:
    machine: int
    section_count: int
    timestamp: int
    characteristics: int
    optional_at: int  # where the optional header starts in the file
    optional_size: int  # and its size (the section table follows it)


@dataclass(frozen=True)
class _OptionalHeader:
    image_size: int  # SizeOfImage
    headers_size: int  # SizeOfHeaders
    dll_characteristics: int
    image_base: int
    directories: tuple[tuple[int, int], ...]  # (RVA, size) of each data directory
    thunk_size: int = 8  # an import thunk's bytes: 8 in a PE32+ image, 4 in a PE32 one


class _Image:
    """A PE image read from bytes: its headers, and RVAs mapped to file offsets through
    its section table, every access bounds-checked."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.file_header = _file_header(data)
        self.optional = _optional_header(data, self.file_header)
        self.sections = _sections(data, self.file_header, self.optional)
        self.section_starts = [section.rva for section in self.sections]
        self.names_left = NAME_BUDGET
        # Where the import and delay-load structures lie, all of them apart.
        self.import_layout = _ImportLayout()

    def facts(self, name: str) -> PeFacts:
        header = self.file_header
        exported, forwarded, forwarder_dlls = self._exports()
        return PeFacts(
            path=name,
            machine=MACHINES.get(header.machine, hex(header.machine)),
            is_dll=bool(header.characteristics & IMAGE_FILE_DLL),
            imports=self._imports(),
            exported=exported,
            forwarded=forwarded,
            flags=frozenset(flag for flag, bit in FLAGS.items() if self.optional.dll_characteristics & bit),
            timestamp=header.timestamp,
            debug_entries=self._debug_entries(),
            delay_imports=self._delay_imports(),
            bound_imports=self._bound_imports(),
            forwarder_dlls=forwarder_dlls,
            manifest=None if header.characteristics & IMAGE_FILE_DLL else self._manifest(),
        )

    # Mapping RVAs to the file ------------------------------------------------------

    def locate(self, rva: int, what: str) -> tuple[int, int]:
        """The file offset of `rva`, and the end of the file bytes mapped there (of the
        headers, or of its section's raw data): what lies past it the loader zero-fills
        or does not map at all, and no structure we read may run into it."""
        if rva < self.optional.headers_size:
            return rva, self.optional.headers_size
        index = bisect.bisect_right(self.section_starts, rva) - 1
        if index >= 0:
            section = self.sections[index]
            if rva < section.rva + section.mapped:
                return section.raw + rva - section.rva, section.raw + section.mapped
        raise _Malformed(f"{what} at RVA {rva:#x} lies in none of the file's bytes")

    def span(self, rva: int, size: int, what: str) -> int:
        """The file offset of `size` bytes at `rva`, which must all come from the file."""
        offset, end = self.locate(rva, what)
        if offset + size > end:
            raise _Malformed(
                f"{what} (RVA {rva:#x}, {size} bytes) runs past the end of its section's data in the file"
            )
        return offset

    def array(self, rva: int, count: int, code: str, what: str) -> tuple[int, ...]:
        """`count` little-endian numbers of struct `code` at `rva` (count is bounded by
        the caller before the file is asked for that many)."""
        if count == 0:
            return ()
        layout = struct.Struct(f"<{count}{code}")
        return layout.unpack_from(self.data, self.span(rva, layout.size, what))

    def string(self, rva: int, limit: int, what: str) -> str:
        """The NUL-terminated string at `rva`, of at most `limit` bytes, counted against
        the names budget of the file (names may overlap: without it, a file of n bytes
        could make us decode n * limit)."""
        return self.string_and_size(rva, limit, what)[0]

    def string_and_size(self, rva: int, limit: int, what: str) -> tuple[str, int]:
        """string(), and the string's size in the file (its NUL included)."""
        offset, end = self.locate(rva, what)
        stop = self.data.find(b"\0", offset, min(end, offset + limit + 1))
        if stop < 0:
            raise _Malformed(f"{what} (RVA {rva:#x}) is no NUL-terminated string of at most {limit} bytes")
        if stop == offset:
            raise _Malformed(f"{what} (RVA {rva:#x}) is empty")
        self.charge(stop - offset)
        return _text(self.data[offset:stop]), stop - offset + 1

    def charge(self, size: int) -> None:
        """Counts `size` bytes about to be copied from the file as text (a name, the
        manifest) against the file's budget."""
        self.names_left -= size
        if self.names_left < 0:
            raise _Malformed(f"its names add up to more than {NAME_BUDGET >> 20} MiB")

    def directory(self, index: int) -> tuple[int, int] | None:
        """The data directory `index` (RVA, size) when the image has it, checked to lie
        in the file's bytes. Present whenever its RVA is set, whatever its size says:
        the loader walks imports to their terminating entry, not to the size."""
        if index >= len(self.optional.directories):
            return None
        rva, size = self.optional.directories[index]
        if rva == 0:
            return None
        self.span(rva, size, f"the {DIRECTORY_NAMES[index]} directory")
        return rva, size

    def entries(self, rva: int, layout: struct.Struct, what: str) -> Iterator[tuple[int, tuple[int, ...]]]:
        """The fixed-size entries from `rva` up to the first all-zero one (not yielded):
        (index, fields). Bounded by the file's bytes mapped there and MAX_DESCRIPTORS."""
        offset, end = self.locate(rva, what)
        for index in range(MAX_DESCRIPTORS + 1):
            at = offset + index * layout.size
            if at + layout.size > end:
                raise _Malformed(f"{what} run past the end of their section's data with no empty entry")
            fields = layout.unpack_from(self.data, at)
            if not any(fields):
                return
            if index == MAX_DESCRIPTORS:
                break
            yield index, fields
        raise _Malformed(f"{what} number more than {MAX_DESCRIPTORS}")

    # The facts ---------------------------------------------------------------------

    def _imports(self) -> tuple[str, ...]:
        """Every import descriptor's DLL name, whatever its thunks hold: the loader loads
        the DLL before it reads a thunk. The import structures are laid out as a linker
        lays them, apart (_ImportLayout): each descriptor's thunk arrays, its DLL name
        and the names its thunks import overlap neither the descriptors nor a thunk
        array (one pointing back at the descriptors has the loader take them for thunks
        and write addresses over them)."""
        found = self.directory(IMPORT)
        if found is None:
            return ()
        descriptors = list(self.entries(found[0], _IMPORT_DESCRIPTOR, "the import descriptors"))
        names, sizes = [], []
        for index, (_, _, _, name_rva, _) in descriptors:
            if name_rva == 0:
                raise _Malformed(f"import descriptor {index} names no DLL")
            name, size = self.string_and_size(name_rva, MAX_DLL_NAME, f"import descriptor {index}'s DLL name")
            names.append(name)
            sizes.append(size)
        layout = self.import_layout
        end = found[0] + (len(descriptors) + 1) * _IMPORT_DESCRIPTOR.size
        layout.claim_table(found[0], end, "the import descriptors")
        arrays: list[tuple[str, tuple[int, ...]]] = []  # each descriptor's thunks naming its imports
        for index, (lookup, _, _, _, first) in descriptors:
            if first == 0:
                raise _Malformed(f"import descriptor {index} has no import address table")
            read = []
            for what, rva in (("import lookup table", lookup), ("import address table", first)):
                if rva:
                    read.append(self._table(rva, f"import descriptor {index}'s {what}"))
            # The loader reads the names from the lookup table, or from the address table
            # of a descriptor without one (the address table of a bound image holds addresses).
            arrays.append((f"import descriptor {index}", read[0]))
        for (index, fields), size in zip(descriptors, sizes, strict=True):
            layout.check_name(fields[3], fields[3] + size, f"import descriptor {index}'s DLL name")
        for owner, thunks in arrays:
            self._imported_names(owner, thunks, 0)
        return tuple(names)

    def _table(self, rva: int, what: str) -> tuple[int, ...]:
        """The thunks of the array at `rva` (_thunks), its bytes claimed in the import
        layout: apart from every table claimed before."""
        thunks = self._thunks(rva, what)
        self.import_layout.claim_table(rva, rva + (len(thunks) + 1) * self.optional.thunk_size, what)
        return thunks

    def _imported_names(self, owner: str, thunks: tuple[int, ...], base: int) -> None:
        """The names the by-name thunks of `owner`'s name table point to (a hint, then a
        NUL-terminated name; `base` subtracted from a VA), each read within the names
        budget and lying outside every table of the import layout."""
        ordinal_flag = 1 << (8 * self.optional.thunk_size - 1)
        for number, thunk in enumerate(thunks):
            if thunk & ordinal_flag:
                continue
            at, what = thunk - base, f"{owner}'s import {number}"
            self.import_layout.check_name(at, at + _WORD.size + 1, what)  # before it is read as one
            size = self.string_and_size(at + _WORD.size, MAX_EXPORT_NAME, f"{what}'s name")[1]
            self.import_layout.check_name(at, at + _WORD.size + size, what)

    def _thunks(self, rva: int, what: str) -> tuple[int, ...]:
        """The thunks of the array at `rva`, up to its terminating zero (not included):
        at most MAX_THUNKS, and inside the file's bytes mapped there."""
        offset, end = self.locate(rva, what)
        size = self.optional.thunk_size
        count = min((end - offset) // size, MAX_THUNKS + 1)
        words: list[int] = []
        for (word,) in struct.iter_unpack(
            "<Q" if size == 8 else "<I", self.data[offset : offset + count * size]
        ):
            if word == 0:
                return tuple(words)
            words.append(word)
        if count > MAX_THUNKS:
            raise _Malformed(f"{what} (RVA {rva:#x}) holds more than {MAX_THUNKS} thunks")
        raise _Malformed(f"{what} (RVA {rva:#x}) runs past the end of its section's data with no empty entry")

    def _delay_imports(self) -> tuple[str, ...]:
        """Every delay-load descriptor's DLL name; its name and address tables lie
        apart from the descriptors and every other table (the import layout, shared
        with the import directory's), as its imported names do."""
        found = self.directory(DELAY_IMPORT)
        if found is None:
            return ()
        descriptors = list(self.entries(found[0], _DELAY_DESCRIPTOR, "the delay-load descriptors"))
        end = found[0] + (len(descriptors) + 1) * _DELAY_DESCRIPTOR.size
        self.import_layout.claim_table(found[0], end, "the delay-load descriptors")
        names = []
        for index, fields in descriptors:
            attributes, name_rva, _, address_table, name_table = fields[:5]
            # The old form holds VAs, which the loader takes less the image's base.
            base = 0 if attributes & DELAY_RVA_BASED else self.optional.image_base
            name_rva -= base
            if name_rva <= 0:
                raise _Malformed(f"delay-load descriptor {index} names no DLL")
            what = f"delay-load descriptor {index}'s DLL name"
            name, size = self.string_and_size(name_rva, MAX_DLL_NAME, what)
            names.append(name)
            owner = f"delay-load descriptor {index}"
            # The address table holds the stubs' addresses until a call binds them: only its extent is read.
            if address_table:
                self._table(address_table - base, f"{owner}'s address table")
            thunks = self._table(name_table - base, f"{owner}'s name table") if name_table else ()
            self.import_layout.check_name(name_rva, name_rva + size, what)
            self._imported_names(owner, thunks, base)
        return tuple(names)

    def _bound_imports(self) -> tuple[str, ...]:
        """The modules of the bound import directory: each descriptor's, and those of the
        forwarder references that follow it (as many as it says, none of them ending the
        list, as the loader reads them). Names lie at offsets from the directory's start."""
        found = self.directory(BOUND_IMPORT)
        if found is None:
            return ()
        start = found[0]
        offset, end = self.locate(start, "the bound import directory")
        names: list[str] = []
        slot = 0  # descriptors and forwarder references alike take one 8-byte slot
        while True:
            if len(names) > MAX_DESCRIPTORS:
                raise _Malformed(f"its bound import entries number more than {MAX_DESCRIPTORS}")
            at = offset + slot * _BOUND_DESCRIPTOR.size
            if at + _BOUND_DESCRIPTOR.size > end:
                raise _Malformed(
                    "its bound import entries run past the end of their data with no empty entry"
                )
            stamp, name_offset, references = _BOUND_DESCRIPTOR.unpack_from(self.data, at)
            if not (stamp or name_offset or references):
                return tuple(names)
            what = f"bound import entry {slot}'s module name"
            names.append(self.string(start + name_offset, MAX_DLL_NAME, what))
            for reference in range(slot + 1, slot + 1 + references):
                at = offset + reference * _BOUND_DESCRIPTOR.size
                if at + _BOUND_DESCRIPTOR.size > end or len(names) > MAX_DESCRIPTORS:
                    raise _Malformed(
                        f"bound import entry {slot}'s {references} forwarder references do not fit"
                    )
                name_offset = _BOUND_DESCRIPTOR.unpack_from(self.data, at)[1]
                what = f"bound import entry {reference}'s module name"
                names.append(self.string(start + name_offset, MAX_DLL_NAME, what))
            slot += 1 + references

    def _exports(self) -> tuple[frozenset[str], frozenset[str], tuple[str, ...]]:
        """The exported names, those of them that forward, and the DLLs every forwarder
        (named or ordinal-only) names."""
        found = self.directory(EXPORT)
        if found is None:
            return frozenset(), frozenset(), ()
        rva, size = found
        offset = self.span(rva, _EXPORT_DIRECTORY.size, "the export directory")
        (_, _, n_functions, n_names, functions_rva, names_rva, ordinals_rva) = _EXPORT_DIRECTORY.unpack_from(
            self.data, offset
        )
        for count, what in ((n_functions, "functions"), (n_names, "names")):
            if count > MAX_EXPORTS:
                raise _Malformed(f"its export directory declares {count} {what}, more than {MAX_EXPORTS}")
        functions = self.array(functions_rva, n_functions, "I", "the export address table")
        name_rvas = self.array(names_rva, n_names, "I", "the export name table")
        ordinals = self.array(ordinals_rva, n_names, "H", "the export ordinal table")
        # A function whose RVA lies inside the export directory is a forwarder string.
        forwarders = {i for i, address in enumerate(functions) if rva <= address < rva + size}
        dlls: set[str] = set()
        for index in sorted(forwarders):
            dlls |= _forwarder_dlls(
                self.string(functions[index], MAX_EXPORT_NAME, f"export {index}'s forwarder")
            )
        exported, forwarded = set(), set()
        for index, (name_rva, ordinal) in enumerate(zip(name_rvas, ordinals, strict=True)):
            name = self.string(name_rva, MAX_EXPORT_NAME, f"export name {index}")
            if ordinal >= n_functions:
                raise _Malformed(f"export name {index} ({name}) has ordinal index {ordinal}, past its table")
            exported.add(name)
            if ordinal in forwarders:
                forwarded.add(name)
        return frozenset(exported), frozenset(forwarded), tuple(sorted(dlls))

    def _debug_entries(self) -> int:
        """How many entries the debug directory holds; their contents (of any type) are
        not read: any entry at all is what the rules refuse."""
        found = self.directory(DEBUG)
        return 0 if found is None else found[1] // _DEBUG_ENTRY_SIZE

    def _manifest(self) -> bytes | None:
        """The bytes of the resource Windows reads a program's manifest from: type
        RT_MANIFEST, ID 1, down the resource directory's three levels (type, name,
        language), which is all that is walked (so no directory can lead back to one
        before it); a manifest in more than one language is refused as ambiguous."""
        found = self.directory(RESOURCE)
        if found is None:
            return None
        base = found[0]
        rva = base
        path: list[str] = []
        for depth, wanted in enumerate((RT_MANIFEST, CREATEPROCESS_MANIFEST_RESOURCE_ID, None)):
            what = f"the resource directory {'/'.join(path) or '(root)'}"
            named, ids = _RESOURCE_DIRECTORY.unpack_from(
                self.data, self.span(rva, _RESOURCE_DIRECTORY.size, what)
            )
            if named + ids > MAX_RESOURCE_ENTRIES:
                raise _Malformed(f"{what} declares {named + ids} entries, more than {MAX_RESOURCE_ENTRIES}")
            fields = self.array(rva + _RESOURCE_DIRECTORY.size, 2 * (named + ids), "I", f"{what}'s entries")
            # Named entries come first and have the high bit set in their name; IDs follow.
            entries = list(zip(fields[2 * named :: 2], fields[2 * named + 1 :: 2], strict=True))
            if wanted is not None:
                entries = [entry for entry in entries if entry[0] == wanted]
                if not entries:
                    return None
            if len(entries) != 1:
                holds = "languages of the manifest" if wanted is None else f"entries of ID {wanted}"
                raise _Malformed(f"{what} holds {len(entries)} {holds}: which one Windows reads is ambiguous")
            identifier, child = entries[0]
            path.append(str(identifier))
            if bool(child & RESOURCE_SUBDIRECTORY) != (depth < 2):
                raise _Malformed(
                    f"{what}'s entry {identifier} points to a {'directory' if depth == 2 else 'data entry'}"
                )
            rva = base + (child & ~RESOURCE_SUBDIRECTORY)
        what = "the manifest resource"
        data_rva, size = _RESOURCE_DATA_ENTRY.unpack_from(
            self.data, self.span(rva, _RESOURCE_DATA_ENTRY.size, what)
        )
        if size > MAX_MANIFEST:
            raise _Malformed(f"{what} is {size} bytes, more than {MAX_MANIFEST}")
        offset = self.span(data_rva, size, what)
        self.charge(size)
        return self.data[offset : offset + size]


class _ImportLayout:
    """Where the import structures read so far lie (RVA ranges, end excluded): the
    import and delay-load descriptor arrays and every thunk array (the tables), kept
    sorted and apart. A
    linker writes each table apart from the others, and each name (a DLL's, or an
    imported function's hint and name) outside every table; anything else is refused,
    naming both. Checked as each is claimed, so the arrays scanned before a refusal
    add up to the file's size at most."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.tables: list[tuple[int, int, str]] = []

    def _overlapping(self, start: int, end: int) -> str | None:
        at = bisect.bisect_right(self.starts, start) - 1
        for other_start, other_end, other in self.tables[max(at, 0) : at + 2]:
            if start < other_end and other_start < end:
                return f"{other} (RVA {other_start:#x}-{other_end:#x})"
        return None

    def claim_table(self, start: int, end: int, what: str) -> None:
        other = self._overlapping(start, end)
        if other is not None:
            raise _Malformed(f"{what} (RVA {start:#x}-{end:#x}) overlaps {other}, which a linker lays apart")
        at = bisect.bisect_right(self.starts, start)
        self.starts.insert(at, start)
        self.tables.insert(at, (start, end, what))

    def check_name(self, start: int, end: int, what: str) -> None:
        other = self._overlapping(start, end)
        if other is not None:
            raise _Malformed(f"{what} (RVA {start:#x}-{end:#x}) lies in {other}, which a linker lays apart")


def _forwarder_dlls(target: str) -> set[str]:
    """The DLLs a forwarder string ("python314.PyList_New", "x.#12") makes the loader
    load: the part before the dot, with .dll when it has no extension. Split at the
    first dot and at the last, so a name like "KERNEL32.evil.F" is judged either way."""
    if "." not in target:
        raise _Malformed(f"a forwarder ({target}) names no DLL")
    modules = {target.split(".", 1)[0], target.rsplit(".", 1)[0]}
    if "" in modules:
        raise _Malformed(f"a forwarder ({target}) names no DLL")
    return {module if "." in module else f"{module}.dll" for module in modules}


def _file_header(data: bytes) -> _FileHeader:
    """The PE signature and the file header at e_lfanew, checked to lie in the file with
    the optional header they announce."""
    if len(data) < _DOS_HEADER_SIZE:
        raise _Malformed(f"its DOS header is cut short at {len(data)} bytes")
    (nt,) = _DWORD.unpack_from(data, _LFANEW_AT)
    machine, section_count, timestamp, _, _, optional_size, characteristics = _unpack(
        _FILE_HEADER, data, nt + len(PE_SIGNATURE), "the file header"
    )
    if data[nt : nt + len(PE_SIGNATURE)] != PE_SIGNATURE:
        raise _Malformed(f"no PE signature at byte {nt} (e_lfanew)")
    if section_count > MAX_SECTIONS:
        raise _Malformed(f"it declares {section_count} sections, more than {MAX_SECTIONS}")
    optional_at = nt + len(PE_SIGNATURE) + _FILE_HEADER.size
    if optional_at + optional_size > len(data):
        raise _Malformed(
            f"its optional header ({optional_size} bytes at byte {optional_at}) runs past the end of the file"
        )
    return _FileHeader(machine, section_count, timestamp, characteristics, optional_at, optional_size)


def _optional_header(data: bytes, header: _FileHeader) -> _OptionalHeader:
    """The optional header (PE32 or PE32+) the file header announces: the fields we read
    and the data directories, as many as there are at most, inside its declared size."""
    at, size = header.optional_at, header.optional_size
    magic = _unpack(_WORD, data, at, "the optional header")[0]
    if magic not in _DIRECTORY_COUNT_AT:
        raise _Malformed(f"its optional header's magic is {magic:#x}, neither PE32 nor PE32+")
    count_at = _DIRECTORY_COUNT_AT[magic]
    if size < count_at + _DWORD.size:
        raise _Malformed(f"its optional header ({size} bytes) is too short for a {magic:#x} one")
    _, _, _, image_size, headers_size, dll_characteristics = _OPTIONAL.unpack_from(data, at)
    if headers_size > len(data):
        raise _Malformed(f"its headers ({headers_size} bytes, SizeOfHeaders) run past the end of the file")
    layout, base_at = _IMAGE_BASE[magic]
    (image_base,) = layout.unpack_from(data, at + base_at)
    (count,) = _DWORD.unpack_from(data, at + count_at)
    if count > MAX_DIRECTORIES:
        raise _Malformed(f"it declares {count} data directories, more than the {MAX_DIRECTORIES} there are")
    first = count_at + _DWORD.size
    if first + count * _PAIR.size > size:
        raise _Malformed(f"its {count} data directories run past its optional header ({size} bytes)")
    directories = tuple(_PAIR.unpack_from(data, at + first + i * _PAIR.size) for i in range(count))
    thunk_size = 8 if magic == PE32_PLUS else 4
    return _OptionalHeader(image_size, headers_size, dll_characteristics, image_base, directories, thunk_size)


def _sections(data: bytes, header: _FileHeader, optional: _OptionalHeader) -> list[_Section]:
    """The section table, each section's raw data checked to lie in the file where the
    loader reads it, and the sections to follow the headers and each other in memory
    without overlapping (so an RVA lies in one section at most) inside SizeOfImage."""
    sections = []
    end_of_previous = optional.headers_size
    for index in range(header.section_count):
        at = header.optional_at + header.optional_size + index * _SECTION.size
        virtual_size, rva, raw_size, raw = _unpack(_SECTION, data, at, f"section header {index}")
        name = f"section {index} ({_text(data[at : at + 8].rstrip(NUL))})"
        if raw_size and raw % RAW_DATA_ALIGNMENT:
            raise _Malformed(
                f"{name}'s raw data starts at byte {raw}, which the loader rounds down to a multiple of "
                f"{RAW_DATA_ALIGNMENT}"
            )
        if raw_size and raw + raw_size > len(data):
            raise _Malformed(
                f"{name}'s raw data (bytes {raw}-{raw + raw_size}) runs past the end of the file "
                f"({len(data)} bytes)"
            )
        extent = virtual_size or raw_size  # a VirtualSize of 0 means the raw data's size
        if rva < end_of_previous or rva + extent > optional.image_size:
            raise _Malformed(
                f"{name} at RVA {rva:#x} ({extent} bytes) overlaps the headers or the section before it, "
                f"or lies past SizeOfImage ({optional.image_size:#x})"
            )
        end_of_previous = rva + extent
        sections.append(_Section(rva=rva, mapped=min(raw_size, extent), raw=raw))
    return sections


def pe_target(executable: Path, tree: Path) -> Target:
    """The target of a Windows interpreter (python.exe, inside `tree`), from the PE
    machine most images beside it share (python.exe, python3XX.dll, the VC runtime, ...),
    python.exe's where they are evenly split: one file of another machine is then that
    file's problem, reported by the rules in one line, not the tree's (judged for the
    wrong target, every other file would fail). A python.exe that is no PE image (a
    folder, a link, another format) raises, in one line."""
    # Raises, naming it, for all but a regular file of a bounded size holding a PE image.
    machine = pe_image(executable, tree).machine
    votes = Counter([machine])
    for path in sorted(executable.parent.iterdir()):
        if path == executable or path.suffix.lower() not in (".exe", ".dll"):
            continue
        try:
            facts = pe_facts(path, tree)
        except PyfreightError:
            continue  # the rules name it
        if facts is not None:
            votes[facts.machine] += 1
    by_machine: dict[str, Target] = {}
    for target in all_targets().values():
        if isinstance(target.files, PeFiles):
            by_machine.setdefault(target.files.machine, target)
    known = [m for m in votes if m in by_machine]  # DLLs of a machine no target builds elect nothing
    if not known:
        raise PyfreightError(f"{executable}: no target in targets/ builds {machine} PE files")
    return by_machine[max(known, key=lambda m: (votes[m], m == machine))]
