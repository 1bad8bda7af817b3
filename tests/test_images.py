"""Image inputs: tags follow the pinned inputs; the sysroot has no absolute symlinks."""

from __future__ import annotations

import copy
import dataclasses
import os
from types import MappingProxyType

from pyfreight.container import images
from pyfreight.targets import Target, default_target


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


def _with_sysroot_pin(target: Target, package: str, version: str) -> Target:
    sysroot = dict(target.toolchain.sysroot) | {
        "packages": dict(target.toolchain.sysroot["packages"]) | {package: version}
    }
    return dataclasses.replace(
        target, toolchain=dataclasses.replace(target.toolchain, sysroot=MappingProxyType(sysroot))
    )


def test_tags_change_with_pins_only():
    spec, target = images.load_spec(), default_target()
    same = copy.deepcopy(spec)
    assert images.build_tag(spec, target) == images.build_tag(same, target)
    repinned = _with_sysroot_pin(target, "libc6-dev", "2.31-13+deb11u99")
    assert images.build_tag(spec, repinned) != images.build_tag(spec, target)
    assert images.unix_runtime_tag(spec, repinned) == images.unix_runtime_tag(spec, target)
    other_suite = copy.deepcopy(spec)
    other_suite["base"]["suite"] = "trixie"
    assert images.base_tag(other_suite) != images.base_tag(spec)
    assert images.build_tag(other_suite, target) != images.build_tag(spec, target)


def test_each_target_has_its_own_build_and_runtime_images():
    spec, target = images.load_spec(), default_target()
    other = dataclasses.replace(target, debian_architecture="arm64")
    assert images.build_tag(spec, other) != images.build_tag(spec, target)
    assert images.unix_runtime_tag(spec, other) != images.unix_runtime_tag(spec, target)
