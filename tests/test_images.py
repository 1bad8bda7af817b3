"""Image inputs: tags follow the pinned inputs; the sysroot has no absolute symlinks."""

from __future__ import annotations

import copy
import os

from pyfreight.container import images


def test_absolute_symlinks_become_relative(tmp_path):
    root = tmp_path / "rootfs"
    (root / "usr/lib/x86_64-linux-gnu").mkdir(parents=True)
    (root / "usr/lib/x86_64-linux-gnu/ld-2.31.so").write_text("loader")
    (root / "lib64").mkdir()
    (root / "lib64/ld-linux-x86-64.so.2").symlink_to("/usr/lib/x86_64-linux-gnu/ld-2.31.so")
    (root / "lib").symlink_to("/usr/lib")
    (root / "keep").symlink_to("usr/lib")
    assert images.relativize_symlinks(root) == 2
    assert os.readlink(root / "lib64/ld-linux-x86-64.so.2") == "../usr/lib/x86_64-linux-gnu/ld-2.31.so"
    assert os.readlink(root / "lib") == "usr/lib"
    assert os.readlink(root / "keep") == "usr/lib"
    assert (root / "lib64/ld-linux-x86-64.so.2").read_text() == "loader"


def test_tags_change_with_pins_only():
    spec = images.load_spec()
    same = copy.deepcopy(spec)
    assert images.build_tag(spec) == images.build_tag(same)
    changed = copy.deepcopy(spec)
    changed["sysroot"]["packages"]["libc6-dev"] = "2.31-13+deb11u99"
    assert images.build_tag(changed) != images.build_tag(spec)
    assert images.base_tag(changed) == images.base_tag(spec)
    other_suite = copy.deepcopy(spec)
    other_suite["base"]["suite"] = "trixie"
    assert images.base_tag(other_suite) != images.base_tag(spec)
    assert images.build_tag(other_suite) != images.build_tag(spec)
