"""formats/pe.py, our own bounded PE reader, on real images linked here by the Windows
target's pinned zig (a DLL exporting two functions, a program importing it, DLLs whose
exports forward to another DLL), then on those images made hostile, one class of attack
at a time, and on images built byte by byte: each is read right, or refused in one line
naming the file, never with another exception, in time proportional to the file.

Where the expected answer depends on where a structure lies, the test finds it with a
few lines of struct of its own (Layout), never by asking the reader under test."""

from __future__ import annotations

import os
import random
import struct
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pefile
import pytest

from pyfreight.embed.zig import pinned_zig
from pyfreight.errors import PyfreightError
from pyfreight.formats import coff
from pyfreight.formats.coff_resource import manifest_object
from pyfreight.formats.manifest import PROGRAM_MANIFEST
from pyfreight.formats.pe import PeFacts, UnreadablePe, pe_facts, read_pe
from pyfreight.paths import default_workspace
from pyfreight.platforms import target_of_tree
from pyfreight.targets import all_targets
from pyfreight.verify.objects import object_problems
from pyfreight.verify.pe_rules import check_pe_tree

WINDOWS = next(t for t in all_targets().values() if t.binary_format == "pe" and t.pe.machine == "AMD64")
DEBUG, EXPORT, IMPORT, RESOURCE, BOUND_IMPORT, DELAY_IMPORT = 6, 0, 1, 2, 11, 13  # IMAGE_DIRECTORY_ENTRY_*

LIBRARY_SOURCE = """
__declspec(dllexport) int answer(void) { return 42; }
__declspec(dllexport) int other(int x) { return x + 1; }
"""
PROGRAM_SOURCE = "__declspec(dllimport) int answer(void);\nint main(void) { return answer(); }\n"
RELAY_SOURCE = "int local_one(void) { return 1; }\n"
# Module-definition files: forwarded exports, named and ordinal-only.
FORWARD_TO_MYLIB = "LIBRARY fwd.dll\nEXPORTS\nanswer = mylib.answer\nlocal_one\n"
FORWARD_TO_EVIL = "LIBRARY relay.dll\nEXPORTS\nlocal_one\nhidden = evil.answer @7 NONAME\n"


# The test's own view of an image's layout ----------------------------------------------


class Layout:
    """Where an image's structures lie, by winnt.h's offsets, for patching good images
    (no bounds checks: the images it reads are the good ones linked here)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.nt = struct.unpack_from("<I", data, 0x3C)[0]
        self.file_header = self.nt + 4
        self.optional = self.nt + 24
        pe32_plus = struct.unpack_from("<H", data, self.optional)[0] == 0x20B
        self.directory_table = self.optional + (112 if pe32_plus else 96)
        count, optional_size = struct.unpack_from("<H12xH", data, self.file_header + 2)
        self.section_table = self.optional + optional_size
        self.section_count = count
        self.sections = [
            struct.unpack_from("<8sIIII", data, self.section_table + 40 * i) for i in range(count)
        ]
        self.headers_size = struct.unpack_from("<I", data, self.optional + 60)[0]
        self.image_base = struct.unpack_from("<Q" if pe32_plus else "<I", data, self.optional + 24)[0]

    def directory(self, index: int) -> tuple[int, int]:
        return struct.unpack_from("<II", self.data, self.directory_entry(index))

    def directory_entry(self, index: int) -> int:
        """The file offset of data directory `index`'s (RVA, size) pair."""
        return self.directory_table + 8 * index

    def offset(self, rva: int) -> int:
        for _, virtual_size, address, raw_size, raw in self.sections:
            if address <= rva < address + max(virtual_size, raw_size):
                return raw + rva - address
        assert rva < self.headers_size, hex(rva)
        return rva

    def header_slack(self) -> int:
        """The first 16-aligned offset after the section table: the headers' spare bytes
        up to SizeOfHeaders, where RVA and file offset are one."""
        return (self.section_table + 40 * self.section_count + 15) & ~15

    def import_descriptors(self) -> list[tuple[int, ...]]:
        """(OriginalFirstThunk, TimeDateStamp, ForwarderChain, Name, FirstThunk) of each."""
        at = self.offset(self.directory(IMPORT)[0])
        found = []
        while any(fields := struct.unpack_from("<5I", self.data, at)):
            found.append(fields)
            at += 20
        return found

    def c_string(self, rva: int) -> str:
        at = self.offset(rva)
        return self.data[at : self.data.index(b"\0", at)].decode()


def patch(data: bytes, *changes: tuple[int, bytes]) -> bytes:
    """`data` with each (offset, bytes) written over it."""
    out = bytearray(data)
    for offset, new in changes:
        out[offset : offset + len(new)] = new
    return bytes(out)


def u32(value: int) -> bytes:
    return struct.pack("<I", value)


def with_debug_entry(data: bytes, kind: int, data_size: int = 0, data_at: int = 0) -> bytes:
    """`data` with a debug directory of one entry of type `kind` in its headers' spare
    bytes (a linked image has none: the build links stripped, as the fixture does)."""
    layout = Layout(data)
    at = layout.header_slack()
    entry = struct.pack("<IIHHIIII", 0, 0, 0, 0, kind, data_size, data_at, data_at)
    return patch(data, (at, entry), (layout.directory_entry(DEBUG), struct.pack("<II", at, len(entry))))


