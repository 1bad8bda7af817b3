"""Linux: ELF files, the Unix layout, GNU ld's (and lld's) link flags."""

from __future__ import annotations

from pathlib import Path

from pyfreight.formats.elf import tree_target
from pyfreight.platforms.base import BlobAssembly, EmbedLibraries, Platform
from pyfreight.platforms.unix import UNIX_LAYOUT
from pyfreight.targets import Target


class Linux(Platform):
    name = "linux"
    binary_format = "elf"
    object_format = "elf"
    layout = UNIX_LAYOUT
    hardening_cflags = "-fstack-protector-strong -D_FORTIFY_SOURCE=2"
    frame_pointer_cflags = "-fno-omit-frame-pointer -mno-omit-leaf-frame-pointer"
    # lld; full RELRO with BIND_NOW and a non-executable stack for anything linked here
    # (configure test programs and the tools some builds run)
    build_ldflags = "-fuse-ld=lld -Wl,-z,relro,-z,now -Wl,-z,noexecstack"
    stack_clash_protection = True
    hardening_ldflags = "-Wl,-z,relro,-z,now -Wl,-z,noexecstack"
    gnu_style_linker = True
    hides_library_symbols = False
    resource_compiler = False
    interpreter_in_dll = False
    shared_libpython = True
    llvm_binutils = False
    archiver_flags = ()
    thread_flags = ("-pthread",)

    def is_own_binary(self, head: bytes) -> bool:
        return head.startswith(b"\x7fELF")

    def target_of_interpreter(self, executable: Path, tree: Path) -> Target:
        return tree_target(executable)

    def embed_link_flags(self, libraries: EmbedLibraries, exports: bool) -> list[str]:
        # The shipped libraries as a group (their order among themselves does not matter).
        # Without `exports` (a program that loads no extension module from a file and has
        # no ctypes to look the C API up) the program exports nothing and the linker drops
        # the sections nothing uses.
        hidden = ":".join(p.name for p in libraries.static)
        flags = ["-Wl,--start-group", *map(str, libraries.static), "-Wl,--end-group"]
        flags += [f"-l{name}" for name in libraries.system]
        flags += ["-pthread", *(["-Xlinker", "-export-dynamic"] if exports else ["-Wl,--gc-sections"])]
        # The bundled libraries' symbols stay private, as in the distribution's interpreter.
        if hidden:
            flags.append(f"-Wl,--exclude-libs,{hidden}")
        return [*flags, "-Wl,-z,relro,-z,now", "-Wl,-z,noexecstack", *libraries.toolchain_flags]

    def whole_archive(self, library: Path) -> list[str]:
        return ["-Wl,--whole-archive", str(library), "-Wl,--no-whole-archive"]

    def links_library_whole(self, exports: bool) -> bool:
        return exports  # a program that exports nothing takes only what it calls

    def blob_placement(self, work: Path, link_script: str) -> list[str]:
        # The blob's own section goes at the image's end, after .bss (memimport's script
        # only adds to the linker's default one), so a program cut short is told apart.
        script = work / "blob.ld"
        script.write_text(link_script)
        return [f"-Wl,-T,{script}"]

    def program_flags(self, pie: bool, strip: bool, application: bool) -> list[str]:
        # An application needs no symbol table either (the dynamic symbols, which
        # extension modules beside it link against, stay); an interpreter keeps it for
        # debuggers.
        stripping = ["-Wl,--strip-all" if application else "-Wl,--strip-debug"] if strip else []
        return ([] if pie else ["-no-pie"]) + stripping

    def blob_assembly(self) -> BlobAssembly:
        return BlobAssembly('.section .pyfreight_blob,"a"', typed=True)


LINUX = Linux()
