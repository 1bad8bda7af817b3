"""Targets are data: every file of targets/ validates and is what the driver uses; a
broken or contradictory file is refused naming the file; and no fact of a target is
written anywhere else in the code, recipes or build files."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pyfreight.archives.describe import SCHEMA_SYSTEM_LIBRARIES
from pyfreight.cpython.options import BuildOptions, configure_args
from pyfreight.cpython.versions import cpython_source
from pyfreight.errors import PyfreightError
from pyfreight.formats.elf import tree_target
from pyfreight.paths import REPO_ROOT
from pyfreight.targets import TARGETS_DIR, all_targets, default_target, known_names, load_targets, target
from pyfreight.toolchain import GLIBC_FLOOR_HEADER, LLVM, SYSROOT, common_cflags, compiler_commands
from pyfreight.verify.validate import _target_of
from tests.conftest import pyfreight_cli

FILES = sorted(TARGETS_DIR.glob("*.yaml"))

# Where target facts may not be written: everything the driver, recipes and build
# files say (targets/ is their one place; tests and prose may name them).
SEARCHED = ["pyfreight", "recipes", "cpython", "dockerfiles", "schema", "scripts", ".ci", "Makefile"]


def _copy_targets(tmp_path: Path) -> Path:
    folder = tmp_path / "targets"
    shutil.copytree(TARGETS_DIR, folder)
    return folder


def test_every_target_file_loads_under_its_triple():
    assert FILES, "targets/ has no target file"
    loaded = load_targets()
    assert sorted(f"{t}.yaml" for t in loaded) == [f.name for f in FILES]
    for triple, found in loaded.items():
        data = yaml.safe_load((TARGETS_DIR / f"{triple}.yaml").read_text())
        assert found.toolchain.clang_triple == data["toolchain"]["clang_triple"]
        assert found.binary_format in data, "the file's own binary format section"
        if found.binary_format == "elf":
            assert found.elf.loader == data["elf"]["loader"]
        if found.binary_format == "pe":
            assert found.pe.machine == data["pe"]["machine"]
        assert found.recipe_env == data["recipe_env"]


def test_one_default_and_names_resolve():
    default = default_target()
    assert sum(t.is_default for t in all_targets().values()) == 1
    assert target(default.triple) is default and target(default.make_name) is default


def test_system_libraries_are_ones_python_json_can_name():
    for found in all_targets().values():
        assert found.libc.system_libraries <= SCHEMA_SYSTEM_LIBRARIES, found.triple


def test_unknown_target_lists_the_known_ones():
    with pytest.raises(PyfreightError, match=r"unknown target 'sparc64'; known: .*\(targets/\*\.yaml\)"):
        target("sparc64")


def test_file_named_after_another_triple_is_refused(tmp_path):
    folder = _copy_targets(tmp_path)
    (folder / FILES[0].name).rename(folder / "riscv64-unknown-linux-gnu.yaml")
    with pytest.raises(
        PyfreightError, match=r"riscv64-unknown-linux-gnu\.yaml: says triple .*; name the file"
    ):
        load_targets(folder)


def test_two_defaults_or_none_are_refused(tmp_path):
    folder = _copy_targets(tmp_path)
    path = folder / f"{default_target().triple}.yaml"
    data = yaml.safe_load(path.read_text())
    twin = dict(data, triple="riscv64-unknown-linux-gnu", make_name="linux-riscv64")
    (folder / "riscv64-unknown-linux-gnu.yaml").write_text(yaml.safe_dump(twin))
    with pytest.raises(PyfreightError, match=r"exactly one target file must say `default: true` \(found 2"):
        load_targets(folder)
    for other in folder.glob("*.yaml"):  # no default anywhere
        other.write_text(yaml.safe_dump(dict(yaml.safe_load(other.read_text()), default=False)))
    path.write_text(yaml.safe_dump(dict(data, default=False)))
    twin["default"] = False
    (folder / "riscv64-unknown-linux-gnu.yaml").write_text(yaml.safe_dump(twin))
    with pytest.raises(PyfreightError, match=r"found 0: none"):
        load_targets(folder)


def test_a_make_name_taken_twice_is_refused(tmp_path):
    folder = _copy_targets(tmp_path)
    data = yaml.safe_load((folder / FILES[0].name).read_text())
    twin = dict(data, triple="riscv64-unknown-linux-gnu", default=False)
    (folder / "riscv64-unknown-linux-gnu.yaml").write_text(yaml.safe_dump(twin))
    with pytest.raises(PyfreightError, match=rf"make_name {data['make_name']} is already"):
        load_targets(folder)


def test_a_broken_field_is_named(tmp_path):
    folder = _copy_targets(tmp_path)
    path = folder / FILES[0].name
    data = yaml.safe_load(path.read_text())
    data["libc"]["ceiling"] = "new"
    data["run"] = "maybe"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(PyfreightError) as caught:
        load_targets(folder)
    message = str(caught.value)
    assert f"{path.name} does not match schema/target.schema.json" in message
    assert "libc/ceiling: 'new' does not match" in message and "run: 'maybe'" in message


# Values a target's data holds that are words of more than that target, each with what
# else it names: searched for, they would find the operating system and toolchain.
SHARED_WORDS = {
    "win32": "sys.platform of every Windows (and 32-bit x86 Windows' platform tag)",
    "mingw": "mingw-w64, the headers of every Windows target (and OpenSSL's 32-bit target name)",
}


def _facts(found) -> set[str]:
    return _own_facts(found) - set(SHARED_WORDS)


def _own_facts(found) -> set[str]:
    return {
        found.triple,
        found.toolchain.clang_triple,
        found.make_name,
        found.python_platform_tag,
        *([found.elf.loader, found.elf.machine] if found.binary_format == "elf" else []),
        found.debian_architecture,
        found.toolchain.control_flow_cflags,
        *([found.run.emulator] if found.run.kind == "emulator" else []),
        *([found.toolchain.cross_cc.command] if found.toolchain.cross_cc else []),
        *found.recipe_env.values(),
    }


def _grep(facts: set[str], paths: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """grep's fixed-string search for any of `facts` in `paths` (exit 1: none found)."""
    patterns = [f"-e{fact}" for fact in sorted(facts)]
    return subprocess.run(["grep", "-rnIF", *patterns, *paths], cwd=cwd, capture_output=True, text=True)


