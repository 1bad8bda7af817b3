"""The hostile Windows and macOS binary corpus: small real binaries linked here by the
targets' pinned zig (a python.exe loading a python314.dll that exports the C API, its
python3.dll forwarder and pythonw.exe; a macOS bin/python3.14 carrying the C API and a
helper program), laid out as install trees and packed as archives of both flavours,
then mutated with struct, one hostile idea per case, the way a campaign of ~70 archives
made from real Windows and macOS archives broke validate, test-dist and check-install.

Every case is handed to the commands that judge it, as people type them (the
`pyfreight` console script, in a workspace, temporary folder and working folder of its
own, with an `outside` folder it must not touch), under a 4 GB address-space limit, with
a `docker` on PATH that only records being asked (make test runs no container: for these
archives test-dist and check-install stop at the static PE/Mach-O rules). A case is refused cleanly when
the command exits 1 within 10 s and 500 MB, prints no traceback and no internal error,
says `error:` once, and names the mutated member on a line that the unmutated twin of
the archive does not print (the baseline: the tiny binaries may have problems of their
own, and a case must not pass on them); and when nothing is left behind.

    python -m tests.hostile_binaries [--json PATH] [--containers] [--keep DIR]

builds the corpus in a temporary folder, runs all of it and prints the summary table
(for the release notes) and a line per case and command, and writes every outcome as
JSON to PATH. --containers runs check-install of the Windows trees with the real Docker
engine (which would run Wine, were a tree to pass its PE rules: the Windows target's
part of test-all); without it, with the recording docker, as make test does. The tests are in
tests/test_hostile_binaries.py."""

from __future__ import annotations

import argparse
import contextlib
import gzip
import hashlib
import io
import json
import os
import re
import resource
import signal
import struct
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import zstandard

from pyfreight.archives.flavours import FULL, INSTALL_ONLY, Flavour
from pyfreight.cpython.spec import BuildSpec
from pyfreight.embed.zig import PinnedCompiler, pinned_zig
from pyfreight.formats.coff_resource import manifest_object
from pyfreight.formats.manifest import PROGRAM_MANIFEST
from pyfreight.paths import SCHEMA_DIR, default_workspace
from pyfreight.targets import Target, all_targets

REPO = Path(__file__).resolve().parent.parent
PYFREIGHT = Path(sys.executable).with_name("pyfreight")  # the console script of this venv
WINDOWS = all_targets()["x86_64-pc-windows-gnullvm"]
MACOS = all_targets()["aarch64-apple-darwin"]
RELEASE = "20260805"
MINOR = "3.14"

# What a refusal may cost, and the safety nets of a run that does not refuse.
WALL_LIMIT_S = 10.0
MEMORY_LIMIT_MB = 500.0
HARD_TIMEOUT_S = 60.0
ADDRESS_SPACE_BYTES = 4 << 30
BASELINE_CONTAINER_TIMEOUT_S = 3600.0

# Sizes of the cases that grow work faster than the file.
DEEP_FOLDERS = 1100  # folders below the stdlib: Python's own recursion breaks near 1000
TRIE_NODES = 1_200_000  # one long chain, as the campaign's 18 MB export trie
DLL_STUBS = 3000  # the campaign had 20,000; 3,000 keeps make test quick
FORWARDERS = 0x2000  # exports of the forwarder bomb, each naming a 1 MiB string
DEBUG_ENTRIES = 4096  # entries of the debug-directory bomb, each a 1 MiB CodeView record
BOMB_STRING = 1 << 20
# Issue 56's strings: a symbol name of 60 MiB and a CodeDirectory identifier of 80 MiB,
# of bytes that are escaped when printed (decoded whole, each took 3.7 GB). The
# identifier's first 2 MiB are incompressible, for its archive to expand to less than
# 50 times its size.
LONG_SYMBOL_NAME = b"_" + b"\x01" * ((60 << 20) - 1)
LONG_IDENTIFIER_BYTES = 80 << 20
SPARSE_BYTES = 6 << 30

# The C of the tiny binaries: the C API names verify/exports.py asks of the interpreter.
C_API = """
#ifdef _WIN32
#define API __declspec(dllexport)
#else
#define API
#endif
API void *Py_Initialize(void) { return 0; }
API void *PyList_New(long n) { return (void *)(n + 1); }
API void *PyModule_Create2(void *m, int v) { return v ? m : 0; }
API int PyArg_ParseTuple(void *a, const char *f, ...) { return a != 0 && f != 0; }
API int Py_Main(int argc, char **argv) { return argc + (argv != 0); }
"""
WINDOWS_MAIN = """
__declspec(dllimport) int Py_Main(int argc, char **argv);
int main(int argc, char **argv) { return Py_Main(argc, argv); }
"""
PROGRAM = '#include <stdio.h>\nint main(void) { puts("hi"); return 0; }\n'
EVIL_LIBRARY = "int evil(void) { return 1; }\n"
EVIL_PROGRAM = "int evil(void);\nint main(void) { return evil(); }\n"
# An object whose one long symbol name (COFF keeps it in the string table) is rewritten
# to bytes that are not UTF-8.
MARKER = b"XXXXXXXXXXXXXXXX"
NAMES_OBJECT = f"int Py_Marker_{MARKER.decode()}(void) {{ return 7; }}\n"
NOT_UTF8 = b"\xff\xfe\xc0\xc1\xf5\xf6\xf7\xf8\x80\x81\x82\x83\xfe\xff\xc0\xaf"
FORWARDER_DEF = "LIBRARY python3.dll\nEXPORTS\n" + "".join(
    f"  {name}=python314.{name}\n" for name in ("Py_Initialize", "PyList_New", "Py_Main")
)


# The binaries ---------------------------------------------------------------------


@dataclass(frozen=True)
class Binaries:
    """The bytes of every file linked by the pinned zig, by a short name."""

    files: dict[str, bytes]

    def __getitem__(self, name: str) -> bytes:
        return self.files[name]


def _zig(target: Target) -> PinnedCompiler:
    return pinned_zig(target, default_workspace())


def build_binaries(folder: Path) -> Binaries:
    """Links the tiny binaries into `folder` with the pinned zig (-O2, stripped: as the
    builds link; a Windows link is its own step, as the build's, which leaves no
    reproducibility record in the debug directory)."""
    folder.mkdir(parents=True, exist_ok=True)
    windows, macos = _zig(WINDOWS), _zig(MACOS)

    def run(zig: PinnedCompiler, *args: str) -> None:
        # In `folder`, as every zig of the tests runs: zig names its cache relative to
        # its working folder when the cache is below it (the repository's build/), and
        # that name is part of the key of the C runtime it compiles once, so a run from
        # the repository missed the runtime tests/test_pe_reader.py compiled (40 s).
        subprocess.run(
            [*zig.command, *args],
            check=True,
            env={**os.environ, **zig.env},
            timeout=600,
            capture_output=True,
            cwd=folder,
        )

    def source(name: str, text: str) -> str:
        path = folder / name
        path.write_text(text)
        return str(path)

    def out(name: str) -> str:
        return str(folder / name)

    # Windows: compile, then link stripped.
    run(windows, "-O2", "-w", "-c", source("capi.c", C_API), "-o", out("capi.o"))
    run(windows, "-O2", "-w", "-c", source("main.c", WINDOWS_MAIN), "-o", out("main.o"))
    run(windows, "-O2", "-c", source("fwd.c", "int python3_forwarder;\n"), "-o", out("fwd.o"))
    run(windows, "-O2", "-c", source("names.c", NAMES_OBJECT), "-o", out("names.o"))
    run(windows, "-O2", "-c", source("config.c", "int config_marker;\n"), "-o", out("config.o"))
    run(windows, "-s", "-shared", out("capi.o"), "-o", out("python314.dll"),
        f"-Wl,--out-implib,{out('python314.lib')}")  # fmt: skip
    # The programs carry the manifest the rules ask of CPython's (the object embed links).
    (folder / "manifest.o").write_bytes(manifest_object(PROGRAM_MANIFEST, "AMD64"))
    run(windows, "-s", out("main.o"), out("manifest.o"), out("python314.lib"), "-o", out("python.exe"))
    run(
        windows,
        "-s",
        "-mwindows",
        out("main.o"),
        out("manifest.o"),
        out("python314.lib"),
        "-o",
        out("pythonw.exe"),
    )
    run(
        windows, "-s", "-shared", out("fwd.o"), source("python3.def", FORWARDER_DEF), "-o", out("python3.dll")
    )
    # macOS: one step, as tests/test_macho_rules.py links. A static build's program
    # keeps the C API only when every section is kept.
    run(macos, "-O2", "-s", "-w", source("python.c", PROGRAM + C_API), "-Wl,--no-gc-sections",
        "-o", out("python3.14"))  # fmt: skip
    run(macos, "-O2", "-s", source("helper.c", PROGRAM), "-o", out("helper"))
    run(macos, "-O2", "-s", "-shared", source("evil.c", EVIL_LIBRARY),
        "-Wl,-install_name,/usr/local/lib/libevil.dylib", "-o", out("libevil.dylib"))  # fmt: skip
    run(
        macos, "-O2", "-s", source("evilmain.c", EVIL_PROGRAM), out("libevil.dylib"), "-o", out("helper-evil")
    )
    run(macos, "-O2", "-c", source("config-mac.c", "int config_marker;\n"), "-o", out("config-mac.o"))
    run(macos, "-O2", "-c", source("names-mac.c", NAMES_OBJECT), "-o", out("names-mac.o"))
    names = (
        "python314.dll", "python.exe", "pythonw.exe", "python3.dll", "names.o", "config.o",
        "python3.14", "helper", "helper-evil", "config-mac.o", "names-mac.o",
    )  # fmt: skip
    return Binaries({name: (folder / name).read_bytes() for name in names})


