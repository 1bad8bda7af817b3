"""The Windows target's data and what it decides, without containers: the toolchain it
gets, the recipes it builds, the builds it refuses (and says why), and the pinned zig
wheel's fetching by pip."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from pyfreight.cpython.options import BuildOptions
from pyfreight.cpython.windows_projects import optimization_flags
from pyfreight.deps.graph import for_os
from pyfreight.errors import PyfreightError
from pyfreight.hashing import file_sha256
from pyfreight.publish.matrix import release_matrix
from pyfreight.sources import pypi
from pyfreight.sources.fetch import fetch_source
from pyfreight.sources.recipes import PypiLocation, load_all, load_recipe
from pyfreight.targets import all_targets
from pyfreight.toolchain import build_environment
from tests.conftest import make_source, pyfreight_cli, write_recipe
from tests.make_dry_run import build_of_make

WINDOWS = next(t for t in all_targets().values() if t.run.kind == "wine" and t.pe.machine == "AMD64")
REPO = Path(__file__).resolve().parent.parent


def test_the_target_is_pe_built_with_the_pinned_zig_and_run_by_wine():
    assert WINDOWS.binary_format == "pe" and WINDOWS.pe.machine == "AMD64"
    assert WINDOWS.toolchain.zig is not None and WINDOWS.toolchain.zig.pypi is not None
    assert (
        WINDOWS.toolchain.zig.file.startswith(f"ziglang-{WINDOWS.toolchain.zig.pypi.version}-")
        and len(WINDOWS.toolchain.zig.sha256) == 64
    )
    assert WINDOWS.os == "windows" and not WINDOWS.native and WINDOWS.run.kind == "wine"
    assert dict(WINDOWS.wine.packages) and WINDOWS.libc.ceiling is None


def test_its_recipes_get_zigs_compiler_and_the_pe_flags():
    env = build_environment(WINDOWS, jobs=2, source_date_epoch=0)
    assert env["CC"].split()[:3] == ["/sysroot/bin/zig-cc", "-target", WINDOWS.toolchain.clang_triple]
    assert "-g0" in env["CC"].split()  # else zig writes the command line and build folder into objects
    assert env["TARGET_OS"] == "windows" and env["CROSS_HOST"] == WINDOWS.recipe_env["CROSS_HOST"]
    assert "-fstack-clash-protection" not in env["CFLAGS"] and "-mguard=cf" not in env["CFLAGS"]
    assert "-z" not in env["LDFLAGS"] and "QEMU_LD_PREFIX" not in env
    assert env["ZIG_GLOBAL_CACHE_DIR"].startswith("/sysroot/")


def test_recipes_unavailable_on_windows_are_left_out_with_their_reason():
    recipes = load_all()
    kept = for_os(recipes, "windows", None)
    assert {"zlib", "openssl", "sqlite", "libffi", "xz", "zstd", "bzip2", "expat", "mpdecimal"} <= set(kept)
    assert not {"ncurses", "libedit", "libuuid", "libx11"} & set(kept)
    # LLVM's profile runtime, which only Windows pgo builds need, is all Linux leaves out
    assert set(recipes) - set(for_os(recipes, "linux", None)) == {"llvm-profile-runtime"}
    with pytest.raises(PyfreightError, match=r"recipe ncurses is not built for windows: Windows has its own"):
        for_os(recipes, "windows", ["zlib", "ncurses"])


def test_a_recipe_for_windows_may_not_need_one_that_is_not(tmp_path):
    write_recipe(tmp_path, "curses", unavailable_on={"windows": "a Unix terminal library"})
    write_recipe(tmp_path, "editor", depends=["curses"])
    recipes = {d.name: load_recipe(d) for d in sorted(tmp_path.iterdir())}
    with pytest.raises(PyfreightError, match=r"recipe editor is built for windows but depends on curses"):
        for_os(recipes, "windows", None)


def test_naming_an_unavailable_recipe_is_one_line_with_the_reason():
    proc = pyfreight_cli("deps", "--target", WINDOWS.make_name, "ncurses")
    assert proc.returncode == 1
    reason = " ".join(load_all()["ncurses"].unavailable_on["windows"].split())
    assert proc.stderr.strip().splitlines() == [f"error: recipe ncurses is not built for windows: {reason}"]


@pytest.mark.parametrize(
    ("options", "refusal"),
    [
        ("debug", "debug"),
        ("lto+pie", "pie"),
        ("noopt+ssp", "ssp"),
        ("lto+nocet", "nocet"),
        ("lto+fulllto", "fulllto"),
    ],
)
def test_a_build_the_target_cannot_have_is_refused_with_the_datas_reason(options, refusal):
    proc = pyfreight_cli("build", "--target", WINDOWS.make_name, "--options", options)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    reason = " ".join(WINDOWS.builds.unavailable_options[refusal].split())
    expected = f"error: {WINDOWS.triple} cannot be built {options}: {reason}"
    assert proc.stderr.strip().splitlines() == [expected]


def test_lto_compiles_cpython_to_the_pinned_zigs_bitcode_and_says_which_llvm():
    """lto is built: CPython's own objects get -flto (its dependencies do
    not), and PYTHON.json names the bitcode by the LLVM of the target's zig."""
    from pyfreight.cpython.options import BuildOptions
    from pyfreight.cpython.windows_projects import optimization_flags

    assert optimization_flags(BuildOptions.parse("noopt"), WINDOWS) == ""
    # full LTO: ThinLTO through zig's linker did not link the same bytes twice
    assert optimization_flags(BuildOptions.parse("lto"), WINDOWS) == "-flto=full"
    assert "fulllto" in WINDOWS.builds.unavailable_options
    assert "lto" not in WINDOWS.builds.unavailable_options and WINDOWS.toolchain.zig_llvm == "22"
    assert "-flto" not in build_environment(WINDOWS, jobs=1, source_date_epoch=0)["CFLAGS"]


