"""Opening a full distribution archive for `pyfreight embed`: the typed PYTHON.json
reader (pyfreight/python_json.py) does the reading; this module adds embed's own rules
for what the document may ask of the host's compiler."""

from __future__ import annotations

import re
from pathlib import Path

from pyfreight import python_json
from pyfreight.errors import PyfreightError
from pyfreight.formats.safe_archive import DEFAULT_LIMITS, Limits
from pyfreight.logs import say
from pyfreight.python_json import Distribution

# Compiler flags a PYTHON.json may ask for config.c. Not accepted, by design: -wrapper,
# -B, -fplugin, @file, -specs, -Xclang, -Wl/-Wa/-Wp (they run or load other programs, or
# hand options to the assembler, linker or preprocessor), and anything not listed.
# A definition's value may be a word or a C string (the Windows build names its DLL so,
# -DMS_DLL_ID="3.14"): each flag is one argument, no shell sees it.
ALLOWED_CFLAG = re.compile(
    r'-D[A-Za-z_][A-Za-z0-9_]*(=[A-Za-z0-9_.+-]*|=L?"[A-Za-z0-9_.+ -]*")?'
    r"|-U[A-Za-z_][A-Za-z0-9_]*|-std=[a-z0-9+]+"
    r"|-O[0-3sgz]?|-g[0-3]?|-f(no-)?(PIC|PIE|pic|pie|wrapv|strict-aliasing|common)|-fvisibility=[a-z]+"
    r"|-W(no-)?[a-z][a-z0-9-]*(=[a-z0-9]+)?"
)


def check_cflags(dist: Distribution) -> None:
    """inittab_cflags reach the host's compiler: only flags that shape the compile of
    config.c are accepted, and -I only inside the archive."""
    for flag in dist.inittab_cflags:
        if flag.startswith("-I"):
            dist.path(flag[2:])
        elif not ALLOWED_CFLAG.fullmatch(flag):
            raise PyfreightError(
                f"PYTHON.json build_info.inittab_cflags has {flag!r}, which embed does not pass to "
                "a compiler (allowed: -D, -U, -I inside the archive, -std=, -O, -g, -f(no-)PIC/PIE, "
                "-fwrapv, -fno-strict-aliasing, -fvisibility=, -W<warning>)"
            )


def open_archive(
    archive: Path, scratch: Path, whole_tree: bool = False, limits: Limits = DEFAULT_LIMITS
) -> Distribution:
    """`archive` (a -full.tar.zst, or an extracted folder holding PYTHON.json) opened
    below `scratch`, its PYTHON.json checked against the schema and embed's flag rules."""
    if archive.is_file():
        say(f"embed: extracting {archive.name}{' (whole tree)' if whole_tree else ''}")
    dist = python_json.open_archive(archive, scratch, whole_tree, limits)
    check_cflags(dist)
    return dist