# Trees: what an install tree (and a full archive's python/ folder) holds -----------


@dataclass(frozen=True)
class Symlink:
    target: str


@dataclass(frozen=True)
class Fifo:
    pass


@dataclass(frozen=True)
class Sparse:
    """A file of `size` bytes of which only `head` is written (a hole after it)."""

    head: bytes
    size: int


Entry = bytes | Symlink | Fifo | Sparse


@dataclass(frozen=True)
class Tree:
    """An install tree (`files`, relative to it) for one platform; a full archive also
    has PYTHON.json (`document`) and what lies beside install/ (`beside`, relative to
    python/: build/ and licenses/)."""

    platform: str  # "windows" or "macos"
    files: dict[str, Entry]
    document: dict[str, Any] | None = None
    beside: dict[str, Entry] = field(default_factory=dict)

    def with_files(self, **changes: Entry) -> Tree:
        return replace(self, files={**self.files, **changes})

    def changed(self, path: str, entry: Entry) -> Tree:
        return replace(self, files={**self.files, path: entry})


def _stdlib(platform: str) -> str:
    return "Lib" if platform == "windows" else f"lib/python{MINOR}"


def base_tree(bins: Binaries, platform: str) -> Tree:
    """The unmutated install tree: what validate's _pe_tree and _install_tree look for,
    with the stdlib's test package (an install_only archive keeps it)."""
    stdlib = _stdlib(platform)
    text = {
        f"{stdlib}/os.py": b"# the stdlib\n",
        f"{stdlib}/test/__init__.py": b"",
        f"{stdlib}/site-packages/README.txt": b"site-packages\n",
    }
    if platform == "windows":
        files: dict[str, Entry] = {
            "python.exe": bins["python.exe"],
            "pythonw.exe": bins["pythonw.exe"],
            "python314.dll": bins["python314.dll"],
            "python3.dll": bins["python3.dll"],
            "LICENSE.txt": b"the license\n",
            "include/Python.h": b"/* the C API */\n",
            "Scripts/README.txt": b"scripts\n",
            **text,
        }
    else:
        files = {
            f"bin/python{MINOR}": bins["python3.14"],
            "bin/python3": Symlink(f"python{MINOR}"),
            "bin/python": Symlink(f"python{MINOR}"),
            "bin/helper": bins["helper"],
            f"{stdlib}/LICENSE.txt": b"the license\n",
            f"{stdlib}/config-{MINOR}-darwin/Makefile": b"# the build's Makefile\n",
            f"include/python{MINOR}/Python.h": b"/* the C API */\n",
            **text,
        }
    return Tree(platform, files)


def full_tree(
    bins: Binaries, platform: str, values: dict[str, Any] | None = None, hostile: bool = False
) -> Tree:
    """base_tree with PYTHON.json (from the schema, `values` over its defaults)
    and the build/ and licenses/ folders it names."""
    tree = base_tree(bins, platform)
    obj = bins["config.o"] if platform == "windows" else bins["config-mac.o"]
    beside: dict[str, Entry] = {
        "build/core/main.o": obj,
        "build/core/config.o": obj,
        "build/core/config.c": b"/* config.c */\n",
        "build/run_tests.py": b"print('the tests')\n",
        "licenses/sbom.cdx.json": json.dumps(
            {"bomFormat": "CycloneDX", "specVersion": "1.6", "version": 1, "components": []}
        ).encode(),
    }
    return replace(tree, document=python_json(platform, values, hostile), beside=beside)


# PYTHON.json, from schema/PYTHON.json.schema.json -----------------------------------


def _schema() -> dict[str, Any]:
    document: dict[str, Any] = json.loads((SCHEMA_DIR / "PYTHON.json.schema.json").read_text())
    return document


def _instance(schema: dict[str, Any], node: dict[str, Any], where: str, given: dict[str, Any]) -> Any:
    """A value for `node` of the schema at `where` (dotted): the one `given` names, else
    what the schema fixes (const, the first of an enum, the first example), else the
    least its type allows. A pattern the schema leaves open must be given."""
    if where in given:
        return given[where]
    if "$ref" in node:
        node = schema["$defs"][node["$ref"].rsplit("/", 1)[1]]
    for fixed in ("const", "enum", "examples"):
        if fixed in node:
            return node[fixed] if fixed == "const" else node[fixed][0]
    kind = node.get("type")
    if kind == "object":
        properties = node.get("properties", {})
        names = list(node.get("required", []))
        names += [k.removeprefix(f"{where}.") for k in given if k.startswith(f"{where}.")]
        names += [k for k in given if not where and "." not in k]
        found = {}
        for name in dict.fromkeys(n.split(".")[0] for n in names):
            child = properties.get(name, node.get("additionalProperties") or {})
            found[name] = _instance(schema, child, f"{where}.{name}" if where else name, given)
        return found
    if kind == "array":
        return [_instance(schema, node["items"], f"{where}[]", given) for _ in range(node.get("minItems", 0))]
    if kind == "integer":
        return node.get("minimum", 0)
    if kind == "boolean":
        return False
    if kind == "string" and "pattern" not in node:
        return "x"
    raise KeyError(f"PYTHON.json {where}: the schema leaves it open; give a value")


def python_json(platform: str, values: dict[str, Any] | None = None, hostile: bool = False) -> dict[str, Any]:
    """A PYTHON.json for a tiny tree of `platform`, every field the schema requires made
    from the schema; only what it leaves open (patterns, the platform's choices) is
    given here, from the target's data and the tree's layout. Checked against the schema."""
    import jsonschema

    target = WINDOWS if platform == "windows" else MACOS
    stdlib = f"install/{_stdlib(platform)}"
    given: dict[str, Any] = {
        "target_triple": target.triple,
        "python_platform_tag": target.python_platform_tag,
        "build_options": "noopt",
        "python_tag": "cp314",
        "python_abi_tag": "",
        "python_major_minor_version": MINOR,
        "python_bytecode_magic_number": "2b0e0d0a",
        "python_implementation_hex_version": 0x030E07F0,
        "python_implementation_version": ["3", "14", "7", "final", "0"],
        "licenses": ["Python-2.0"],
        "run_tests": "build/run_tests.py",
        "build_info.core.objs": ["build/core/main.o", "build/core/config.o"],
        "build_info.inittab_object": "build/core/config.o",
        "build_info.inittab_source": "build/core/config.c",
        "python_paths.stdlib": stdlib,
        "python_paths.platstdlib": stdlib,
        "python_paths.purelib": f"{stdlib}/site-packages",
        "python_paths.platlib": f"{stdlib}/site-packages",
        "python_paths.data": "install",
    }
    if platform == "windows":
        given |= {
            "python_exe": "install/python.exe",
            "license_path": "install/LICENSE.txt",
            "python_paths.include": "install/include",
            "python_paths.scripts": "install/Scripts",
            "python_symbol_visibility": "dllexport",
            "libpython_link_mode": "shared",
            "crt_features": ["ucrt-dynamic"],
            "build_info.object_file_format": "coff",
        }
    else:
        given |= {
            "python_exe": f"install/bin/python{MINOR}",
            "license_path": f"{stdlib}/LICENSE.txt",
            "python_paths.include": f"install/include/python{MINOR}",
            "python_paths.scripts": "install/bin",
            "python_stdlib_platform_config": f"{stdlib}/config-{MINOR}-darwin",
            "python_symbol_visibility": "global-default",
            "libpython_link_mode": "static",
            "crt_features": ["libsystem-dynamic"],
            "build_info.object_file_format": "mach-o",
        }
    given |= values or {}
    schema = _schema()
    document = _instance(schema, schema, "", given)
    errors = sorted(e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(document))
    if errors and not hostile:
        raise ValueError(f"the generated PYTHON.json does not match the schema: {errors}")
    assert isinstance(document, dict)
    return document


# Writing trees and archives -------------------------------------------------------


