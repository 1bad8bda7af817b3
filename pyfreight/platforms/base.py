"""The one interface behind which what differs between operating systems lives: a
`Platform` answers, for its OS, what the flow asks (the install tree's layout, the flags
of CPython's own link, how embed links a program and archives its objects). Each OS is
one module (linux.py, windows.py, macos.py); what is target data (triples, machines,
flags, system libraries) stays in targets/*.yaml."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyfreight.targets import Target


class TreeLayout(ABC):
    """Where an install tree keeps its parts. The archives, validate and test-dist ask
    here instead of spelling a layout out."""

    marker: str  # an entry at the top of a tree that only this layout has
    # the stdlib's test package below an install_only archive's python/ folder
    test_package: re.Pattern[str]
    # the folder holding Tcl's and Tk's script libraries (tcl8.6, tk8.6), where _tkinter
    # looks for them
    tcl_folder: str

    def tcl_libraries(self, tree: Path) -> list[str]:
        """The Tcl/Tk script library folders of the tree's tcl_folder, Tcl's modules (tcl8)
        among them (none: no tkinter)."""
        return sorted(p.name for p in (tree / self.tcl_folder).glob("t[ck]*[0-9]*") if p.is_dir())

    @abstractmethod
    def stdlib(self, tree: Path) -> str:
        """The stdlib folder, relative to the tree."""

    @abstractmethod
    def interpreter(self, tree: Path) -> str:
        """The interpreter users run, relative to the tree."""

    @abstractmethod
    def license(self, tree: Path) -> str:
        """CPython's license text, relative to the tree."""


@dataclass(frozen=True)
class EmbedLibraries:
    """What a program embed links takes beside its own objects and libpython."""

    static: Sequence[Path]  # the shipped static libraries
    system: Sequence[str]  # system libraries, by -l name
    frameworks: Sequence[str]  # macOS frameworks
    library_names: Mapping[str, str]  # -l names the compiler spells otherwise
    toolchain_flags: Sequence[str]  # the link flags the toolchain itself needs


class Platform(ABC):
    """One operating system's answers. Compare platforms by identity (LINUX, WINDOWS,
    MACOS in pyfreight.platforms), never by a name."""

    name: str  # the OS as uv's downloads index names it (targets/*.yaml uv_platform)
    binary_format: str  # "elf", "pe" or "macho": PYTHON.json's and the readers' word
    object_format: str  # PYTHON.json's object_file_format of its compiled (not LTO) objects
    layout: TreeLayout
    # every build's compiler and linker (the recipes' and CPython's, toolchain.py)
    hardening_cflags: str  # the hardening every object is compiled with (and stack clash protection)
    # Frame pointers in every frame, leaf functions included, so that profilers (perf,
    # eBPF tools, py-spy's native mode) unwind our code without DWARF, as distributions
    # now build (Fedora 38, Ubuntu 24.04) and python-build-standalone does. The cost is
    # measured in docs/performance.md (the `nofp` build modifier leaves them out of
    # CPython's own code). "": the platform's compilers' own choice.
    frame_pointer_cflags: str
    build_ldflags: str  # what everything linked in a build is linked with
    # CPython's own build
    # every object is compiled with -fstack-clash-protection where the target's architecture
    # has it (toolchain.stack_clash_protection), and sysconfig records it
    stack_clash_protection: bool
    hardening_ldflags: str  # the link hardening sysconfig records (a user's linker reads it)
    gnu_style_linker: bool  # the build's linker takes GNU ld's flags (-z, --exclude-libs)
    # a dependency's static libraries are made to export nothing after its build
    # (formats/macho_symbols.py), as -fvisibility=hidden would
    hides_library_symbols: bool
    resource_compiler: bool  # its builds compile resource scripts (.rc): $RC, $WINDRES
    interpreter_in_dll: bool  # the interpreter is a DLL beside the program (PYTHON.json shared_lib)
    # The tree carries libpython as a shared library (lib/libpython3.X.so), linked from
    # the interpreter's own objects, for programs that embed Python (PyInstaller, C and
    # Rust programs, python3-config --embed), while the interpreter links those objects
    # statically as before: CPython's --enable-shared, its program linked otherwise.
    shared_libpython: bool
    # embed
    llvm_binutils: bool  # embed archives and reads objects with LLVM's ar and nm
    archiver_flags: tuple[str, ...]  # the format ar writes for this OS's linker
    thread_flags: tuple[str, ...]  # what a program embedding libpython links threads with

    @abstractmethod
    def is_own_binary(self, head: bytes) -> bool:
        """Whether a file starting with `head` is a binary of this OS's format."""

    @abstractmethod
    def target_of_interpreter(self, executable: Path, tree: Path) -> Target:
        """The target an interpreter of this OS's format (inside `tree`) was built for,
        read from its binary; raises, in one line, for one no target describes."""

    @abstractmethod
    def embed_link_flags(self, libraries: EmbedLibraries, exports: bool) -> list[str]:
        """Everything after a program's own objects and libpython."""

    @abstractmethod
    def whole_archive(self, library: Path) -> list[str]:
        """Every member of `library` linked in."""

    @abstractmethod
    def links_library_whole(self, exports: bool) -> bool:
        """Whether libpython goes in whole, for a program that exports its C API or not."""

    def executable_extra_outputs(self, work: Path) -> list[str]:
        """Flags that send what the linker writes beside the program into `work`."""
        return []

    def program_objects(self, work: Path, target: Target) -> list[Path]:
        """Objects, written into `work`, that every program embed links for `target`
        carries beside its own code."""
        return []

    def blob_placement(self, work: Path, link_script: str) -> list[str]:
        """Flags that place an application's module blob; `link_script` is the linker
        script text that does it where the linker takes one."""
        return []

    @abstractmethod
    def program_flags(self, pie: bool, strip: bool, application: bool) -> list[str]:
        """embed's flags for a program: position (in)dependence and stripping."""

    @abstractmethod
    def blob_assembly(self) -> BlobAssembly:
        """How an assembler is told to place and type the module blob's symbols."""

    def __repr__(self) -> str:
        return f"<platform {self.name}>"


@dataclass(frozen=True)
class BlobAssembly:
    section: str  # the section directive
    typed: bool  # the symbols get .type/.size, and the object a non-executable stack note
