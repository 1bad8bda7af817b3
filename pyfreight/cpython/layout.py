"""Where an install tree keeps its parts. Unix trees have bin/python3.X and
lib/python3.X/ (the stdlib folder and the interpreter share the name: python3.14t for
free-threaded builds); Windows trees have python.exe, Lib/ and the other folders at the
top, as CPython's own installer lays them out. The archives, validate and test-dist ask
here instead of spelling either layout out."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from pyfreight.errors import PyfreightError
from pyfreight.targets import Target


@dataclass(frozen=True)
class TreeLayout:
    name: str  # "unix" or "windows"
    marker: str  # an entry at the top of a tree that only this layout has
    # the stdlib's test package below an install_only archive's python/ folder
    test_package: re.Pattern[str]
    # the folder holding Tcl's and Tk's script libraries (tcl8.6, tk8.6), where _tkinter
    # looks for them: beside the stdlib on Unix, tcl\ below the prefix on Windows
    tcl_folder: str

    def tcl_libraries(self, tree: Path) -> list[str]:
        """The Tcl/Tk script library folders of the tree's tcl_folder, Tcl's modules (tcl8)
        among them (none: no tkinter)."""
        return sorted(p.name for p in (tree / self.tcl_folder).glob("t[ck]*[0-9]*") if p.is_dir())

    def stdlib(self, tree: Path) -> str:
        """The stdlib folder, relative to the tree."""
        if self.name == "windows":
            return "Lib"
        return f"lib/{installed_python_name(tree)}"

    def interpreter(self, tree: Path) -> str:
        """The interpreter users run, relative to the tree."""
        if self.name == "windows":
            return "python.exe"
        return f"bin/{installed_python_name(tree)}"

    def license(self, tree: Path) -> str:
        """CPython's license text, relative to the tree."""
        return "LICENSE.txt" if self.name == "windows" else f"{self.stdlib(tree)}/LICENSE.txt"


# A Windows tree's interpreter DLL and the stable ABI's forwarder to it: python314.dll
# and python3.dll, or python314t.dll and python3t.dll for a free-threaded build.
WINDOWS_INTERPRETER_DLL = re.compile(r"python3\d+t?\.dll")
WINDOWS_FORWARDER_DLLS = ("python3.dll", "python3t.dll")


def windows_interpreter_dll(tree: Path) -> str | None:
    """The interpreter's DLL at the top of a Windows tree; None when there is not one."""
    found = sorted(p.name for p in tree.glob("python3*.dll") if WINDOWS_INTERPRETER_DLL.fullmatch(p.name))
    return found[0] if len(found) == 1 else None


UNIX = TreeLayout("unix", "bin", re.compile(r"python/lib/python3[^/]*/test/__init__\.py"), "lib")
WINDOWS = TreeLayout("windows", "python.exe", re.compile(r"python/Lib/test/__init__\.py"), "tcl")
LAYOUTS = (UNIX, WINDOWS)


def layout_for(target: Target) -> TreeLayout:
    """The layout of the target's trees: Windows' for PE files, Unix's for the others."""
    return WINDOWS if target.binary_format == "pe" else UNIX


def layout_of(tree: Path) -> TreeLayout | None:
    """The layout a tree has, from what is at its top; None when it has neither."""
    return next((layout for layout in LAYOUTS if (tree / layout.marker).exists()), None)


def installed_python_name(tree: Path) -> str:
    """python3.14, or python3.14t for free-threaded builds: a Unix tree's stdlib folder
    and its interpreter in bin/ share the name."""
    found = sorted(p.name for p in (tree / "lib").glob("python3.*") if p.is_dir())
    if len(found) != 1:
        raise PyfreightError(f"{tree}/lib: expected one python3.X folder, found {found or 'none'}")
    return found[0]