def makedirs(path: Path) -> None:
    """mkdir -p without recursion (pathlib's and os's recurse once a folder, and break a
    thousand folders down)."""
    missing = []
    while not path.is_dir():
        missing.append(path)
        path = path.parent
    for folder in reversed(missing):
        folder.mkdir()


def write_tree(tree: Tree, root: Path) -> Path:
    """The install tree on disk at `root` (fifos and sparse files as themselves)."""
    for rel, entry in sorted(tree.files.items()):
        path = root / rel
        makedirs(path.parent)
        if isinstance(entry, Symlink):
            path.symlink_to(entry.target)
        elif isinstance(entry, Fifo):
            os.mkfifo(path)
        elif isinstance(entry, Sparse):
            with path.open("wb") as handle:
                handle.write(entry.head)
                handle.truncate(entry.size)
            path.chmod(0o755)
        else:
            path.write_bytes(entry)
            path.chmod(0o755 if _is_binary(entry) else 0o644)
    return root


def _is_binary(data: bytes) -> bool:
    return data[:2] == b"MZ" or data[:4] in (b"\xcf\xfa\xed\xfe", b"\xca\xfe\xba\xbe")


def flavour_of(tree: Tree) -> Flavour:
    return FULL if tree.document is not None else INSTALL_ONLY


def archive_name(tree: Tree) -> str:
    target = WINDOWS if tree.platform == "windows" else MACOS
    return flavour_of(tree).file_name(BuildSpec.resolve(MINOR, "noopt", target), RELEASE)


def archive_bytes(tree: Tree) -> bytes:
    """The archive of `tree`: a full one (PYTHON.json first, the tree below
    python/install/) when it has a document, else install_only (the tree at python/)."""
    flavour = flavour_of(tree)
    members: list[tuple[str, Entry]] = []
    if tree.document is not None:
        members.append(("python/PYTHON.json", json.dumps(tree.document, indent=1).encode()))
        members += [(f"python/{rel}", entry) for rel, entry in sorted(tree.beside.items())]
    members += [(f"{flavour.install_root}/{rel}", entry) for rel, entry in sorted(tree.files.items())]
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name, entry in members:
            info = tarfile.TarInfo(name)
            info.mtime = 1785900000
            if isinstance(entry, Symlink):
                info.type, info.linkname = tarfile.SYMTYPE, entry.target
                tar.addfile(info)
            elif isinstance(entry, bytes):
                info.size, info.mode = len(entry), 0o755 if _is_binary(entry) else 0o644
                tar.addfile(info, io.BytesIO(entry))
            else:
                raise ValueError(f"{name}: a {type(entry).__name__} cannot be an archive member")
    if flavour.compression == "zst":
        return zstandard.ZstdCompressor(level=3).compress(raw.getvalue())
    return gzip.compress(raw.getvalue(), compresslevel=6, mtime=0)


# PE mutations, with struct ----------------------------------------------------------

IMAGE_DIRECTORY_EXPORT, IMAGE_DIRECTORY_IMPORT, IMAGE_DIRECTORY_RESOURCE, IMAGE_DIRECTORY_DEBUG = 0, 1, 2, 6
_EXPORT_DIRECTORY = struct.Struct("<IIHHIIIIIII")
_DEBUG_DIRECTORY = struct.Struct("<IIHHIIII")
_SECTION = struct.Struct("<8sIIIIIIHHI")
READ_DATA = 0x40000040  # IMAGE_SCN_CNT_INITIALIZED_DATA | IMAGE_SCN_MEM_READ


