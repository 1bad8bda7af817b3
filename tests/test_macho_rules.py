"""verify/macho_rules.py judges the facts formats/macho.py reads from macOS files: each
rule fails on facts made to break it, with one exact line; then on real files, linked
here by the targets' pinned zig (good ones, and one made to break each rule), and on
broken and hostile ones, which are named in one line. The layouts the expected lines
name (pages, segments) are read here with a few lines of struct, not by the reader."""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import struct
import subprocess
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path, PurePosixPath

import pytest

from pyfreight.embed.zig import pinned_zig
from pyfreight.formats.macho import CodeSignature, MachoFacts, UnreadableMacho, macho_facts, macho_files
from pyfreight.paths import default_workspace
from pyfreight.targets import all_targets
from pyfreight.verify.macho_rules import check_macho_tree, is_interpreter_image, macho_problems
from tests.test_macho_reader import at_most

ARM = all_targets()["aarch64-apple-darwin"]
INTEL = all_targets()["x86_64-apple-darwin"]
C_API = frozenset({"Py_Initialize", "PyList_New", "PyModule_Create2", "PyArg_ParseTuple"})
LIBSYSTEM = ("/usr/lib/libSystem.B.dylib", "1.0.0")
SHIPPED = frozenset({"@rpath/libpython3.14.dylib"})
GOOD_DYLIB = MachoFacts(
    path="lib/libpython3.14.dylib",
    cpu="ARM64",
    filetype="dylib",
    flags=frozenset({"noundefs", "dyldlink", "twolevel", "no_reexported_dylibs"}),
    platform="macos",
    minimum_os=(11, 0),
    sdk=(27, 0),
    dylibs=(LIBSYSTEM,),
    install_name="@rpath/libpython3.14.dylib",
    rpaths=(),
    exported=C_API | {"_mh_dylib_header"},
    undefined=frozenset({"dyld_stub_binder"}),
    signature=CodeSignature(0x20002, True, "libpython3.14.dylib", "sha256", ()),
)
GOOD_PROGRAM = replace(
    GOOD_DYLIB,
    path="bin/python3.14",
    filetype="execute",
    flags=GOOD_DYLIB.flags | {"pie"},
    dylibs=(LIBSYSTEM, ("@rpath/libpython3.14.dylib", "1.0.0")),
    install_name=None,
    rpaths=("@executable_path/../lib",),
    exported=frozenset({"main", "_mh_execute_header"}),
)


def test_good_files_have_no_problem():
    assert macho_problems(GOOD_DYLIB, ARM, SHIPPED) == []
    assert macho_problems(GOOD_PROGRAM, ARM, SHIPPED) == []
    intel = replace(GOOD_PROGRAM, cpu="X86_64", minimum_os=(10, 15), signature=None)
    assert macho_problems(intel, INTEL, SHIPPED) == [], "Intel Macs run unsigned code"


UNSIGNED = (
    "has no code signature: aarch64-apple-darwin runs no unsigned code; "
    "link it with the pinned zig, which signs it ad hoc"
)


@pytest.mark.parametrize(
    ("facts", "change", "expected"),
    [
        (GOOD_DYLIB, {"cpu": "X86_64"}, "cpu X86_64, not ARM64 (aarch64-apple-darwin)"),
        (
            GOOD_DYLIB,
            {"flags": frozenset({"dyldlink"})},
            "is not linked with two-level namespaces (MH_TWOLEVEL): link it without -flat_namespace",
        ),
        (GOOD_DYLIB, {"minimum_os": (12, 0)}, "asks for macOS 12.0, newer than the target's 11.0"),
        (GOOD_DYLIB, {"minimum_os": (11, 3)}, "asks for macOS 11.3, newer than the target's 11.0"),
        (GOOD_DYLIB, {"platform": "ios"}, "is built for ios, not macos"),
        (
            GOOD_DYLIB,
            {"platform": None, "minimum_os": (10, 9)},
            "has no LC_BUILD_VERSION (only LC_VERSION_MIN_MACOSX 10.9): "
            "link it for macOS 11.0 with the pinned zig",
        ),
        (
            GOOD_DYLIB,
            {"platform": None, "minimum_os": None},
            "has no LC_BUILD_VERSION: link it for macOS 11.0 with the pinned zig",
        ),
        (
            GOOD_DYLIB,
            {"dylibs": (LIBSYSTEM, ("/opt/homebrew/lib/libssl.3.dylib", "3.0.0"))},
            "loads /opt/homebrew/lib/libssl.3.dylib, which is not a system library of the target: "
            "ship it and load it as @rpath/libssl.3.dylib",
        ),
        (
            GOOD_DYLIB,
            {"dylibs": (LIBSYSTEM, ("/usr/lib/libz.1.dylib", "1.0.0"))},
            "loads /usr/lib/libz.1.dylib, which is not a system library of the target: "
            "ship it and load it as @rpath/libz.1.dylib",
        ),
        (
            GOOD_PROGRAM,
            {"dylibs": (LIBSYSTEM, ("@rpath/libpython3.15.dylib", "1.0.0"))},
            "loads @rpath/libpython3.15.dylib, but no dylib of the tree has that install name",
        ),
        (
            GOOD_DYLIB,
            {"install_name": "/install/lib/libpython3.14.dylib"},
            "install name /install/lib/libpython3.14.dylib is not @rpath/… or @loader_path/…: "
            "link it with -Wl,-install_name,@rpath/libpython3.14.dylib",
        ),
        (
            GOOD_DYLIB,
            {"install_name": "@executable_path/../lib/libpython3.14.dylib"},
            "install name @executable_path/../lib/libpython3.14.dylib is not @rpath/… or @loader_path/…: "
            "link it with -Wl,-install_name,@rpath/libpython3.14.dylib",
        ),
        (
            GOOD_DYLIB,
            {"install_name": None},
            "has no install name (LC_ID_DYLIB): link it with -Wl,-install_name,@rpath/libpython3.14.dylib",
        ),
        (
            GOOD_PROGRAM,
            {"rpaths": ("@executable_path/../lib", "/build/work/lib")},
            "rpath /build/work/lib is not relative to the file: use @loader_path/… or @executable_path/…",
        ),
        (
            GOOD_PROGRAM,
            {"rpaths": ("lib",)},
            "rpath lib is not relative to the file: use @loader_path/… or @executable_path/…",
        ),
        (
            GOOD_PROGRAM,
            {"rpaths": ()},
            "loads @rpath/libpython3.14.dylib but has no rpath to find it by: "
            "link it with -Wl,-rpath,@executable_path/../lib",
        ),
        (GOOD_DYLIB, {"signature": None}, UNSIGNED),
        (
            GOOD_DYLIB,
            {"signature": replace(GOOD_DYLIB.signature, problems=("a", "b"))},
            "code signature is invalid (a; b): sign it again (ad hoc) after the last change to the file",
        ),
        (
            GOOD_DYLIB,
            {"exported": C_API | {"SSL_new", "sqlite3_open"}},
            "exports symbols of bundled libraries: SSL_new, sqlite3_open",
        ),
        (
            GOOD_DYLIB,
            {"exported": frozenset({"Py_Initialize"})},
            "does not export the C API extension modules need: "
            "PyList_New, PyModule_Create2, PyArg_ParseTuple",
        ),
    ],
)  # fmt: skip
def test_each_rule_fails_a_file_that_breaks_it(facts, change, expected):
    assert macho_problems(replace(facts, **change), ARM, SHIPPED) == [expected]