def test_no_target_fact_is_written_outside_targets():
    """The triple, compiler triple, make name, platform tag, loader, ELF machine, Debian
    architecture, control-flow flags, emulator, cross compiler and recipe settings of
    every target appear in targets/ only."""
    facts = set().union(*(_facts(t) for t in all_targets().values()))
    found = _grep(facts, SEARCHED, REPO_ROOT)
    assert found.returncode == 1, f"target facts written outside targets/:\n{found.stdout}"


def test_the_search_finds_a_fact_where_one_is_written(tmp_path):
    """The search above can fail: over a Makefile naming a triple it finds it."""
    (tmp_path / "Makefile").write_text(f"TARGET ?= {default_target().triple}\n")
    found = _grep(_facts(default_target()), ["Makefile"], tmp_path)
    assert found.returncode == 0 and default_target().triple in found.stdout


def test_cli_takes_a_make_name_and_refuses_an_unknown_target():
    accepted = pyfreight_cli("deps", "--target", default_target().make_name, "no-such-recipe")
    assert accepted.returncode == 1 and "no recipe named 'no-such-recipe'" in accepted.stderr
    refused = pyfreight_cli("deps", "--target", "sparc64-unknown-linux-gnu", "zlib")
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines() == [
        f"error: unknown target 'sparc64-unknown-linux-gnu'; known: {known_names()} (targets/*.yaml)"
    ]