def _align(value: int, to: int) -> int:
    return -(-value // to) * to


class Pe:
    """A PE32+ image's headers, read and changed in place."""

    def __init__(self, data: bytes) -> None:
        self.data = bytearray(data)
        self.coff = struct.unpack_from("<I", self.data, 0x3C)[0] + 4
        self.optional = self.coff + 20
        assert struct.unpack_from("<H", self.data, self.optional)[0] == 0x20B, "PE32+ only"
        optional_size = struct.unpack_from("<H", self.data, self.coff + 16)[0]
        self.section_table = self.optional + optional_size
        self.directories = self.optional + 112

    @property
    def section_count(self) -> int:
        return int(struct.unpack_from("<H", self.data, self.coff + 2)[0])

    def sections(self) -> list[tuple[str, int, int, int, int, int]]:
        """(name, header offset, virtual size, virtual address, raw size, raw offset)."""
        found = []
        for index in range(self.section_count):
            at = self.section_table + index * _SECTION.size
            name, vsize, va, raw_size, raw_at, *_ = _SECTION.unpack_from(self.data, at)
            found.append((name.rstrip(b"\0").decode(), at, vsize, va, raw_size, raw_at))
        return found

    def section(self, name: str) -> tuple[str, int, int, int, int, int]:
        return next(s for s in self.sections() if s[0] == name)

    def offset(self, rva: int) -> int:
        for _, _, vsize, va, raw_size, raw_at in self.sections():
            if va <= rva < va + max(vsize, raw_size):
                return raw_at + rva - va
        raise ValueError(f"rva {rva:#x} is in no section")

    def directory(self, index: int) -> tuple[int, int]:
        rva, size = struct.unpack_from("<II", self.data, self.directories + 8 * index)
        return rva, size

    def set_directory(self, index: int, rva: int, size: int) -> None:
        struct.pack_into("<II", self.data, self.directories + 8 * index, rva, size)

    def next_rva(self) -> int:
        section_alignment = struct.unpack_from("<I", self.data, self.optional + 32)[0]
        return _align(max(va + vsize for _, _, vsize, va, _, _ in self.sections()), section_alignment)

    def add_section(self, name: bytes, payload: bytes) -> int:
        """Appends a readable data section holding `payload`; returns its RVA."""
        section_alignment, file_alignment = struct.unpack_from("<II", self.data, self.optional + 32)
        header = self.section_table + self.section_count * _SECTION.size
        first_raw = min(raw_at for *_, raw_at in self.sections() if raw_at)
        assert header + _SECTION.size <= first_raw, "no room for another section header"
        rva = self.next_rva()
        raw_at = _align(len(self.data), file_alignment)
        raw_size = _align(len(payload), file_alignment)
        self.data += bytes(raw_at - len(self.data)) + payload + bytes(raw_size - len(payload))
        _SECTION.pack_into(
            self.data, header, name, len(payload), rva, raw_size, raw_at, 0, 0, 0, 0, READ_DATA
        )
        struct.pack_into("<H", self.data, self.coff + 2, self.section_count + 1)
        struct.pack_into("<I", self.data, self.optional + 56, _align(rva + len(payload), section_alignment))
        return rva


def pe_section_count(data: bytes, count: int) -> bytes:
    pe = Pe(data)
    struct.pack_into("<H", pe.data, pe.coff + 2, count)
    return bytes(pe.data)


def pe_section_field(
    data: bytes, section: str, raw_size: int | None = None, raw_at: int | None = None
) -> bytes:
    """A section header's raw size or file offset set (beyond the file)."""
    pe = Pe(data)
    _, at, _, _, old_size, old_at = pe.section(section)
    struct.pack_into("<II", pe.data, at + 16, old_size if raw_size is None else raw_size,
                     old_at if raw_at is None else raw_at)  # fmt: skip
    return bytes(pe.data)


def pe_declares_2gb(data: bytes) -> bytes:
    """The image declares 2 GB: SizeOfImage, and its last section's virtual and raw size."""
    pe = Pe(data)
    _, at, _, va, _, _ = pe.sections()[-1]
    struct.pack_into("<I", pe.data, at + 8, 0x7FFF0000)  # VirtualSize
    struct.pack_into("<I", pe.data, at + 16, 0x7FFF0000)  # SizeOfRawData
    struct.pack_into("<I", pe.data, pe.optional + 56, _align(va + 0x7FFF0000, 0x1000))
    return bytes(pe.data)


def pe_directory_beyond(data: bytes, index: int) -> bytes:
    pe = Pe(data)
    pe.set_directory(index, 0x7FFF0000, 0x2000)
    return bytes(pe.data)


def pe_export_counts(data: bytes, count: int) -> bytes:
    """The export directory declares `count` functions and names."""
    pe = Pe(data)
    rva, _ = pe.directory(IMAGE_DIRECTORY_EXPORT)
    struct.pack_into("<II", pe.data, pe.offset(rva) + 20, count, count)
    return bytes(pe.data)


def pe_forwarder_bomb(data: bytes) -> bytes:
    """A new export directory of FORWARDERS names, every one forwarding to the same
    string of BOMB_STRING bytes with no end: work (and memory, where each export keeps
    its forwarder) of FORWARDERS times 1 MiB from a file of 1.2 MB."""
    pe = Pe(data)
    base = pe.next_rva()
    name_at = base + _EXPORT_DIRECTORY.size
    functions_at = name_at + 16
    ordinals_at = functions_at + 4
    names_at = ordinals_at + 2 * FORWARDERS
    strings_at = names_at + 4 * FORWARDERS
    forwarder_at = strings_at + 8 * FORWARDERS
    payload = bytearray(
        _EXPORT_DIRECTORY.pack(0, 0, 0, 0, name_at, 1, 1, FORWARDERS, functions_at, names_at, ordinals_at)
    )
    payload += b"python3.dll".ljust(16, b"\0")
    payload += struct.pack("<I", forwarder_at)
    payload += bytes(2 * FORWARDERS)  # every name is ordinal 0, the one forwarder
    payload += b"".join(struct.pack("<I", strings_at + 8 * i) for i in range(FORWARDERS))
    payload += b"".join(b"F%06x\0" % i for i in range(FORWARDERS))
    payload += b"python314." + b"A" * BOMB_STRING
    assert base + len(payload) - BOMB_STRING - 10 == forwarder_at
    rva = pe.add_section(b".edata", bytes(payload))
    assert rva == base
    pe.set_directory(IMAGE_DIRECTORY_EXPORT, rva, len(payload))
    return bytes(pe.data)


def pe_debug_directory(data: bytes, entries: int, kind: int, record: bytes) -> bytes:
    """A new debug directory of `entries` entries of type `kind`, all describing
    `record` (placed after them in the same new section)."""
    pe = Pe(data)
    base = pe.next_rva()
    file_alignment = struct.unpack_from("<I", pe.data, pe.optional + 36)[0]
    raw_base = _align(len(pe.data), file_alignment)
    record_at = entries * _DEBUG_DIRECTORY.size
    entry = _DEBUG_DIRECTORY.pack(0, 0, 0, 0, kind, len(record), base + record_at, raw_base + record_at)
    rva = pe.add_section(b".debug", entry * entries + record)
    assert rva == base
    pe.set_directory(IMAGE_DIRECTORY_DEBUG, rva, _DEBUG_DIRECTORY.size * entries)
    return bytes(pe.data)


def pe_manifest_size(data: bytes, size: int) -> bytes:
    """The manifest resource's data entry (the first entry of each of the resource
    directory's three levels) declaring `size` bytes."""
    pe = Pe(data)
    base, _ = pe.directory(IMAGE_DIRECTORY_RESOURCE)
    rva = base
    for _ in range(3):
        child = struct.unpack_from("<I", pe.data, pe.offset(rva) + 16 + 4)[0]
        rva = base + (child & 0x7FFFFFFF)
    struct.pack_into("<I", pe.data, pe.offset(rva) + 4, size)
    return bytes(pe.data)


def pe_ordinal_import(data: bytes, dll: bytes, renamed: bytes) -> bytes:
    """The import of `dll` renamed `renamed`, its first thunk made an import by an
    ordinal with bits set above 16 (which pefile takes as a corrupt table and drops the
    whole descriptor, so its name was never judged)."""
    pe = Pe(data)
    rva, _ = pe.directory(IMAGE_DIRECTORY_IMPORT)
    at = pe.offset(rva)
    while True:
        lookup, _, _, name, first = struct.unpack_from("<IIIII", pe.data, at)
        if not name:
            raise ValueError(f"{dll!r} is not imported")
        name_at = pe.offset(name)
        old = bytes(pe.data[name_at : pe.data.index(b"\0", name_at)])
        if old.lower() == dll.lower():
            assert len(renamed) <= len(old)
            pe.data[name_at : name_at + len(old)] = renamed.ljust(len(old), b"\0")
            for thunk in (lookup, first):
                struct.pack_into("<Q", pe.data, pe.offset(thunk), (1 << 63) | 0x10001)
            return bytes(pe.data)
        at += 20


def pe_thunks_at_descriptors(data: bytes) -> bytes:
    """The first import descriptor's thunk arrays (OriginalFirstThunk, FirstThunk)
    pointed back at the descriptor array itself: Windows would take the descriptors for
    thunks, and write addresses over them."""
    pe = Pe(data)
    rva, _ = pe.directory(IMAGE_DIRECTORY_IMPORT)
    at = pe.offset(rva)
    struct.pack_into("<I", pe.data, at, rva)  # OriginalFirstThunk
    struct.pack_into("<I", pe.data, at + 16, rva)  # FirstThunk
    return bytes(pe.data)


def pe_stub(data: bytes, size: int = 1024) -> bytes:
    """A DLL cut after its headers: what its section table describes is not there."""
    return data[:size]


def names_not_utf8(data: bytes) -> bytes:
    """Every copy of the marker (a COFF object's string table's and CodeView record's,
    a Mach-O object's string table's) rewritten."""
    assert MARKER in data
    return data.replace(MARKER, NOT_UTF8)


# Mach-O mutations, with struct --------------------------------------------------------

LC_SYMTAB, LC_SEGMENT_64, LC_CODE_SIGNATURE = 0x2, 0x19, 0x1D
LC_RPATH, LC_DYLD_ENVIRONMENT = 0x8000001C, 0x27
LC_DYLD_INFO_ONLY, LC_DYLD_EXPORTS_TRIE = 0x80000022, 0x80000033
CPU_ARM64, CPU_X86_64 = 0x0100000C, 0x01000007


def macho_commands(data: bytes | bytearray) -> Iterator[tuple[int, int, int]]:
    """(offset, cmd, cmdsize) of every load command of a thin 64-bit file."""
    ncmds = struct.unpack_from("<I", data, 16)[0]
    at = 32
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", data, at)
        yield at, cmd, size
        at += size


def _command(data: bytes | bytearray, wanted: int) -> int:
    return next(at for at, cmd, _ in macho_commands(data) if cmd == wanted)


def _code_directory(data: bytes | bytearray) -> int:
    dataoff = struct.unpack_from("<I", data, _command(data, LC_CODE_SIGNATURE) + 8)[0]
    _, _, count = struct.unpack_from(">III", data, dataoff)
    for index in range(count):
        slot, offset = struct.unpack_from(">II", data, dataoff + 12 + 8 * index)
        if slot == 0:
            return int(dataoff + offset)
    raise ValueError("no CodeDirectory")


def resign(data: bytearray) -> bytearray:
    """The CodeDirectory's page hashes made again for the bytes as they are now (an
    ad-hoc signature anyone can make): a mutated file is judged for its mutation, not
    for a stale signature."""
    cd = _code_directory(data)
    (_, _, _, _, hash_offset, _, _, n_code, code_limit, hash_size, hash_type, _, page_shift, _) = (
        struct.unpack_from(">9I4BI", data, cd)
    )
    assert hash_type == 2 and hash_size == 32, "zig signs with SHA-256"
    page = 1 << page_shift
    for number in range(n_code):
        digest = hashlib.sha256(data[number * page : min((number + 1) * page, code_limit)]).digest()
        at = cd + hash_offset + number * hash_size
        data[at : at + hash_size] = digest
    return data


def macho_add_command(data: bytes, cmd: int, text: str) -> bytes:
    """A load command carrying one string (an rpath, a dyld environment variable)
    added in the header's padding, the signature made again."""
    out = bytearray(data)
    ncmds, sizeofcmds = struct.unpack_from("<II", out, 16)
    payload = text.encode() + b"\0"
    size = _align(12 + len(payload), 8)
    at = 32 + sizeofcmds
    assert not any(out[at : at + size]), "the header has no padding left"
    out[at : at + size] = struct.pack("<III", cmd, size, 12) + payload.ljust(size - 12, b"\0")
    struct.pack_into("<II", out, 16, ncmds + 1, sizeofcmds + size)
    return bytes(resign(out))


def macho_symbol_names_anywhere(data: bytes) -> bytes:
    """Every symbol's name offset pointed far outside the string table."""
    out = bytearray(data)
    symoff, nsyms, _, _ = struct.unpack_from("<IIII", out, _command(out, LC_SYMTAB) + 8)
    for index in range(nsyms):
        struct.pack_into("<I", out, symoff + 16 * index, 0x7FFFFF00 + index)
    return bytes(resign(out))


def macho_identifier_offset(data: bytes, offset: int) -> bytes:
    out = bytearray(data)
    struct.pack_into(">I", out, _code_directory(out) + 20, offset)
    return bytes(out)


def chain_trie(nodes: int) -> bytes:
    """An export trie that is one chain: each node no export and one edge "a" to the
    next (its offset a 4-byte ULEB128), the last exporting a name `nodes` letters long."""

    def uleb4(value: int) -> bytes:
        return bytes((0x80 | value & 0x7F, 0x80 | value >> 7 & 0x7F, 0x80 | value >> 14 & 0x7F, value >> 21))

    assert 8 * nodes < 1 << 28
    return b"".join(b"\x00\x01a\x00" + uleb4(8 * (i + 1)) for i in range(nodes)) + b"\x02\x00\x00\x00"


def _linkedit_to_end(out: bytearray) -> None:
    """__LINKEDIT grown to the end of the file (after something was appended to it)."""
    for at, cmd, _ in macho_commands(out):
        if cmd == LC_SEGMENT_64 and out[at + 8 : at + 24].rstrip(b"\0") == b"__LINKEDIT":
            fileoff = struct.unpack_from("<Q", out, at + 40)[0]
            struct.pack_into("<Q", out, at + 32, _align(len(out) - fileoff, 0x4000))  # vmsize
            struct.pack_into("<Q", out, at + 48, len(out) - fileoff)  # filesize


def _append(out: bytearray, payload: bytes) -> int:
    """`payload` appended to the file within __LINKEDIT; returns where it starts."""
    start = len(out)
    out += payload + bytes(-len(payload) % 16)
    _linkedit_to_end(out)
    return start


def macho_export_trie(data: bytes, trie: bytes) -> bytes:
    """The export trie replaced by `trie`, appended to the file within __LINKEDIT."""
    out = bytearray(data)
    start = _append(out, trie)
    for at, cmd, _ in list(macho_commands(out)):
        if cmd == LC_DYLD_INFO_ONLY:
            struct.pack_into("<II", out, at + 40, start, len(trie))
        elif cmd == LC_DYLD_EXPORTS_TRIE:
            struct.pack_into("<II", out, at + 8, start, len(trie))
    return bytes(resign(out))


def macho_long_symbol_name(data: bytes, name: bytes) -> bytes:
    """The first external symbol renamed `name`: a new string table (the old one, then
    `name`) appended within __LINKEDIT (after the signature, which covers the bytes
    before it), the signature made again."""
    out = bytearray(data)
    command = _command(out, LC_SYMTAB)
    symoff, nsyms, stroff, strsize = struct.unpack_from("<IIII", out, command + 8)
    table = bytes(out[stroff : stroff + strsize]) + name + b"\0"
    start = _append(out, table)
    struct.pack_into("<II", out, command + 16, start, len(table))
    external = next(i for i in range(nsyms) if out[symoff + 16 * i + 4] & 0x01)  # N_EXT
    struct.pack_into("<I", out, symoff + 16 * external, strsize)
    return bytes(resign(out))


def macho_long_identifier(data: bytes, identifier: bytes) -> bytes:
    """The CodeDirectory's identifier made `identifier`, put after its hashes: the
    signature (the file's last bytes) laid out again, one blob a slot, then signed again."""
    out = bytearray(data)
    command = _command(out, LC_CODE_SIGNATURE)
    dataoff, datasize = struct.unpack_from("<II", out, command + 8)
    assert dataoff + datasize == len(out), "the signature is not the file's end"
    count = struct.unpack_from(">I", out, dataoff + 8)[0]
    index = [struct.unpack_from(">II", out, dataoff + 12 + 8 * i) for i in range(count)]
    blobs = []
    for slot, at in index:
        size = struct.unpack_from(">I", out, dataoff + at + 4)[0]
        blob = bytearray(out[dataoff + at : dataoff + at + size])
        if slot == 0:
            struct.pack_into(">I", blob, 20, len(blob))  # identOffset
            blob += identifier + b"\0"
            struct.pack_into(">I", blob, 4, len(blob))
        blobs.append((slot, bytes(blob)))
    at = 12 + 8 * count
    table, body = b"", b""
    for slot, blob in blobs:
        table += struct.pack(">II", slot, at + len(body))
        body += blob
    superblob = struct.pack(">III", 0xFADE0CC0, at + len(body), count) + table + body
    del out[dataoff:]
    out += superblob
    struct.pack_into("<I", out, command + 12, len(superblob))
    _linkedit_to_end(out)
    return bytes(resign(out))


def incompressible(size: int, seed: int = 56) -> bytes:
    """`size` bytes of no NUL that no compressor shrinks: an archive must be a 50th of
    what it unpacks to (above 64 MiB), or it is refused as a bomb before any reader."""
    import random

    return random.Random(seed).randbytes(size).replace(b"\0", b"\x01")


def fat(slices: list[bytes], archs: list[tuple[int, int, int, int]]) -> bytes:
    """A fat file of `slices` (each at a 16 KiB boundary) and the fat_arch entries
    `archs`: (cputype, cpusubtype, slice index or -1 for the file's start, declared size
    or -1 for the slice's own)."""
    header = 8 + 20 * len(archs)
    offsets, body = [], b""
    at = _align(header, 0x4000)
    for piece in slices:
        offsets.append(at + len(body))
        body += piece + bytes(-len(piece) % 0x4000)
    table = struct.pack(">II", 0xCAFEBABE, len(archs))
    for cputype, subtype, index, size in archs:
        offset = 0 if index < 0 else offsets[index]
        length = size if size >= 0 else len(slices[index])
        table += struct.pack(">iiIII", cputype, subtype, offset, length, 14)
    return table.ljust(_align(header, 0x4000), b"\0") + body


# The cases ----------------------------------------------------------------------


Make = Callable[["Kit"], Tree]


@dataclass(frozen=True)
class Case:
    name: str
    kind: int  # the class, 1-7
    platform: str  # "windows" or "macos"
    make: Make
    names: tuple[str, ...]  # the refusal names one of these (tree-relative, or PYTHON.json's)
    what: str
    full: bool = False  # a full archive (PYTHON.json), else install_only
    archive: bool = True  # validate and test-dist judge its archive
    tree: bool = True  # check-install judges its install tree
    embed: bool = False  # embed judges its archive
    # Reading it as the unmutated twin is read is right too (nothing in it is unsafe,
    # only unexpected): then the command says what it says of the twin, no more.
    tolerable: bool = False

    @property
    def commands(self) -> tuple[str, ...]:
        found: tuple[str, ...] = ("validate", "test-dist") if self.archive else ()
        found += ("check-install",) if self.tree else ()
        return found + (("embed",) if self.embed else ())


@dataclass(frozen=True)
class Kit:
    """The binaries, and the unmutated trees made of them."""

    bins: Binaries

    def base(self, platform: str) -> Tree:
        return base_tree(self.bins, platform)

    def full(self, platform: str, values: dict[str, Any] | None = None, hostile: bool = False) -> Tree:
        return full_tree(self.bins, platform, values, hostile)


PY = f"bin/python{MINOR}"
DEEP = "/".join(["d"] * DEEP_FOLDERS)
DEEP_LEAF = "deep_leaf.py"  # a refusal names the member, or the first folder too deep


def _win(name: str, change: Callable[[Kit], bytes]) -> Make:
    return lambda kit: kit.base("windows").changed(name, change(kit))


def _mac(name: str, change: Callable[[Kit], bytes]) -> Make:
    return lambda kit: kit.base("macos").changed(name, change(kit))


def _deep(platform: str) -> Make:
    return lambda kit: kit.base(platform).changed(f"{_stdlib(platform)}/{DEEP}/{DEEP_LEAF}", b"x = 1\n")


def _stubs(kit: Kit) -> Tree:
    stub = pe_stub(kit.bins["python3.dll"])
    return kit.base("windows").with_files(**{f"DLLs/stub{i:05d}.dll": stub for i in range(DLL_STUBS)})


def _fat_many(kit: Kit) -> bytes:
    """21 slices, each its own (no two overlap, each a subtype of its own): twenty
    copies of the helper, and last the one loading a dylib outside the tree."""
    slices = [kit.bins["helper"]] * 20 + [kit.bins["helper-evil"]]
    return fat(slices, [(CPU_ARM64, index, index, -1) for index in range(len(slices))])


def _full_with_exe(platform: str, python_exe: str, copy_of: str | None = None) -> Make:
    """A full archive whose PYTHON.json names `python_exe`; with `copy_of`, the tree
    holds that file (the interpreter) under that name too."""

    def make(kit: Kit) -> Tree:
        tree = kit.full(platform, {"python_exe": python_exe}, hostile=True)
        if copy_of is None:
            return tree
        return tree.changed(python_exe.removeprefix("install/"), tree.files[copy_of])

    return make


def _full_replaced(platform: str, name: str, data: Callable[[Kit], bytes]) -> Make:
    return lambda kit: kit.full(platform).changed(name, data(kit))


def _dll(change: Callable[[bytes], bytes]) -> Make:
    return _win("python314.dll", lambda kit: change(kit.bins["python314.dll"]))


def _helper(change: Callable[[bytes], bytes]) -> Make:
    return _mac("bin/helper", lambda kit: change(kit.bins["helper"]))


def _interpreter(change: Callable[[bytes], bytes]) -> Make:
    return _mac(PY, lambda kit: change(kit.bins["python3.14"]))


def _embed_names(kit: Kit) -> Tree:
    objects = ["build/core/main.o", "build/core/names.o", "build/core/config.o"]
    tree = kit.full("windows", {"build_info.core.objs": objects})
    names = names_not_utf8(kit.bins["names.o"])
    return replace(tree, beside={**tree.beside, "build/core/names.o": names})


def _core_object_not_utf8(platform: str) -> Make:
    """A full archive whose first core object (build/core/main.o, as PYTHON.json's
    build_info.core.objs lists it) is the marker's object, the marker not UTF-8."""

    def make(kit: Kit) -> Tree:
        tree = kit.full(platform)
        names = names_not_utf8(kit.bins["names.o" if platform == "windows" else "names-mac.o"])
        return replace(tree, beside={**tree.beside, "build/core/main.o": names})

    return make


CODEVIEW_BOMB = b"RSDS" + bytes(20) + b"A" * BOMB_STRING  # a PDB 7.0 record naming a 1 MiB path
LEAVING_RPATH = "@executable_path/../../../opt/evil/lib"
BACKSLASHED = "install/..\\..\\x\\python.exe"

CASES: tuple[Case, ...] = (
    # 1. counts and sizes taken on trust
    Case("pe-sections-0xffff", 1, "windows",
         _dll(lambda data: pe_section_count(data, 0xFFFF)),
         ("python314.dll",), "NumberOfSections 0xFFFF in a 70 KB image"),
    Case("pe-section-beyond-file", 1, "windows",
         _dll(lambda data: pe_section_field(data, ".pdata", raw_at=0x7FFF0000)),
         ("python314.dll",), "a section's raw data 2 GB past the end of the file"),
    Case("pe-declares-2gb", 1, "windows",
         _dll(pe_declares_2gb),
         ("python314.dll",), "a tiny image declaring a 2 GB section and SizeOfImage"),
    Case("pe-import-directory-beyond-file", 1, "windows",
         _win("python.exe", lambda k: pe_directory_beyond(k.bins["python.exe"], IMAGE_DIRECTORY_IMPORT)),
         ("python.exe",), "the import directory 2 GB past the end of the image"),
    Case("pe-export-2-31-names", 1, "windows",
         _dll(lambda data: pe_export_counts(data, 1 << 31)),
         ("python314.dll",), "the export table declaring 2^31 functions and names"),
    Case("pe-forwarder-bomb", 1, "windows",
         _win("python3.dll", lambda k: pe_forwarder_bomb(k.bins["python3.dll"])),
         ("python3.dll",), f"{FORWARDERS} exports forwarding to one 1 MiB string"),
    Case("pe-manifest-2gb", 1, "windows",
         _win("python.exe", lambda k: pe_manifest_size(k.bins["python.exe"], 0x7FFFFFF0)),
         ("python.exe",), "python.exe's manifest resource declaring 2 GB"),
    Case("pe-debug-directory-bomb", 1, "windows",
         _dll(lambda data: pe_debug_directory(data, DEBUG_ENTRIES, 2, CODEVIEW_BOMB)),
         ("python314.dll",), f"{DEBUG_ENTRIES} CodeView entries naming one 1 MiB PDB path"),
    Case("macho-fat-huge-slice", 1, "macos",
         _helper(lambda data: fat([data, data], [(CPU_ARM64, 0, 0, 0xFFFFF000), (CPU_X86_64, 3, 1, -1)])),
         ("bin/helper",), "a fat header declaring a 4 GB slice"),
    Case("macho-fat-overlapping-slices", 1, "macos",
         _helper(lambda data: fat([data], [(CPU_ARM64, 0, -1, 0x10000), (CPU_X86_64, 3, -1, 0x10000)])),
         ("bin/helper",), "a fat header whose slices overlap it and each other"),
    Case("macho-symbol-names-anywhere", 1, "macos",
         _helper(macho_symbol_names_anywhere),
         ("bin/helper",), "every symbol's name offset 2 GB outside the string table (signed again)"),
    Case("macho-code-directory-identifier", 1, "macos",
         _helper(lambda data: macho_identifier_offset(data, 0xFFFFFF00)),
         ("bin/helper",), "the CodeDirectory's identifier at offset 0xFFFFFF00"),
    Case("macho-symbol-name-60mib", 1, "macos",
         _interpreter(lambda data: macho_long_symbol_name(data, LONG_SYMBOL_NAME)),
         (PY,), "one external symbol name of 60 MiB (signed again)"),
    Case("macho-identifier-80mib", 1, "macos",
         _interpreter(lambda data: macho_long_identifier(
             data, incompressible(2 << 20) + b"\x01" * (LONG_IDENTIFIER_BYTES - (2 << 20)))),
         (PY,), "a CodeDirectory identifier of 80 MiB (signed again)"),
    # 2. work growing faster than the file
    Case("macho-export-trie-chain", 2, "macos",
         _helper(lambda data: macho_export_trie(data, chain_trie(TRIE_NODES))),
         ("bin/helper",), f"an export trie that is one chain of {TRIE_NODES} nodes (signed again)"),
    Case("deep-tree-macos", 2, "macos", _deep("macos"), (f"/{DEEP_LEAF}", f"{_stdlib('macos')}/d/"),
         f"a file {DEEP_FOLDERS} folders below the stdlib"),
    Case("deep-tree-windows", 2, "windows", _deep("windows"), (f"/{DEEP_LEAF}", f"{_stdlib('windows')}/d/"),
         f"a file {DEEP_FOLDERS} folders below the stdlib"),
    # 3. wrong format under the right name
    Case("macho-named-python-exe", 3, "windows", _win("python.exe", lambda k: k.bins["helper"]),
         ("python.exe",), "a Mach-O program as python.exe (install_only)"),
    Case("macho-named-python-exe-full", 3, "windows",
         _full_replaced("windows", "python.exe", lambda k: k.bins["helper"]),
         ("python.exe",), "a Mach-O program as python.exe (full: the target from PYTHON.json)",
         full=True, tree=False),
    Case("pe-as-macos-interpreter", 3, "macos", _mac(PY, lambda k: k.bins["python.exe"]),
         ("bin/python3",), f"a PE image as {PY} (install_only)"),
    Case("pe-as-macos-interpreter-full", 3, "macos",
         _full_replaced("macos", PY, lambda k: k.bins["python.exe"]),
         ("bin/python3",), f"a PE image as {PY} (full: the target from PYTHON.json)", full=True, tree=False),
    # 4. what the rules did not look at
    Case("pe-ordinal-thunk-above-16-bits", 4, "windows",
         _win("python.exe", lambda k: pe_ordinal_import(k.bins["python.exe"], b"python314.dll", b"evil.dll")),
         ("python.exe",), "an import of evil.dll whose ordinal thunk has bit 16 set (pefile drops it)"),
    Case("pe-import-thunks-at-descriptors", 4, "windows",
         _win("python.exe", lambda k: pe_thunks_at_descriptors(k.bins["python.exe"])),
         ("python.exe",), "python.exe's import thunk arrays pointing back at its import descriptors"),
    Case("macho-fat-21-slices", 4, "macos", _mac("bin/helper", _fat_many),
         ("bin/helper",), "a fat file of 21 slices, one loading /usr/local/lib/libevil.dylib"),
    Case("macho-rpath-leaves-tree", 4, "macos",
         _interpreter(lambda data: macho_add_command(data, LC_RPATH, LEAVING_RPATH)),
         (PY,), "an LC_RPATH climbing out of the tree (signed again)"),
    Case("macho-dyld-environment", 4, "macos",
         _interpreter(lambda data: macho_add_command(
             data, LC_DYLD_ENVIRONMENT, "DYLD_INSERT_LIBRARIES=@executable_path/../../evil.dylib")),
         (PY,), "an LC_DYLD_ENVIRONMENT inserting a library (signed again)"),
    Case("core-object-name-not-utf8-windows", 4, "windows", _core_object_not_utf8("windows"),
         ("build/core/main.o",), "the first core object (COFF) names a symbol in bytes that are not UTF-8",
         full=True, tree=False),
    Case("core-object-name-not-utf8-macos", 4, "macos", _core_object_not_utf8("macos"),
         ("build/core/main.o",), "the first core object (Mach-O) names a symbol in bytes that are not UTF-8",
         full=True, tree=False),
    Case("python-json-backslash-path", 4, "windows",
         _full_with_exe("windows", BACKSLASHED, copy_of="python.exe"),
         ("PYTHON.json", "python_exe"), f"python_exe {BACKSLASHED} (one name on Linux, ..\\.. on Windows)",
         full=True, tree=False),
    # 5. slow on many small files
    Case("pe-many-dll-stubs", 5, "windows", _stubs, ("DLLs/stub",),
         f"{DLL_STUBS} DLLs of 1 KB: headers whose sections are not there"),
    # 6. tracebacks instead of one line
    Case("pe-debug-entry-unexpected-type", 6, "windows",
         _dll(lambda data: pe_debug_directory(data, 1, 20, b"")),
         ("python314.dll",), "a debug entry of type 20 (EX_DLLCHARACTERISTICS) with no data"),
    Case("python-json-exe-is-folder-macos", 6, "macos", _full_with_exe("macos", f"install/lib/python{MINOR}"),
         ("PYTHON.json", "python_exe"), "python_exe naming the stdlib folder", full=True, tree=False),
    Case("python-json-exe-is-folder-windows", 6, "windows", _full_with_exe("windows", "install/Lib"),
         ("PYTHON.json", "python_exe"), "python_exe naming the stdlib folder", full=True, tree=False),
    Case("embed-symbol-names-not-utf8", 6, "windows", _embed_names, ("names.o",),
         "a core object whose symbol name is not UTF-8", full=True, archive=False, tree=False, embed=True,
         tolerable=True),
    # 7. trees given to check-install
    Case("tree-fifo-interpreter-macos", 7, "macos", lambda k: k.base("macos").changed(PY, Fifo()),
         (PY,), "a fifo where the interpreter should be", archive=False),
    Case("tree-fifo-python-exe", 7, "windows", lambda k: k.base("windows").changed("python.exe", Fifo()),
         ("python.exe",), "a fifo where python.exe should be", archive=False),
    Case("tree-sparse-6gb-macho", 7, "macos",
         lambda k: k.base("macos").changed("bin/helper", Sparse(k.bins["helper"], SPARSE_BYTES)),
         ("bin/helper",), "a 6 GB sparse Mach-O file", archive=False),
    Case("tree-sparse-6gb-pe", 7, "windows",
         lambda k: k.base("windows").changed("python314.dll", Sparse(k.bins["python314.dll"], SPARSE_BYTES)),
         ("python314.dll",), "a 6 GB sparse PE image", archive=False),
)  # fmt: skip
CASES_BY_NAME = {case.name: case for case in CASES}
assert len(CASES_BY_NAME) == len(CASES)


def needs_containers(case: Case, command: str) -> bool:
    """check-install of a Windows tree runs Wine in a container once its PE files pass:
    make test runs it with the recording docker (a hostile tree must be refused before
    any container), the Windows target's part of test-all with the real engine too."""
    return command == "check-install" and case.platform == "windows"


# Running a command as people type it ----------------------------------------------


@dataclass
class Outcome:
    case: str
    command: str
    returncode: int | None  # None: killed at the hard timeout
    seconds: float
    max_rss_mb: float
    stdout: str
    stderr: str
    docker_calls: list[str]
    leftovers: list[str]  # what the command left in its scratch, temporary or working folders
    outside_changed: list[str]  # what changed in the folder no command may touch
    new_lines: list[str] = field(default_factory=list)  # output lines the baseline does not print
    naming_lines: list[str] = field(default_factory=list)  # those of them naming the member
    # a tolerable case, read as its unmutated twin: the same exit code and no new line
    as_baseline: bool = False

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    @property
    def error_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.startswith("error:")]

    @property
    def hung(self) -> bool:
        return self.returncode is None or self.seconds > WALL_LIMIT_S

    @property
    def memory(self) -> bool:
        return self.max_rss_mb > MEMORY_LIMIT_MB or "MemoryError" in self.output

    @property
    def internal_error(self) -> bool:
        return (
            "Traceback" in self.output
            or "internal error" in self.output
            or self.returncode not in (0, 1, None)
        )

    def verdict(self, containers: bool = False) -> str:
        """One word for the table: hang, memory, internal error, passed (the hostile
        input was accepted), clean (refused as it should be) or unclean (refused,
        but not in one line naming the member, or leaving something behind)."""
        if self.hung:
            return "hang"
        if self.memory:
            return "memory"
        if self.internal_error:
            return "internal error"
        if self.returncode == 0:
            return "passed"
        clean = (
            len(self.error_lines) == 1
            and (self.naming_lines or self.as_baseline)
            and not self.leftovers
            and not self.outside_changed
            and (containers or not self.docker_calls)
        )
        return "clean" if clean else "unclean"

    def first_lines(self, count: int = 6) -> str:
        lines = [line for line in self.output.splitlines() if line.strip()]
        head = lines[:count]
        return "\n".join(line if len(line) < 300 else line[:300] + "…" for line in head)


