"""What differs between operating systems, one module each behind one interface
(base.Platform): linux.py, windows.py, macos.py, with unix.py what Linux and macOS
trees share. The flow asks `platform_of(target)` and calls it; nothing outside these
modules compares an OS, binary format or layout by name."""

from __future__ import annotations

from pathlib import Path

from pyfreight.errors import PyfreightError
from pyfreight.formats.untrusted import read_head
from pyfreight.platforms.base import EmbedLibraries, Platform, TreeLayout
from pyfreight.platforms.linux import LINUX
from pyfreight.platforms.macos import MACOS
from pyfreight.platforms.unix import UNIX_LAYOUT, installed_python_name
from pyfreight.platforms.windows import WINDOWS, WINDOWS_LAYOUT
from pyfreight.targets import Target

PLATFORMS = {p.name: p for p in (LINUX, WINDOWS, MACOS)}
LAYOUTS = (UNIX_LAYOUT, WINDOWS_LAYOUT)
# PYTHON.json's object_file_format of objects compiled to machine code (not LTO bitcode)
NATIVE_OBJECT_FORMATS = frozenset(p.object_format for p in PLATFORMS.values())

__all__ = [
    "LAYOUTS", "LINUX", "MACOS", "NATIVE_OBJECT_FORMATS", "PLATFORMS", "UNIX_LAYOUT", "WINDOWS",
    "WINDOWS_LAYOUT", "EmbedLibraries", "Platform", "TreeLayout", "installed_python_name", "layout_of",
    "platform_of", "target_of_interpreter", "target_of_tree",
]  # fmt: skip


def platform_of(target: Target) -> Platform:
    """The operating system a target's files run on (targets/*.yaml uv_platform)."""
    found = PLATFORMS.get(target.os)
    if found is None:
        raise PyfreightError(f"targets/{target.triple}.yaml: no platform module for the OS {target.os!r}")
    if found.binary_format != target.binary_format:
        raise PyfreightError(
            f"targets/{target.triple}.yaml: {target.os} files are {found.binary_format}, "
            f"not {target.binary_format}"
        )
    return found


def layout_of(tree: Path) -> TreeLayout | None:
    """The layout a tree has, from what is at its top; None when it has neither."""
    return next((layout for layout in LAYOUTS if (tree / layout.marker).exists()), None)


# Enough of a file's start to tell ELF, PE and Mach-O apart.
HEAD_BYTES = 64


def target_of_tree(tree: Path) -> Target:
    """Which target an install tree is for, read from its interpreter's binary (python.exe
    at its top, or bin/python3.X): the one answer validate, test-dist and check-install
    use. Raises, in one line, for a tree no target's platform recognises."""
    layout = layout_of(tree)
    if layout is None:
        raise PyfreightError(f"{tree}: no install tree here (bin/ or python.exe at its top)")
    return target_of_interpreter(tree / layout.interpreter(tree), tree, layout)


def target_of_interpreter(executable: Path, tree: Path, layout: TreeLayout) -> Target:
    """The target the interpreter `executable` (inside `tree`, of `layout`; a symlink is
    followed) was built for, by the platform of that layout whose binary format it has."""
    candidates = [platform for platform in PLATFORMS.values() if platform.layout is layout]
    try:
        resolved = executable.resolve(strict=True)
        inside = resolved.is_relative_to(tree.resolve(strict=True))
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop, before Python 3.13
        raise PyfreightError(f"{executable}: cannot be read ({exc})") from None
    if not inside:
        raise PyfreightError(f"{executable} points outside the tree")
    if len(candidates) > 1:  # the same layout on several OSes: the binary's format tells
        head = read_head(resolved, executable.name, HEAD_BYTES)
        formats = " or ".join(platform.binary_format for platform in candidates)
        candidates = [platform for platform in candidates if platform.is_own_binary(head)]
        if not candidates:
            raise PyfreightError(
                f"{executable}: not an interpreter of any target (an {formats} file expected)"
            )
    # the one platform left reads it, and says what it is when it is not its own
    return candidates[0].target_of_interpreter(resolved, tree.resolve())
