"""End to end: CPython 3.14 noopt built in the container from verified sources, made
relocatable, and checked in a clean bullseye container (pyfreight check-install)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from pyfreight.cpython.build import build_cpython
from pyfreight.cpython.relocate import find_build_paths
from pyfreight.cpython.setup_local import load_extension_data
from pyfreight.cpython.spec import BuildSpec
from pyfreight.paths import default_workspace
from pyfreight.targets import default_target
from pyfreight.verify.elf_rules import check_tree
from tests.conftest import pyfreight_cli

pytestmark = pytest.mark.container


@pytest.fixture(scope="module")
def build():
    return build_cpython(
        BuildSpec.resolve(None, "noopt", None), default_workspace(), jobs=os.cpu_count() or 1
    )


def test_install_tree_passes_every_check(build):
    """As a user runs it: `pyfreight check-install TREE` (the test-suite subset too)."""
    proc = pyfreight_cli("check-install", build.tree, "--tests", "subset")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "0 failed" in proc.stdout and "FAIL" not in proc.stdout


def test_a_tree_whose_binaries_break_the_rules_is_not_run_at_all(build, tmp_path):
    """check-install's one policy, whatever the tree's format: the rules of its binaries
    first; a tree that breaks them may be anything, and none of it runs (no container
    is started, no check prints PASS)."""
    copy = tmp_path / "tree"
    shutil.copytree(build.tree, copy, symlinks=True)
    source = tmp_path / "evil.c"
    source.write_text("int evil(void) { return 1; }\n")
    made = subprocess.run(
        ["gcc", "-shared", "-fPIC", "-Wl,-rpath,/opt/evil", "-o", copy / "lib" / "libevil.so", source],
        capture_output=True,
        text=True,
    )
    assert made.returncode == 0, made.stderr
    proc = pyfreight_cli("check-install", copy, "--tests", "none")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    failed = [line for line in proc.stdout.splitlines() if line.startswith("FAIL")]
    assert len(failed) == 1 and "lib/libevil.so" in failed[0] and "/opt/evil" in failed[0], proc.stdout
    assert "PASS" not in proc.stdout
    assert "it is not trusted and nothing of it was run" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_no_build_paths_and_static_only(build):
    assert find_build_paths(build.tree) == []
    # The only shared objects are the test-only modules, in lib-dynload, and libpython
    # in lib/ (for programs that embed Python; the interpreter links its objects).
    shared = sorted(build.tree.rglob("*.so*"))
    test_only = load_extension_data().test_only
    modules = [p for p in shared if p.parent.name == "lib-dynload" and p.name.split(".")[0] in test_only]
    assert modules, "the test-only modules (extensions.yaml test_only) are missing"
    libraries = sorted(p.name for p in shared if p not in modules)
    assert libraries == ["libpython3.14.so", "libpython3.14.so.1.0", "libpython3.so"]
    assert (build.tree / "lib" / "libpython3.14.so").readlink() == Path("libpython3.14.so.1.0")
    facts, problems = check_tree(build.tree, default_target())
    assert problems == []
    binary = next(f for f in facts if f.path == "bin/python3.14")
    assert "libpython3.14.so.1.0" not in binary.needed
    assert binary.glibc <= (2, 31)


def test_layout_and_artifact(build):
    tree = build.tree
    for path in (
        "bin/python3",
        "bin/python",
        "bin/python3.14",
        "lib/python3.14/os.py",
        "include/python3.14/Python.h",
        "share/terminfo",
        "lib/tcl8.6/init.tcl",
        "lib/tk8.6/tk.tcl",
        "lib/tcl8/8.5/msgcat-1.6.1.tm",  # Tcl's modules, which Tk's dialogs use
        "bin/pip3",
    ):
        assert (tree / path).exists(), path
    with tarfile.open(build.artifact) as tar:
        names = tar.getnames()
    assert names == sorted(names) and "install/bin/python3.14" in names