def test_make_names_an_unknown_target_in_one_line():
    proc = subprocess.run(
        ["make", "--no-print-directory", "linux-sparc64-noopt"], cwd=REPO_ROOT, capture_output=True, text=True
    )
    assert proc.returncode != 0
    assert "error: unknown target 'linux-sparc64'; known:" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_tree_is_told_by_its_interpreter(tmp_path):
    """check-install and validate tell the target of a tree by its interpreter's ELF
    machine and loader: the host's own ls is an x86-64 glibc executable."""
    host = Path(shutil.which("ls") or "/bin/ls")
    assert tree_target(host) is target("x86_64-unknown-linux-gnu")
    text = tmp_path / "python3"
    text.write_text("#!/bin/sh\n")
    with pytest.raises(PyfreightError, match="not an ELF executable"):
        tree_target(text)


def test_validate_names_a_platform_tag_that_is_not_the_targets(tmp_path):
    spec, problems = _target_of(
        tmp_path, "python/install", default_target().triple, {"python_platform_tag": "linux-sparc64"}
    )
    assert spec is default_target()
    assert [str(p) for p in problems] == [
        f"python/PYTHON.json: python_platform_tag linux-sparc64, not {default_target().python_platform_tag} "
        f"({default_target().triple})"
    ]
    _, unknown = _target_of(tmp_path, "python/install", "sparc64-unknown-linux-gnu", {})
    assert "unknown target sparc64-unknown-linux-gnu" in str(unknown[0])


def test_an_option_a_target_cannot_have_is_refused_with_its_reason():
    """`builds.unavailable_options` of a target file: the build stops in one line with the
    data's reason, before anything is built."""
    refusing = [t for t in all_targets().values() if "pgo" in t.builds.unavailable_options]
    assert refusing, "no target file refuses pgo; pick another option for this test"
    found = refusing[0]
    proc = pyfreight_cli("build", "--target", found.make_name, "--options", "pgo+lto", "--no-check")
    assert proc.returncode == 1
    reason = " ".join(found.builds.unavailable_options["pgo"].split())
    assert proc.stderr.strip().splitlines() == [f"error: {found.triple} cannot be built pgo+lto: {reason}"]


def test_a_musl_target_without_a_checked_static_build_refuses_static_with_its_reason():
    """A musl target whose static build has not been made (aarch64's) says so in one line,
    not glibc's reason."""
    musl = [t for t in all_targets().values() if t.libc.name == "musl"]
    refusing = [t for t in musl if "static" in t.builds.unavailable_options]
    assert refusing, "no musl target refuses static; pick another case for this test"
    found = refusing[0]
    proc = pyfreight_cli("build", "--target", found.make_name, "--options", "lto+static", "--no-check")
    assert proc.returncode == 1
    reason = " ".join(found.builds.unavailable_options["static"].split())
    assert proc.stderr.strip().splitlines() == [f"error: {found.triple} cannot be built lto+static: {reason}"]


def test_static_is_refused_for_a_glibc_target():
    """The `static` modifier links the C library in; glibc targets say they cannot."""
    glibc = default_target()
    assert glibc.libc.name == "glibc" and not glibc.libc.static_linking
    proc = pyfreight_cli("build", "--target", glibc.make_name, "--options", "lto+static", "--no-check")
    assert proc.returncode == 1
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith(f"error: {glibc.triple} cannot be built lto+static: its C library (glibc)")


CLANG_TARGETS = {triple: found for triple, found in all_targets().items() if found.toolchain.zig is None}


@pytest.mark.parametrize("found", list(CLANG_TARGETS.values()), ids=list(CLANG_TARGETS))
def test_compiler_commands_hold_the_targets_own_flags(found):
    """Debian's clang for a target with a Debian sysroot (zig's: test_windows_target)."""
    cc, cxx = compiler_commands(found)
    assert cc.split()[:3] == [
        f"clang-{LLVM}",
        f"--target={found.toolchain.clang_triple}",
        f"--sysroot={SYSROOT}",
    ]
    assert cxx.startswith(f"clang++-{LLVM} ")
    assert found.toolchain.compiler_flags in cc
    # glibc targets are held to their ceiling by the floor header; musl has no versions
    assert (f"-include {GLIBC_FLOOR_HEADER}" in cc) == (found.libc.name == "glibc")


