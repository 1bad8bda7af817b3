from __future__ import annotations

from dataclasses import replace

import pytest

from pyfreight.cpython.options import BuildOptions, compiler_env, configure_args
from pyfreight.cpython.versions import cpython_source
from pyfreight.errors import PyfreightError
from pyfreight.runners import Runner, runner_for
from pyfreight.targets import all_targets, default_target

V313, V314 = cpython_source("3.13"), cpython_source("3.14")


@pytest.mark.parametrize(
    ("text", "expected", "absent"),
    [
        ("noopt", [], ["--enable-optimizations", "--with-lto=thin", "--with-pydebug"]),
        ("debug", ["--with-pydebug"], ["--enable-optimizations", "--with-tail-call-interp"]),
        ("lto", ["--with-lto=thin"], ["--enable-optimizations"]),
        ("pgo", ["--enable-optimizations"], ["--with-lto=thin"]),
        ("pgo+lto", ["--enable-optimizations", "--with-lto=thin"], ["--disable-gil"]),
        ("freethreaded+pgo+lto", ["--disable-gil", "--enable-optimizations"], []),
    ],
)
def test_configure_args_per_option(text, expected, absent):
    args = configure_args(V314, BuildOptions.parse(text), default_target())
    for arg in expected:
        assert arg in args
    for arg in absent:
        assert arg not in args
    assert "--with-readline=editline" in args and "--with-system-expat" in args
    assert str(BuildOptions.parse(text)) == text


def test_tail_call_interpreter_where_the_release_has_it():
    assert "--with-tail-call-interp" in configure_args(V314, BuildOptions.parse("noopt"), default_target())
    assert "--with-tail-call-interp" not in configure_args(
        V313, BuildOptions.parse("noopt"), default_target()
    )


def test_bad_options_are_named():
    with pytest.raises(PyfreightError, match="unknown build option 'fast'"):
        BuildOptions.parse("fast")
    without = replace(V313, features=frozenset())
    with pytest.raises(PyfreightError, match=r"CPython 3\.13\.15 has no free-threaded build"):
        configure_args(without, BuildOptions.parse("freethreaded+noopt"), default_target())


def test_recorded_flags_are_host_safe():
    env = compiler_env(BuildOptions.parse("noopt"), default_target())
    for var in ("CFLAGS", "LDFLAGS"):
        assert "/tools" not in env[var] and "lld" not in env[var] and "sysroot" not in env[var]
    assert "-fuse-ld=lld" in env["LDFLAGS_NODIST"]


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("pgo+lto+pie", "pgo+lto+pie"),
        ("pgo+lto+fulllto+ssp", "pgo+lto+ssp+fulllto"),
        ("freethreaded+pgo+lto+nocet", "freethreaded+pgo+lto+nocet"),
        ("noopt+pie", "noopt+pie"),
    ],
)
def test_modifiers_parse_to_one_canonical_name(text, canonical):
    assert str(BuildOptions.parse(text)) == canonical
    assert BuildOptions.parse(canonical) == BuildOptions.parse(text)


def test_modifiers_change_the_flags_they_name():
    default = compiler_env(BuildOptions.parse("pgo+lto"), default_target())
    pie = compiler_env(BuildOptions.parse("pgo+lto+pie"), default_target())
    # the default is a position-dependent executable (docs/performance.md)
    assert "-no-pie" in default["LDFLAGS_NODIST"].split() and "-no-pie" not in pie["LDFLAGS_NODIST"].split()
    ssp = compiler_env(BuildOptions.parse("pgo+lto+ssp"), default_target())
    assert "-fstack-protector" in ssp["CFLAGS"].split() and "-fstack-protector-strong" not in ssp["CFLAGS"]
    nocet = compiler_env(BuildOptions.parse("pgo+lto+nocet"), default_target())
    assert "-fcf-protection" in default["CFLAGS"] and "-fcf-protection" not in nocet["CFLAGS"]
    assert "--with-lto=full" in configure_args(V314, BuildOptions.parse("pgo+lto+fulllto"), default_target())
    assert "--with-lto=thin" in configure_args(V314, BuildOptions.parse("lto"), default_target())
    # every hardening the issue keeps stays whatever the modifiers say
    for env in (default, pie, ssp, nocet):
        assert "-D_FORTIFY_SOURCE=2" in env["CFLAGS"] and "-z,now" in env["LDFLAGS"]
        assert "noexecstack" in env["LDFLAGS"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("pgo+lto+nopie", "already the default"),
        ("pgo+lto+pie+nopie", "two modifiers set pie"),
        ("pgo+fulllto", "needs an lto option"),
        ("pgo+lto+fast", "unknown modifier 'fast'"),
        ("lto+pgo", "unknown modifier 'pgo'"),
    ],
)
def test_bad_modifiers_are_named(text, message):
    with pytest.raises(PyfreightError, match=message):
        BuildOptions.parse(text)


