"""formats/untrusted.py: the one bounded way files and trees from outside are read,
walked and removed. Each test makes the hostile thing for real (a fifo, a sparse
file of gigabytes, a tree a thousand folders deep) and checks the refusal or the
removal, in one line and without recursion."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest

from pyfreight.formats.untrusted import (
    MAX_BINARY_BYTES,
    MAX_TREE_DEPTH,
    UntrustedFile,
    judge_tree,
    read_binary,
    read_head,
    walk,
)
from pyfreight.leftovers import owned, remove_tree, scratch_folder, sweep


def _deep(root: Path, depth: int) -> Path:
    """A chain of `depth` folders below `root` with a file at its end, made relative to
    each folder in turn (the whole path is longer than PATH_MAX)."""
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            deeper = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = deeper
        os.close(os.open("f", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    finally:
        os.close(fd)
    return root


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "python.exe"
    os.mkfifo(fifo)
    outcome: list[BaseException] = []
    reader = threading.Thread(target=lambda: _catch(outcome, lambda: read_head(fifo, "python.exe", 4)))
    reader.start()
    reader.join(5)
    assert not reader.is_alive(), "reading a fifo blocked"
    assert isinstance(outcome[0], UntrustedFile)
    said = "python.exe: not a regular file (a fifo, device or socket); the tree is not trusted"
    assert str(outcome[0]) == said
    with pytest.raises(UntrustedFile, match="not a regular file"):
        read_binary(fifo, "python.exe")


def _catch(into: list[BaseException], call) -> None:  # type: ignore[no-untyped-def]
    try:
        call()
    except BaseException as exc:  # the test reads what was raised
        into.append(exc)


def test_a_sparse_file_of_gigabytes_is_refused_unread(tmp_path):
    sparse = tmp_path / "python3.14"
    with sparse.open("wb") as handle:
        handle.truncate(6 << 30)
    with pytest.raises(UntrustedFile, match=r"^bin/python3\.14: 6442450944 bytes, larger than any binary"):
        read_binary(sparse, "bin/python3.14")
    # the head is still readable, for telling the format
    assert read_head(sparse, "bin/python3.14", 4) == b"\0\0\0\0"


def test_a_file_at_the_cap_is_read_whole(tmp_path):
    small = tmp_path / "a.dll"
    small.write_bytes(b"MZ" + bytes(100))
    assert read_binary(small, "a.dll") == b"MZ" + bytes(100)
    with pytest.raises(UntrustedFile, match="larger than any binary"):
        read_binary(small, "a.dll", limit=101)
    assert MAX_BINARY_BYTES >= 128 << 20  # python314.dll is tens of MB


def test_a_folder_or_a_symlink_where_a_file_is_expected(tmp_path):
    (tmp_path / "python.exe").mkdir()
    with pytest.raises(UntrustedFile, match="a folder where a file is expected"):
        read_binary(tmp_path / "python.exe", "python.exe")
    (tmp_path / "link").symlink_to(tmp_path / "python.exe")
    with pytest.raises(UntrustedFile, match="a symlink where a file is expected"):
        read_head(tmp_path / "link", "link", 2)


def test_a_tree_deeper_than_ours_is_refused_by_the_walk(tmp_path):
    assert sys.getrecursionlimit() < 1100  # what broke rglob and rmtree
    root = _deep(tmp_path / "tree", 1100)
    with pytest.raises(UntrustedFile, match=f"more than {MAX_TREE_DEPTH} folders deep"):
        list(walk(root))
    with pytest.raises(UntrustedFile, match=f"^{root}/d/d/d/…/d: more than {MAX_TREE_DEPTH} folders deep"):
        judge_tree(root)
    remove_tree(root)
    assert not root.exists()


def test_the_walk_lists_what_rglob_lists(tmp_path):
    _deep(tmp_path / "a", 5)
    (tmp_path / "b.txt").write_text("x")
    (tmp_path / "link").symlink_to("a")
    assert list(walk(tmp_path)) == sorted(tmp_path.rglob("*"))


def test_judge_tree_refuses_a_fifo_anywhere(tmp_path):
    (tmp_path / "lib").mkdir()
    os.mkfifo(tmp_path / "lib" / "x.so")
    with pytest.raises(UntrustedFile, match=f"^{tmp_path}/lib/x\\.so: not a file, folder or symlink"):
        judge_tree(tmp_path)


def test_removal_does_not_follow_symlinks_and_takes_unreadable_folders(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    tree = _deep(tmp_path / "tree", 3)
    (tree / "out").symlink_to(outside)
    locked = tree / "locked"
    locked.mkdir()
    (locked / "f").write_text("x")
    locked.chmod(0)
    remove_tree(tree)
    assert not tree.exists()
    assert (outside / "keep.txt").read_text() == "keep"


def test_scratch_folder_is_removed_after_a_failure_however_deep(tmp_path):
    with pytest.raises(RuntimeError), scratch_folder("t-", tmp_path) as folder:
        _deep(folder, 1100)
        raise RuntimeError("a failure while unpacking")
    assert list(tmp_path.iterdir()) == []


def test_a_killed_runs_deep_leftover_is_swept(tmp_path):
    """The leftover that once broke every later command: a deep unpacked tree of a
    process that no longer runs. The sweep removes it and raises nothing."""
    dead = 2**22 + 12345  # above pid_max's default: no such process
    leftover = _deep(tmp_path / f"test-dist.pid{dead}.abc", 1100)
    mine = tmp_path / f"{owned('test-dist')}xyz"
    mine.mkdir()
    assert sweep(tmp_path) == [leftover.name]
    assert not leftover.exists()
    assert mine.exists()