def synthetic(
    payload: bytes = b"",
    directories: dict[int, tuple[int, int]] | None = None,
    *,
    machine: int = 0x8664,
    characteristics: int = 0x2022,  # executable, large-address aware, DLL
    pe32: bool = False,
) -> bytes:
    """An image built byte by byte: 0x200 bytes of headers and, with a payload, one
    section `.data` at RVA 0x1000 holding it (so a structure at payload offset n has
    RVA 0x1000 + n). With no payload, no section: a stub of 512 bytes."""
    directories = directories or {}
    sections = 1 if payload else 0
    padded = payload + bytes(-len(payload) % 0x200)
    optional_size = 96 + 128 if pe32 else 112 + 128
    dos = b"MZ" + bytes(0x3A) + struct.pack("<I", 0x40)
    file_header = b"PE\0\0" + struct.pack(
        "<HHIIIHH", machine, sections, 0x5EED, 0, 0, optional_size, characteristics
    )
    image_size = 0x1000 + ((len(padded) + 0xFFF) & ~0xFFF)
    optional = bytearray(optional_size)
    struct.pack_into("<H", optional, 0, 0x10B if pe32 else 0x20B)
    struct.pack_into("<II", optional, 32, 0x1000, 0x200)  # SectionAlignment, FileAlignment
    struct.pack_into("<II", optional, 56, image_size, 0x200)  # SizeOfImage, SizeOfHeaders
    struct.pack_into("<HH", optional, 68, 3, 0x0160)  # console; ASLR (64-bit entropy) and DEP
    if pe32:
        struct.pack_into("<I", optional, 28, 0x10000000)
    else:
        struct.pack_into("<Q", optional, 24, 0x180000000)
    table = 96 if pe32 else 112
    struct.pack_into("<I", optional, table - 4, 16)
    for index, pair in directories.items():
        struct.pack_into("<II", optional, table + 8 * index, *pair)
    section = b""
    if payload:
        section = struct.pack("<8sIIII16x", b".data", len(payload), 0x1000, len(padded), 0x200)
    headers = dos + file_header + bytes(optional) + section
    return headers + bytes(0x200 - len(headers)) + padded


# Real images, linked by the pinned zig -------------------------------------------------

Images = dict[str, bytes]


@pytest.fixture(scope="session")
def images(tmp_path_factory: pytest.TempPathFactory) -> Images:
    """mylib.dll (exports answer and other), main.exe (imports mylib.dll), fwd.dll
    (forwards answer to mylib.dll), relay.dll (an ordinal-only export forwarded to
    evil.dll) and manifested.exe (main.exe with the manifest object embed links), by
    the Windows target's pinned zig as the build makes them: compiled (-O2), then
    linked stripped (-s) in a step of its own, which leaves no debug directory (linked
    in one step with the compile, lld adds a reproducibility entry)."""
    folder = tmp_path_factory.mktemp("pe")
    zig = pinned_zig(WINDOWS, default_workspace())

    def cc(*args: str) -> None:
        command = [*zig.command, *args]
        subprocess.run(command, check=True, env={**os.environ, **zig.env}, timeout=600, cwd=folder)

    for name, text in {
        "lib.c": LIBRARY_SOURCE, "main.c": PROGRAM_SOURCE, "relay.c": RELAY_SOURCE,
        "fwd.def": FORWARD_TO_MYLIB, "relay.def": FORWARD_TO_EVIL,
    }.items():  # fmt: skip
        (folder / name).write_text(text)
    for source in ("lib", "main", "relay"):
        cc("-O2", "-c", f"{source}.c", "-o", f"{source}.o")
    cc("-s", "-shared", "lib.o", "-Wl,--out-implib,mylib.lib", "-o", "mylib.dll")
    cc("-s", "main.o", "mylib.lib", "-o", "main.exe")
    (folder / "manifest.o").write_bytes(manifest_object(PROGRAM_MANIFEST, "AMD64"))
    cc("-s", "main.o", "manifest.o", "mylib.lib", "-o", "manifested.exe")
    cc("-s", "-shared", "relay.o", "fwd.def", "-Wl,--out-implib,fwd.lib", "-o", "fwd.dll")
    cc("-s", "-shared", "relay.o", "relay.def", "-Wl,--out-implib,relay.lib", "-o", "relay.dll")
    names = ("mylib.dll", "main.exe", "fwd.dll", "relay.dll", "manifested.exe")
    return {name: (folder / name).read_bytes() for name in names}


def read(data: bytes, name: str = "x.dll") -> PeFacts:
    found = read_pe(data, name)
    assert found is not None
    return found


def tree(root: Path, files: dict[str, bytes]) -> Path:
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root


def test_real_images_are_read_as_linked(images: Images):
    library, program = read(images["mylib.dll"]), read(images["main.exe"])
    assert (library.machine, library.is_dll, program.is_dll) == ("AMD64", True, False)
    assert library.exported == {"answer", "other"} and library.forwarded == frozenset()
    assert program.exported == frozenset() and program.forwarder_dlls == ()
    for facts, data in ((library, images["mylib.dll"]), (program, images["main.exe"])):
        layout = Layout(data)
        written = tuple(layout.c_string(fields[3]) for fields in layout.import_descriptors())
        assert facts.imports == written and "KERNEL32.dll" in written
        assert facts.delay_imports == () and facts.bound_imports == ()
    assert program.imports[0] == "mylib.dll"


def test_the_header_fields_are_read_where_windows_reads_them(images: Images):
    data = images["mylib.dll"]
    layout = Layout(data)
    dll_characteristics = layout.optional + 70
    everything = patch(data, (dll_characteristics, struct.pack("<H", 0x0020 | 0x0040 | 0x0100 | 0x4000)))
    assert read(everything).flags == {"high_entropy_va", "dynamic_base", "nx_compat", "guard_cf"}
    assert read(patch(data, (dll_characteristics, bytes(2)))).flags == frozenset()
    assert read(patch(data, (layout.file_header + 4, u32(1785925789)))).timestamp == 1785925789
    assert read(patch(data, (layout.file_header, struct.pack("<H", 0xAA64)))).machine == "ARM64"
    assert read(patch(data, (layout.file_header, struct.pack("<H", 0x1234)))).machine == "0x1234"
    not_a_dll = struct.pack("<H", 0x0022)
    assert read(patch(data, (layout.file_header + 18, not_a_dll))).is_dll is False


def test_byte_built_images_of_both_formats_are_read():
    stub = read(synthetic(machine=0x14C, pe32=True))
    assert (stub.machine, stub.is_dll, stub.timestamp, stub.imports) == ("I386", True, 0x5EED, ())
    assert read(synthetic()).flags == {"high_entropy_va", "dynamic_base", "nx_compat"}


def test_forwarders_name_the_dlls_they_make_windows_load(images: Images):
    forwarding = read(images["fwd.dll"])
    assert forwarding.exported == {"answer", "local_one"} and forwarding.forwarded == {"answer"}
    assert forwarding.forwarder_dlls == ("mylib.dll",)
    relay = read(images["relay.dll"])
    assert relay.exported == {"local_one"}, "the forwarder is ordinal-only"
    assert relay.forwarder_dlls == ("evil.dll",)