def test_schema_accepts_every_modifier_and_nothing_else():
    import json

    import jsonschema

    from pyfreight.cpython.options import MODIFIERS
    from pyfreight.paths import SCHEMA_DIR

    schema = json.loads((SCHEMA_DIR / "PYTHON.json.schema.json").read_text())
    field = {"type": "object", "properties": {"b": schema["properties"]["build_options"]}}
    for name in MODIFIERS:
        jsonschema.validate({"b": f"freethreaded+pgo+lto+{name}"}, field)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"b": "pgo+lto+bogus"}, field)


def test_a_foreign_target_is_cross_configured_with_its_answers():
    """A target this machine does not run natively is configured as a cross build with
    the build python and the answers of its target file; the native one is not."""
    foreign = next(t for t in all_targets().values() if t.run.kind == "emulator")
    args = configure_args(V314, BuildOptions.parse("lto"), foreign)
    assert f"--host={foreign.toolchain.clang_triple}" in args
    assert any(a.startswith("--with-build-python=") and a.endswith("/bin/python3.14") for a in args)
    assert {f"{k}={v}" for k, v in foreign.toolchain.cpython_configure_answers.items()} <= set(args)
    native = configure_args(V314, BuildOptions.parse("lto"), default_target())
    # a native build answers nothing for the target; only which compiler it is (clang)
    assert not any(a.startswith(("--host=", "--with-build-python=")) for a in native)
    assert [a for a in native if a.startswith("ac_cv_")] == ["ac_cv_cc_name=clang"]


def test_control_flow_protection_is_the_targets_own():
    for found in (t for t in all_targets().values() if t.toolchain.control_flow_cflags):
        env = compiler_env(BuildOptions.parse("noopt"), found)
        assert found.toolchain.control_flow_cflags in env["CFLAGS"]
        assert (
            found.toolchain.control_flow_cflags
            not in compiler_env(BuildOptions.parse("noopt+nocet"), found)["CFLAGS"]
        )


def _runner_of(kind: str) -> Runner:
    """The runner of the first target whose programs run here that way (targets/*.yaml `run`)."""
    return runner_for(next(t for t in all_targets().values() if t.run.kind == kind))


def _musl_runner() -> Runner:
    return runner_for(next(t for t in all_targets().values() if t.libc.name == "musl"))


def test_emulated_runs_also_skip_the_emulators_failures():
    """Cases qemu-user fails (cpython/test-suite.yaml ignore_emulated) are skipped only for
    an interpreter run through an emulator; the shared ignore list always."""
    from pyfreight.runners.cpython_tests import load_test_suite, test_suite_command

    suite = load_test_suite()
    native = test_suite_command("python3", "subset")
    emulated = test_suite_command("python3", "subset", _runner_of("emulator"))
    assert suite["ignore_emulated"]
    for pattern in suite["ignore"]:
        assert pattern in native and pattern in emulated
    for pattern in suite["ignore_emulated"]:
        assert pattern in emulated and pattern not in native


def test_wine_runs_skip_wines_failures_and_start_through_the_harness_script():
    """Cases that fail only under Wine (ignore_wine) are skipped only for a Windows
    target's run, which starts regrtest through regrtest_wine.py."""
    from pyfreight.runners.cpython_tests import load_test_suite, test_suite_command

    suite = load_test_suite()
    script = ["regrtest_wine.py"]
    wine = test_suite_command("python.exe", "subset", _runner_of("wine"), launcher=script, rerun=True)
    native = test_suite_command("python3", "subset")
    assert suite["ignore_wine"]
    assert wine[:7] == ["python.exe", "regrtest_wine.py", "-j", "2", "--timeout", "900", "--rerun"]
    assert "--rerun" not in native
    assert native[:5] == ["python3", "-m", "test", "-j", "2"]
    for pattern in suite["ignore_wine"]:
        assert pattern in wine and pattern not in native
    for pattern in suite["ignore_emulated"]:
        assert pattern not in wine


