"""Reading `ar` archives: their members, and catching static libraries written in ar's
non-deterministic mode (member timestamps and owners from the build)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

MAGIC = b"!<arch>\n"
HEADER_SIZE = 60


def nondeterministic_members(path: Path) -> list[str]:
    """Names of members whose header carries a timestamp or an owner (ar's `U` mode).
    Archives written with `D` (llvm-ar's default) have zeros there."""
    data = path.read_bytes()
    if not data.startswith(MAGIC):
        return []
    found: list[str] = []
    offset = len(MAGIC)
    while offset + HEADER_SIZE <= len(data):
        header = data[offset : offset + HEADER_SIZE]
        name = header[0:16].decode(errors="replace").strip()
        mtime, uid, gid = (header[a:b].strip() or b"0" for a, b in ((16, 28), (28, 34), (34, 40)))
        size = int(header[48:58].strip() or b"0")
        if int(mtime) != 0 or int(uid) != 0 or int(gid) != 0:
            found.append(name)
        offset += HEADER_SIZE + size + (size % 2)
    return found


def members(path: Path) -> Iterator[tuple[str, bytes]]:
    """(name, bytes) of each member of a static library, GNU long names resolved;
    the symbol index and the long-name table themselves are skipped."""
    data = path.read_bytes()
    if not data.startswith(MAGIC):
        return
    long_names = b""
    offset = len(MAGIC)
    while offset + HEADER_SIZE <= len(data):
        header = data[offset : offset + HEADER_SIZE]
        raw = header[0:16].decode(errors="replace").rstrip()
        size = int(header[48:58].strip() or b"0")
        body = data[offset + HEADER_SIZE : offset + HEADER_SIZE + size]
        offset += HEADER_SIZE + size + (size % 2)
        if raw == "//":
            long_names = body
        elif raw in ("/", "/SYM64/"):
            continue
        elif raw.startswith("/") and raw[1:].isdigit():
            start = int(raw[1:])
            end = long_names.find(b"/\n", start)
            yield long_names[start : end if end >= 0 else None].decode(errors="replace"), body
        else:
            yield raw.removesuffix("/"), body
