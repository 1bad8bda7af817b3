"""Windows: PE images, python.exe with Lib\\ and the other folders at the top (as
CPython's own installer lays them out), the interpreter in a DLL, lld's PE link."""

from __future__ import annotations

import re
from pathlib import Path

from pyfreight.formats.coff_resource import manifest_object
from pyfreight.formats.manifest import PROGRAM_MANIFEST
from pyfreight.formats.pe import pe_target
from pyfreight.platforms.base import BlobAssembly, EmbedLibraries, Platform, TreeLayout
from pyfreight.targets import Target

# A Windows tree's interpreter DLL and the stable ABI's forwarder to it: python314.dll
# and python3.dll, or python314t.dll and python3t.dll for a free-threaded build.
INTERPRETER_DLL = re.compile(r"python3\d+t?\.dll")
FORWARDER_DLLS = ("python3.dll", "python3t.dll")


def interpreter_dll(tree: Path) -> str | None:
    """The interpreter's DLL at the top of a Windows tree; None when there is not one."""
    found = sorted(p.name for p in tree.glob("python3*.dll") if INTERPRETER_DLL.fullmatch(p.name))
    return found[0] if len(found) == 1 else None


class WindowsLayout(TreeLayout):
    marker = "python.exe"
    test_package = re.compile(r"python/Lib/test/__init__\.py")
    tcl_folder = "tcl"  # tcl\ below the prefix

    def stdlib(self, tree: Path) -> str:
        return "Lib"

    def interpreter(self, tree: Path) -> str:
        return "python.exe"

    def license(self, tree: Path) -> str:
        return "LICENSE.txt"


WINDOWS_LAYOUT = WindowsLayout()


class Windows(Platform):
    name = "windows"
    binary_format = "pe"
    object_format = "coff"
    layout = WINDOWS_LAYOUT
    # Windows probes every large stack frame itself (__chkstk): no -fstack-clash-protection,
    # which the compiler would only warn about
    hardening_cflags = "-fstack-protector-strong -D_FORTIFY_SOURCE=2"
    frame_pointer_cflags = ""
    build_ldflags = ""  # lld's defaults for the target: ASLR (with high entropy) and DEP
    stack_clash_protection = False
    hardening_ldflags = "-Wl,-z,relro,-z,now -Wl,-z,noexecstack"
    gnu_style_linker = True
    hides_library_symbols = False
    resource_compiler = True
    interpreter_in_dll = True  # python.exe loads python3XX.dll; packers link its objects
    shared_libpython = False  # python3XX.dll is Windows' libpython
    # binutils' nm knows the x86 COFF machines only; LLVM's reads every one (Arm64 too).
    llvm_binutils = True
    archiver_flags = ()
    thread_flags = ()

    def is_own_binary(self, head: bytes) -> bool:
        return head.startswith(b"MZ")

    def target_of_interpreter(self, executable: Path, tree: Path) -> Target:
        return pe_target(executable, tree)

    def embed_link_flags(self, libraries: EmbedLibraries, exports: bool) -> list[str]:
        # lld takes archives in any order and keeps their symbols private to the image
        # unless exported; the image has no symbols (-s), as the archive's own.
        names = libraries.library_names
        return [*map(str, libraries.static), *(f"-l{names.get(n, n)}" for n in libraries.system), "-s"]

    def whole_archive(self, library: Path) -> list[str]:
        return ["-Wl,--whole-archive", str(library), "-Wl,--no-whole-archive"]

    def links_library_whole(self, exports: bool) -> bool:
        # A PE program's objects call the C API through __imp_ pointers, which lld makes
        # for symbols of loaded objects only.
        return True

    def executable_extra_outputs(self, work: Path) -> list[str]:
        # The C API is dllexport-ed, so the linker also writes an import library; it goes
        # to the work folder, not beside the executable.
        return [f"-Wl,--out-implib,{work / 'executable.lib'}"]

    def program_objects(self, work: Path, target: Target) -> list[Path]:
        # The manifest python.exe carries (formats/manifest.py): without it, Windows tells
        # the program it runs on Windows 8 and refuses it paths past 260 characters.
        path = work / "manifest.o"
        path.write_bytes(manifest_object(PROGRAM_MANIFEST, target.pe.machine))
        return [path]

    def program_flags(self, pie: bool, strip: bool, application: bool) -> list[str]:
        return []  # a PE image is relocatable (ASLR) and linked without symbols (-s) anyway

    def blob_assembly(self) -> BlobAssembly:
        return BlobAssembly('.section .rdata,"dr"', typed=False)


WINDOWS = Windows()
