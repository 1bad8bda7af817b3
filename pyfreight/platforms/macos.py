"""macOS: Mach-O files, the Unix layout, zig's Mach-O linker (Apple's flags, no -z)."""

from __future__ import annotations

from pathlib import Path

from pyfreight.formats.macho import macho_target, starts_like_macho
from pyfreight.platforms.base import BlobAssembly, EmbedLibraries, Platform
from pyfreight.platforms.unix import UNIX_LAYOUT
from pyfreight.targets import Target


class MacOS(Platform):
    name = "macos"
    binary_format = "macho"
    object_format = "mach-o"
    layout = UNIX_LAYOUT
    # macOS's clang has stack clash protection for x86_64 only; Apple's own builds leave it out
    hardening_cflags = "-fstack-protector-strong -D_FORTIFY_SOURCE=2"
    frame_pointer_cflags = ""
    # zig's Mach-O linker makes programs position-independent with a non-executable stack
    # and data by default; -s leaves out the debug map, whose N_OSO entries name each
    # object by its path in zig's cache (so the bytes, and LC_UUID, would depend on the folder)
    build_ldflags = "-s"
    stack_clash_protection = False
    hardening_ldflags = ""  # Apple's linker has no -z options
    gnu_style_linker = False
    hides_library_symbols = True
    resource_compiler = False
    interpreter_in_dll = False
    shared_libpython = True
    # binutils reads no Apple-silicon Mach-O: LLVM's ar and nm read both CPUs (and on a
    # Mac they are Xcode's own ar and nm's kin; a Mac's `cc` finds them as llvm-*)
    llvm_binutils = True
    # Mach-O linkers read the BSD archive format (Apple's ar writes it; llvm-ar on Linux
    # writes GNU's unless told)
    archiver_flags = ("--format=darwin",)
    thread_flags = ("-pthread",)

    def is_own_binary(self, head: bytes) -> bool:
        return starts_like_macho(head)

    def target_of_interpreter(self, executable: Path, tree: Path) -> Target:
        return macho_target(executable)

    def embed_link_flags(self, libraries: EmbedLibraries, exports: bool) -> list[str]:
        # The linker takes archives in any order; frameworks by name; the 16 MiB
        # main-thread stack CPython's own link asks for (in hex: zig's linker reads
        # decimal otherwise). The executable exports its symbols for extension modules.
        frameworks = [word for name in libraries.frameworks for word in ("-framework", name)]
        return [
            *map(str, libraries.static),
            *(f"-l{name}" for name in libraries.system),
            *frameworks,
            "-Wl,-stack_size,0x1000000",
            # zig strips functions nothing in the program calls when a link is optimized,
            # and extension modules loaded later call them
            "-Wl,--no-gc-sections",
            *libraries.toolchain_flags,
        ]

    def whole_archive(self, library: Path) -> list[str]:
        return [f"-Wl,-force_load,{library}"]

    def links_library_whole(self, exports: bool) -> bool:
        return True  # left as it was proven

    def program_flags(self, pie: bool, strip: bool, application: bool) -> list[str]:
        # every macOS program is position-independent; -s leaves out the debug map
        return ["-s"] if strip else []

    def blob_assembly(self) -> BlobAssembly:
        return BlobAssembly('.section .pyfreight_blob,"a"', typed=True)


MACOS = MacOS()
