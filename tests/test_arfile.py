from __future__ import annotations

from pyfreight.formats.arfile import nondeterministic_members


def member(name: str, data: bytes, mtime: int = 0, uid: int = 0) -> bytes:
    header = f"{name:<16}{mtime:<12}{uid:<6}{0:<6}{644:<8}{len(data):<10}`\n".encode()
    assert len(header) == 60
    return header + data + (b"\n" if len(data) % 2 else b"")


def test_deterministic_archive_passes(tmp_path):
    path = tmp_path / "libok.a"
    path.write_bytes(b"!<arch>\n" + member("a.o/", b"abc") + member("b.o/", b"1234"))
    assert nondeterministic_members(path) == []


def test_timestamps_and_owners_are_found(tmp_path):
    path = tmp_path / "libbad.a"
    path.write_bytes(
        b"!<arch>\n"
        + member("a.o/", b"abc")
        + member("b.o/", b"odd", mtime=1795388195)
        + member("c.o/", b"xy", uid=1000)
    )
    assert nondeterministic_members(path) == ["b.o/", "c.o/"]


def test_non_archive_is_ignored(tmp_path):
    path = tmp_path / "libnot.a"
    path.write_bytes(b"INPUT(-lfoo)\n")
    assert nondeterministic_members(path) == []