def test_what_applies_to_linked_images_only_and_to_the_interpreter_only():
    """An object file is neither bound by dyld nor signed; a module, a program of a
    shared build and any other dylib need not carry the C API."""
    obj = replace(GOOD_DYLIB, path="lib/x.o", filetype="object", flags=frozenset(), signature=None)
    assert macho_problems(replace(obj, install_name=None), ARM, SHIPPED) == []
    module = replace(
        GOOD_DYLIB,
        path="lib/python3.14/lib-dynload/_ssl.cpython-314-darwin.so",
        install_name="@rpath/_ssl.cpython-314-darwin.so",
        exported=frozenset({"PyInit__ssl"}),
    )
    assert macho_problems(module, ARM, SHIPPED) == []
    static_program = replace(GOOD_PROGRAM, dylibs=(LIBSYSTEM,), rpaths=())
    assert macho_problems(static_program, ARM, frozenset()) == [
        "does not export the C API extension modules need: "
        "Py_Initialize, PyList_New, PyModule_Create2, PyArg_ParseTuple"
    ]
    assert macho_problems(replace(static_program, exported=C_API), ARM, frozenset()) == []


@pytest.mark.parametrize(
    ("path", "shipped", "expected"),
    [
        ("lib/libpython3.14.dylib", True, True),
        ("lib/libpython3.14t.dylib", True, True),
        ("python/install/lib/libpython3.15.dylib", True, True),
        ("bin/python3.14", True, False),
        ("bin/python3.14", False, True),
        ("bin/python3.14t", False, True),
        ("bin/python3", False, False),  # a link to python3.14 in a real tree
        ("lib/python3.14", False, False),
        ("lib/libpython3.dylib", True, False),
        ("lib/libpython3.14.a", True, False),
    ],
)  # fmt: skip
def test_the_interpreter_image_is_known_by_its_name(path, shipped, expected):
    assert is_interpreter_image(path, libpython_shipped=shipped) is expected


# Real files, linked by the pinned zig ------------------------------------------------

C_API_SOURCE = """
void *Py_Initialize(void) { return 0; }
void *PyList_New(long n) { return (void *)n; }
void *PyModule_Create2(void *m, int v) { return m; }
int PyArg_ParseTuple(void *a, const char *f, ...) { return a != 0 && f != 0; }
"""
PROGRAM_SOURCE = '#include <stdio.h>\nint main(void) { puts("hi"); return 0; }\n'
MODULE_SOURCE = "void *PyList_New(long);\nvoid *PyInit__x(void) { return PyList_New(0); }\n"
PYTHON_DYLIB = ["-shared", "-Wl,-install_name,@rpath/libpython3.14.dylib"]
Compile = Callable[..., Path]


@pytest.fixture(scope="session")
def cc(tmp_path_factory: pytest.TempPathFactory) -> Compile:
    """cc(out, source, *flags, triple=...): the pinned zig's `zig cc -O2 -s`, for the
    arm64 target unless another triple is named. Optimised and stripped, as the build
    links (zig's default is Debug, with UBSan); its caches are the workspace's."""
    sources = tmp_path_factory.mktemp("sources")
    ws = default_workspace()
    commands = {t.toolchain.clang_triple: pinned_zig(t, ws) for t in (ARM, INTEL)}

    def compile_(out: Path, source: str, *flags: str, triple: str = ARM.toolchain.clang_triple) -> Path:
        # One zig links every target; its command ends with the target's triple, which
        # a test may change (aarch64-macos.13.0: a newer minimum macOS).
        zig = commands.get(triple, commands[ARM.toolchain.clang_triple])
        source_file = sources / f"{hashlib.sha256(source.encode()).hexdigest()[:16]}.c"
        source_file.write_text(source)
        out.parent.mkdir(parents=True, exist_ok=True)
        command = [*zig.command[:-1], triple, "-O2", "-s", str(source_file), *flags, "-o", str(out)]
        # Outside the repository, as every zig of the tests runs (tests/hostile_binaries.py).
        subprocess.run(command, check=True, env={**os.environ, **zig.env}, timeout=300, cwd=sources)
        return out

    return compile_


def _good_tree(cc: Compile, root: Path, triple: str = ARM.toolchain.clang_triple) -> Path:
    """A shared build's tree: libpython, the program loading it, an extension module."""
    libpython = cc(root / "lib/libpython3.14.dylib", C_API_SOURCE, *PYTHON_DYLIB, triple=triple)
    rpath = "-Wl,-rpath,@executable_path/../lib"
    cc(root / "bin/python3.14", PROGRAM_SOURCE, str(libpython), rpath, triple=triple)
    module = "lib/python3.14/lib-dynload/_x.cpython-314-darwin.so"
    cc(root / module, MODULE_SOURCE, "-shared", "-Wl,-undefined,dynamic_lookup",
       "-Wl,-install_name,@rpath/_x.cpython-314-darwin.so", triple=triple)  # fmt: skip
    return root