def test_a_good_tree_passes_and_forwarders_are_judged_by_the_allow_list(images: Images, tmp_path: Path):
    good = {name: images[name] for name in ("mylib.dll", "main.exe", "fwd.dll")}
    facts, problems = check_pe_tree(tree(tmp_path / "good", good), WINDOWS)
    assert problems == [] and sorted(f.path for f in facts) == ["fwd.dll", "main.exe", "mylib.dll"]
    facts, problems = check_pe_tree(tree(tmp_path / "relay", {"relay.dll": images["relay.dll"]}), WINDOWS)
    assert problems == ["relay.dll: forwards exports to DLLs outside the allow-list: evil.dll"]
    lonely = tree(tmp_path / "no-mylib", {"fwd.dll": images["fwd.dll"]})
    assert check_pe_tree(lonely, WINDOWS)[1] == [
        "fwd.dll: forwards exports to DLLs outside the allow-list: mylib.dll"
    ]


# A program's manifest ------------------------------------------------------------------


def test_the_manifest_object_linked_into_a_program_is_read_where_windows_reads_it(images: Images):
    """embed's manifest object (formats/coff_resource.py), linked by the pinned zig: a
    second reader, pefile, finds it as the resource Windows starts the program with
    (RT_MANIFEST 24, ID 1), holding the bytes written, and so does ours; a program
    without one and a DLL have none."""
    image = pefile.PE(data=images["manifested.exe"])
    (manifests,) = [e for e in image.DIRECTORY_ENTRY_RESOURCE.entries if e.id == 24]
    (program,) = [e for e in manifests.directory.entries if e.id == 1]
    (language,) = program.directory.entries
    entry = language.data.struct
    assert image.get_data(entry.OffsetToData, entry.Size) == PROGRAM_MANIFEST
    assert read(images["manifested.exe"]).manifest == PROGRAM_MANIFEST
    assert read(images["main.exe"]).manifest is None and read(images["mylib.dll"]).manifest is None


def _resource_entries(data: bytes) -> list[int]:
    """The file offsets of the first entry of each of the resource directory's three
    levels (type, ID, language), then of the data entry."""
    layout = Layout(data)
    base = layout.directory(RESOURCE)[0]
    found, rva = [], base
    for _ in range(3):
        found.append(layout.offset(rva) + 16)
        rva = base + (struct.unpack_from("<I", data, found[-1] + 4)[0] & 0x7FFFFFFF)
    return [*found, layout.offset(rva)]


HOSTILE_RESOURCES: dict[str, tuple[Callable[[bytes, list[int]], bytes], str]] = {
    "a directory of 65,535 entries": (
        lambda d, at: patch(d, (at[0] - 4, struct.pack("<HH", 0, 0xFFFF))),
        "the resource directory (root) declares 65535 entries, more than 4096",
    ),
    "a manifest of 2 GB": (
        lambda d, at: patch(d, (at[3] + 4, u32(0x7FFFFFF0))),
        "the manifest resource is 2147483632 bytes, more than 65536",
    ),
    "a manifest's bytes outside the file": (
        lambda d, at: patch(d, (at[3], u32(0x7FFF0000))),
        "the manifest resource at RVA 0x7fff0000 lies in none of the file's bytes",
    ),
    "a type that points to a data entry": (
        lambda d, at: patch(d, (at[0] + 4, u32(struct.unpack_from("<I", d, at[0] + 4)[0] & 0x7FFFFFFF))),
        "the resource directory (root)'s entry 24 points to a data entry",
    ),
    "a language that points to a directory": (
        lambda d, at: patch(d, (at[2] + 4, u32(struct.unpack_from("<I", d, at[2] + 4)[0] | 0x80000000))),
        "the resource directory 24/1's entry 1033 points to a directory",
    ),
    "two languages": (
        lambda d, at: patch(d, (at[2] - 4, struct.pack("<HH", 0, 2))),
        "the resource directory 24/1 holds 2 languages of the manifest",
    ),
}


@pytest.mark.parametrize("attack", sorted(HOSTILE_RESOURCES))
def test_each_hostile_resource_directory_is_refused_in_one_line(images: Images, attack: str):
    change, expected = HOSTILE_RESOURCES[attack]
    data = images["manifested.exe"]
    with pytest.raises(UnreadablePe) as caught:
        read_pe(change(data, _resource_entries(data)), "python.exe")
    message = str(caught.value)
    assert message.startswith("python.exe: not a readable PE image (") and "\n" not in message
    assert expected in message, message


def test_the_interpreters_programs_are_judged_by_their_manifest_and_others_are_not(
    images: Images, tmp_path: Path
):
    """Named as CPython's programs, an image without the manifest is one line; with it,
    none; a program of another name (pip's launchers, a user's tool) is not asked."""
    files = {"mylib.dll": images["mylib.dll"], "tool.exe": images["main.exe"]}
    for name in ("python.exe", "pythonw3.14t.exe", "Lib/venv/scripts/nt/venvlauncher.exe"):
        files[name] = images["main.exe"]
    problems = check_pe_tree(tree(tmp_path / "bare", files), WINDOWS)[1]
    assert problems == [
        f"{name}: has no manifest: Windows would tell it it runs on Windows 8 and refuse it long paths"
        for name in ("Lib/venv/scripts/nt/venvlauncher.exe", "python.exe", "pythonw3.14t.exe")
    ]
    manifested = {
        name: images["manifested.exe"] if name.endswith(".exe") else data for name, data in files.items()
    }
    assert check_pe_tree(tree(tmp_path / "manifested", manifested), WINDOWS)[1] == []


# What pefile hid, and the other ways of loading a DLL -----------------------------------


def _renamed_import(data: bytes, thunk: int | None = None) -> bytes:
    """main.exe with its mylib.dll import renamed evil.dll, and (with `thunk`) the first
    thunk of that descriptor, in both its name table and its address table, set to it."""
    layout = Layout(data)
    original, _, _, name, first = next(
        d for d in layout.import_descriptors() if layout.c_string(d[3]) == "mylib.dll"
    )
    changes = [(layout.offset(name), b"evil.dll\0")]
    if thunk is not None:
        changes += [(layout.offset(original), struct.pack("<Q", thunk))]
        changes += [(layout.offset(first), struct.pack("<Q", thunk))]
    return patch(data, *changes)


