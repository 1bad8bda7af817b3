"""What Linux and macOS trees share: the Unix install layout, bin/python3.X and
lib/python3.X/ (the stdlib folder and the interpreter share the name: python3.14t for
free-threaded builds)."""

from __future__ import annotations

import re
from pathlib import Path

from pyfreight.errors import PyfreightError
from pyfreight.platforms.base import TreeLayout


def installed_python_name(tree: Path) -> str:
    """python3.14, or python3.14t for free-threaded builds: a Unix tree's stdlib folder
    and its interpreter in bin/ share the name."""
    found = sorted(p.name for p in (tree / "lib").glob("python3.*") if p.is_dir())
    if len(found) != 1:
        raise PyfreightError(f"{tree}/lib: expected one python3.X folder, found {found or 'none'}")
    return found[0]


class UnixLayout(TreeLayout):
    marker = "bin"
    test_package = re.compile(r"python/lib/python3[^/]*/test/__init__\.py")
    tcl_folder = "lib"  # beside the stdlib

    def stdlib(self, tree: Path) -> str:
        return f"lib/{installed_python_name(tree)}"

    def interpreter(self, tree: Path) -> str:
        return f"bin/{installed_python_name(tree)}"

    def license(self, tree: Path) -> str:
        return f"{self.stdlib(tree)}/LICENSE.txt"


UNIX_LAYOUT = UnixLayout()