# The command is started by this small launcher, which reports the command's own peak
# resident memory: Linux carries a process's high-water mark over fork and exec, so a
# command forked from the test process would be charged the test process's (which holds
# the corpus, 80 MiB cases and their archives among it), while one forked from the
# launcher starts from the launcher's few MB. Its exit status is the command's.
LAUNCHER = """
import os, signal, sys
report, argv = sys.argv[1], sys.argv[2:]
pid = os.fork()
if pid == 0:
    os.execv(argv[0], argv)
_, status, usage = os.wait4(pid, 0)
with open(report, "w") as handle:
    handle.write(str(usage.ru_maxrss))
if os.WIFSIGNALED(status):
    signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
    os.kill(os.getpid(), os.WTERMSIG(status))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def _limit_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_BYTES, ADDRESS_SPACE_BYTES))


def remove(path: Path) -> None:
    """Removes `path` however deep (no recursion), entering folders made unreadable."""
    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
        return
    stack = [path]
    while stack:
        folder = stack[-1]
        folder.chmod(0o700)
        deeper = []
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    deeper.append(Path(entry.path))
                else:
                    os.unlink(entry.path)
        if deeper:
            stack += deeper
        else:
            os.rmdir(stack.pop())


def _snapshot(folder: Path) -> dict[str, tuple[int, int, int]]:
    found = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            info = os.lstat(os.path.join(dirpath, name))
            found[os.path.join(dirpath, name)] = (info.st_size, info.st_mode, info.st_mtime_ns)
    return found


def _entries(folder: Path) -> list[str]:
    try:
        return sorted(str(p) for p in folder.iterdir())
    except FileNotFoundError:
        return []


FAKE_DOCKER = """#!/bin/sh
# make test runs no container: this docker only says that it was asked.
printf '%s\\n' "$*" >> "{log}"
echo "docker: no engine in make test (tests/hostile_binaries.py)" >&2
exit 1
"""


@dataclass
class Workspace:
    """The folders of one command's run: its build and dist folders, temporary folder,
    home and working folder, and `outside`, which nothing may change."""

    root: Path

    def __post_init__(self) -> None:
        for name in ("build", "dist", "systmp", "cwd", "out", "outside/home", "fakebin"):
            (self.root / name).mkdir(parents=True, exist_ok=True)
        (self.root / "outside/victim.txt").write_text("keep me\n")
        docker = self.root / "fakebin/docker"
        docker.write_text(FAKE_DOCKER.format(log=self.root / "docker-calls.log"))
        docker.chmod(0o755)

    @property
    def build(self) -> Path:
        return self.root / "build"

    def link_zig(self) -> None:
        """embed links with the target's pinned zig from the workspace's tools folder:
        the repository's, unpacked and warm, rather than fetched again."""
        pinned = pinned_zig(WINDOWS, default_workspace())
        home = Path(pinned.command[0]).parent
        tools = self.build / "tools"
        tools.mkdir(exist_ok=True)
        for source in (home, Path(pinned.env["ZIG_GLOBAL_CACHE_DIR"])):
            if not (tools / source.name).exists():
                (tools / source.name).symlink_to(source)

    def env(self, containers: bool) -> dict[str, str]:
        env = {
            **os.environ,
            "PYFREIGHT_BUILD_DIR": str(self.root / "build"),
            "PYFREIGHT_DIST_DIR": str(self.root / "dist"),
            "TMPDIR": str(self.root / "systmp"),
            "HOME": str(self.root / "outside/home"),
        }
        env.pop("PYFREIGHT_DEBUG", None)
        if not containers:
            env["PATH"] = f"{self.root / 'fakebin'}{os.pathsep}{env.get('PATH', '')}"
            env["DOCKER_HOST"] = f"unix://{self.root / 'no-docker.sock'}"
        return env

    def leftovers(self) -> list[str]:
        """What a finished command left where it works: its scratch folder (build/tmp),
        the temporary folder, the working folder and the output folder."""
        found = _entries(self.build / "tmp") + _entries(self.root / "systmp")
        return found + _entries(self.root / "cwd") + _entries(self.root / "out")