def test_an_import_whose_thunk_has_ordinal_bits_above_16_is_still_reported(images: Images, tmp_path: Path):
    """An ordinal thunk with bits set above its 16 (0x8000000000FF0001): pefile dropped
    the whole descriptor as corrupt, while Windows loads the DLL it names."""
    hostile = _renamed_import(images["main.exe"], thunk=0x8000000000FF0001)
    assert "evil.dll" in read(hostile).imports
    root = tree(tmp_path, {"main.exe": hostile})
    assert check_pe_tree(root, WINDOWS)[1] == ["main.exe: imports DLLs outside the allow-list: evil.dll"]


def test_import_descriptors_are_read_to_their_end_whatever_size_the_directory_says(images: Images):
    """Windows walks the descriptors to the empty one; a directory claiming one
    descriptor's bytes does not hide the others."""
    data = images["main.exe"]
    layout = Layout(data)
    rva, _ = layout.directory(IMPORT)
    short = patch(data, (layout.directory_entry(IMPORT), struct.pack("<II", rva, 20)))
    assert read(short).imports == read(data).imports and len(read(short).imports) > 1


def _imports_image(lookup: int, first: int, name_at: int = 0x1060, pe32: bool = False) -> bytes:
    """One import descriptor at RVA 0x1000 (then its terminator), its lookup and address
    tables at `lookup` and `first` (RVAs; 0x1030 and 0x1040 apart, each one import by
    name then a zero), the hint and name at `name_at` and the DLL's name at 0x1070."""
    thunk = "<I" if pe32 else "<Q"
    payload = bytearray(0x100)
    struct.pack_into("<5I", payload, 0, lookup, 0, 0, 0x1070, first)
    for table in (0x30, 0x40):
        struct.pack_into(thunk, payload, table, name_at)
    payload[0x60:0x6C] = b"\0\0Py_Main\0\0"
    payload[0x70:0x7A] = b"python.dll"
    return synthetic(bytes(payload), {IMPORT: (0x1000, 40)}, pe32=pe32)


@pytest.mark.parametrize("pe32", [False, True])
@pytest.mark.parametrize(
    ("lookup", "first", "name_at", "refused"),
    [
        (0x1030, 0x1040, 0x1060, None),  # as a linker lays them out
        (0x1000, 0x1040, 0x1060, "import descriptor 0's import lookup table (RVA 0x1000-0x10"),
        (0x1030, 0x1000, 0x1060, "import descriptor 0's import address table (RVA 0x1000-0x10"),
        (0x1000, 0x1000, 0x1060, "import descriptor 0's import lookup table (RVA 0x1000-0x10"),
        (0x1010, 0x1040, 0x1060, "import descriptor 0's import lookup table (RVA 0x1010-0x10"),
        (0x1030, 0x1030, 0x1060, "import descriptor 0's import address table (RVA 0x1030-0x10"),
        (0x1030, 0x1040, 0x1010, "import descriptor 0's import 0 (RVA 0x1010-0x1013) lies in the import"),
        (0x1030, 0x1040, 0x1040, "import descriptor 0's import 0 (RVA 0x1040-0x1043) lies in import"),
    ],
)  # fmt: skip
def test_import_structures_pointing_into_each_other_are_refused(
    pe32: bool, lookup: int, first: int, name_at: int, refused: str | None
):
    """Thunk arrays pointing back at the descriptors (the loader would take them for
    thunks and write addresses over them), at each other, or a hint and name inside
    a table: refused, naming both, as no linker lays them out so."""
    data = _imports_image(lookup, first, name_at, pe32)
    if refused is None:
        assert read(data).imports == ("python.dll",)
        return
    with pytest.raises(UnreadablePe) as error:
        read_pe(data, "python.exe")
    message = str(error.value)
    assert message.startswith("python.exe: not a readable PE image (") and "\n" not in message
    assert refused in message, message


def test_the_thunks_of_a_real_image_pointing_back_at_its_descriptors_are_refused(images: Images):
    """main.exe with its first descriptor's lookup and address tables both at the
    descriptor array (issue 56: validate passed such a python.exe, Wine then failed)."""
    layout = Layout(images["main.exe"])
    rva = layout.directory(IMPORT)[0]
    descriptor = layout.offset(rva)
    hostile = patch(images["main.exe"], (descriptor, u32(rva)), (descriptor + 16, u32(rva)))
    with pytest.raises(
        UnreadablePe, match=r"import descriptor 0's import lookup table .* overlaps the import"
    ):
        read_pe(hostile, "main.exe")


def _with_delay_load(data: bytes, dll: bytes, tables: tuple[int, int] | None = None) -> bytes:
    """`data` with a delay-load directory in its headers' spare bytes: one descriptor
    naming `dll`, then the empty one, then its name, then its address and name tables
    (each empty: its terminating zero) unless `tables` puts them elsewhere (offsets
    from the directory)."""
    layout = Layout(data)
    at = layout.header_slack()
    address_table, name_table = tables or (96, 104)
    descriptor = struct.pack(
        "<8I", 1, at + 64, 0x2000, at + address_table, at + name_table, 0, 0, 0
    )  # 1: RVAs
    return patch(
        data,
        (at, descriptor + bytes(32) + dll.ljust(32, b"\0") + bytes(16)),
        (layout.directory_entry(DELAY_IMPORT), struct.pack("<II", at, 64)),
    )


@pytest.mark.parametrize(
    ("tables", "refused"),
    [
        (
            (0, 104),
            "delay-load descriptor 0's address table (RVA {0:#x}-",  # to its first zero word
        ),
        (
            (96, 32),
            "delay-load descriptor 0's name table (RVA {32:#x}-{40:#x}) overlaps the delay-load descriptors",
        ),
        (
            (96, 96),
            "delay-load descriptor 0's name table (RVA {96:#x}-{104:#x}) overlaps delay-load descriptor 0's",
        ),
    ],
)
def test_delay_load_tables_pointing_back_at_the_descriptors_are_refused(
    images: Images, tables: tuple[int, int], refused: str
):
    data = _with_delay_load(images["main.exe"], b"mylib.dll", tables)
    at = Layout(images["main.exe"]).header_slack()
    expected = refused
    for offset in (0, 32, 40, 96, 104):
        expected = expected.replace(f"{{{offset}:#x}}", f"{at + offset:#x}")
    with pytest.raises(UnreadablePe) as error:
        read_pe(data, "main.exe")
    assert expected in str(error.value), str(error.value)


