"""The x86-64 level targets' CPU check (cpython/cpu-level-check.c): which CPython builds
carry it, and that no level target goes without it. Its behaviour on a lower CPU is
shown under qemu by each level target's test-all part
(test_other_targets_archives_integration.py)."""

from __future__ import annotations

import re

import pytest

from pyfreight.cpython.build import CPU_LEVEL_CHECK, CPYTHON_DIR, _cpython_job
from pyfreight.cpython.options import BuildOptions
from pyfreight.cpython.versions import cpython_source
from pyfreight.targets import Target, all_targets

TARGETS = sorted(all_targets().values(), key=lambda t: t.triple)


def _job(target: Target):
    return _cpython_job(
        cpython_source("3.14"), BuildOptions.parse("noopt"), target, "", False, {}, None, None
    )


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: t.triple)
def test_only_a_level_targets_build_is_handed_the_check(target: Target):
    job = _job(target)
    if target.toolchain.cpu_level_check:
        assert job.files[CPU_LEVEL_CHECK] == CPYTHON_DIR / CPU_LEVEL_CHECK
        assert job.env["CPU_LEVEL_CHECK"] == CPU_LEVEL_CHECK
    else:
        assert CPU_LEVEL_CHECK not in job.files and job.env["CPU_LEVEL_CHECK"] == ""


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: t.triple)
def test_a_target_compiled_above_the_x86_64_baseline_carries_the_check(target: Target):
    """A target whose -march names an x86-64 level would die of SIGILL below it."""
    level = re.search(r"-march=x86-64-v(\d)", target.toolchain.compiler_flags)
    assert target.toolchain.cpu_level_check is bool(level), target.toolchain.compiler_flags
    if level:
        assert target.uv_platform.arch_variant == f"v{level[1]}"


def test_the_check_names_each_feature_a_level_lets_the_compiler_use():
    """The features of x86-64-v2 to v4 (the psABI's list), each checked under the macro
    clang defines for it."""
    source = (CPYTHON_DIR / CPU_LEVEL_CHECK).read_text()
    checked = dict(re.findall(r'#ifdef (\w+)\n\s+\{"([^"]+)"', source))
    assert set(checked.values()) == {
        "SSSE3", "SSE4.1", "SSE4.2", "POPCNT", "CMPXCHG16B", "LAHF/SAHF",
        "AVX", "AVX2", "BMI1", "BMI2", "F16C", "FMA", "LZCNT", "MOVBE", "XSAVE",
        "AVX512F", "AVX512BW", "AVX512CD", "AVX512DQ", "AVX512VL",
    }  # fmt: skip
    assert '{"SSE3", ' in source  # every level has it: the file is empty below v2