def test_a_wine_run_through_an_emulator_also_skips_what_fails_only_there():
    """Windows on Arm runs under arm64 Wine through qemu-user: its runs skip Wine's cases
    and those that fail only under an emulated Wine (ignore_emulated_wine); x86_64's Wine
    runs the latter, and no Linux run skips them."""
    from pyfreight.runners.cpython_tests import load_test_suite, test_suite_command

    suite, targets = load_test_suite(), all_targets()
    arm = test_suite_command("python.exe", "subset", runner_for(targets["aarch64-pc-windows-gnullvm"]))
    x64 = test_suite_command("python.exe", "subset", runner_for(targets["x86_64-pc-windows-gnullvm"]))
    emulated_linux = test_suite_command("python3", "subset", _runner_of("emulator"))
    assert suite["ignore_emulated_wine"]
    for pattern in suite["ignore_emulated_wine"]:
        assert pattern in arm and pattern not in x64 and pattern not in emulated_linux
    for pattern in suite["ignore_wine"]:
        assert pattern in arm and pattern in x64


def test_cases_our_build_for_an_os_lacks_are_skipped_for_its_targets_only():
    from pyfreight.runners.cpython_tests import load_test_suite, test_suite_command

    by_os = load_test_suite()["ignore_os"]
    assert by_os["windows"]
    windows = test_suite_command("python.exe", "subset", _runner_of("wine"))
    linux = test_suite_command("python3", "subset")
    for pattern in by_os["windows"]:
        assert pattern in windows and pattern not in linux


def test_files_an_os_cannot_import_are_left_out_of_its_full_runs_only():
    """regrtest's -x takes the files of exclude_os, for the full suite; -i could not skip
    them (their import fails before any case is matched)."""
    from pyfreight.runners.cpython_tests import load_test_suite, test_suite_command

    files = sorted(load_test_suite()["exclude_os"]["windows"])
    assert "test_capi" in files
    windows = test_suite_command("python.exe", "full", _runner_of("wine"))
    linux = test_suite_command("python3", "full")
    assert windows[windows.index("-x") :] == ["-x", *files]
    assert "-x" not in linux and not set(files) & set(linux)
    subset = test_suite_command("python.exe", "subset", _runner_of("wine"))
    assert "-x" not in subset and not set(files) & set(subset)


def test_cases_a_static_program_fails_are_skipped_for_static_interpreters_only():
    from pyfreight.runners.cpython_tests import load_test_suite, test_suite_command

    static_only = load_test_suite()["ignore_static"]
    assert static_only
    static = test_suite_command("python3", "subset", _musl_runner(), static=True)
    dynamic = test_suite_command("python3", "subset", _musl_runner())
    for pattern in static_only:
        assert pattern in static and pattern not in dynamic


def test_cases_a_c_library_fails_are_skipped_for_its_targets_only():
    from pyfreight.runners.cpython_tests import load_test_suite, test_suite_command

    by_libc = load_test_suite()["ignore_libc"]
    assert by_libc["musl"]
    musl = test_suite_command("python3", "subset", _musl_runner())
    glibc = test_suite_command("python3", "subset", runner_for(default_target()))
    for pattern in by_libc["musl"]:
        assert pattern in musl and pattern not in glibc


JIT = "--enable-experimental-jit=yes-off"


@pytest.mark.parametrize(
    ("minor", "text", "triple", "carries"),
    [
        ("3.14", "pgo+lto", "x86_64-unknown-linux-gnu", True),
        ("3.14", "pgo", "x86_64-unknown-linux-gnu", True),
        ("3.14", "pgo+lto", "aarch64-unknown-linux-gnu", True),
        ("3.14", "lto", "x86_64-unknown-linux-gnu", False),  # only pgo builds, as python-build-standalone's
        ("3.14", "noopt", "x86_64-unknown-linux-gnu", False),
        ("3.14", "freethreaded+pgo+lto", "x86_64-unknown-linux-gnu", False),  # no JIT without the GIL yet
        ("3.14", "lto", "x86_64-unknown-linux-musl", False),  # Tools/jit has no musl stencils
        ("3.13", "pgo+lto", "x86_64-unknown-linux-gnu", False),  # needs LLVM 18, which no pinned archive has
        ("3.15", "pgo+lto", "x86_64-unknown-linux-gnu", False),  # needs LLVM 21, likewise
    ],
)
def test_the_jit_is_built_in_and_off_where_target_release_and_option_allow(minor, text, triple, carries):
    args = configure_args(cpython_source(minor), BuildOptions.parse(text), all_targets()[triple])
    assert (JIT in args) is carries, args
    assert not [a for a in args if a.startswith("--enable-experimental-jit") and a != JIT]