def test_delay_loaded_dlls_are_read_and_judged(images: Images, tmp_path: Path):
    data = images["main.exe"]
    assert read(_with_delay_load(data, b"mylib.dll")).delay_imports == ("mylib.dll",)
    # The old form (a 32-bit image's descriptor holding VAs: ImageBase + RVA).
    old = struct.pack("<8I", 0, 0x10000000 + 0x1000 + 64, 0, 0, 0, 0, 0, 0) + bytes(32) + b"mylib.dll\0"
    assert read(synthetic(old, {DELAY_IMPORT: (0x1000, 64)}, pe32=True)).delay_imports == ("mylib.dll",)
    shipped = {"mylib.dll": images["mylib.dll"]}
    root = tree(tmp_path / "ok", {"main.exe": _with_delay_load(data, b"mylib.dll"), **shipped})
    assert check_pe_tree(root, WINDOWS)[1] == []
    root = tree(tmp_path / "evil", {"main.exe": _with_delay_load(data, b"evil.dll"), **shipped})
    assert check_pe_tree(root, WINDOWS)[1] == ["main.exe: delay-loads DLLs outside the allow-list: evil.dll"]


def _with_bound_imports(data: bytes, modules: list[tuple[bytes, list[bytes]]]) -> bytes:
    """`data` with a bound import directory in its headers' spare bytes: a descriptor
    per module with its forwarder references, the empty entry, then the names, at
    offsets from the directory's start."""
    layout = Layout(data)
    at = layout.header_slack()
    slots = sum(1 + len(references) for _, references in modules) + 1
    names = b""
    entries = b""
    for module, references in modules:
        for index, name in enumerate([module, *references]):
            offset = slots * 8 + len(names)
            count = len(references) if index == 0 else 0
            entries += struct.pack("<IHH", 0x5EED if index == 0 else 0, offset, count)
            names += name + b"\0"
    directory = entries + bytes(8) + names
    return patch(
        data,
        (at, directory),
        (layout.directory_entry(BOUND_IMPORT), struct.pack("<II", at, len(directory))),
    )


def test_bound_imports_are_read_and_judged(images: Images, tmp_path: Path):
    data = images["main.exe"]
    bound = _with_bound_imports(data, [(b"KERNEL32.dll", [b"ntdll.dll"]), (b"evil.dll", [])])
    assert read(bound).bound_imports == ("KERNEL32.dll", "ntdll.dll", "evil.dll")
    root = tree(tmp_path / "one", {"main.exe": bound, "mylib.dll": images["mylib.dll"]})
    assert check_pe_tree(root, WINDOWS)[1] == [
        "main.exe: names DLLs in its bound import directory outside the allow-list: evil.dll"
    ]
    # An empty forwarder reference ends nothing: the loader counts them. Here the one
    # after KERNEL32.dll's entry names the directory's own first bytes.
    entries = struct.pack("<IHHQIHH", 0x5EED, 32, 1, 0, 0x5EED, 45, 0) + bytes(8)
    directory = entries + b"KERNEL32.dll\0evil.dll\0"
    at = Layout(data).header_slack()
    hidden = patch(
        data, (at, directory), (Layout(data).directory_entry(BOUND_IMPORT), struct.pack("<II", at, 64))
    )
    found = read(hidden).bound_imports
    assert len(found) == 3 and (found[0], found[2]) == ("KERNEL32.dll", "evil.dll")


# Hostile images, one class at a time ---------------------------------------------------


def _export_directory(data: bytes) -> int:
    layout = Layout(data)
    return layout.offset(layout.directory(EXPORT)[0])


HOSTILE: dict[str, tuple[Callable[[bytes, Layout], bytes], str]] = {
    "0xFFFF sections": (
        lambda d, layout: patch(d, (layout.file_header + 2, b"\xff\xff")),
        "it declares 65535 sections, more than 96",
    ),
    "a directory beyond the file": (
        lambda d, layout: patch(d, (layout.directory_entry(IMPORT), struct.pack("<II", 0x7FFF0000, 100))),
        "the import directory at RVA 0x7fff0000 lies in none of the file's bytes",
    ),
    "a directory of 2 GB": (
        lambda d, layout: patch(d, (layout.directory_entry(EXPORT) + 4, u32(0x7FFFFFFF))),
        "runs past the end of its section's data in the file",
    ),
    "a debug directory bomb": (
        lambda d, layout: patch(
            d, (layout.directory_entry(DEBUG), struct.pack("<II", layout.header_slack(), 0x7FFFFFF0))
        ),
        "the debug directory (RVA ",
    ),
    "2^31 export names": (
        lambda d, layout: patch(d, (_export_directory(d) + 24, u32(1 << 31))),
        "its export directory declares 2147483648 names, more than 65536",
    ),
    "2^31 export functions": (
        lambda d, layout: patch(d, (_export_directory(d) + 20, u32(1 << 31))),
        "its export directory declares 2147483648 functions, more than 65536",
    ),
    "2^32 - 1 data directories": (
        lambda d, layout: patch(d, (layout.directory_table - 4, u32(0xFFFFFFFF))),
        "it declares 4294967295 data directories, more than the 16 there are",
    ),
    "SizeOfHeaders of 2 GB": (
        lambda d, layout: patch(d, (layout.optional + 60, u32(0x80000000))),
        "its headers (2147483648 bytes, SizeOfHeaders) run past the end of the file",
    ),
    "a section of 2 GB": (
        lambda d, layout: patch(d, (layout.section_table + 16, u32(0x80000000))),
        "section 0 (.text)'s raw data (bytes 1024-2147484672) runs past the end of the file",
    ),
    "raw data the loader reads elsewhere": (
        lambda d, layout: patch(d, (layout.section_table + 20, u32(0x401))),
        "section 0 (.text)'s raw data starts at byte 1025, which the loader rounds down",
    ),
    "overlapping sections": (
        lambda d, layout: patch(d, (layout.section_table + 40 + 12, u32(0x1000))),
        "section 1 (.rdata) at RVA 0x1000",
    ),
    "a truncated file": (lambda d, layout: d[: layout.headers_size], "runs past the end of the file"),
    "an optional header past the end": (
        lambda d, layout: patch(d[: layout.headers_size], (layout.file_header + 16, b"\xff\xff")),
        "its optional header (65535 bytes at byte",
    ),
    "e_lfanew past the end": (
        lambda d, layout: patch(d, (0x3C, u32(0xFFFFFFF0))),
        "the file header at byte 4294967284 runs past the end of the file",
    ),
}


