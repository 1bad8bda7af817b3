"""Reading `ar` archive headers, to catch static libraries written in ar's
non-deterministic mode (member timestamps and owners from the build)."""

from __future__ import annotations

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