def test_nojit_leaves_the_jit_out_where_it_would_be_built_in():
    """+nojit is the side-by-side build that measures what carrying the JIT costs."""
    x86_64 = all_targets()["x86_64-unknown-linux-gnu"]
    args = configure_args(cpython_source("3.14"), BuildOptions.parse("pgo+lto+nojit"), x86_64)
    assert not [a for a in args if a.startswith("--enable-experimental-jit")], args
    assert str(BuildOptions.parse("pgo+lto+nobolt+nojit")) == "pgo+lto+nobolt+nojit"
    with pytest.raises(PyfreightError, match="nojit needs a pgo option"):
        BuildOptions.parse("lto+nojit")
    no_jit = r"nojit, but the CPython 3\.13\.\d+ for x86_64-unknown-linux-gnu has no JIT built in"
    with pytest.raises(PyfreightError, match=no_jit):
        configure_args(cpython_source("3.13"), BuildOptions.parse("pgo+lto+nojit"), x86_64)
    with pytest.raises(PyfreightError, match="jit is already the default"):
        BuildOptions.parse("pgo+jit")


def test_frame_pointers_in_every_linux_build_unless_nofp():
    """Build-only (CFLAGS_NODIST): an extension built on a user's machine chooses its own."""
    keep = "-fno-omit-frame-pointer -mno-omit-leaf-frame-pointer"
    for text in ("noopt", "pgo+lto", "freethreaded+lto", "debug"):
        env = compiler_env(BuildOptions.parse(text), default_target())
        assert keep in env["CFLAGS_NODIST"] and "frame-pointer" not in env["CFLAGS"], text
    nofp = compiler_env(BuildOptions.parse("pgo+lto+nofp"), default_target())
    assert "frame-pointer" not in nofp["CFLAGS_NODIST"]
    from pyfreight.toolchain import common_cflags

    assert keep in common_cflags(default_target())  # the dependencies keep theirs whatever the modifier
    windows = next(t for t in all_targets().values() if t.binary_format == "pe")
    assert "frame-pointer" not in common_cflags(windows)


def test_bolt_lays_out_x86_64_linux_pgo_builds_of_the_gil_unless_nobolt():
    """The default where the target data says `builds.bolt` (measured: 2% in geometric mean),
    with the build's own LLVM; +nobolt is the side-by-side build without it."""
    from pyfreight.toolchain import LLVM

    x86_64 = all_targets()["x86_64-unknown-linux-gnu"]
    pgo_lto = BuildOptions.parse("pgo+lto")
    assert "--enable-bolt" in configure_args(V314, pgo_lto, x86_64)
    env = compiler_env(pgo_lto, x86_64)
    assert env["LLVM_BOLT"] == f"/usr/lib/llvm-{LLVM}/bin/llvm-bolt" and env["MERGE_FDATA"].endswith(
        "merge-fdata"
    )
    assert "-skip-funcs=" in env["BOLT_COMMON_FLAGS"] and "ffi_.*" in env["BOLT_COMMON_FLAGS"]
    unbolted = [
        (BuildOptions.parse("pgo+lto+nobolt"), x86_64),
        (BuildOptions.parse("lto"), x86_64),
        (BuildOptions.parse("freethreaded+pgo+lto"), x86_64),
        (pgo_lto, all_targets()["aarch64-unknown-linux-gnu"]),
    ]
    for options, target in unbolted:
        assert "--enable-bolt" not in configure_args(V314, options, target), (options, target.triple)
        assert "LLVM_BOLT" not in compiler_env(options, target), (options, target.triple)
    with pytest.raises(PyfreightError, match="nobolt needs a pgo option"):
        BuildOptions.parse("lto+nobolt")
    with pytest.raises(PyfreightError, match="bolt is already the default"):
        BuildOptions.parse("pgo+lto+bolt")
    not_bolted = r"nobolt, but aarch64-unknown-linux-gnu's pgo\+lto builds are not laid out by llvm-bolt"
    with pytest.raises(PyfreightError, match=not_bolted):
        configure_args(V314, BuildOptions.parse("pgo+lto+nobolt"), all_targets()["aarch64-unknown-linux-gnu"])
    with pytest.raises(PyfreightError, match="builds of the free-threaded CPython are not laid out"):
        configure_args(V314, BuildOptions.parse("freethreaded+pgo+lto+nobolt"), x86_64)


def test_a_foreign_targets_profile_runtime_is_pinned_as_the_images_own():
    from pyfreight.paths import REPO_ROOT
    from pyfreight.toolchain import LLVM, compiler_runtime_package

    packages = (REPO_ROOT / "dockerfiles/build-packages.txt").read_text()
    aarch64 = all_targets()["aarch64-unknown-linux-gnu"]
    own = next(line for line in packages.splitlines() if line.startswith(f"libclang-rt-{LLVM}-dev="))
    assert compiler_runtime_package(aarch64, packages) == own.replace("-dev=", "-dev:arm64=")
    assert compiler_runtime_package(default_target(), packages) == ""
