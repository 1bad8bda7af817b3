"""Choosing extensions, license classification, the generated inittab and the
symbol-driven additions of `pyfreight embed`, on small PYTHON.json documents."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from pyfreight import toolchain
from pyfreight.cpython.spec import BuildSpec
from pyfreight.embed.host_toolchain import find_toolchain
from pyfreight.embed.link import generate_config_c
from pyfreight.embed.memory import static_code_refusal
from pyfreight.embed.select import is_copyleft, select_extensions
from pyfreight.embed.symbols import Symbols, needed_by_link, read_symbols
from pyfreight.errors import PyfreightError
from pyfreight.platforms import WINDOWS
from pyfreight.python_json import Distribution
from pyfreight.targets import default_target
from pyfreight.toolchain import LLVM
from tests.conftest import pyfreight_cli


def _variant(in_core=False, required=False, init_fn="PyInit_x", objs=(), links=(), licenses=None):
    v = {
        "in_core": in_core,
        "required": required,
        "init_fn": init_fn,
        "objs": list(objs),
        "links": list(links),
    }
    if licenses is not None:
        v["licenses"] = licenses
    return [v]


BUILD_INFO = {
    "extensions": {
        "sys": _variant(in_core=True, required=True, init_fn="NULL"),
        "_io": _variant(required=True, init_fn="PyInit__io", objs=["build/Modules/_io.o"]),
        "_ssl": _variant(
            init_fn="PyInit__ssl",
            links=[{"name": "ssl", "path_static": "build/lib/libssl.a"}],
            licenses=["Apache-2.0"],
        ),
        "_gplthing": _variant(init_fn="PyInit__gplthing", licenses=["GPL-3.0-or-later"]),
        "_zstd": _variant(init_fn="PyInit__zstd", licenses=["BSD-3-Clause OR GPL-2.0-only"]),
    },
    "core": {
        "objs": ["build/Python/ceval.o", "build/Modules/config.o"],
        "links": [{"name": "m", "system": True}],
    },
    "inittab_object": "build/Modules/config.o",
}
DIST = Distribution(root=Path("/nonexistent/python"), document={"build_info": BUILD_INFO})


def _names(selection):
    return [e.name for e in select_extensions(DIST, selection)]


def test_presets_and_lists_always_keep_what_starts_the_interpreter():
    assert _names("minimal") == ["_io", "sys"]
    assert _names("all") == ["_gplthing", "_io", "_ssl", "_zstd", "sys"]
    assert _names("_ssl") == ["_io", "_ssl", "sys"]
    assert _names("no-copyleft") == ["_io", "_ssl", "_zstd", "sys"]


def test_unknown_extension_names_are_refused_with_the_known_ones():
    with pytest.raises(PyfreightError, match=r"_nosuch.*_gplthing, _io, _ssl"):
        _names("_ssl,_nosuch")


@pytest.mark.parametrize(
    ("expression", "copyleft"),
    [
        ("MIT", False),
        ("GPL-2.0-only", True),
        ("LGPL-2.1-or-later", True),
        ("BSD-3-Clause OR GPL-2.0-only", False),
        ("MIT AND GPL-2.0-only", True),
        ("(MIT OR GPL-2.0-only) AND Apache-2.0", False),
        ("(GPL-2.0-only OR LGPL-2.1-only) AND MIT", True),
        ("GPL-2.0-only WITH Classpath-exception-2.0", True),
        ("MPL-2.0", True),
    ],
)
def test_copyleft_follows_spdx_operators(expression, copyleft):
    assert is_copyleft(expression) is copyleft


def test_config_c_lists_exactly_the_chosen_modules(tmp_path):
    source = generate_config_c(select_extensions(DIST, "_ssl"))
    assert '{"sys", NULL},' in source and '{"_ssl", PyInit__ssl},' in source
    assert "extern PyObject *PyInit__ssl(void);" in source and "NULL(void)" not in source
    assert "_gplthing" not in source and "_zstd" not in source


def test_config_c_compiles(tmp_path):
    """The generated file is valid C against a minimal stand-in for Python.h."""
    (tmp_path / "Python.h").write_text(
        "#include <stddef.h>\ntypedef struct _object PyObject;\n"
        "struct _inittab { const char *name; PyObject *(*initfunc)(void); };\n"
    )
    (tmp_path / "config.c").write_text(generate_config_c(select_extensions(DIST, "all")))
    subprocess.run(["cc", "-std=c11", "-Wall", "-Werror", "-c", "config.c"], cwd=tmp_path, check=True)


def test_extensions_the_core_calls_are_pulled_in():
    core, dt, extra, other = Path("core.o"), Path("dt.o"), Path("extra.o"), Path("other.o")
    symbols = {
        core: Symbols(frozenset({"Py_Main"}), frozenset({"_PyDateTime_InitTypes", "printf"})),
        dt: Symbols(frozenset({"_PyDateTime_InitTypes", "PyInit__datetime"}), frozenset({"helper"})),
        extra: Symbols(frozenset({"helper"}), frozenset()),
        other: Symbols(frozenset({"PyInit_other"}), frozenset()),
    }
    candidates = {"_datetime": [dt], "_extra": [extra], "other": [other]}
    added = needed_by_link([], candidates, [core], symbols)
    assert added == {"_datetime": ["_PyDateTime_InitTypes"], "_extra": ["helper"]}
    assert needed_by_link(["_datetime", "_extra"], candidates, [core], symbols) == {}


def test_read_symbols_of_a_real_object(tmp_path):
    (tmp_path / "a.c").write_text(
        "extern int g(void);\nstatic int h(void) { return 1; }\nint f(void) { return g() + h(); }\n"
    )
    subprocess.run(["cc", "-c", "a.c"], cwd=tmp_path, check=True)
    symbols = read_symbols("nm", [tmp_path / "a.o"])[tmp_path / "a.o"]
    assert symbols.defined == {"f"} and symbols.undefined == {"g"}


def test_lto_archives_without_that_llvm_are_refused_naming_the_version(tmp_path):
    with pytest.raises(
        PyfreightError, match=r"LLVM 99 bitcode.*ld\.lld, llvm-ar, llvm-nm.*apt-get install clang-99"
    ):
        find_toolchain("llvm-bitcode:99", "cc", tmp_path)
    with pytest.raises(PyfreightError, match="object_file_format 'wasm'"):
        find_toolchain("wasm", "cc", tmp_path)


def test_bitcode_linked_by_a_named_compiler_keeps_the_archives_os_and_format(tmp_path):
    """An LTO archive of another OS embedded with `--cc`: the toolchain links for that
    OS (its flags, its executable's form), not for Linux by default."""
    toolchain = find_toolchain(f"llvm-bitcode:{LLVM}", f"clang-{LLVM}", tmp_path, platform=WINDOWS)
    assert toolchain.platform is WINDOWS
    assert toolchain.object_format == f"llvm-bitcode:{LLVM}" and toolchain.bitcode_llvm == LLVM


def test_windows_objects_are_read_with_llvm_and_linked_with_the_pinned_compilers_names(tmp_path):
    """COFF objects of every Windows machine are read with llvm-nm (binutils' nm knows
    no ARM64 COFF: "file format not recognized"), and the pinned zig's names of
    Windows' import libraries (pathcch: mingw-w64 spells it otherwise) reach the link."""
    from pyfreight.embed.zig import PinnedCompiler

    pinned = PinnedCompiler(command=("cc",), library_names={"pathcch": "api-ms-win-core-path-l1-1-0"})
    toolchain = find_toolchain("coff", None, tmp_path, pinned=pinned, platform=WINDOWS)
    assert Path(toolchain.nm).name == f"llvm-nm-{LLVM}" and Path(toolchain.ar).name == f"llvm-ar-{LLVM}"
    assert toolchain.library_names == {"pathcch": "api-ms-win-core-path-l1-1-0"}


def test_elf_archives_use_the_given_compiler(tmp_path):
    toolchain = find_toolchain("elf", "gcc -O1", tmp_path)
    assert toolchain.cc == ("gcc", "-O1") and toolchain.bitcode_llvm is None
    assert "gcc" in toolchain.describe()


@pytest.mark.parametrize(
    ("version", "options", "applies"),
    [
        ("3.14", "pgo+lto", True),
        ("3.14", "noopt", True),
        ("3.14", "lto+static", True),
        ("3.13", "pgo+lto", True),
        ("3.15", "noopt", True),
        ("3.12", "pgo+lto", False),
        ("3.15", "freethreaded+noopt", False),
        ("3.14", "freethreaded+pgo+lto", False),
        ("3.14", "debug", False),
    ],
)
def test_static_code_is_refused_by_name_where_its_layouts_do_not_apply(version, options, applies):
    refusal = static_code_refusal(BuildSpec.named(f"{version}.0", options, default_target().triple))
    assert (refusal is None) == applies
    if refusal:
        assert f"this archive is {version} {options}: leave --static-code out" in refusal


def test_static_code_needs_the_memory_importer(tmp_path):
    proc = pyfreight_cli("embed", tmp_path / "a-full.tar.zst", "--static-code", "-o", tmp_path / "x")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert (
        "error: --static-code is for the in-memory importer's executables: add --memory-importer"
        in proc.stderr
    )


# The names C code of each Windows architecture gives memimport.c's two externs: 32-bit x86
# alone puts an underscore before every C name (its linker failed on `_pyfreight_blob_end`
# when the assembly spelled them bare).
WINDOWS_BLOB_SYMBOLS = [
    ("x86_64-windows-gnu", b"\x64\x86", ""),
    ("i686-windows-gnu", b"\x4c\x01", "_"),
    ("aarch64-windows-gnu", b"\x64\xaa", ""),
]


@pytest.mark.parametrize(
    "target,machine,prefix", WINDOWS_BLOB_SYMBOLS, ids=[t[0] for t in WINDOWS_BLOB_SYMBOLS]
)
def test_a_windows_blob_is_assembled_into_a_coff_read_only_section(tmp_path, target, machine, prefix):
    """The blob's assembly for COFF has none of ELF's directives (the Windows assembler
    refuses .type and .size) and lands in .rdata; clang assembles it for each Windows
    architecture into an object of that machine with both symbols defined under the names
    a C compiler for it gives memimport.c's externs."""
    from pyfreight import memimport

    blob = tmp_path / "stdlib.blob"
    blob.write_bytes(b"pyfreight" * 10)
    text = memimport.blob_asm(blob, WINDOWS.blob_assembly())
    assert ".type" not in text and ".size" not in text and "GNU-stack" not in text
    assert '.section .rdata,"dr"' in text
    clang = f"clang-{toolchain.LLVM}"  # scripts/setup.sh installs it (embed links LTO archives with it)
    source = tmp_path / "blob.S"
    source.write_text(text)
    obj = tmp_path / "blob.o"
    subprocess.run([clang, f"--target={target}", "-c", source, "-o", obj], check=True)
    assert obj.read_bytes()[:2] == machine
    # What C code for this target calls the extern, asked of the compiler, not assumed.
    user = tmp_path / "user.c"
    user.write_text("extern const unsigned char pyfreight_blob_end[];\nconst void *p = pyfreight_blob_end;\n")
    user_obj = tmp_path / "user.o"
    subprocess.run([clang, f"--target={target}", "-c", user, "-o", user_obj], check=True)
    nm = f"llvm-nm-{toolchain.LLVM}"
    wanted = subprocess.run(
        [nm, "-u", "--just-symbol-name", user_obj], capture_output=True, text=True, check=True
    ).stdout.split()
    assert wanted == [f"{prefix}pyfreight_blob_end"], wanted
    symbols = subprocess.run([nm, obj], capture_output=True, text=True, check=True).stdout
    assert re.search(rf"^0+5a R {prefix}pyfreight_blob_end$", symbols, re.M), symbols
    assert re.search(rf"^0+ R {prefix}pyfreight_blob_start$", symbols, re.M), symbols


def test_an_elf_blob_is_typed_and_sized(tmp_path):
    """ELF keeps its own directives: both symbols typed as objects, the start sized to the
    blob, in a section of its own, with a non-executable stack note."""
    from pyfreight import memimport

    blob = tmp_path / "stdlib.blob"
    blob.write_bytes(b"pyfreight" * 10)
    source = tmp_path / "blob.S"
    source.write_text(memimport.blob_asm(blob))
    obj = tmp_path / "blob.o"
    subprocess.run(
        [f"clang-{toolchain.LLVM}", "--target=x86_64-linux-gnu", "-c", source, "-o", obj], check=True
    )
    table = subprocess.run(["readelf", "-sSW", obj], capture_output=True, text=True, check=True).stdout
    assert re.search(r"\b90 OBJECT +GLOBAL +DEFAULT +\d+ pyfreight_blob_start$", table, re.M), table
    assert re.search(r"OBJECT +GLOBAL +DEFAULT +\d+ pyfreight_blob_end$", table, re.M), table
    assert ".pyfreight_blob" in table and ".note.GNU-stack" in table


def test_asking_the_compiler_its_version_writes_nothing_where_embed_was_started(tmp_path, monkeypatch):
    """The pinned zig's `cc --version` for a macOS target writes an empty a.o into its
    working folder; a compiler doing so must not leave it in the user's (issue 57: the
    macOS part left one in the repository)."""
    compiler = tmp_path / "bin" / "littering-cc"
    compiler.parent.mkdir()
    compiler.write_text('#!/bin/sh\n: > a.o\necho "littering-cc 1.0"\n')
    compiler.chmod(0o755)
    started_in = tmp_path / "cwd"
    started_in.mkdir()
    monkeypatch.chdir(started_in)
    toolchain = find_toolchain("elf", str(compiler), tmp_path / "work")
    assert toolchain.describe().startswith("littering-cc 1.0")
    assert list(started_in.iterdir()) == []