def test_bitcode_objects_are_named_by_the_llvm_that_compiled_them(tmp_path):
    from pyfreight import toolchain
    from pyfreight.archives.describe import object_file_format

    bitcode = tmp_path / "x.o"
    bitcode.write_bytes(b"BC\xc0\xde" + bytes(60))
    linux = next(t for t in all_targets().values() if t.is_default)
    assert object_file_format(bitcode, WINDOWS) == "llvm-bitcode:22"
    assert object_file_format(bitcode, linux) == f"llvm-bitcode:{toolchain.LLVM}"


def test_the_release_matrix_has_the_windows_builds_of_every_pinned_version():
    """`pyfreight matrix` lists the Windows target's release options for every pinned
    CPython (3.13 since its generated pyconfig.h is written and its patches ported)."""
    from pyfreight.cpython.versions import load_versions

    built = {(e.spec.minor, str(e.spec.options)) for e in release_matrix() if e.spec.target == WINDOWS}
    options = {"noopt", "lto", "pgo+lto", "freethreaded+lto"}
    assert built == {(minor, o) for minor in load_versions()[1] for o in options}
    assert "3.13" in {minor for minor, _ in built}
    proc = pyfreight_cli("matrix")
    assert proc.returncode == 0, proc.stderr
    assert re.search(
        rf"^make {WINDOWS.make_name}-noopt CPYTHON=3\.13\s+# 3\.13 {WINDOWS.triple} noopt$", proc.stdout, re.M
    )
    assert re.search(
        rf"^make {WINDOWS.make_name}-pgo CPYTHON=3\.14\s+# 3\.14 {WINDOWS.triple} pgo\+lto$",
        proc.stdout,
        re.M,
    )


