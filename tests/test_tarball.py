"""Deterministic tarballs."""

from __future__ import annotations

import os
import tarfile

from pyfreight.formats.tarball import tar_directory


def populate(root, mtime, mode):
    (root / "lib" / "pkgconfig").mkdir(parents=True)
    (root / "include").mkdir()
    (root / "lib" / "libz.a").write_bytes(b"!<arch>\n" + b"data")
    (root / "include" / "zlib.h").write_text("/* header */\n")
    (root / "lib" / "pkgconfig" / "zlib.pc").write_text("prefix=/tools/deps\n")
    (root / "bin").mkdir()
    (root / "bin" / "tool").write_text("#!/bin/sh\n")
    (root / "lib" / "libz.so.link").symlink_to("libz.a")
    for path in [root, *root.rglob("*")]:
        if not path.is_symlink():
            path.chmod(mode | (0o111 if path.is_dir() or path.name == "tool" else 0))
            os.utime(path, (mtime, mtime))


def test_same_tree_gives_same_bytes(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    # Different timestamps and permission bits on disk, and files created in another order.
    populate(a, mtime=1_000_000, mode=0o600)
    populate(b, mtime=2_000_000, mode=0o664)
    tar_directory(a, tmp_path / "a.tar", epoch=1234)
    tar_directory(b, tmp_path / "b.tar", epoch=1234)
    assert (tmp_path / "a.tar").read_bytes() == (tmp_path / "b.tar").read_bytes()


def test_members_are_normalized(tmp_path):
    root = tmp_path / "t"
    root.mkdir()
    populate(root, mtime=5, mode=0o600)
    out = tmp_path / "t.tar"
    tar_directory(root, out, epoch=1234)
    with tarfile.open(out) as tar:
        members = tar.getmembers()
    names = [m.name for m in members]
    assert names == sorted(names)
    assert all(m.mtime == 1234 and m.uid == 0 and m.gid == 0 for m in members)
    assert all(m.uname == "" and m.gname == "" for m in members)
    modes = {m.name: m.mode for m in members}
    assert modes["bin/tool"] == 0o755
    assert modes["include/zlib.h"] == 0o644
    assert modes["lib"] == 0o755
    link = next(m for m in members if m.name == "lib/libz.so.link")
    assert link.issym() and link.linkname == "libz.a"


def test_no_partial_file_left_on_error(tmp_path):
    root = tmp_path / "t"
    root.mkdir()
    os.mkfifo(root / "fifo")  # cannot go into an archive
    out = tmp_path / "out.tar"
    try:
        tar_directory(root, out, epoch=1)
    except ValueError:
        pass
    else:
        raise AssertionError("a fifo must be refused")
    assert list(tmp_path.glob("*.tar*")) == [] and not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
