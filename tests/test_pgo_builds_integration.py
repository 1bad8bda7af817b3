"""`make MAKE_NAME-pgo` for every Linux target whose data allows PGO, as a user types it:
the instrumented build, the training run (through the emulator for a foreign target, with
the profile runtime of its architecture), the optimized rebuild; check-install passes and
shows the experimental JIT built in and off where the target carries it; the three
archives validate. The default target's in the benchmarks part (its pgo+lto is what the
bench measures), each other one in its own part."""

from __future__ import annotations

import os
import re

import pytest

from pyfreight.targets import Target, all_targets
from tests.conftest import REPO, pyfreight_cli, run_group
from tests.tiers import BENCHMARKS

pytestmark = pytest.mark.container

PGO_TARGETS = sorted(
    (t for t in all_targets().values() if t.os == "linux" and "pgo" not in t.builds.unavailable_options),
    key=lambda t: t.triple,
)
JIT_ON_REQUEST = (
    r"^PASS  the experimental JIT.*sys\._jit\.is_available\(\) True; off by default; PYTHON_JIT=1 turns it on"
)


def _param(target: Target) -> object:
    part = BENCHMARKS if target.is_default else target.triple
    return pytest.param(target, marks=pytest.mark.part(part), id=target.triple)


@pytest.mark.parametrize("target", [_param(t) for t in PGO_TARGETS])
def test_make_pgo_builds_checks_and_carries_the_jit(target, tmp_path):
    dist = tmp_path / "dist"
    made = run_group(
        ["make", f"{target.make_name}-pgo"], cwd=REPO, timeout=3 * 3600,
        env={**os.environ, "PYFREIGHT_DIST_DIR": str(dist)},
    )  # fmt: skip
    assert made.returncode == 0, made.stdout[-3000:] + made.stderr[-3000:]
    tree = re.findall(r"^install tree: (\S+)$", made.stdout, re.M)[-1]
    checked = pyfreight_cli("check-install", tree, "--tests", "none")
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-3000:]
    assert bool(re.search(JIT_ON_REQUEST, checked.stdout, re.M)) is target.builds.experimental_jit, (
        checked.stdout
    )
    archives = sorted(dist.iterdir())
    assert len(archives) == 3 and all("-pgo+lto-full" in p.name or "install_only" in p.name for p in archives)
    validated = pyfreight_cli("validate", *archives)
    assert validated.returncode == 0 and validated.stdout.count("passed") == 3, validated.stdout


@pytest.mark.part(BENCHMARKS)
def test_the_default_is_laid_out_by_bolt_carries_its_profiles_and_reproduces(tmp_path):
    """`make linux-x86_64-pgo`: llvm-bolt lays the interpreter out (its note in the
    executable) and leaves its stack non-executable, and since neither training is
    deterministic the full archive carries both merged profiles; `reproduce` replays
    them into the same bytes."""
    from elftools.elf.elffile import ELFFile

    from pyfreight.formats.safe_archive import read_member

    dist = tmp_path / "dist"
    made = run_group(
        ["make", "linux-x86_64-pgo"],
        cwd=REPO,
        timeout=3 * 3600,
        env={**os.environ, "PYFREIGHT_DIST_DIR": str(dist)},
    )
    assert made.returncode == 0, made.stdout[-3000:] + made.stderr[-3000:]
    tree = re.findall(r"^install tree: (\S+)$", made.stdout, re.M)[-1]
    with open(f"{tree}/bin/python3.14", "rb") as fh:
        elf = ELFFile(fh)
        sections = [s.name for s in elf.iter_sections()]
        stacks = [seg["p_flags"] for seg in elf.iter_segments() if seg["p_type"] == "PT_GNU_STACK"]
    assert ".note.bolt_info" in sections, sections
    # llvm-bolt's -use-gnu-stack (configure's default) took this header for its new code
    assert stacks == [6], f"PT_GNU_STACK flags {stacks}: the stack must be RW, not executable"
    full = next(p for p in dist.iterdir() if p.name.endswith("-pgo+lto-full.tar.zst"))
    lines = read_member(full, "python/build/bolt.fdata").decode().splitlines()
    assert lines and all(len(line.split()) >= 6 for line in lines[:100]), lines[:5]
    again = pyfreight_cli("reproduce", str(full), timeout=3 * 3600)
    assert again.returncode == 0 and "byte for byte identical" in again.stdout, again.stdout + again.stderr