def run_command(
    args: list[str], ws: Workspace, containers: bool = False, timeout: float = HARD_TIMEOUT_S
) -> Outcome:
    """Runs `pyfreight ARGS` in `ws` under the address-space limit; measures its wall
    time and the peak resident memory of it and the processes it waited for; kills its
    process group at `timeout`."""
    before = _snapshot(ws.root / "outside")
    out_path, err_path = ws.root / "stdout.txt", ws.root / "stderr.txt"
    rss_path = ws.root / "max-rss.txt"
    rss_path.unlink(missing_ok=True)
    with out_path.open("wb") as out, err_path.open("wb") as err:
        started = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, "-c", LAUNCHER, str(rss_path), str(PYFREIGHT), *args],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            env=ws.env(containers),
            cwd=ws.root / "cwd",
            preexec_fn=_limit_address_space,
            start_new_session=True,
        )
        killed = threading.Event()

        def kill() -> None:
            killed.set()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        seconds = time.monotonic() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        if not killed.is_set():  # what the command started and left running, ended by its group
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
    calls = ws.root / "docker-calls.log"
    after = _snapshot(ws.root / "outside")
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    return Outcome(
        case="",
        command=args[0],
        returncode=None if killed.is_set() else proc.returncode,
        seconds=seconds,
        # the launcher's own when it was killed before it could say the command's
        max_rss_mb=int(rss_path.read_text() if rss_path.exists() else usage.ru_maxrss) / 1024,
        stdout=out_path.read_text(errors="backslashreplace"),
        stderr=err_path.read_text(errors="backslashreplace"),
        docker_calls=calls.read_text().splitlines() if calls.exists() else [],
        leftovers=ws.leftovers(),
        outside_changed=changed,
    )