@pytest.mark.parametrize("attack", sorted(HOSTILE))
def test_each_hostile_image_is_refused_in_one_line(images: Images, attack: str):
    change, expected = HOSTILE[attack]
    data = images["mylib.dll"]
    hostile = change(data, Layout(data))
    started = time.perf_counter()
    with pytest.raises(UnreadablePe) as caught:
        read_pe(hostile, "sub/mylib.dll")
    assert time.perf_counter() - started < 0.5
    message = str(caught.value)
    assert message.startswith("sub/mylib.dll: not a readable PE image (") and "\n" not in message
    assert expected in message, message


def test_name_bombs_are_refused_within_a_budget():
    """Overlapping names cost a reader time quadratic in the file unless bounded: 60,000
    exports (forwarders, then names) each pointing at one string of 4,000 bytes."""
    count = 60_000
    long_string = b"A" * 4000 + b".F\0"
    directory_rva, table_rva = 0x1000, 0x1000 + 40
    string_rva = table_rva + 4 * count
    size = 40 + 4 * count + len(long_string)  # every function points inside: forwarders
    header = struct.pack("<12xIIIIIII", 0, 1, count, 0, table_rva, 0, 0)
    forwarders = header + struct.pack(f"<{count}I", *[string_rva] * count) + long_string
    image = synthetic(forwarders, {EXPORT: (directory_rva, size)})
    started = time.perf_counter()
    with pytest.raises(UnreadablePe, match=r"its names add up to more than 16 MiB"):
        read_pe(image, "bomb.dll")
    names_rva, ordinals_rva = table_rva, table_rva + 4 * count
    string_rva = ordinals_rva + 2 * count
    header = struct.pack("<12xIIIIIII", 0, 1, 1, count, 0x1000, names_rva, ordinals_rva)
    names = header + struct.pack(f"<{count}I", *[string_rva] * count) + bytes(2 * count) + long_string
    with pytest.raises(UnreadablePe, match=r"its names add up to more than 16 MiB"):
        read_pe(synthetic(names, {EXPORT: (directory_rva, 40)}), "bomb.dll")
    assert time.perf_counter() - started < 2


def test_a_name_with_no_end_is_refused():
    forwarder = struct.pack("<12xIIIIIII", 0, 1, 1, 0, 0x1000 + 40, 0, 0) + u32(0x1000 + 44) + b"A" * 5000
    with pytest.raises(UnreadablePe, match=r"export 0's forwarder .* at most 4096 bytes"):
        read_pe(synthetic(forwarder, {EXPORT: (0x1000, len(forwarder))}), "x.dll")
    descriptor = struct.pack("<5I", 0, 0, 0, 0x1000 + 40, 0x1000) + bytes(20) + b"B" * 300
    with pytest.raises(UnreadablePe, match=r"import descriptor 0's DLL name .* at most 256 bytes"):
        read_pe(synthetic(descriptor, {IMPORT: (0x1000, 40)}), "x.dll")


def test_a_debug_entry_of_any_type_is_one_line(images: Images, tmp_path: Path):
    """An entry of a type pefile did not expect (20: EX_DLLCHARACTERISTICS) with data
    far past the file: counted, its data never read, and the rule's one line."""
    odd = with_debug_entry(images["mylib.dll"], 20, data_size=0x7FFFFFFF, data_at=0x7FFFFFFF)
    assert read(odd).debug_entries == 1
    assert check_pe_tree(tree(tmp_path, {"mylib.dll": odd}), WINDOWS)[1] == [
        "mylib.dll: has a debug directory (1 entries): link it stripped"
    ]


MACHO = struct.pack("<IiiIIIII", 0xFEEDFACF, 0x0100000C, 0, 2, 0, 0, 0x200085, 0) + bytes(64)
ELF = b"\x7fELF\x02\x01\x01" + bytes(57)


def test_files_named_like_images_must_be_images_of_the_target(images: Images, tmp_path: Path):
    root = tree(
        tmp_path,
        {
            "python.exe": MACHO,
            "DLLs/_x.pyd": ELF,
            "readme.dll": b"just some text\n",
            "empty.dll": b"",
            "Lib/arm.dll": patch(images["mylib.dll"], (Layout(images["mylib.dll"]).file_header, b"\x64\xaa")),
            "notes.txt": MACHO,  # not named like an image: not the PE rules' business
        },
    )
    facts, problems = check_pe_tree(root, WINDOWS)
    assert [f.path for f in facts] == ["Lib/arm.dll"]
    assert problems == [
        "DLLs/_x.pyd: named like a PE image but is an ELF file",
        "empty.dll: named like a PE image but is an empty file",
        "python.exe: named like a PE image but is a Mach-O file",
        "readme.dll: named like a PE image but is a text file",
        "Lib/arm.dll: machine ARM64, not AMD64 (x86_64-pc-windows-gnullvm)",
    ]
    with pytest.raises(PyfreightError, match=r"^python.exe: named like a PE image but is a Mach-O file$"):
        target_of_tree(root)


def test_a_tree_is_judged_by_the_machine_most_of_its_images_share(tmp_path: Path):
    """One python.exe of another machine is that file's problem, in one line: the tree
    is judged for the machine its DLLs share, not for python.exe's, which would fail
    every other file. Evenly split, python.exe's machine decides; a DLL that does not
    parse has no vote (the rules name it)."""
    arm, amd, i386 = 0xAA64, 0x8664, 0x014C
    files = {"python3.dll": synthetic(machine=arm), "python314.dll": synthetic(machine=arm)}
    files |= {"vcruntime140.dll": synthetic(machine=arm), "bad.dll": b"MZ broken", "notes.exe.txt": b""}
    root = tree(tmp_path / "one-off", {**files, "python.exe": synthetic(machine=amd, characteristics=0x22)})
    assert target_of_tree(root).triple == "aarch64-pc-windows-gnullvm"
    problems = check_pe_tree(root, target_of_tree(root))[1]
    assert [p for p in problems if "machine" in p] == [
        "python.exe: machine AMD64, not ARM64 (aarch64-pc-windows-gnullvm)"
    ]
    # i686's python.exe with its machine field made AMD64: a PE32 image without 64-bit
    # ASLR, which only a 64-bit machine asks for. Its one problem is its machine.
    flipped = patch(synthetic(machine=amd, pe32=True, characteristics=0x22), (0x58 + 70, b"\x40\x01"))
    i686 = {name: synthetic(machine=i386, pe32=True) for name in ("python3.dll", "python314.dll")}
    root = tree(tmp_path / "i686", {**i686, "python.exe": flipped})
    assert [p for p in check_pe_tree(root, target_of_tree(root))[1] if p.startswith("python.exe")] == [
        "python.exe: machine AMD64, not I386 (i686-pc-windows-gnullvm)"
    ]
    split = {"python.exe": synthetic(machine=i386, pe32=True, characteristics=0x22)}
    split |= {"python3.dll": synthetic(machine=amd), "python314.dll": synthetic(machine=i386, pe32=True)}
    assert target_of_tree(tree(tmp_path / "split", split)).triple == "i686-pc-windows-gnullvm"
    mips = {f"m{n}.dll": synthetic(machine=0x0166) for n in range(3)}  # a machine no target builds
    outvoted = tree(tmp_path / "mips", {**mips, "python.exe": synthetic(machine=arm, characteristics=0x22)})
    assert target_of_tree(outvoted).triple == "aarch64-pc-windows-gnullvm"


