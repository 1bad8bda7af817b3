"""formats/macho.py on hostile input made here byte by byte (no linker needed; the real
files made hostile are in test_macho_rules.py): what reading a file costs grows with
the file, never faster, and whatever a file or a tree holds is one line, never a hang
nor another exception. The layouts are written here with struct from <mach-o/loader.h>
and <mach-o/fat.h>, not with the reader's own tables."""

from __future__ import annotations

import os
import signal
import struct
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from pyfreight.errors import PyfreightError
from pyfreight.formats.macho import (
    FatMacho,
    UnreadableMacho,
    macho_facts,
    macho_files,
    macho_target,
    starts_like_macho,
    symbol_names,
)
from pyfreight.formats.untrusted import UntrustedFile
from pyfreight.targets import all_targets
from pyfreight.verify.macho_rules import check_macho_tree
from pyfreight.verify.objects import object_problems

ARM = all_targets()["aarch64-apple-darwin"]
ARM64, X86_64 = 0x0100000C, 0x01000007
LC_SYMTAB, LC_DYLD_EXPORTS_TRIE = 0x2, 0x80000033


class TookTooLong(Exception):
    """Not TimeoutError: that is an OSError, which a reader may catch and go on."""


@contextmanager
def at_most(seconds: int) -> Iterator[None]:
    """Fails the test, rather than hanging it, when the block takes longer (the alarm
    interrupts a blocking open or read too), and again each second after."""

    def expire(signum: int, frame: object) -> None:
        raise TookTooLong(f"took more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds, 1)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def thin(commands: list[bytes], payload: bytes = b"") -> bytes:
    """A thin arm64 dylib of `commands` (each a whole load command), then `payload`,
    which starts at payload_at(commands)."""
    body = b"".join(commands)
    header = struct.pack("<IiiIIIII", 0xFEEDFACF, ARM64, 0, 6, len(commands), len(body), 0x80, 0)
    return header + body + payload


def payload_at(commands: list[bytes]) -> int:
    return 32 + sum(len(c) for c in commands)


def exports_trie_command(offset: int, size: int) -> bytes:
    return struct.pack("<IIII", LC_DYLD_EXPORTS_TRIE, 16, offset, size)


def symtab_command(symoff: int, nsyms: int, stroff: int, strsize: int) -> bytes:
    return struct.pack("<IIIIII", LC_SYMTAB, 24, symoff, nsyms, stroff, strsize)


def uleb4(value: int) -> bytes:
    """`value` as a ULEB128 number of exactly four bytes (padded, as linkers may)."""
    return bytes([(value & 0x7F) | 0x80, ((value >> 7) & 0x7F) | 0x80, ((value >> 14) & 0x7F) | 0x80,
                  (value >> 21) & 0x7F])  # fmt: skip


def chain_trie(depth: int, label: bytes) -> bytes:
    """An export trie that is one chain: `depth` nodes of one edge each, every edge
    labelled `label`; the last node exports the name they spell."""
    node_size = 2 + len(label) + 1 + 4  # info size 0, one child, the label and NUL, the offset
    nodes = [b"\x00\x01" + label + b"\x00" + uleb4((index + 1) * node_size) for index in range(depth)]
    return b"".join(nodes) + b"\x02\x00\x00\x00"  # terminal: 2 bytes of info (flags, address)


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_a_small_export_trie_is_read(tmp_path: Path):
    """The control for what follows: a trie of _a and _ab (a node exporting _a with an
    edge to one exporting _ab) gives exactly those names."""
    trie = b"\x00\x01_a\x00\x06" + b"\x02\x00\x00\x01b\x00\x0d" + b"\x02\x00\x00\x00"
    commands = [exports_trie_command(0, 0)]
    commands = [exports_trie_command(payload_at(commands), len(trie))]
    facts = macho_facts(write(tmp_path / "t.dylib", thin(commands, trie)), tmp_path)
    assert facts is not None and facts.exported == {"a", "ab"}


@pytest.mark.parametrize("label", [b"a", b"Py_Something"])
def test_an_export_trie_that_is_one_long_chain_is_refused_quickly(tmp_path: Path, label: bytes):
    """A million nodes, each one edge deeper: building each name from its parent's
    costs the sum of all their lengths (half a million million bytes for one-byte
    labels) unless the copying is charged; it is refused in one line, at once."""
    trie = chain_trie(1_200_000, label)
    commands = [exports_trie_command(0, 0)]
    commands = [exports_trie_command(payload_at(commands), len(trie))]
    path = write(tmp_path / "chain.dylib", thin(commands, trie))
    started = time.monotonic()
    with at_most(20), pytest.raises(UnreadableMacho) as refused:
        macho_facts(path, tmp_path)
    assert time.monotonic() - started < 2
    message = str(refused.value)
    assert message.startswith("chain.dylib: not a readable Mach-O file (the export trie's node at ")
    assert "\n" not in message


def test_an_export_trie_whose_edges_share_a_node_is_refused(tmp_path: Path):
    """Two edges to one node would let a small trie name exponentially many paths."""
    trie = b"\x00\x02a\x00\x08b\x00\x08" + b"\x02\x00\x00\x00"
    commands = [exports_trie_command(0, 0)]
    commands = [exports_trie_command(payload_at(commands), len(trie))]
    with pytest.raises(UnreadableMacho, match=r"^t.dylib: .*node at 8 is revisited"):
        macho_facts(write(tmp_path / "t.dylib", thin(commands, trie)), tmp_path)


def _symbol_file(strx: list[int], strings: bytes) -> bytes:
    """A dylib whose symbol table holds one external defined symbol (N_SECT|N_EXT) per
    name offset in `strx`, over the string table `strings`."""
    commands = [symtab_command(0, 0, 0, 0)]
    symoff = payload_at(commands)
    table = b"".join(struct.pack("<IBBHQ", x, 0x0F, 1, 0, 0x1000) for x in strx)
    stroff = symoff + len(table)
    commands = [symtab_command(symoff, len(strx), stroff, len(strings))]
    return thin(commands, table + strings)


def test_symbol_names_pointing_anywhere_are_refused_in_one_line(tmp_path: Path):
    strings = b"\0_Py_Initialize\0_PyList_New\0"
    facts = macho_facts(write(tmp_path / "ok.dylib", _symbol_file([1, 16], strings)), tmp_path)
    assert facts is not None and facts.exported == {"Py_Initialize", "PyList_New"}
    for bad in (len(strings), len(strings) + 1000, 0xFFFFFFFF):
        path = write(tmp_path / "bad.dylib", _symbol_file([1, bad], strings))
        with pytest.raises(UnreadableMacho) as refused:
            macho_facts(path, tmp_path)
        assert str(refused.value) == (
            f"bad.dylib: not a readable Mach-O file (symbol 1's name (at {bad}) is outside the string table)"
        )


def test_symbol_names_all_pointing_at_one_long_name_are_refused_quickly(tmp_path: Path):
    """Twenty thousand symbols naming one name of 4000 bytes (as long as a name may
    be): each is read anew, 80 MB in all unless the names read are bounded in total."""
    strings = b"\0_" + b"x" * 4000 + b"\0"
    path = write(tmp_path / "many.dylib", _symbol_file([1] * 20_000, strings))
    started = time.monotonic()
    with at_most(20), pytest.raises(UnreadableMacho, match=r"^many.dylib: .*names add up to more than"):
        macho_facts(path, tmp_path)
    assert time.monotonic() - started < 2


@pytest.mark.parametrize(("size", "byte"), [(4097, b"x"), (16 << 20, b"\x01")])
def test_a_symbol_name_longer_than_any_linker_writes_is_refused_before_it_is_copied(
    tmp_path: Path, size: int, byte: bytes
):
    """One external name longer than MAX_NAME_BYTES (one of 60 MiB of escapes took 3.7
    GB to decode and print): refused by its length, at once, with nothing of it copied
    nor decoded; one a byte shorter is read."""
    name = b"_" + byte * (size - 1)
    fits = _symbol_file([1], b"\0" + name[:4096] + b"\0")
    facts = macho_facts(write(tmp_path / "ok.dylib", fits), tmp_path)
    assert facts is not None and len(facts.exported) == 1  # 4095 bytes, without the underscore
    long = _symbol_file([1], b"\0" + name + b"\0")
    path = write(tmp_path / "long.dylib", long)
    started = time.monotonic()
    tracemalloc.start()
    try:
        with at_most(20), pytest.raises(UnreadableMacho) as refused:
            macho_facts(path, tmp_path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(refused.value) == (
        "long.dylib: not a readable Mach-O file (symbol 0's name (at 1) is unterminated or longer "
        "than 4096 bytes, the longest a linker writes)"
    )
    assert time.monotonic() - started < 2
    assert peak < 2 * len(long) + (1 << 20)  # the file and its string table read, no more


def test_a_second_symbol_table_is_refused(tmp_path: Path):
    """Each would be read in full: a thousand of them would cost a thousand times the file."""
    strings = b"\0_a\0"
    one = _symbol_file([1], strings)
    command = one[32:56]
    body = command * 2
    header = struct.pack("<IiiIIIII", 0xFEEDFACF, ARM64, 0, 6, 2, len(body), 0x80, 0)
    # The table's offsets shift by the second command's 24 bytes: not read, it is refused first.
    path = write(tmp_path / "two.dylib", header + body + one[56:])
    with pytest.raises(UnreadableMacho) as refused:
        macho_facts(path, tmp_path)
    assert str(refused.value) == (
        "two.dylib: not a readable Mach-O file (load command 1 is a second LC_SYMTAB, "
        "which a file has once at most)"
    )


def _fat(count: int, arches: list[tuple[int, int, int]], size: int, wide: bool = False) -> bytes:
    """A fat header declaring `count` slices, with the fat_arch (or fat_arch_64) entries
    (cputype, offset, size) given, padded with zeros to `size` bytes."""
    if wide:
        head = struct.pack(">II", 0xCAFEBABF, count)
        head += b"".join(struct.pack(">iiQQII", cpu, 0, off, n, 14, 0) for cpu, off, n in arches)
    else:
        head = struct.pack(">II", 0xCAFEBABE, count)
        head += b"".join(struct.pack(">iiIII", cpu, 0, off, n, 14) for cpu, off, n in arches)
    return head.ljust(size, b"\0")


@pytest.mark.parametrize(
    ("data", "described"),
    [
        (_fat(2, [(ARM64, 64, 64), (X86_64, 128, 64)], 192), "ARM64, X86_64"),
        # More slices than any fat file has, each header read: only a few are listed.
        (_fat(30, [(ARM64, 4096 * (1 + i), 4096) for i in range(30)], 4096 * 31),
         "30 slices: ARM64, ARM64, ARM64, ARM64, …"),
        (_fat(0xFFFFFFFF, [(ARM64, 1 << 20, 64)], 40),
         "4294967295 slices: ARM64 outside the file (bytes 1048576-1048640), "
         "slice 1's header past the end of the file, …"),
        (_fat(2, [(ARM64, 64, 64), (X86_64, 96, 64)], 192), "ARM64, X86_64 overlapping another slice"),
        (_fat(1, [(ARM64, 0, 64)], 64), "ARM64 outside the file (bytes 0-64)"),
        (_fat(2, [(ARM64, 1 << 40, 1 << 62), (ARM64, 96, 32)], 128, wide=True),
         f"ARM64 outside the file (bytes {1 << 40}-{(1 << 40) + (1 << 62)}), ARM64"),
        (_fat(0, [], 8), "no slices"),
        (b"\xca\xfe\xba\xbe\0\0", "its header is cut short"),
    ],
)  # fmt: skip
def test_any_file_with_a_fat_magic_is_refused_as_fat_whatever_it_declares(
    tmp_path: Path, data: bytes, described: str
):
    path = write(tmp_path / "lib/x.dylib", data)
    assert starts_like_macho(data[:64])
    with pytest.raises(FatMacho) as refused:
        macho_facts(path, tmp_path)
    assert str(refused.value) == f"lib/x.dylib: fat/universal file ({described}): ship thin files"


def test_a_fifo_is_neither_read_nor_waited_for(tmp_path: Path):
    """A fifo where a binary should be would block an open() for reading until a writer
    came: refused in one line instead, and left out of the walk where no binary must be."""
    os.mkfifo(tmp_path / "python3.14")
    os.mkfifo(tmp_path / "pipe")
    with at_most(10):
        with pytest.raises(UntrustedFile) as refused:
            macho_facts(tmp_path / "python3.14", tmp_path)
        assert str(refused.value) == (
            "python3.14: not a regular file (a fifo, device or socket); the tree is not trusted"
        )
        with pytest.raises(PyfreightError):
            macho_target(tmp_path / "python3.14")
        assert list(macho_files(tmp_path)) == []
        assert check_macho_tree(tmp_path, ARM) == ([], [])


def test_the_interpreter_is_read_through_its_symlink_and_a_loop_is_not_one(tmp_path: Path):
    """bin/python3 is a symlink to python3.X: callers ask about it by that name."""
    write(tmp_path / "bin/python3.14", thin([]))
    (tmp_path / "bin/python3").symlink_to("python3.14")
    (tmp_path / "bin/loop").symlink_to("loop")
    assert macho_target(tmp_path / "bin/python3") == ARM
    with pytest.raises(PyfreightError):
        macho_target(tmp_path / "bin/loop")


def test_a_sparse_file_declaring_gigabytes_is_refused_unread(tmp_path: Path):
    path = write(tmp_path / "lib/libpython3.14.dylib", thin([]))
    os.truncate(path, 6 << 30)
    with at_most(10):
        started = time.monotonic()
        with pytest.raises(UntrustedFile) as refused:
            macho_facts(path, tmp_path)
        assert str(refused.value) == (
            f"lib/libpython3.14.dylib: {6 << 30} bytes, larger than any binary of ours (256 MiB); "
            "the tree is not trusted"
        )
        assert check_macho_tree(tmp_path, ARM) == ([], [str(refused.value)])
        assert time.monotonic() - started < 2


def test_names_in_messages_are_one_printable_line(tmp_path: Path):
    """A file name may hold a newline or a terminal escape: the line naming it may not."""
    write(tmp_path / "lib/a\nb\x1b[2J.dylib", b"MZ\x90\x00")
    lines = check_macho_tree(tmp_path, ARM)[1]
    assert lines == [
        "lib/a\\nb\\x1b[2J.dylib: a Windows (PE) file, "
        "not a thin Mach-O file for ARM64 (aarch64-apple-darwin)"
    ]


def test_a_tree_deeper_than_any_of_ours_is_one_line(tmp_path: Path):
    deep = tmp_path.joinpath(*["d"] * 70)
    write(deep / "x.dylib", thin([]))
    facts, lines = check_macho_tree(tmp_path, ARM)
    assert facts == [] and len(lines) == 1 and "more than 64 folders deep" in lines[0]


LC_RPATH, LC_CODE_SIGNATURE = 0x8000001C, 0x1D


def test_a_load_command_string_longer_than_any_path_is_refused(tmp_path: Path):
    """An rpath (as a dylib's name, the dynamic linker, a DYLD_* variable) is at most
    MAX_NAME_BYTES, looked for no further: dyld opens no path longer than 1024 bytes."""
    for length, refused in ((4096, False), (4097, True)):
        text = b"@loader_path/" + b"x" * (length - 13) + b"\0"
        size = 12 + len(text) + (-(12 + len(text)) % 8)
        command = struct.pack("<III", LC_RPATH, size, 12) + text.ljust(size - 12, b"\0")
        path = write(tmp_path / "r.dylib", thin([command]))
        if not refused:
            facts = macho_facts(path, tmp_path)
            assert facts is not None and len(facts.rpaths[0]) == length
            continue
        with pytest.raises(UnreadableMacho) as error:
            macho_facts(path, tmp_path)
        assert str(error.value) == (
            "r.dylib: not a readable Mach-O file (load command 0's rpath (at 12) is unterminated or "
            "longer than 4096 bytes, the longest a linker writes)"
        )


def _signed(identifier: bytes, extra_slots: int = 0, filler: int = 0) -> bytes:
    """A thin file whose code signature is a SuperBlob holding one CodeDirectory (no
    page hashes) with `identifier`; with `extra_slots`, as many more index entries of
    slots of their own, all naming one blob of `filler` bytes."""
    commands = [struct.pack("<IIII", LC_CODE_SIGNATURE, 16, 0, 0)]
    dataoff = payload_at(commands)
    directory = struct.pack(">9I4BI", 0xFADE0C02, 0, 0x20400, 0x20002, 0, 44, 0, 0, dataoff, 32, 2, 0, 12, 0)
    directory += identifier + b"\0"
    directory = directory[:4] + struct.pack(">I", len(directory)) + directory[8:]
    count = 1 + extra_slots
    first = 12 + 8 * count
    index = struct.pack(">II", 0, first)
    big_at = first + len(directory)
    index += b"".join(struct.pack(">II", 0x1000 + i, big_at) for i in range(extra_slots))
    big = struct.pack(">II", 0xFADE0C01, filler).ljust(filler, b"\0") if extra_slots else b""
    body = index + directory + big
    superblob = struct.pack(">III", 0xFADE0CC0, 12 + len(body), count) + body
    commands = [struct.pack("<IIII", LC_CODE_SIGNATURE, 16, dataoff, len(superblob))]
    return thin(commands, superblob)


def test_a_code_directory_identifier_longer_than_any_linker_writes_is_a_problem_not_a_copy(tmp_path: Path):
    """An identifier of 16 MiB (one of 80 MiB took 3.7 GB): a problem of the signature,
    found with nothing of it copied or decoded."""
    fits = macho_facts(write(tmp_path / "ok.dylib", _signed(b"python3.14")), tmp_path)
    assert fits is not None and fits.signature is not None and fits.signature.identifier == "python3.14"
    data = _signed(b"\x01" * (16 << 20))
    path = write(tmp_path / "long.dylib", data)
    tracemalloc.start()
    try:
        with at_most(20):
            facts = macho_facts(path, tmp_path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert facts is not None and facts.signature is not None and facts.signature.identifier == ""
    assert "its CodeDirectory's identifier is longer than 4096 bytes, the longest a linker writes" in (
        facts.signature.problems
    )
    assert peak < 3 * len(data)  # the file, and its CodeDirectory once


def test_a_superblob_indexing_one_big_blob_many_times_copies_it_at_most_once(tmp_path: Path):
    """Two thousand slots naming one blob of 512 KiB: a copy each would be 1 GiB."""
    data = _signed(b"python3.14", extra_slots=2000, filler=512 << 10)
    path = write(tmp_path / "slots.dylib", data)
    tracemalloc.start()
    try:
        with at_most(20):
            facts = macho_facts(path, tmp_path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert facts is not None and facts.signature is not None and facts.signature.identifier == "python3.14"
    assert peak < 3 * len(data)


def bsd_ar(members: dict[str, bytes]) -> bytes:
    """A static library in BSD ar's layout (Apple's, llvm-ar's for Darwin): each
    member's name (#1/LEN) in the first LEN bytes of its data, after a symbol index."""
    out = b"!<arch>\n"
    for name, data in {"__.SYMDEF SORTED": bytes(8), **members}.items():
        raw = name.encode().ljust(-(-len(name) // 8) * 8, b"\0")
        body = raw + data
        out += f"{'#1/' + str(len(raw)):<16}{0:<12}{0:<6}{0:<6}{644:<8}{len(body):<10}`\n".encode() + body
        out += b"\n" * (len(body) % 2)
    return out


def test_a_macho_objects_symbol_name_that_is_not_utf8_is_named(tmp_path: Path):
    """Every entry of the symbol table (not only the external ones), in an object of
    the build and in a static library's member (a BSD long name), named by both."""
    strings = b"\0_Py_Initialize\0_Py_Marker_\xff\xfe\xc0\0_\xc3\xa9t\xc3\xa9\0"
    data = _symbol_file([1, 16, 31], strings)
    assert symbol_names(data, "m.o") == [
        (0, b"_Py_Initialize"),
        (1, b"_Py_Marker_\xff\xfe\xc0"),
        (2, "_été".encode()),
    ]
    build = tmp_path / "build"
    write(build / "core/main.o", data)
    write(
        build / "lib/libpython3.14.a",
        bsd_ar({"a_long_member_name.o": _symbol_file([1], b"\0_ok\0"), "m.o": data}),
    )
    write(build / "core/ok.o", _symbol_file([1], strings[:16]))
    message = "symbol 1's name (_Py_Marker_\\xff\\xfe\\xc0) is not UTF-8, as packers read the names"
    assert object_problems(build, "python/build") == [
        ("python/build/core/main.o", message),
        ("python/build/lib/libpython3.14.a(m.o)", message),
    ]


def test_a_static_library_whose_headers_do_not_fit_is_one_line(tmp_path: Path):
    library = bsd_ar({"m.o": _symbol_file([1], b"\0_ok\0")})
    write(tmp_path / "build/lib/libx.a", library[:-40])
    assert object_problems(tmp_path / "build", "python/build") == [
        ("python/build/lib/libx.a", "member at byte 92 declares 85 bytes, past its end")
    ]
