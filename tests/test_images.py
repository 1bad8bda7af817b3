"""Image inputs: tags follow the pinned inputs; the sysroot has no absolute symlinks."""

from __future__ import annotations

import copy
import dataclasses
import os
from types import MappingProxyType

import pytest

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


def test_a_wine_of_the_targets_own_architecture_runs_in_an_image_of_that_architecture(monkeypatch, tmp_path):
    """Windows on Arm runs under Debian's arm64 Wine through qemu-user: its Wine image is
    debootstrapped for arm64 and starts every container with the emulator's CPU, and is
    refused in one line where binfmt_misc lacks the emulator. The x86 Windows targets keep
    this machine's Wine on the shared base image."""
    from pyfreight.errors import PyfreightError
    from pyfreight.paths import Workspace
    from pyfreight.targets import all_targets, emulators

    spec, targets = images.load_spec(), all_targets()
    arm, x64 = targets["aarch64-pc-windows-gnullvm"], targets["x86_64-pc-windows-gnullvm"]
    assert (arm.wine.emulator, arm.debian_architecture) == ("qemu-aarch64", "arm64")
    assert x64.wine.emulator is None and x64.emulator_env == {}
    assert "qemu-aarch64" in emulators()  # scripts/ensure-emulators.sh registers it
    made: list[tuple] = []

    def rootfs(tag, base, ws, mirrors, architecture=None, env=None):
        made.append((tag, base["suite"], architecture, env))
        raise SystemExit  # what was asked for is all this test reads

    monkeypatch.setattr(images, "_ensure_rootfs_image", rootfs)
    monkeypatch.setattr(images, "find_debian_mirrors", lambda: None)
    monkeypatch.setattr(images, "emulator_registered", lambda name: True)
    ws = Workspace(tmp_path)
    for target in (arm, x64):
        with pytest.raises(SystemExit):
            images._ensure_wine(spec, target, ws, "t")
    (arm_base, arm_suite, arm_arch, arm_env), (x64_base, x64_suite, x64_arch, x64_env) = made
    assert (arm_suite, arm_arch, arm_env) == (spec["wine"]["suite"], "arm64", {"QEMU_CPU": arm.wine.cpu})
    assert (x64_base, x64_suite, x64_arch, x64_env) == (
        images.base_tag(spec, "wine"),
        spec["wine"]["suite"],
        None,
        {},
    )
    assert arm_base != x64_base
    monkeypatch.setattr(images, "emulator_registered", lambda name: False)
    with pytest.raises(PyfreightError, match=r"qemu-aarch64, which binfmt_misc does not have .*make setup"):
        images._ensure_wine(spec, arm, ws, "t")


def test_what_an_archive_records_of_its_build_image_is_only_what_the_image_pins():
    """Two images of one tag, debootstrapped on different days, differ in Debian's base
    packages (a security update to libc6 or tzdata) but not in the pinned toolchain: the
    manifest the SBOM hashes must be the same for both, and must change with a pin."""
    from pyfreight.container.images import DOCKERFILES_DIR

    pins = (DOCKERFILES_DIR / images.load_spec()["build"]["packages"]).read_text()
    pinned = [line.strip() for line in pins.splitlines() if line.strip() and not line.startswith("#")]
    assert "clang-22=1:22.1.8-1~deb12u1" in pinned
    monday = sorted([*pinned, "libc6=2.36-9+deb12u10", "tzdata=2025b-0+deb12u1"])
    tuesday = sorted([*pinned, "libc6=2.36-9+deb12u13", "tzdata=2025b-0+deb12u2", "adduser=3.134"])
    kept = images.pinned_manifest("".join(f"{line}\n" for line in monday))
    assert kept == images.pinned_manifest("".join(f"{line}\n" for line in tuesday))
    assert kept.splitlines() == sorted(pinned)
    repinned = [line.replace("1:22.1.8-1~deb12u1", "1:22.1.9-1~deb12u1") for line in monday]
    assert images.pinned_manifest("".join(f"{line}\n" for line in repinned)) != kept