def test_a_file_too_large_or_not_regular_is_a_problem_not_an_exception(tmp_path: Path):
    big = tmp_path / "big.dll"
    with big.open("wb") as handle:  # sparse: no disk is used
        handle.truncate(300 << 20)
    (tmp_path / "python.exe").mkdir()
    facts, problems = check_pe_tree(tmp_path, WINDOWS)
    assert facts == [] and len(problems) == 1
    assert problems[0].startswith("big.dll: 314572800 bytes, larger than any binary of ours")
    with pytest.raises(PyfreightError, match=r"python.exe: a folder where a file is expected"):
        target_of_tree(tmp_path)


def test_a_hostile_file_name_stays_one_line(tmp_path: Path):
    name = "evil\n\x1b[2Jname.dll"
    (tmp_path / name).write_bytes(b"text")
    assert check_pe_tree(tmp_path, WINDOWS)[1] == [
        "evil\\n\\x1b[2Jname.dll: named like a PE image but is a text file"
    ]


def test_three_thousand_tiny_dlls_are_read_in_seconds(tmp_path: Path):
    """pefile collected garbage as each image was closed: 3,000 stubs took 150 s (here
    about 0.4 s; 20,000 about 2.5 s)."""
    stub = synthetic()
    for index in range(3_000):
        (tmp_path / f"stub{index:04}.dll").write_bytes(stub)
    started = time.perf_counter()
    facts, problems = check_pe_tree(tmp_path, WINDOWS)
    elapsed = time.perf_counter() - started
    assert len(facts) == 3_000 and problems == []
    assert elapsed < 3, f"{elapsed:.1f} s"


def test_a_tree_too_deep_to_walk_is_one_line(tmp_path: Path):
    deep = tmp_path.joinpath(*["d"] * 70)
    deep.mkdir(parents=True)
    (deep / "x.dll").write_bytes(synthetic())
    facts, problems = check_pe_tree(tmp_path, WINDOWS)
    assert facts == [] and len(problems) == 1 and "more than 64 folders deep" in problems[0]


# Random damage -----------------------------------------------------------------------

EXTREMES = (0, 1, 0x7F, 0xFF, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF)


def _targets(data: bytes) -> list[int]:
    """The offsets worth damaging: the headers, and every data directory read."""
    layout = Layout(data)
    offsets = list(range(layout.headers_size))
    for index in (EXPORT, IMPORT, DEBUG):
        rva, size = layout.directory(index)
        if rva:
            start = layout.offset(rva)
            offsets += range(start, start + max(size, 64))
    return [offset for offset in offsets if offset + 4 <= len(data)]


def _mutate(data: bytes, chance: random.Random, where: list[int]) -> bytes:
    out = bytearray(data)
    for _ in range(chance.randint(1, 6)):
        at = chance.choice(where) & ~3
        if chance.random() < 0.5:
            out[at] = chance.randrange(256)
        else:
            value = chance.choice(EXTREMES) if chance.random() < 0.7 else chance.getrandbits(32)
            out[at : at + 4] = struct.pack("<I", value)
    if chance.random() < 0.05:
        del out[chance.randrange(len(out)) :]
    return bytes(out)


def _every_directory(images: Images, name: str) -> bytes:
    """The image to damage: with a debug entry (mylib.dll), or delay-load and bound
    import directories (main.exe, both in its headers), so each reader is damaged too."""
    data = images[name]
    if name == "mylib.dll":
        return with_debug_entry(data, 2, data_size=24, data_at=0x1000)
    if name == "main.exe":
        bound = _with_bound_imports(data, [(b"KERNEL32.dll", [b"ntdll.dll"])])
        layout = Layout(bound)
        at = layout.header_slack() + 64
        descriptor = struct.pack("<8I", 1, at + 64, 0, 0, 0, 0, 0, 0) + bytes(32) + b"mylib.dll\0"
        return patch(
            bound, (at, descriptor), (layout.directory_entry(DELAY_IMPORT), struct.pack("<II", at, 64))
        )
    return data


@pytest.mark.parametrize("name", ["mylib.dll", "main.exe", "fwd.dll"])
def test_random_damage_gives_facts_or_one_line_and_nothing_else(images: Images, name: str):
    data = _every_directory(images, name)
    undamaged = read(data)
    assert (undamaged.debug_entries, undamaged.delay_imports, undamaged.bound_imports) == {
        "mylib.dll": (1, (), ()),
        "main.exe": (0, ("mylib.dll",), ("KERNEL32.dll", "ntdll.dll")),
        "fwd.dll": (0, (), ()),
    }[name]
    chance = random.Random(f"pe-{name}")
    where = _targets(data)
    outcomes = {"read": 0, "refused": 0}
    slowest = 0.0
    for _ in range(300):
        damaged = _mutate(data, chance, where)
        started = time.perf_counter()
        try:
            found = read_pe(damaged, name)
        except UnreadablePe as exc:
            assert str(exc).startswith(f"{name}: not a readable PE image (") and "\n" not in str(exc)
            outcomes["refused"] += 1
        else:
            assert isinstance(found, PeFacts) or (found is None and damaged[:2] != b"MZ")
            outcomes["read"] += 1
        slowest = max(slowest, time.perf_counter() - started)
    assert slowest < 0.5, f"{slowest:.2f} s for one image"
    assert outcomes["read"] > 10 and outcomes["refused"] > 10, outcomes


