"""The stdlib's bytecode against its sources, for the in-container checks of every
target (interpreter_checks.py, windows_checks.py import it from their own folder). Run
by the interpreter under test; needs nothing but the stdlib.

Every .pyc a tree ships must be checked-hash (no file times, so archives reproduce)
and match the source beside it byte for byte: a .pyc compiled before the build changed
its source (the relocated _sysconfigdata) is never used, is recompiled at each import
and still carries the text the change removed."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

CHECKED_HASH = 0b11  # PEP 552 flags: hash-based, checked against the source


def stale_bytecode(stdlib: Path) -> tuple[int, list[str]]:
    """The number of .pyc files under `stdlib` with a source beside them, and the
    problems: a .pyc not checked-hash, or whose hash is not its source's."""
    tag = sys.implementation.cache_tag
    problems: list[str] = []
    count = 0
    hashes: dict[Path, bytes] = {}
    for cached in sorted(stdlib.rglob(f"__pycache__/*.{tag}*.pyc")):
        source = cached.parent.parent / (cached.name.split(".", 1)[0] + ".py")
        if not source.is_file():
            continue
        count += 1
        header = cached.read_bytes()[:16]
        where = cached.relative_to(stdlib)
        if header[:4] != importlib.util.MAGIC_NUMBER:
            problems.append(f"{where}: not this interpreter's magic number")
            continue
        if int.from_bytes(header[4:8], "little") != CHECKED_HASH:
            problems.append(f"{where}: not checked-hash")
            continue
        if source not in hashes:
            hashes[source] = importlib.util.source_hash(source.read_bytes())
        if header[8:16] != hashes[source]:
            problems.append(f"{where}: compiled from another text than {source.name}")
    return count, problems


def bytecode_check(stdlib: Path) -> str:
    """A check's detail line, or AssertionError naming the first problems."""
    count, problems = stale_bytecode(stdlib)
    assert not problems, f"{len(problems)} stale .pyc files: " + "; ".join(problems[:3])
    assert count > 1000, f"only {count} .pyc files"
    return f"{count} .pyc files, checked-hash, each matching its source"
