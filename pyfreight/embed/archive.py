"""Opening a full distribution archive for `pyfreight embed`: only what linking needs is
extracted (PYTHON.json, the object files and static libraries, the headers) unless the
caller also wants the install tree (the in-memory importer packs its stdlib)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyfreight.cpython.options import BuildOptions
from pyfreight.dist.python_json import checked_document
from pyfreight.errors import PyfreightError
from pyfreight.formats.safe_archive import DEFAULT_LIMITS, Limits, extract
from pyfreight.logs import say
from pyfreight.targets import Target, target

# Compiler flags a PYTHON.json may ask for config.c. Not accepted, by design: -wrapper,
# -B, -fplugin, @file, -specs, -Xclang, -Wl/-Wa/-Wp (they run or load other programs, or
# hand options to the assembler, linker or preprocessor), and anything not listed.
ALLOWED_CFLAG = re.compile(
    r"-D[A-Za-z_][A-Za-z0-9_]*(=[A-Za-z0-9_.+-]*)?|-U[A-Za-z_][A-Za-z0-9_]*|-std=[a-z0-9+]+"
    r"|-O[0-3sgz]?|-g[0-3]?|-f(no-)?(PIC|PIE|pic|pie|wrapv|strict-aliasing|common)|-fvisibility=[a-z]+"
    r"|-W(no-)?[a-z][a-z0-9-]*(=[a-z0-9]+)?"
)
LINK_MEMBERS = ("python/PYTHON.json", "python/build/", "python/install/include/", "python/licenses/")


@dataclass(frozen=True)
class OpenedArchive:
    root: Path  # the folder holding PYTHON.json; every path in it is relative to this
    document: dict[str, Any]

    @property
    def build_info(self) -> dict[str, Any]:
        info: dict[str, Any] = self.document["build_info"]
        return info

    @property
    def version(self) -> str:
        version: str = self.document["python_major_minor_version"]
        return version

    @property
    def include_dir(self) -> Path:
        return self.path(self.document["python_paths"]["include"])

    @property
    def python_exe(self) -> Path:
        return self.path(self.document["python_exe"])

    @property
    def target(self) -> Target:
        """The target the archive was built for (its PYTHON.json target_triple); one
        targets/*.yaml does not describe is refused by name."""
        return target(self.document["target_triple"])

    @property
    def pie(self) -> bool:
        """Whether the archive's own interpreter is a PIE (its build options say; the
        schema and validate hold them to the executable): embed links alike by default."""
        return BuildOptions.parse(self.document["build_options"]).codegen.pie

    @property
    def stdlib_dir(self) -> Path:
        return self.path(self.document["python_paths"]["stdlib"])

    def path(self, relative: str) -> Path:
        """A path PYTHON.json names, which must stay inside the archive even through
        symlinks (an extracted folder given by the user is checked the same way)."""
        path = (self.root / relative).resolve()
        if not path.is_relative_to(self.root):
            raise PyfreightError(f"PYTHON.json names {relative}, which leads outside the archive to {path}")
        return path

    @property
    def inittab_cflags(self) -> list[str]:
        flags: list[str] = self.build_info["inittab_cflags"]
        return flags

    def check_cflags(self) -> None:
        """inittab_cflags reach the host's compiler: only flags that shape the compile
        of config.c are accepted, and -I only inside the archive."""
        for flag in self.inittab_cflags:
            if flag.startswith("-I"):
                self.path(flag[2:])
            elif not ALLOWED_CFLAG.fullmatch(flag):
                raise PyfreightError(
                    f"PYTHON.json build_info.inittab_cflags has {flag!r}, which embed does not pass to "
                    "a compiler (allowed: -D, -U, -I inside the archive, -std=, -O, -g, -f(no-)PIC/PIE, "
                    "-fwrapv, -fno-strict-aliasing, -fvisibility=, -W<warning>)"
                )


def _wanted(name: str, whole_tree: bool) -> bool:
    if whole_tree:
        return name == "python" or name.startswith("python/")
    return any(name == m.rstrip("/") or name.startswith(m) for m in LINK_MEMBERS)


def open_archive(
    archive: Path, scratch: Path, whole_tree: bool = False, limits: Limits = DEFAULT_LIMITS
) -> OpenedArchive:
    """Extracts `archive` (a -full.tar.zst, or an already extracted folder holding
    PYTHON.json) below `scratch` by the safe-opening rules, and reads its PYTHON.json,
    checked against the published schema before anything uses it."""
    if archive.is_dir():
        root = archive / "python" if (archive / "python" / "PYTHON.json").is_file() else archive
    elif archive.exists():
        say(f"embed: extracting {archive.name}{' (whole tree)' if whole_tree else ''}")
        extract(archive, scratch / "unpacked", limits, lambda name: _wanted(name, whole_tree))
        root = scratch / "unpacked" / "python"
    else:
        raise PyfreightError(f"{archive}: no such archive")
    opened = OpenedArchive(root=root.resolve(), document=checked_document(root, archive))
    opened.check_cflags()
    return opened
