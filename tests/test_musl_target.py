"""A musl target (targets/*.yaml with `libc.name: musl`): its sysroot holds musl built
from the pinned source (libc-recipes/musl), zlib builds for it from an empty build folder, and
programs linked against them need musl's loader and libc.so and nothing of glibc, and
run, dynamically and fully static, in a container that has no glibc at all: only the
sysroot's own loader and the programs."""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from pyfreight.formats.elf import elf_facts, interpreter_identity
from pyfreight.sources.recipes import load_all
from pyfreight.targets import Target, all_targets
from pyfreight.toolchain import LLVM, compiler_commands
from tests.in_image import bash_in_image, zlib_from_scratch

pytestmark = pytest.mark.container
MUSL = [t for t in all_targets().values() if t.libc.name == "musl"]

PROGRAM = r"""
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <zlib.h>
static void *work(void *arg) { *(double *)arg = exp(1.0); return NULL; }
int main(void) {
    unsigned char out[64];
    uLongf size = sizeof out;
    int rc = compress(out, &size, (const unsigned char *)"pyfreight", 9);
    double e = 0;
    pthread_t thread;
    pthread_create(&thread, NULL, work, &e);
    pthread_join(thread, NULL);
    printf("%s|%d|%.4f\n", zlibVersion(), rc == Z_OK && size > 0, e);
    return 0;
}
"""


@pytest.fixture(
    scope="module",
    params=[pytest.param(t, marks=pytest.mark.part(t.triple)) for t in MUSL],
    ids=[t.triple for t in MUSL],
)
def musl_zlib(request, tmp_path_factory):
    target: Target = request.param
    image, built, prefix = zlib_from_scratch(target, tmp_path_factory)
    return target, image, built, prefix


def test_zlib_objects_are_the_targets(musl_zlib):
    target, image, built, prefix = musl_zlib
    assert built.built == ["zlib"] and target.triple in built.artifacts["zlib"].path.name
    bash_in_image(image.tag, prefix, f"mkdir objs && cd objs && llvm-ar-{LLVM} x ../lib/libz.a")
    objects = sorted((prefix / "objs").glob("*.o"))
    assert len(objects) > 10
    for obj in objects:
        with obj.open("rb") as fh:
            assert ELFFile(fh)["e_machine"] == target.elf.machine, obj


def _glibc_free_image(image_tag: str, target: Target, programs: list[Path], tag: str) -> str:
    """An image of nothing but the sysroot's loader (musl's libc.so) and `programs`."""
    loader = subprocess.run(
        ["docker", "run", "--rm", "--network", "none", image_tag, "cat", f"/sysroot/lib/{target.elf.loader}"],
        capture_output=True,
        check=True,
    ).stdout
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data in [
            (f"lib/{target.elf.loader}", loader),
            *((p.name, p.read_bytes()) for p in programs),
        ]:
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o755
            tar.addfile(info, io.BytesIO(data))
    subprocess.run(["docker", "import", "-", tag], input=buffer.getvalue(), check=True, capture_output=True)
    return tag


def test_programs_need_only_musl_and_run_without_glibc(musl_zlib):
    target, image, _, prefix = musl_zlib
    (prefix / "t.c").write_text(PROGRAM)
    cc = compiler_commands(target)[0]
    bash_in_image(
        image.tag,
        prefix,
        f"{cc} -fuse-ld=lld -O2 -Iinclude t.c -o dynamic -Llib -lz -lm -pthread && "
        f"{cc} -fuse-ld=lld -O2 -static -Iinclude t.c -o static -Llib -lz -lm -pthread",
    )
    dynamic = elf_facts(prefix / "dynamic", prefix)
    assert dynamic is not None and dynamic.needed == tuple(sorted(target.libc.needed))
    assert dynamic.glibc is None  # nothing of glibc
    assert interpreter_identity(prefix / "dynamic") == (target.elf.machine, target.elf.loader)
    static = elf_facts(prefix / "static", prefix)
    assert static is not None and static.needed == () and interpreter_identity(prefix / "static")[1] is None
    tag = _glibc_free_image(
        image.tag, target, [prefix / "dynamic", prefix / "static"], "pyfreight-test-musl:only"
    )
    try:
        expected = f"{load_all()['zlib'].version}|1|2.7183"
        for program in ("/dynamic", "/static"):
            ran = subprocess.run(
                ["docker", "run", "--rm", "--network", "none", tag, program], capture_output=True, text=True
            )
            assert (ran.returncode, ran.stdout.strip()) == (0, expected), ran.stderr
        # and there is no glibc to fall back on: no shell, no libc.so.6
        ran = subprocess.run(["docker", "run", "--rm", "--network", "none", tag, "/bin/sh", "-c", "true"],
                             capture_output=True, text=True)  # fmt: skip
        assert ran.returncode != 0
    finally:
        subprocess.run(["docker", "rmi", "-f", tag], capture_output=True)