def test_a_version_the_target_data_refuses_is_refused_in_one_line_with_its_reason():
    """No version is refused for Windows now; the refusal itself, from a target's data."""
    from dataclasses import replace
    from types import MappingProxyType

    from pyfreight.cpython.spec import BuildSpec

    versions = MappingProxyType({"3.13": "a reason,\n  on two lines"})
    refusing = replace(WINDOWS, builds=replace(WINDOWS.builds, unavailable_versions=versions))
    with pytest.raises(PyfreightError) as refused:
        BuildSpec.resolve("3.13", "noopt", refusing).check_target_has()
    assert str(refused.value) == f"{WINDOWS.triple} is not built for CPython 3.13: a reason, on two lines"


def test_make_names_the_commands_the_windows_tests_run():
    """`make windows-x86_64-deps` and `make windows-x86_64-noopt` (README, docs/targets.md)
    are the pyfreight commands test_windows_target_integration.py runs and checks."""
    deps = subprocess.run(
        ["make", "-n", f"{WINDOWS.make_name}-deps"], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert deps.returncode == 0, deps.stderr
    assert deps.stdout.splitlines()[-1].endswith(f"pyfreight deps --target {WINDOWS.make_name} "), deps.stdout
    built = build_of_make(f"{WINDOWS.make_name}-noopt")
    assert (built.target, str(built.options)) == (WINDOWS, "noopt")


def test_a_wheels_platform_tags_come_from_its_name():
    assert pypi.wheel_platforms("ziglang-0.17.1-py3-none-manylinux_2_12_x86_64.musllinux_1_1_x86_64.whl") == [
        "manylinux_2_12_x86_64",
        "musllinux_1_1_x86_64",
    ]
    with pytest.raises(PyfreightError, match=r"not a wheel's file name"):
        pypi.wheel_platforms("ziglang-0.17.1.tar.gz")


def test_a_cpython_wheel_is_fetched_for_the_interpreter_its_name_says(tmp_path):
    """msvc-runtime's wheel is tagged cp311, markupsafe's cp314t: pip picks them whatever
    Python runs pip (the driver's venv may be another). Fetched from the index for real
    and verified against the pin."""
    assert pypi.wheel_interpreter("markupsafe-3.0.4-cp314-cp314t-win_amd64.whl") == [
        "--implementation", "cp", "--python-version", "3.14", "--abi", "cp314t",
    ]  # fmt: skip
    assert pypi.wheel_interpreter("ziglang-0.17.1-py3-none-manylinux_2_12_x86_64.whl") == []
    wheel = WINDOWS.pe.msvc_wheels["cp315t"]
    fetched = fetch_source(wheel, tmp_path, log=lambda _: None)
    assert fetched.name == wheel.file and file_sha256(fetched) == wheel.sha256


def test_a_wheel_pip_cannot_find_fails_that_origin_with_pips_reason(tmp_path):
    pinned = make_source(tmp_path, "nosuchproject_pyfreight-0.0.1-py3-none-any.whl")
    source = type(pinned)(
        file=pinned.file, sha256=pinned.sha256, size=pinned.size, urls=(), debian=None,
        pypi=PypiLocation(project="nosuchproject-pyfreight", version="0.0.1"),
    )  # fmt: skip
    with pytest.raises(OSError, match=r"pip download failed: "):
        pypi.download_wheel(source, tmp_path, timeout_s=120)


def test_windows_pgo_compiles_with_the_profile_handed_in_and_trains_an_instrumented_build():
    """The optimized build reads the merged profile where the build job stages its files
    (/inputs/recipe/<name>); the interpreter trained counts, without LTO, linking LLVM's
    profile runtime, a recipe built for nothing else."""
    pgo_lto, pgo = BuildOptions.parse("pgo+lto"), BuildOptions.parse("pgo")
    use = "-fprofile-instr-use=/inputs/recipe/pgo.profdata"
    assert optimization_flags(pgo_lto, WINDOWS).split() == [use, "-flto=full"]
    assert optimization_flags(pgo, WINDOWS) == use
    assert optimization_flags(pgo_lto, WINDOWS, instrumented=True) == "-fprofile-instr-generate"
    runtime = load_all()["llvm-profile-runtime"]
    assert runtime.training_only and set(runtime.unavailable_on) == {"linux", "macos"}