def command_args(command: str, target: Path, ws: Workspace) -> list[str]:
    if command == "validate":
        return ["validate", str(target)]
    if command == "test-dist":
        return ["test-dist", str(target), "--tests", "none"]
    if command == "check-install":
        return ["check-install", str(target), "--tests", "none"]
    if command == "embed":
        return ["embed", str(target), "-o", str(ws.root / "out" / "python.exe")]
    raise ValueError(command)


# The random part of a temporary folder's name (tempfile's 8 characters), and the id of
# the process a leftover-safe name carries (leftovers.owned).
TEMPORARY_NAME = re.compile(r"(?<=/)([\w.-]*?)(\.pid\d+\.|-)[a-z0-9_]{8}(?=/|:|\s|$)")


def normalized(lines: str, root: Path, label: str = "") -> list[str]:
    """Output lines with the run's own folder (and so the archive's and tree's paths)
    written as <run>, its input folder as <input> and temporary names as NAME*, so that a
    case's lines compare with its baseline's."""
    found = []
    for line in lines.splitlines():
        line = line.replace(str(root), "<run>")
        if label:
            line = line.replace(f"<run>/inputs/{label}/", "<input>/")
        line = TEMPORARY_NAME.sub(lambda m: f"{m[1]}{'.pid*.' if m[2] != '-' else '-'}*", line)
        found.append(re.sub(r"\s+", " ", line).strip())
    return found