@pytest.fixture(scope="session")
def good_tree(cc: Compile, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _good_tree(cc, tmp_path_factory.mktemp("good"))


def _layout(path: Path) -> dict[str, int]:
    """What the expected lines name, read with struct: where __text starts, the code
    signature's offset, __LINKEDIT's extent, the load commands' size."""
    data = path.read_bytes()
    _, _, _, _, ncmds, sizeofcmds, _, _ = struct.unpack_from("<IiiIIIII", data)
    found = {"sizeofcmds": sizeofcmds}
    at = 32
    for _ in range(ncmds):
        cmd, cmdsize = struct.unpack_from("<II", data, at)
        if cmd == 0x19:  # LC_SEGMENT_64
            name = data[at + 8 : at + 24].rstrip(b"\0")
            fileoff, filesize, _, _, nsects = struct.unpack_from("<QQiiI", data, at + 40)
            if name == b"__LINKEDIT":
                found |= {"linkedit_at": at, "linkedit": fileoff, "linkedit_end": fileoff + filesize}
            for index in range(nsects):
                section = at + 72 + index * 80
                if data[section : section + 16].rstrip(b"\0") == b"__text":
                    found["text"] = struct.unpack_from("<I", data, section + 48)[0]
        elif cmd == 0x2:  # LC_SYMTAB: nsyms at +12
            found["nsyms_at"] = at + 12
        elif cmd in (0x80000022, 0x80000033):  # LC_DYLD_INFO_ONLY (size at +44), LC_DYLD_EXPORTS_TRIE (+12)
            found["trie_size_at"] = at + (44 if cmd == 0x80000022 else 12)
        elif cmd == 0x1D:  # LC_CODE_SIGNATURE
            found |= {"signature_at": at, "signature": struct.unpack_from("<I", data, at + 8)[0]}
        at += cmdsize
    return found


def test_good_files_linked_by_the_pinned_zig_have_no_problem(good_tree: Path):
    facts, problems = check_macho_tree(good_tree, ARM)
    assert problems == []
    by_path = {f.path: f for f in facts}
    assert sorted(by_path) == [
        "bin/python3.14", "lib/libpython3.14.dylib", "lib/python3.14/lib-dynload/_x.cpython-314-darwin.so"
    ]  # fmt: skip
    libpython, program = by_path["lib/libpython3.14.dylib"], by_path["bin/python3.14"]
    assert (libpython.cpu, libpython.filetype, libpython.minimum_os) == ("ARM64", "dylib", (11, 0))
    assert libpython.exported >= C_API and libpython.install_name == "@rpath/libpython3.14.dylib"
    assert libpython.dylibs == (LIBSYSTEM,)
    assert program.filetype == "execute" and {"twolevel", "pie"} <= program.flags
    assert program.dylibs == (LIBSYSTEM, ("@rpath/libpython3.14.dylib", "1.0.0"))
    assert program.rpaths == ("@executable_path/../lib",) and "puts" in program.undefined
    assert program.signature == CodeSignature(0x20002, True, "python3.14", "sha256", ())
    assert by_path["lib/python3.14/lib-dynload/_x.cpython-314-darwin.so"].undefined >= {"PyList_New"}


def test_good_intel_files_have_no_problem_unsigned(cc: Compile, tmp_path: Path):
    facts, problems = check_macho_tree(_good_tree(cc, tmp_path, INTEL.toolchain.clang_triple), INTEL)
    assert problems == [] and len(facts) == 3
    assert {(f.cpu, f.minimum_os, f.signature) for f in facts} == {("X86_64", (10, 15), None)}


def test_a_static_builds_program_carries_the_c_api(cc: Compile, tmp_path: Path):
    """With no libpython dylib, bin/python3.X is what extension modules bind to. zig's
    linker drops a program's functions that nothing in it calls, exported or not, unless
    told to keep every section: the rule sees the C API go, as extension modules would."""
    cc(tmp_path / "bin/python3.14", PROGRAM_SOURCE + C_API_SOURCE, "-Wl,--no-gc-sections")
    assert check_macho_tree(tmp_path, ARM)[1] == []
    cc(tmp_path / "bin/python3.14", PROGRAM_SOURCE + C_API_SOURCE)
    assert check_macho_tree(tmp_path, ARM)[1] == [
        "bin/python3.14: does not export the C API extension modules need: "
        "Py_Initialize, PyList_New, PyModule_Create2, PyArg_ParseTuple"
    ]


def test_a_file_for_the_other_cpu_is_named(cc: Compile, tmp_path: Path):
    cc(tmp_path / "bin/tool", PROGRAM_SOURCE, triple=INTEL.toolchain.clang_triple)
    assert check_macho_tree(tmp_path, ARM)[1] == [
        "bin/tool: cpu X86_64, not ARM64 (aarch64-apple-darwin)",
        f"bin/tool: {UNSIGNED}",
    ]


def test_a_file_for_a_newer_macos_is_named(cc: Compile, tmp_path: Path):
    cc(tmp_path / "bin/tool", PROGRAM_SOURCE, triple="aarch64-macos.13.0")
    assert check_macho_tree(tmp_path, ARM)[1] == [
        "bin/tool: asks for macOS 13.0, newer than the target's 11.0"
    ]


def test_a_dylib_loaded_by_an_absolute_name_is_named(cc: Compile, tmp_path: Path):
    """The stub stays outside the tree, as a library of the build machine would."""
    stub = cc(tmp_path / "stub/libfoo.dylib", "int foo(void) { return 1; }\n",
              "-shared", "-Wl,-install_name,/tmp/build/libfoo.dylib")  # fmt: skip
    source = "int foo(void);\nint main(void) { return foo(); }\n"
    cc(tmp_path / "tree/bin/tool", source, str(stub))
    assert check_macho_tree(tmp_path / "tree", ARM)[1] == [
        "bin/tool: loads /tmp/build/libfoo.dylib, which is not a system library of the target: "
        "ship it and load it as @rpath/libfoo.dylib"
    ]
    (tmp_path / "tree/lib").mkdir()
    os.replace(stub, tmp_path / "tree/lib/libfoo.dylib")
    assert check_macho_tree(tmp_path / "tree", ARM)[1] == [
        "bin/tool: loads /tmp/build/libfoo.dylib, which is not a system library of the target: "
        "ship it and load it as @rpath/libfoo.dylib",
        "lib/libfoo.dylib: install name /tmp/build/libfoo.dylib is not @rpath/… or @loader_path/…: "
        "link it with -Wl,-install_name,@rpath/libfoo.dylib",
    ]


def test_a_module_with_zigs_default_install_name_is_named(cc: Compile, tmp_path: Path):
    """zig names a dylib by its output path unless told: the build's own folder."""
    cc(tmp_path / "_x.so", MODULE_SOURCE, "-shared", "-Wl,-undefined,dynamic_lookup")
    assert check_macho_tree(tmp_path, ARM)[1] == [
        f"_x.so: install name {tmp_path}/_x.so is not @rpath/… or @loader_path/…: "
        "link it with -Wl,-install_name,@rpath/_x.so"
    ]


def test_a_build_path_rpath_is_named(cc: Compile, tmp_path: Path):
    cc(tmp_path / "bin/tool", PROGRAM_SOURCE, "-Wl,-rpath,/build/work/lib")
    assert check_macho_tree(tmp_path, ARM)[1] == [
        "bin/tool: names the build path /build/work",
        "bin/tool: rpath /build/work/lib is not relative to the file: "
        "use @loader_path/… or @executable_path/…",
    ]


def test_a_bundled_librarys_export_and_a_missing_c_api_are_named(cc: Compile, tmp_path: Path):
    cc(
        tmp_path / "lib/libpython3.14.dylib",
        C_API_SOURCE + "int SSL_new(void) { return 0; }\n",
        *PYTHON_DYLIB,
    )
    assert check_macho_tree(tmp_path, ARM)[1] == [
        "lib/libpython3.14.dylib: exports symbols of bundled libraries: SSL_new"
    ]
    cc(tmp_path / "lib/libpython3.14.dylib", "int Py_Initialize(void) { return 0; }\n", *PYTHON_DYLIB)
    assert check_macho_tree(tmp_path, ARM)[1] == [
        "lib/libpython3.14.dylib: does not export the C API extension modules need: "
        "PyList_New, PyModule_Create2, PyArg_ParseTuple"
    ]


def test_code_changed_after_signing_is_named(good_tree: Path, tmp_path: Path):
    data = bytearray((good_tree / "lib/libpython3.14.dylib").read_bytes())
    layout = _layout(good_tree / "lib/libpython3.14.dylib")
    data[layout["text"]] ^= 0xFF
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib/libpython3.14.dylib").write_bytes(data)
    page, pages = layout["text"] // 16384, -(-layout["signature"] // 16384)
    first, end = page * 16384, min(page * 16384 + 16384, layout["signature"])
    assert check_macho_tree(tmp_path, ARM)[1] == [
        f"lib/libpython3.14.dylib: code signature is invalid (1 of its {pages} pages do not match "
        f"their hashes, the first at bytes {first}-{end}: the file changed after signing): "
        "sign it again (ad hoc) after the last change to the file"
    ]


def test_a_file_whose_signature_was_removed_is_named(good_tree: Path, tmp_path: Path):
    """The signature cut off as strip tools do: its load command removed, __LINKEDIT
    shortened, the file truncated where the signature began."""
    source = good_tree / "bin/python3.14"
    data, layout = bytearray(source.read_bytes()), _layout(source)
    assert layout["signature_at"] > layout["linkedit_at"], "zig writes the signature's command last"
    struct.pack_into("<Q", data, layout["linkedit_at"] + 48, layout["signature"] - layout["linkedit"])
    at, end = layout["signature_at"], 32 + layout["sizeofcmds"]
    data[at:end] = data[at + 16 : end] + bytes(16)
    ncmds, sizeofcmds = struct.unpack_from("<II", data, 16)
    struct.pack_into("<II", data, 16, ncmds - 1, sizeofcmds - 16)
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin/python3.14").write_bytes(data[: layout["signature"]])
    facts = macho_facts(tmp_path / "bin/python3.14", tmp_path)
    assert facts is not None and facts.signature is None and facts.rpaths == ("@executable_path/../lib",)
    assert macho_problems(facts, ARM, SHIPPED) == [UNSIGNED]
    assert macho_problems(replace(facts, cpu="X86_64", minimum_os=(10, 15)), INTEL, SHIPPED) == []


def test_exports_are_read_from_the_symbol_table_and_the_export_trie(good_tree: Path, tmp_path: Path):
    """dyld binds by the export trie, nm and the linker read the symbol table: a name
    either one exports is exported (a file could hide its exports from one of them)."""
    source = good_tree / "lib/libpython3.14.dylib"
    layout = _layout(source)
    for hidden in (("nsyms_at",), ("trie_size_at",), ("nsyms_at", "trie_size_at")):
        data = bytearray(source.read_bytes())
        for field in hidden:
            struct.pack_into("<I", data, layout[field], 0)
        (tmp_path / "libpython3.14.dylib").write_bytes(data)
        facts = macho_facts(tmp_path / "libpython3.14.dylib", tmp_path)
        assert facts is not None
        assert (facts.exported >= C_API) is (len(hidden) == 1), hidden


def test_a_truncated_file_is_named_in_one_line(good_tree: Path, tmp_path: Path):
    source = good_tree / "lib/libpython3.14.dylib"
    data, layout = source.read_bytes(), _layout(source)
    (tmp_path / "cut").write_bytes(data[: layout["signature"]])
    (tmp_path / "headers").write_bytes(data[:100])
    facts, problems = check_macho_tree(tmp_path, ARM)
    assert facts == []
    assert problems == [
        f"cut: not a readable Mach-O file (segment __LINKEDIT (bytes {layout['linkedit']}-"
        f"{layout['linkedit_end']}) runs past the end of the file ({layout['signature']} bytes))",
        f"headers: not a readable Mach-O file (its load commands ({layout['sizeofcmds']} bytes) "
        "run past the end of the file (100 bytes))",
    ]


def test_fat_files_and_other_kinds_are_named_and_other_files_skipped(cc: Compile, tmp_path: Path):
    """A Java class file shares the fat magic, and file(1) tells it by its version
    (52) where a fat file has its slice count: a fat file can declare 52 slices too, and
    dyld would load one. No macOS tree of ours ships either: both are refused as fat."""
    arm = cc(tmp_path / "parts/arm", C_API_SOURCE, *PYTHON_DYLIB).read_bytes()
    intel = cc(
        tmp_path / "parts/intel", C_API_SOURCE, *PYTHON_DYLIB, triple=INTEL.toolchain.clang_triple
    ).read_bytes()
    # fat_header and two fat_arch (big-endian): cputype, subtype, offset, size, align 2^14.
    fat = struct.pack(">II", 0xCAFEBABE, 2)
    fat += struct.pack(">iiIII", 0x0100000C, 0, 16384, len(arm), 14)
    fat += struct.pack(">iiIII", 0x01000007, 3, 16384 * (2 + len(arm) // 16384), len(intel), 14)
    fat = fat.ljust(16384, b"\0") + arm.ljust(16384 * (1 + len(arm) // 16384), b"\0") + intel
    tree = tmp_path / "tree"
    (tree / "lib").mkdir(parents=True)
    (tree / "lib/libpython3.14.dylib").write_bytes(fat)
    (tree / "lib/i386.dylib").write_bytes(struct.pack("<I", 0xFEEDFACE) + bytes(60))
    # A Java class file starts with 0xcafebabe too, then its version (major 52 here).
    (tree / "lib/Main.class").write_bytes(struct.pack(">IHH", 0xCAFEBABE, 0, 52) + bytes(40))
    (tree / "lib/readme.txt").write_bytes(b"\xcf\xfa")
    assert [p.name for p in macho_files(tree)] == ["Main.class", "i386.dylib", "libpython3.14.dylib"]
    assert check_macho_tree(tree, ARM) == (
        [],
        [
            "lib/Main.class: fat/universal file (52 slices: 0x0 outside the file (bytes 0-0), "
            "0x0 outside the file (bytes 0-0), slice 2's header past the end of the file, …): "
            "ship thin files",
            "lib/i386.dylib: not a readable Mach-O file (a 32-bit or big-endian Mach-O file; "
            "ours are 64-bit little-endian)",
            "lib/libpython3.14.dylib: fat/universal file (ARM64, X86_64): ship thin files",
        ],
    )


# Commands a mutation may turn a command into: those that load, name paths or tables.
INTERESTING_COMMANDS = (0x2, 0xB, 0xC, 0xD, 0xE, 0x18 | 0x80000000, 0x19, 0x1C | 0x80000000, 0x1D, 0x20,
                        0x22 | 0x80000000, 0x27, 0x32, 0x33 | 0x80000000)  # fmt: skip


def _mutate(rng: random.Random, original: bytes, layout: dict[str, int]) -> bytes:
    """One hostile variant: bytes or words changed in the load commands and __LINKEDIT
    (the symbol and string tables, the export trie, the code signature), counts and
    offsets made huge, a command made another kind, or the file cut anywhere."""
    if rng.random() < 0.15:
        return original[: rng.randrange(len(original))]
    data = bytearray(original)
    regions = [(0, 32 + layout["sizeofcmds"]), (layout["linkedit"], len(original))]
    for _ in range(rng.choice((1, 2, 4))):
        start, end = rng.choice(regions)
        at = rng.randrange(start, end - 4)
        choice = rng.random()
        if choice < 0.4:
            data[at] = rng.randrange(256)
        elif choice < 0.8:
            struct.pack_into("<I", data, at, rng.choice((0, 1, 0x7FFFFFFF, 0xFFFFFFFF, len(original))))
        else:
            command = rng.choice(_commands(original))[0]
            struct.pack_into("<I", data, command, rng.choice(INTERESTING_COMMANDS))
    return bytes(data)


def test_hostile_variants_of_real_files_raise_only_unreadable_macho(good_tree: Path, tmp_path: Path):
    """A few hundred seeded mutations of real files: each is read or named in one
    printable line (UnreadableMacho, nothing else), quickly; the problems found in what
    was read are printable lines too, and a tree of them all is judged without raising."""
    rng = random.Random(20260805)
    for name in ("lib/libpython3.14.dylib", "bin/python3.14"):
        original = (good_tree / name).read_bytes()
        layout = _layout(good_tree / name)
        tree = tmp_path / PurePosixPath(name).name
        tree.mkdir()
        for index in range(360):
            path = tree / f"v{index}.dylib"
            path.write_bytes(_mutate(rng, original, layout))
            started = time.monotonic()
            try:
                facts = macho_facts(path, tree)
            except UnreadableMacho as exc:
                assert str(exc).startswith(f"v{index}.dylib: ") and str(exc).isprintable(), str(exc)
                continue
            finally:
                assert time.monotonic() - started < 1, f"v{index}.dylib took too long"
            if facts is not None:  # None: the magic itself was changed
                lines = macho_problems(facts, ARM, SHIPPED)
                assert all(line.isprintable() for line in lines), lines
        lines = check_macho_tree(tree, ARM)[1]
        assert all(line.startswith("v") and line.isprintable() for line in lines), lines


# Real files made hostile: each class a hostile-input campaign found ----------------

LC_LOAD_DYLIB, LC_RPATH, LC_LOAD_DYLINKER, LC_DYLD_ENVIRONMENT = 0xC, 0x8000001C, 0xE, 0x27
OTHER_LOADS = {
    "LC_LOAD_WEAK_DYLIB": 0x80000018,
    "LC_REEXPORT_DYLIB": 0x8000001F,
    "LC_LAZY_LOAD_DYLIB": 0x20,
    "LC_LOAD_UPWARD_DYLIB": 0x80000023,
}


def _commands(data: bytes) -> list[tuple[int, int, int]]:
    """(offset, cmd, cmdsize) of each load command, read with struct."""
    ncmds = struct.unpack_from("<I", data, 16)[0]
    found, at = [], 32
    for _ in range(ncmds):
        cmd, cmdsize = struct.unpack_from("<II", data, at)
        found.append((at, cmd, cmdsize))
        at += cmdsize
    return found


def _command_with(data: bytes, cmd: int, text: bytes) -> int:
    """The offset of the command `cmd` whose bytes hold `text`."""
    return next(at for at, found, size in _commands(data) if found == cmd and text in data[at : at + size])


def _resign(data: bytearray) -> bytes:
    """The page hashes of the ad hoc signature computed again after a change to the
    load commands, as `codesign -f -s -` would: the change is then the file's only
    fault (<kern/cs_blobs.h>: the SuperBlob's index, the CodeDirectory's fields)."""
    dataoff = next(struct.unpack_from("<I", data, at + 8)[0] for at, cmd, _ in _commands(data) if cmd == 0x1D)
    count = struct.unpack_from(">I", data, dataoff + 8)[0]
    index = [struct.unpack_from(">II", data, dataoff + 12 + 8 * i) for i in range(count)]
    directory = dataoff + next(offset for slot, offset in index if slot == 0)
    hash_offset, _, _, n_code, code_limit, hash_size, _, _, page_shift = struct.unpack_from(
        ">IIIIIBBBB", data, directory + 16
    )
    page = 1 << page_shift
    for number in range(n_code):
        content = bytes(data[number * page : min((number + 1) * page, code_limit)])
        at = directory + hash_offset + number * hash_size
        data[at : at + hash_size] = hashlib.sha256(content).digest()[:hash_size]
    return bytes(data)


def _tree_with(root: Path, files: dict[str, bytes]) -> Path:
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root


def _loading(cc: Compile, root: Path, install_name: str, *flags: str) -> Path:
    """bin/tool of the tree at `root`, loading a stub dylib made outside it whose
    install name is `install_name` (what a program built against it loads)."""
    digest = hashlib.sha256(install_name.encode()).hexdigest()[:12]
    stub = cc(root.parent / f"stub-{digest}/libevil.dylib", "int evil(void) { return 1; }\n",
              "-shared", f"-Wl,-install_name,{install_name}")  # fmt: skip
    return cc(root / "bin/tool", "int evil(void);\nint main(void) { return evil(); }\n", str(stub), *flags)


def test_the_mutations_below_keep_a_valid_signature(good_tree: Path, tmp_path: Path):
    """The control for _resign: a good file signed again is still good, and a changed
    one signed again passes the signature check (and nothing else tells them apart)."""
    data = bytearray((good_tree / "bin/python3.14").read_bytes())
    assert _resign(bytearray(data)) == bytes(data)
    data[_layout(good_tree / "bin/python3.14")["text"]] ^= 0xFF
    tree = _tree_with(tmp_path, {"bin/python3.14": _resign(data)})
    facts = macho_facts(tree / "bin/python3.14", tree)
    assert facts is not None and facts.signature is not None and facts.signature.problems == ()


@pytest.mark.parametrize("command", sorted(OTHER_LOADS))
@pytest.mark.parametrize(
    ("install_name", "expected"),
    [
        ("/tmp/evil.dylib",
         "loads /tmp/evil.dylib, which is not a system library of the target: "
         "ship it and load it as @rpath/evil.dylib"),
        ("@loader_path/../../tmp/evil.dylib",
         "loads @loader_path/../../tmp/evil.dylib, outside the tree (from bin/)"),
    ],
)  # fmt: skip
def test_every_command_that_loads_a_dylib_is_judged_like_lc_load_dylib(
    cc: Compile, tmp_path: Path, command: str, install_name: str, expected: str
):
    program = _loading(cc, tmp_path / "linked", install_name)
    data = bytearray(program.read_bytes())
    at = _command_with(data, LC_LOAD_DYLIB, b"evil.dylib")
    assert check_macho_tree(tmp_path / "linked", ARM)[1] == [f"bin/tool: {expected}"]
    struct.pack_into("<I", data, at, OTHER_LOADS[command])
    tree = _tree_with(tmp_path / "tree", {"bin/tool": _resign(data)})
    facts, problems = check_macho_tree(tree, ARM)
    assert install_name in {name for name, _ in facts[0].dylibs}, "the mutated command is read as a load"
    assert problems == [f"bin/tool: {expected}"]


@pytest.mark.parametrize(
    ("install_name", "expected"),
    [
        # The tree ships the dylib under that name: a name match is not enough.
        ("@loader_path/../../../tmp/evil.dylib",
         ["bin/tool: loads @loader_path/../../../tmp/evil.dylib, outside the tree (from bin/)"]),
        ("@loader_path/../lib/../../tmp/evil.dylib",
         ["bin/tool: loads @loader_path/../lib/../../tmp/evil.dylib, outside the tree (from bin/)"]),
        ("@rpath/../../tmp/evil.dylib",
         ["bin/tool: loads @rpath/../../tmp/evil.dylib: a .. in an @rpath/ name can lead dyld outside "
          "the tree"]),
        ("@executable_path/../../tmp/evil.dylib",
         ["bin/tool: loads @executable_path/../../tmp/evil.dylib, outside the tree (from bin/)",
          "lib/libevil.dylib: install name @executable_path/../../tmp/evil.dylib is not @rpath/… or "
          "@loader_path/…: link it with -Wl,-install_name,@rpath/libevil.dylib"]),
        ("@loader_path/../lib/libevil.dylib", []),
        ("@rpath/libevil.dylib", []),
    ],
)  # fmt: skip
def test_a_dylib_name_climbing_out_of_the_tree_is_named(
    cc: Compile, tmp_path: Path, install_name: str, expected: list[str]
):
    tree = tmp_path / "tree"
    _loading(cc, tree, install_name, "-Wl,-rpath,@executable_path/../lib")
    stub = next(tmp_path.glob("stub-*/libevil.dylib"))
    (tree / "lib").mkdir()
    os.replace(stub, tree / "lib/libevil.dylib")
    assert check_macho_tree(tree, ARM)[1] == expected


def test_an_rpath_leading_outside_the_tree_is_named(cc: Compile, tmp_path: Path):
    """dyld looks for @rpath/ names in every rpath: each is resolved from the file's own
    folder (@loader_path) or the programs' (@executable_path: bin/), inside the tree."""
    rpaths = [
        "@executable_path/../lib",
        "@executable_path/..",
        "@executable_path/../..",
        "@loader_path/../../../../tmp",
        "@executable_path/../lib/../../x",
    ]
    cc(tmp_path / "bin/tool", PROGRAM_SOURCE, *(f"-Wl,-rpath,{rpath}" for rpath in rpaths))
    module = "lib/python3.14/lib-dynload/_x.cpython-314-darwin.so"
    cc(tmp_path / module, MODULE_SOURCE, "-shared", "-Wl,-undefined,dynamic_lookup",
       "-Wl,-install_name,@rpath/_x.cpython-314-darwin.so",
       "-Wl,-rpath,@loader_path/../../..", "-Wl,-rpath,@loader_path/../../../..")  # fmt: skip
    leaving = "leads outside the tree (from {}): dyld would look for its libraries there"
    assert check_macho_tree(tmp_path, ARM)[1] == [
        f"bin/tool: rpath @executable_path/../.. {leaving.format('bin/')}",
        f"bin/tool: rpath @loader_path/../../../../tmp {leaving.format('bin/')}",
        f"bin/tool: rpath @executable_path/../lib/../../x {leaving.format('bin/')}",
        f"{module}: rpath @loader_path/../../../.. {leaving.format('lib/python3.14/lib-dynload/')}",
    ]


def test_a_file_setting_dyld_variables_is_named(cc: Compile, tmp_path: Path):
    """LC_DYLD_ENVIRONMENT has an rpath's layout (one string): an rpath made one."""
    variable = "DYLD_INSERT_LIBRARIES=/tmp/evil.dylib"
    program = cc(tmp_path / "linked/bin/tool", PROGRAM_SOURCE, f"-Wl,-rpath,{variable}")
    data = bytearray(program.read_bytes())
    struct.pack_into("<I", data, _command_with(data, LC_RPATH, variable.encode()), LC_DYLD_ENVIRONMENT)
    tree = _tree_with(tmp_path / "tree", {"bin/tool": _resign(data)})
    assert check_macho_tree(tree, ARM)[1] == [
        f"bin/tool: sets dyld's environment (LC_DYLD_ENVIRONMENT {variable}): "
        "no file of ours changes how dyld loads"
    ]


def test_a_program_naming_another_dynamic_linker_is_named(good_tree: Path, tmp_path: Path):
    data = bytearray((good_tree / "bin/python3.14").read_bytes())
    at = _command_with(data, LC_LOAD_DYLINKER, b"/usr/lib/dyld")
    assert check_macho_tree(good_tree, ARM)[1] == [], "the program names /usr/lib/dyld"
    data[at:] = data[at:].replace(b"/usr/lib/dyld\0", b"/tmp/evildyld\0", 1)
    tree = _tree_with(tmp_path, {"bin/python3.14": _resign(data)})
    shutil.copytree(good_tree / "lib", tree / "lib")
    assert check_macho_tree(tree, ARM)[1] == [
        "bin/python3.14: names the dynamic linker /tmp/evildyld (LC_LOAD_DYLINKER), not /usr/lib/dyld"
    ]


def test_a_fat_file_of_many_slices_is_refused_whatever_its_slices_load(cc: Compile, tmp_path: Path):
    """24 slices, each the thin program loading /tmp/evil.dylib: file(1)'s Java test
    (20 or more) once took it for no Mach-O file at all, and nothing judged its slices."""
    thin = _loading(cc, tmp_path / "linked", "/tmp/evil.dylib").read_bytes()
    assert check_macho_tree(tmp_path / "linked", ARM)[1] == [
        "bin/tool: loads /tmp/evil.dylib, which is not a system library of the target: "
        "ship it and load it as @rpath/evil.dylib"
    ]
    count, span = 24, 16384 * -(-len(thin) // 16384)
    fat = struct.pack(">II", 0xCAFEBABE, count)
    fat += b"".join(
        struct.pack(">iiIII", 0x0100000C, 0, 16384 + i * span, len(thin), 14) for i in range(count)
    )
    fat = fat.ljust(16384, b"\0") + b"".join(thin.ljust(span, b"\0") for _ in range(count))
    tree = _tree_with(tmp_path / "tree", {"bin/python3.14": fat})
    assert check_macho_tree(tree, ARM) == (
        [],
        ["bin/python3.14: fat/universal file (24 slices: ARM64, ARM64, ARM64, ARM64, …): ship thin files"],
    )


def test_the_wrong_format_under_a_macho_name_is_named(good_tree: Path, tmp_path: Path):
    """The interpreter, a .dylib and a .so of a macOS tree are Mach-O files for its CPU;
    a PE or ELF file there is named, not skipped as another file would be."""
    module = "lib/python3.14/lib-dynload/_x.cpython-314-darwin.so"
    pe = b"MZ\x90\x00\x03" + bytes(55) + struct.pack("<I", 64) + b"PE\0\0" + bytes(200)
    elf = b"\x7fELF\x02\x01\x01" + bytes(57)
    tree = _tree_with(tmp_path, {
        "bin/python3.14": pe,
        "lib/libpython3.14.dylib": (good_tree / "lib/libpython3.14.dylib").read_bytes(),
        module: elf,
        "lib/libz.dylib": b"",
        "bin/python3.14-config": b"#!/bin/sh\n",
        "lib/python3.14/os.py": b"import abc\n",
    })  # fmt: skip
    wanted = "not a thin Mach-O file for ARM64 (aarch64-apple-darwin)"
    assert check_macho_tree(tree, ARM)[1] == [
        f"bin/python3.14: a Windows (PE) file, {wanted}",
        f"lib/libz.dylib: an empty file, {wanted}",
        f"{module}: an ELF file (Linux or another Unix), {wanted}",
    ]


def test_a_symlink_under_a_macho_name_must_name_a_macho_file_inside_the_tree(good_tree: Path, tmp_path: Path):
    """dyld follows a symlink: the one a .dylib name is must lead to a Mach-O file of the
    tree (which is judged where it lies), as libpython3.X's links do."""
    tree = tmp_path / "tree"
    shutil.copytree(good_tree, tree)
    outside = _tree_with(tmp_path, {"outside/libevil.dylib": (good_tree / "bin/python3.14").read_bytes()})
    _tree_with(tree, {"share/tool.exe": b"MZ\x90\x00" + bytes(60)})
    (tree / "bin/python3").symlink_to("python3.14")  # not a name that must be Mach-O: left alone
    (tree / "lib/libpython3.dylib").symlink_to("libpython3.14.dylib")
    assert check_macho_tree(tree, ARM)[1] == []
    (tree / "lib/libtool.dylib").symlink_to("../share/tool.exe")
    (tree / "lib/libevil.dylib").symlink_to(outside / "outside/libevil.dylib")
    (tree / "lib/libgone.dylib").symlink_to("nothing.dylib")
    assert check_macho_tree(tree, ARM)[1] == [
        "lib/libevil.dylib: a symlink leading outside the tree; the tree is not trusted",
        "lib/libgone.dylib: a symlink naming nothing; the tree is not trusted",
        "lib/libtool.dylib: a Windows (PE) file, not a thin Mach-O file for ARM64 (aarch64-apple-darwin)",
    ]


def test_a_fifo_where_a_binary_should_be_is_named_not_waited_for(good_tree: Path, tmp_path: Path):
    shutil.copytree(good_tree, tmp_path / "tree")
    tree = tmp_path / "tree"
    (tree / "bin/python3.14").unlink()
    os.mkfifo(tree / "bin/python3.14")
    os.mkfifo(tree / "lib/fifo")  # where no binary is looked for: left alone
    with at_most(10):
        assert check_macho_tree(tree, ARM)[1] == [
            "bin/python3.14: not a regular file (a fifo, device or socket); the tree is not trusted"
        ]


def test_a_sparse_file_of_gigabytes_is_refused_unread(good_tree: Path, tmp_path: Path):
    path = tmp_path / "lib/libpython3.14.dylib"
    _tree_with(tmp_path, {"lib/libpython3.14.dylib": (good_tree / "lib/libpython3.14.dylib").read_bytes()})
    os.truncate(path, 6 << 30)
    started = time.monotonic()
    with at_most(10):
        assert check_macho_tree(tmp_path, ARM) == (
            [],
            [
                f"lib/libpython3.14.dylib: {6 << 30} bytes, larger than any binary of ours (256 MiB); "
                "the tree is not trusted"
            ],
        )
    assert time.monotonic() - started < 2


def test_an_export_trie_that_is_one_long_chain_is_refused_quickly(good_tree: Path, tmp_path: Path):
    """libpython's export trie replaced by a chain of 1.2 million nodes appended to the
    file: each name made from its parent's, a copy as long as the chain is deep."""
    source = good_tree / "lib/libpython3.14.dylib"
    data, layout = bytearray(source.read_bytes()), _layout(source)
    node = 16  # no info, one edge: its label, NUL, the child's offset as a 4-byte ULEB128

    def uleb4(value: int) -> bytes:
        return bytes([value & 0x7F | 0x80, value >> 7 & 0x7F | 0x80, value >> 14 & 0x7F | 0x80, value >> 21])

    trie = b"".join(b"\x00\x01Py_Object\x00" + uleb4((k + 1) * node) for k in range(1_200_000))
    assert len(trie) == 1_200_000 * node and len(trie) >> 21 < 0x7F
    struct.pack_into("<II", data, layout["trie_size_at"] - 4, len(data), len(trie))
    tree = _tree_with(tmp_path, {"lib/libpython3.14.dylib": bytes(data) + trie + b"\x02\x00\x00\x00"})
    started = time.monotonic()
    with at_most(20):
        facts, problems = check_macho_tree(tree, ARM)
    assert time.monotonic() - started < 2
    assert facts == [] and len(problems) == 1
    assert problems[0].startswith(
        "lib/libpython3.14.dylib: not a readable Mach-O file (the export trie's node at "
    ), problems


def test_symbol_names_pointing_anywhere_are_one_line_or_read(good_tree: Path, tmp_path: Path):
    """Every symbol's name offset moved: past the string table (refused), or all onto
    the first name (read: every symbol has that name)."""
    source = good_tree / "lib/libpython3.14.dylib"
    original = source.read_bytes()
    at = next(at for at, cmd, _ in _commands(original) if cmd == 0x2)
    symoff, nsyms, _, strsize = struct.unpack_from("<IIII", original, at + 8)
    first = struct.unpack_from("<I", original, symoff)[0]
    for strx, refused in ((strsize, True), (0xFFFFFFFF, True), (first, False)):
        data = bytearray(original)
        for index in range(nsyms):
            struct.pack_into("<I", data, symoff + 16 * index, strx)
        path = _tree_with(tmp_path, {"lib.dylib": bytes(data)}) / "lib.dylib"
        if refused:
            with pytest.raises(UnreadableMacho, match=rf"^lib\.dylib: .*\(at {strx}\) is outside the string"):
                macho_facts(path, tmp_path)
        else:
            facts = macho_facts(path, tmp_path)
            assert facts is not None and facts.exported >= C_API  # the export trie still names them


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        (20, 0xFFFFFFF0, "its CodeDirectory has no identifier"),  # identOffset
        (20, 0, "its CodeDirectory has no identifier"),
        (16, 0xFFFFFF00, "its hashes lie outside its CodeDirectory"),  # hashOffset
        (28, 0x7FFFFFFF, "its hashes lie outside its CodeDirectory"),  # nCodeSlots
    ],
)  # fmt: skip
def test_a_code_directory_pointing_anywhere_is_one_problem(
    good_tree: Path, tmp_path: Path, field: int, value: int, expected: str
):
    source = good_tree / "lib/libpython3.14.dylib"
    data, layout = bytearray(source.read_bytes()), _layout(source)
    signature = layout["signature"]
    count = struct.unpack_from(">I", data, signature + 8)[0]
    index = [struct.unpack_from(">II", data, signature + 12 + 8 * i) for i in range(count)]
    directory = signature + next(offset for slot, offset in index if slot == 0)
    struct.pack_into(">I", data, directory + field, value)
    tree = _tree_with(tmp_path, {"lib/libpython3.14.dylib": bytes(data)})
    problems = check_macho_tree(tree, ARM)[1]
    assert len(problems) == 1 and problems[0].startswith(
        "lib/libpython3.14.dylib: code signature is invalid ("
    )
    assert expected in problems[0]


def test_a_second_symbol_table_is_refused(good_tree: Path, tmp_path: Path):
    """LC_DYSYMTAB made a second LC_SYMTAB: each would be read whole, a file of a
    thousand would be read a thousand times."""
    data = bytearray((good_tree / "lib/libpython3.14.dylib").read_bytes())
    number, at = next((n, at) for n, (at, cmd, _) in enumerate(_commands(data)) if cmd == 0xB)
    struct.pack_into("<I", data, at, 0x2)
    tree = _tree_with(tmp_path, {"lib/libpython3.14.dylib": bytes(data)})
    assert check_macho_tree(tree, ARM)[1] == [
        f"lib/libpython3.14.dylib: not a readable Mach-O file (load command {number} is a second "
        "LC_SYMTAB, which a file has once at most)"
    ]
