"""A target built here for another machine (targets/*.yaml with `run: {emulator: …}`):
zlib cross-compiled from an empty build folder in that target's build image, its
objects of the target's ELF machine, and a program linked against it in the target's
sysroot that needs no newer C library than the target's ceiling (glibc; musl has no
versions, and nothing of glibc may be needed) and runs through the emulator."""

from __future__ import annotations

from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from pyfreight.formats.elf import elf_facts, interpreter_identity
from pyfreight.sources.recipes import load_all
from pyfreight.targets import Target, all_targets
from pyfreight.toolchain import compiler_commands
from tests.in_image import bash_in_image, zlib_from_scratch

pytestmark = pytest.mark.container
FOREIGN = [t for t in all_targets().values() if t.run.kind == "emulator"]

PROGRAM = r"""
#include <stdio.h>
#include <zlib.h>
int main(void) {
    unsigned char out[64];
    uLongf size = sizeof out;
    int rc = compress(out, &size, (const unsigned char *)"pyfreight", 9);
    printf("%s|%d\n", zlibVersion(), rc == Z_OK && size > 0);
    return 0;
}
"""


@pytest.fixture(
    scope="module",
    params=[pytest.param(t, marks=pytest.mark.part(t.triple)) for t in FOREIGN],
    ids=[t.triple for t in FOREIGN],
)
def cross_zlib(request, tmp_path_factory):
    target: Target = request.param
    image, built, prefix = zlib_from_scratch(target, tmp_path_factory)
    return target, image, built, prefix


def _in_build_image(image, prefix: Path, script: str, env: dict[str, str] | None = None) -> str:
    return bash_in_image(image.tag, prefix, script, env).stdout


def test_zlib_was_built_for_the_target(cross_zlib):
    target, image, built, prefix = cross_zlib
    assert built.built == ["zlib"]
    assert target.triple in built.artifacts["zlib"].path.name
    _in_build_image(image, prefix, "mkdir objs && cd objs && llvm-ar-19 x ../lib/libz.a")
    objects = sorted((prefix / "objs").glob("*.o"))
    assert len(objects) > 10
    for obj in objects:
        with obj.open("rb") as fh:
            elf = ELFFile(fh)
            assert (elf["e_machine"], elf["e_type"]) == (target.elf.machine, "ET_REL"), obj


def test_a_program_linked_against_it_stays_under_the_ceiling_and_runs_emulated(cross_zlib):
    target, image, _, prefix = cross_zlib
    (prefix / "t.c").write_text(PROGRAM)
    cc, _ = compiler_commands(target)  # the target's own flags (musl: LLVM's compiler runtime)
    out = _in_build_image(
        image,
        prefix,
        f"{cc} -fuse-ld=lld -O2 -Iinclude t.c -o t -Llib -lz && ./t",
        # the program runs through the emulator, which finds its loader in the sysroot
        env={"QEMU_LD_PREFIX": "/sysroot"},
    )
    assert out.strip() == f"{load_all()['zlib'].version}|1"
    facts = elf_facts(prefix / "t", prefix)
    assert facts is not None and facts.machine == target.elf.machine
    if target.libc.glibc:
        assert facts.glibc is not None and facts.glibc <= target.libc.ceiling
    else:
        assert facts.glibc is None
    assert interpreter_identity(prefix / "t") == (target.elf.machine, target.elf.loader)
