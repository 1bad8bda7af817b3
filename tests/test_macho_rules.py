"""verify/macho_rules.py judges the facts formats/macho.py reads from macOS files: each
rule fails on facts made to break it, with one exact line; then on real files, linked
here by the targets' pinned zig (good ones, and one made to break each rule), and on
broken and hostile ones, which are named in one line. The layouts the expected lines
name (pages, segments) are read here with a few lines of struct, not by the reader."""

from __future__ import annotations

import hashlib
import os
import random
import struct
import subprocess
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from pyfreight.embed.zig import pinned_zig
from pyfreight.formats.macho import CodeSignature, MachoFacts, UnreadableMacho, macho_facts, macho_files
from pyfreight.paths import default_workspace
from pyfreight.targets import all_targets
from pyfreight.verify.macho_rules import check_macho_tree, is_interpreter_image, macho_problems

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
    commands = {t.clang_triple: pinned_zig(t, ws) for t in (ARM, INTEL)}

    def compile_(out: Path, source: str, *flags: str, triple: str = ARM.clang_triple) -> Path:
        # One zig links every target; its command ends with the target's triple, which
        # a test may change (aarch64-macos.13.0: a newer minimum macOS).
        zig = commands.get(triple, commands[ARM.clang_triple])
        source_file = sources / f"{hashlib.sha256(source.encode()).hexdigest()[:16]}.c"
        source_file.write_text(source)
        out.parent.mkdir(parents=True, exist_ok=True)
        command = [*zig.command[:-1], triple, "-O2", "-s", str(source_file), *flags, "-o", str(out)]
        subprocess.run(command, check=True, env={**os.environ, **zig.env}, timeout=300)
        return out

    return compile_


def _good_tree(cc: Compile, root: Path, triple: str = ARM.clang_triple) -> Path:
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
    facts, problems = check_macho_tree(_good_tree(cc, tmp_path, INTEL.clang_triple), INTEL)
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
    cc(tmp_path / "bin/tool", PROGRAM_SOURCE, triple=INTEL.clang_triple)
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
    arm = cc(tmp_path / "parts/arm", C_API_SOURCE, *PYTHON_DYLIB).read_bytes()
    intel = cc(tmp_path / "parts/intel", C_API_SOURCE, *PYTHON_DYLIB, triple=INTEL.clang_triple).read_bytes()
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
    assert [p.name for p in macho_files(tree)] == ["i386.dylib", "libpython3.14.dylib"]
    assert check_macho_tree(tree, ARM) == (
        [],
        [
            "lib/i386.dylib: not a readable Mach-O file (a 32-bit or big-endian Mach-O file; "
            "ours are 64-bit little-endian)",
            "lib/libpython3.14.dylib: fat/universal file (ARM64, X86_64): ship thin files",
        ],
    )


def test_hostile_variants_of_real_files_raise_only_unreadable_macho(good_tree: Path, tmp_path: Path):
    """Bytes changed at random in the load commands and __LINKEDIT, counts and offsets
    made huge, files cut anywhere: each is read or named in one printable line, and the
    problems found in what was read are printable lines too."""
    rng = random.Random(20260805)
    for name in ("lib/libpython3.14.dylib", "bin/python3.14"):
        original = (good_tree / name).read_bytes()
        layout = _layout(good_tree / name)
        # Where the structures are: the load commands, and __LINKEDIT (the symbol and
        # string tables, the export trie, the code signature).
        regions = [(0, 32 + layout["sizeofcmds"]), (layout["linkedit"], len(original))]
        variants = [original[:cut] for cut in rng.sample(range(len(original)), 60)]
        for _ in range(300):
            data = bytearray(original)
            for _ in range(rng.choice((1, 2, 4))):
                start, end = rng.choice(regions)
                at = rng.randrange(start, end - 4)
                if rng.random() < 0.5:
                    data[at] = rng.randrange(256)
                else:
                    struct.pack_into(
                        "<I", data, at, rng.choice((0, 1, 0x7FFFFFFF, 0xFFFFFFFF, len(original)))
                    )
            variants.append(bytes(data))
        for index, data in enumerate(variants):
            path = tmp_path / f"v{index}"
            path.write_bytes(data)
            try:
                facts = macho_facts(path, tmp_path)
            except UnreadableMacho as exc:
                assert str(exc).startswith(f"v{index}: ") and str(exc).isprintable(), str(exc)
                continue
            if facts is not None:  # None: the magic itself was changed
                lines = macho_problems(facts, ARM, SHIPPED)
                assert all(line.isprintable() for line in lines), lines