def test_a_static_interpreter_belongs_to_the_target_whose_libc_links_statically(tmp_path):
    """A static executable names no loader; of the targets of its ELF machine, the one
    whose C library links statically is its target (x86_64: musl)."""
    source = tmp_path / "main.c"
    source.write_text("int main(void) { return 0; }\n")
    subprocess.run(["gcc", "-static", str(source), "-o", str(tmp_path / "static")], check=True)
    machine = default_target().elf.machine
    [static_target] = [
        t
        for t in all_targets().values()
        if t.binary_format == "elf" and t.elf.machine == machine and t.libc.static_linking
    ]
    assert tree_target(tmp_path / "static") is static_target
    assert tree_target(Path(sys.executable).resolve()) is default_target()


@pytest.mark.parametrize("found", list(CLANG_TARGETS.values()), ids=list(CLANG_TARGETS))
def test_a_foreign_target_linking_llvms_runtime_has_it_in_its_image(found):
    """-rtlib=compiler-rt links compiler-rt's builtins and start files of the target's
    architecture, which the build image has of its own architecture only: a target of
    another architecture that links them must take its own (`foreign_compiler_runtime`)."""
    foreign = found.debian_architecture != default_target().debian_architecture
    if foreign and "-rtlib=compiler-rt" in found.toolchain.compiler_flags.split():
        assert found.toolchain.foreign_compiler_runtime, found.triple


def _clang_compiles(found, tmp_path: Path, source: str, *flags: str) -> subprocess.CompletedProcess:
    """Compiles `source` for the target with the pinned clang, its warnings as errors."""
    path = tmp_path / "probe.c"
    path.write_text(source)
    command = [f"clang-{LLVM}", f"--target={found.toolchain.clang_triple}", "-Werror", *flags, "-c"]
    return subprocess.run(
        [*command, str(path), "-o", str(tmp_path / "probe.o")], capture_output=True, text=True
    )


@pytest.mark.parametrize("found", list(CLANG_TARGETS.values()), ids=list(CLANG_TARGETS))
def test_tail_call_interpreter_says_what_clang_has(found, tmp_path):
    """CPython's tail-calling interpreter needs clang's preserve_none calling convention,
    which clang has on some architectures only (CPython stops with an #error elsewhere):
    the target's `tail_call_interpreter` says what the pinned clang answers, and a target
    without it is configured without --with-tail-call-interp."""
    compiled = _clang_compiles(
        found, tmp_path, "__attribute__((preserve_none)) int handler(void) { return 0; }\n"
    )
    assert (compiled.returncode == 0) == found.toolchain.tail_call_interpreter, compiled.stderr
    args = configure_args(cpython_source("3.14"), BuildOptions.parse("noopt"), found)
    assert ("--with-tail-call-interp" in args) == found.toolchain.tail_call_interpreter


@pytest.mark.parametrize("found", list(CLANG_TARGETS.values()), ids=list(CLANG_TARGETS))
def test_stack_clash_protection_says_what_clang_has(found, tmp_path):
    """-fstack-clash-protection where clang has it for the architecture; where it has not
    (32-bit Arm) clang warns it unused, and configure scripts that check -Werror stop."""
    compiled = _clang_compiles(found, tmp_path, "int main(void) { return 0; }\n", "-fstack-clash-protection")
    assert (compiled.returncode == 0) == found.toolchain.stack_clash_protection, compiled.stderr
    assert (
        "-fstack-clash-protection" in common_cflags(found).split()
    ) == found.toolchain.stack_clash_protection
