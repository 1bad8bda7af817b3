"""The glibc floor: a header generated from the sysroot's own glibc holds compiles to
the target's ceiling (pyfreight/container/glibc_floor.py). The plan is checked on
made-up symbol tables; the header is checked by compiling and linking with it in the
real build image, where the linked program, an object and a static library must not
need anything above the ceiling, and a function glibc added later must not link,
not even in autoconf's way of checking for one."""

from __future__ import annotations

import pytest

from pyfreight.container.glibc_floor import FloorPlan, VersionedSymbol, header, missing_version, plan
from pyfreight.container.images import ensure_images
from pyfreight.formats import arfile
from pyfreight.formats.elf import elf_facts, object_glibc_references
from pyfreight.paths import default_workspace
from pyfreight.targets import default_target
from pyfreight.toolchain import build_environment
from tests.in_image import bash_in_image


def _symbols(*rows: tuple[str, tuple[int, ...], bool]) -> list[VersionedSymbol]:
    return [VersionedSymbol(name, version, default) for name, version, default in rows]


def test_plan_rebinds_same_abi_symbols_and_renames_the_rest():
    found = plan(
        _symbols(
            ("exp", (2, 2, 5), False),
            ("exp", (2, 29), True),
            ("sem_clockwait", (2, 30), True),
            ("totalorder", (2, 25), False),  # same name, new signature in 2.31
            ("totalorder", (2, 31), True),
            ("memcpy", (2, 2, 5), False),
            ("memcpy", (2, 14), True),
            ("printf", (2, 2, 5), True),
        ),
        floor=(2, 28),
    )
    assert found == FloorPlan(
        rebind={"exp": (2, 2, 5)}, missing={"sem_clockwait": (2, 30), "totalorder": (2, 31)}
    )


def test_plan_with_a_floor_at_the_sysroot_changes_nothing():
    assert plan(_symbols(("exp", (2, 2, 5), False), ("exp", (2, 29), True)), floor=(2, 31)) == FloorPlan(
        {}, {}
    )


def test_header_lines():
    text = header(FloorPlan({"pow": (2, 2, 5)}, {"gettid": (2, 30)}), (2, 28), "2.31")
    assert '__asm__(".symver pow, pow@GLIBC_2.2.5");' in text.splitlines()
    lacking = '__asm__(".symver gettid, gettid@PYFREIGHT_GLIBC_2.28_LACKS_IT"); /* GLIBC_2.30 */'
    assert lacking in text.splitlines()
    assert text.index("#ifndef __ASSEMBLER__") < text.index(".symver")  # .S files skip it


PROGRAM = r"""
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    double x = argc > 1 ? atof(argv[1]) : 1.5;
    printf("%.6f %.6f %.6f\n", exp(x), log(x), pow(x, 2.5));
    return 0;
}
"""
# How autoconf's AC_CHECK_FUNCS asks whether a function exists: it #undefs the name.
CLOCKWAIT = r"""
#define sem_clockwait innocuous_sem_clockwait
#include <limits.h>
#undef sem_clockwait
char sem_clockwait(void);
int main(void) { return sem_clockwait(); }
"""


@pytest.mark.container
def test_the_header_holds_programs_objects_and_libraries_to_the_ceiling(tmp_path):
    target = default_target()
    image = ensure_images(default_workspace(), target)
    cc = build_environment(target, jobs=1, source_date_epoch=0)["CC"]
    (tmp_path / "p.c").write_text(PROGRAM)
    (tmp_path / "s.c").write_text(CLOCKWAIT)
    out = bash_in_image(
        image.tag,
        tmp_path,
        f"{cc} -O2 -c p.c -o p.o && llvm-ar-19 rcD libp.a p.o && "
        f"{cc} -O2 -flto=thin -fuse-ld=lld p.c -o p -lm && ./p 2",
    ).stdout
    assert out.split() == ["7.389056", "0.693147", "5.656854"]
    facts = elf_facts(tmp_path / "p", tmp_path)
    assert facts is not None and facts.glibc is not None
    assert facts.glibc <= target.libc.ceiling
    # The object keeps the old versions for whoever links it later (a packer).
    references = object_glibc_references((tmp_path / "p.o").read_bytes())
    assert {"exp", "log", "pow"} <= set(references)
    assert all(v <= target.libc.ceiling for v in references.values()), references
    [(name, data)] = list(arfile.members(tmp_path / "libp.a"))
    assert name == "p.o" and object_glibc_references(data) == references
    # A function above the floor does not link, and the error names the floor.
    failed = bash_in_image(image.tag, tmp_path, f"{cc} -fuse-ld=lld s.c -o s -lpthread", check=False)
    assert failed.returncode != 0
    assert f"sem_clockwait@{missing_version(target.libc.ceiling)}" in failed.stderr
