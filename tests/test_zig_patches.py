"""Patches to the pinned zig's sources (zig-patches/, targets/*.yaml `sysroot.patches`):
applied when zig is unpacked, part of the sysroot's identity, refused in one line when
they do not apply."""

from __future__ import annotations

import dataclasses
import zipfile
from pathlib import Path
from types import MappingProxyType

import pytest

from pyfreight.container import images, zig_sysroot
from pyfreight.errors import PyfreightError
from pyfreight.targets import all_targets

WINDOWS = next(t for t in all_targets().values() if t.run.kind == "wine" and t.pe.machine == "AMD64")
PATCH = zig_sysroot.patch_files(WINDOWS.toolchain.sysroot)


def _sides(patch: Path) -> dict[str, tuple[str, str]]:
    """{path: (text before, text after)} of each file a one-hunk-per-file patch touches,
    made of its context and changed lines only."""
    sides: dict[str, tuple[list[str], list[str]]] = {}
    current = None
    for line in patch.read_text().splitlines():
        if line.startswith("+++ b/"):
            current = sides.setdefault(line[6:], ([], []))
        elif current is None or line.startswith(("--- ", "@@")):
            continue
        elif line.startswith(" "):
            current[0].append(line[1:])
            current[1].append(line[1:])
        elif line.startswith("-"):
            current[0].append(line[1:])
        elif line.startswith("+"):
            current[1].append(line[1:])
    return {path: ("\n".join(a) + "\n", "\n".join(b) + "\n") for path, (a, b) in sides.items()}


def _wheel(tmp_path: Path, files: dict[str, str]) -> Path:
    wheel = tmp_path / "ziglang-0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("ziglang/zig", "#!/bin/sh\n")
        for path, text in files.items():
            archive.writestr(f"ziglang/{path}", text)
    return wheel


def test_the_windows_target_patches_compiler_rts_log2_and_log10():
    assert [p.name for p in PATCH] == ["compiler-rt-log-subnormal.patch"]
    assert sorted(_sides(PATCH[0])) == ["lib/compiler_rt/log10.zig", "lib/compiler_rt/log2.zig"]


def test_unpacking_zig_applies_the_patches(tmp_path):
    sides = _sides(PATCH[0])
    wheel = _wheel(tmp_path, {path: before for path, (before, _) in sides.items()})
    zig_sysroot.unpack_zig(wheel, tmp_path / "zig", PATCH)
    for path, (before, after) in sides.items():
        assert before != after
        assert (tmp_path / "zig" / path).read_text() == after


def test_a_patch_that_does_not_apply_stops_with_one_line_naming_it(tmp_path):
    sides = _sides(PATCH[0])
    wheel = _wheel(tmp_path, {path: "another zig's source\n" for path in sides})
    with pytest.raises(PyfreightError) as caught:
        zig_sysroot.unpack_zig(wheel, tmp_path / "zig", PATCH)
    message = str(caught.value)
    assert "\n" not in message
    assert "zig-patches/compiler-rt-log-subnormal.patch does not apply to the pinned zig" in message


def test_the_patches_are_part_of_the_sysroots_identity():
    sysroot = MappingProxyType({k: v for k, v in WINDOWS.toolchain.sysroot.items() if k != "patches"})
    unpatched = dataclasses.replace(
        WINDOWS, toolchain=dataclasses.replace(WINDOWS.toolchain, sysroot=sysroot)
    )
    assert images.sysroot_digest(unpatched) != images.sysroot_digest(WINDOWS)