class Corpus:
    """The cases' archives and trees, built once in `folder`, and each command's outcome
    on them (run once, then kept), compared with the unmutated twin's."""

    def __init__(self, folder: Path, kit: Kit) -> None:
        self.folder = folder
        self.kit = kit
        self.trees: dict[str, Tree] = {}
        self.outcomes: dict[tuple[str, str, bool], Outcome] = {}
        self.baselines: dict[tuple[str, bool, str, bool], Outcome] = {}
        self.runs = 0

    @classmethod
    def build(cls, folder: Path) -> Corpus:
        return cls(folder, Kit(build_binaries(folder / "binaries")))

    def _workspace(self, label: str) -> Workspace:
        self.runs += 1
        return Workspace(self.folder / "runs" / f"{self.runs:03d}-{label}")

    def _input(self, tree: Tree, command: str, ws: Workspace, label: str) -> Path:
        """The archive (validate, test-dist, embed) or the install tree (check-install)."""
        folder = ws.root / "inputs" / label
        if command == "check-install":
            return write_tree(tree, folder / "python")
        path = folder / archive_name(tree)
        path.parent.mkdir(parents=True)
        path.write_bytes(archive_bytes(tree))
        return path

    def run(
        self,
        tree: Tree,
        command: str,
        label: str,
        containers: bool = False,
        ws: Workspace | None = None,
        timeout: float = HARD_TIMEOUT_S,
    ) -> Outcome:
        """`command` on `tree` (packed, or written as a tree) in a new workspace, removed
        afterwards; or in `ws`, which the caller keeps and removes."""
        own = ws is None
        ws = ws or self._workspace(label)
        if command == "embed":
            ws.link_zig()
        target = self._input(tree, command, ws, label)
        outcome = run_command(command_args(command, target, ws), ws, containers, timeout)
        outcome.case = label
        outcome.stdout = "\n".join(normalized(outcome.stdout, ws.root, label)) + "\n"
        outcome.stderr = "\n".join(normalized(outcome.stderr, ws.root, label)) + "\n"
        outcome.leftovers = [p.replace(str(ws.root), "<run>") for p in outcome.leftovers]
        outcome.outside_changed = [p.replace(str(ws.root), "<run>") for p in outcome.outside_changed]
        if own:
            remove(ws.root)
        else:
            remove(ws.root / "inputs" / label)
        return outcome

    def tree(self, case: Case) -> Tree:
        if case.name not in self.trees:
            self.trees[case.name] = tree = case.make(self.kit)
            assert (tree.document is not None) is case.full, case.name
        return self.trees[case.name]

    def baseline_tree(self, case: Case) -> Tree:
        """The unmutated twin of the case's archive or tree (its platform and flavour)."""
        return self.kit.full(case.platform) if case.full else self.kit.base(case.platform)

    def baseline(self, case: Case, command: str, containers: bool = False) -> Outcome:
        tree = self.baseline_tree(case)
        key = (case.platform, case.full, command, containers)
        if key not in self.baselines:
            label = f"baseline-{case.platform}-{flavour_of(tree).name}-{command}"
            # With containers, the first run may build the Wine runtime image.
            timeout = BASELINE_CONTAINER_TIMEOUT_S if containers else HARD_TIMEOUT_S
            self.baselines[key] = self.run(tree, command, label, containers, timeout=timeout)
        return self.baselines[key]

    def outcome(self, case: Case, command: str, containers: bool = False) -> Outcome:
        key = (case.name, command, containers)
        if key not in self.outcomes:
            baseline = self.baseline(case, command, containers)
            outcome = self.run(self.tree(case), command, f"{case.name}-{command}", containers)
            said = set(baseline.stdout.splitlines()) | set(baseline.stderr.splitlines())
            outcome.new_lines = [line for line in outcome.output.splitlines() if line and line not in said]
            outcome.naming_lines = [line for line in outcome.new_lines if any(n in line for n in case.names)]
            outcome.as_baseline = (
                case.tolerable and outcome.returncode == baseline.returncode and not outcome.new_lines
            )
            self.outcomes[key] = outcome
        return self.outcomes[key]

    def everything(self, containers: bool = False, progress: bool = False) -> list[Outcome]:
        """Every case through every command that judges it (with `containers`, Windows
        check-install with the real engine, else with the recording docker); with
        `progress`, a line on stderr each."""
        found = []
        for case in CASES:
            for command in case.commands:
                engine = containers and needs_containers(case, command)
                found.append(outcome := self.outcome(case, command, engine))
                if progress:
                    print(f"{outcome.verdict(engine):15} {outcome.case}", file=sys.stderr, flush=True)
        return found


COLUMNS = ("clean", "unclean", "passed", "hang", "memory", "internal error")
HEADINGS = ("refused cleanly", "refused, not cleanly", "passed hostile", "hang", "memory", "internal error")


def table(outcomes: list[Outcome], containers: bool = False) -> list[dict[str, Any]]:
    """A row per command: how many of its cases ended each way."""
    rows = []
    for command in ("validate", "test-dist", "check-install", "embed"):
        mine = [o for o in outcomes if o.command == command]
        if mine:
            verdicts = [o.verdict(containers) for o in mine]
            rows.append({"command": command, "cases": len(mine), **{c: verdicts.count(c) for c in COLUMNS}})
    return rows


def format_table(rows: list[dict[str, Any]]) -> str:
    head = ("command", "cases", *HEADINGS)
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(str(row[k]) for k in ("command", "cases", *COLUMNS)) + " |")
    return "\n".join(lines)


def format_details(outcomes: list[Outcome], containers: bool = False) -> str:
    lines = []
    for o in outcomes:
        code = "killed" if o.returncode is None else f"exit {o.returncode}"
        lines.append(
            f"{o.verdict(containers):15} {o.case} ({code}, {o.seconds:.1f} s, {o.max_rss_mb:.0f} MB)"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.hostile_binaries", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--json", metavar="PATH", help="write every outcome (and the table) as JSON here")
    parser.add_argument(
        "--containers",
        action="store_true",
        help="also check-install the Windows trees (Wine in a container: the Windows part)",
    )
    parser.add_argument("--keep", metavar="DIR", help="build the corpus in DIR and keep it")
    args = parser.parse_args(argv)
    with contextlib.ExitStack() as stack:
        folder = Path(args.keep) if args.keep else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        started = time.monotonic()
        corpus = Corpus.build(folder)
        print(f"built the binaries in {time.monotonic() - started:.1f} s", file=sys.stderr)
        outcomes = corpus.everything(args.containers, progress=True)
        rows = table(outcomes, args.containers)
        print(format_table(rows))
        print()
        print(format_details(outcomes, args.containers))
        if args.json:
            Path(args.json).write_text(
                json.dumps(
                    {"table": rows, "outcomes": [asdict(o) | {"verdict": o.verdict()} for o in outcomes]},
                    indent=1,
                )
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
