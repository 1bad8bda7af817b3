"""Reading `ar` archives: their members, and catching static libraries written in ar's
non-deterministic mode (member timestamps and owners from the build)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from pyfreight.errors import PyfreightError

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


class UnreadableAr(PyfreightError):
    """A static library whose ar headers do not fit it (said in one line)."""


# The members that index the others rather than hold code: the GNU and Windows symbol
# tables ("/", "/SYM64/"; a .lib has two "/"), BSD's (__.SYMDEF and its variants).
INDEX_MEMBERS = ("/", "/SYM64/", "__.SYMDEF", "__.SYMDEF SORTED", "__.SYMDEF_64", "__.SYMDEF_64 SORTED")


def members(path: Path) -> Iterator[tuple[str, bytes]]:
    """(name, bytes) of each member of the static library `path`: see members_of."""
    yield from members_of(path.read_bytes(), path.name)


def members_of(data: bytes, name: str) -> Iterator[tuple[str, bytes]]:
    """(name, bytes) of each member of a static library's bytes (GNU, BSD or a Windows
    .lib; `name` in messages), long names resolved (GNU's table, BSD's #1/LEN); the
    symbol indexes and the long-name table themselves are skipped. Nothing for a file
    that is no ar archive; UnreadableAr where a header does not fit the file."""
    if not data.startswith(MAGIC):
        return
    long_names = b""
    offset = len(MAGIC)
    while offset + HEADER_SIZE <= len(data):
        header = data[offset : offset + HEADER_SIZE]
        raw = header[0:16].decode(errors="replace").rstrip()
        field = header[48:58].strip() or b"0"
        if not field.isdigit() or offset + HEADER_SIZE + int(field) > len(data):
            said = field.decode(errors="backslashreplace")
            raise UnreadableAr(f"{name}: member at byte {offset} declares {said} bytes, past its end")
        size = int(field)
        body = data[offset + HEADER_SIZE : offset + HEADER_SIZE + size]
        offset += HEADER_SIZE + size + (size % 2)
        if raw == "//":
            long_names = body
        elif raw in INDEX_MEMBERS:
            continue
        elif raw.startswith("/") and raw[1:].isdigit():
            start = int(raw[1:])
            end = long_names.find(b"/\n", start, start + 4096)
            yield long_names[start : end if end >= 0 else start + 4096].decode(errors="replace"), body
        elif raw.startswith("#1/") and raw[3:].isdigit():
            length = int(raw[3:])
            if length > size:
                raise UnreadableAr(f"{name}: member at byte {offset} has a name longer than itself")
            member = body[:length].rstrip(b"\0").decode(errors="replace")
            if member not in INDEX_MEMBERS:
                yield member, body[length:]
        else:
            yield raw.removesuffix("/"), body
