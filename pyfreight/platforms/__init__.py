"""What differs between operating systems, one module each behind one interface
(base.Platform): linux.py, windows.py, macos.py, with unix.py what Linux and macOS
trees share. The flow asks `platform_of(target)` and calls it; nothing outside these
modules compares an OS, binary format or layout by name."""

from __future__ import annotations

from pathlib import Path

from pyfreight.errors import PyfreightError
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
    "platform_of",
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