def test_every_truncation_of_an_image_is_refused_or_read(images: Images):
    data = images["mylib.dll"]
    for length in range(0, Layout(data).headers_size + 64):
        try:
            read_pe(data[:length], "cut.dll")
        except UnreadablePe as exc:
            assert "\n" not in str(exc)


def test_pe_facts_reads_through_the_untrusted_reader(images: Images, tmp_path: Path):
    (tmp_path / "mylib.dll").write_bytes(images["mylib.dll"])
    os.symlink("mylib.dll", tmp_path / "link.dll")
    facts = pe_facts(tmp_path / "mylib.dll", tmp_path)
    assert facts is not None and facts.path == "mylib.dll"
    with pytest.raises(PyfreightError, match=r"^link.dll: a symlink where a file is expected"):
        pe_facts(tmp_path / "link.dll", tmp_path)


# COFF objects: the names of their symbols -----------------------------------------------


def coff_object(names: list[bytes], machine: int = 0x8664) -> bytes:
    """A COFF object of no sections whose symbols are named `names` (a name of more
    than 8 bytes in the string table, as linkers write it), by winnt.h's layout."""
    records, strings = b"", b""
    for name in names:
        if len(name) <= 8:
            field = name.ljust(8, b"\0")
        else:
            field = b"\0\0\0\0" + struct.pack("<I", 4 + len(strings))
            strings += name + b"\0"
        records += struct.pack("<8sIhHBB", field, 0, 0, 0, 2, 0)  # external, undefined
    header = struct.pack("<HHIIIHH", machine, 0, 0, 20, len(names), 0, 0)
    return header + records + struct.pack("<I", 4 + len(strings)) + strings


def gnu_ar(members: dict[str, bytes]) -> bytes:
    """A static library (GNU's and a Windows .lib's ar layout) of `members`."""
    out = b"!<arch>\n"
    for name, data in members.items():
        out += f"{name + '/':<16}{0:<12}{0:<6}{0:<6}{644:<8}{len(data):<10}`\n".encode() + data
        out += b"\n" * (len(data) % 2)
    return out


def test_a_coff_objects_symbol_names_are_read_short_and_long():
    data = coff_object([b"main", b"Py_Initialize", b"_PyRuntime_Long_Name"])
    assert list(coff.symbol_names(data)) == [
        (0, b"main"),
        (1, b"Py_Initialize"),
        (2, b"_PyRuntime_Long_Name"),
    ]
    assert coff.is_coff_object(data) and not coff.is_coff_object(b"BC\xc0\xde" + bytes(60))


def test_a_string_table_whose_size_says_zero_is_empty_as_windres_writes_it():
    """The Windows build's resource objects (python_exe.rc.o) end with a string table
    whose size field is 0, not 4: read as an empty table (as LLVM reads it), so the
    objects' short names are read and a long name pointing into it is refused."""
    short = coff_object([b"main", b".rsrc"])
    said_zero = short[:-4] + struct.pack("<I", 0)
    assert list(coff.symbol_names(said_zero)) == [(0, b"main"), (1, b".rsrc")]
    long_name = coff_object([b"Py_Initialize"])
    at = len(long_name) - len(b"Py_Initialize\0") - 4
    with pytest.raises(coff.UnreadableCoff, match=r"symbol 0's name .* is outside the string table"):
        list(coff.symbol_names(long_name[:at] + struct.pack("<I", 0)))


def _object_tree(root: Path, files: dict[str, bytes]) -> Path:
    return tree(root / "build", files)


@pytest.mark.parametrize(
    ("names", "problem"),
    [
        ([b"main", b"Py_Marker_\xff\xfe"], "symbol 1's name (Py_Marker_\\xff\\xfe) is not UTF-8"),
        ([b"\xc0\xaf", b"main"], "symbol 0's name (\\xc0\\xaf) is not UTF-8"),  # a short name
        ([b"Py_Initialize", "Py_Ünïcode_wörks".encode()], None),
    ],
)
def test_a_coff_object_whose_symbol_name_is_not_utf8_is_named(
    tmp_path: Path, names: list[bytes], problem: str | None
):
    """As an object of the build (build/core/main.o), and as a member of a static
    library (a .lib), named by the library and the member."""
    bad = coff_object(names)
    build = _object_tree(tmp_path, {"core/main.o": bad, "lib/python.lib": gnu_ar({"x.obj": bad})})
    found = object_problems(build, "python/build")
    if problem is None:
        assert found == []
        return
    assert [member for member, _ in found] == [
        "python/build/core/main.o",
        "python/build/lib/python.lib(x.obj)",
    ]
    for _, message in found:
        assert message == f"{problem}, as packers read the names"


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (
            coff_object([b"Py_" + b"x" * 5000]),
            "symbol 0's name (at 4) is unterminated or longer than 4096 bytes",
        ),
        (coff_object([b"Py_Initialize"])[:-3], "its string table (18 bytes at byte 38) does not fit it"),
        (
            coff_object([b"Py_Initialize"])[:30],
            "its 1 symbols at byte 20 and their string table run past its end",
        ),
    ],
)
def test_a_coff_object_that_does_not_fit_is_one_line(tmp_path: Path, data: bytes, problem: str):
    found = object_problems(_object_tree(tmp_path, {"core/main.o": data}), "python/build")
    assert len(found) == 1 and found[0][0] == "python/build/core/main.o"
    assert found[0][1].startswith(f"not a readable object ({problem}"), found


def test_coff_names_all_pointing_at_one_long_name_are_refused_quickly(tmp_path: Path):
    """Forty thousand symbols naming one name of 4000 bytes: 160 MB of names from an
    object of 700 KB, unless the names read are bounded by its size."""
    one = coff_object([b"Py_" + b"x" * 3997])
    symbols = one[20:38]
    data = one[:12] + struct.pack("<I", 40_000) + one[16:20] + symbols * 40_000 + one[38:]
    started = time.monotonic()
    found = object_problems(_object_tree(tmp_path, {"core/main.o": data}), "python/build")
    assert time.monotonic() - started < 2
    assert found == [
        (
            "python/build/core/main.o",
            "not a readable object (its symbols' names add up to more than 2 times its size)",
        )
    ]
