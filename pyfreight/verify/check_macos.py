"""check-install of a macOS tree. Everywhere: the rules of its Mach-O files
(verify/macho_rules.py). On a Mac of the tree's CPU (the macOS workflow's runners), also
what check-install runs in a container elsewhere, run directly on the Mac: the
interpreter through a symlink from another folder, in_container/interpreter_checks.py,
and CPython's test subset. This Linux machine runs no macOS program: there the static
rules are all, and it says so."""

from __future__ import annotations

import platform
import subprocess
import sys
import tempfile
from pathlib import Path

from pyfreight.formats.untrusted import UntrustedTree
from pyfreight.logs import say
from pyfreight.paths import IN_CONTAINER_DIR
from pyfreight.platforms import installed_python_name
from pyfreight.targets import Target
from pyfreight.verify.cpython_tests import test_suite_command
from pyfreight.verify.macho_rules import check_macho_tree

CHECK_SCRIPT = IN_CONTAINER_DIR / "interpreter_checks.py"


def runs_on_this_machine(target: Target) -> bool:
    """Whether this machine is a Mac that runs the target's programs natively."""
    return sys.platform == "darwin" and platform.machine() == target.uname_machine


def check_macos_install(tree: Path, tests: str, target: Target) -> bool:
    """The Mach-O rules, then, on a Mac of the target's CPU, the checks and tests run."""
    facts, problems = check_macho_tree(tree, target)
    say(f"Mach-O files: {len(facts)}, {len(problems)} problem(s) for {target.triple}")
    for problem in problems:
        print(f"FAIL  {problem}")
    if problems:
        # A tree whose files break the rules may be anything: none of it is run.
        raise UntrustedTree(tree, len(problems), "Mach-O")
    if not runs_on_this_machine(target):
        say(
            f"check-install: {target.triple}'s programs cannot run on this machine; the Mach-O "
            "rules are all it checks here (on a Mac, check-install runs them too)"
        )
        return not problems
    python = tree / "bin" / installed_python_name(tree)
    passed = not problems
    with tempfile.TemporaryDirectory(prefix="pyfreight-check ") as tmp:
        link = Path(tmp) / "pf-python"
        link.symlink_to(python)
        probe = f"import os, sys; assert os.path.realpath(sys.prefix) == {str(tree.resolve())!r}, sys.prefix"
        through_link = subprocess.run([str(link), "-c", probe], cwd=tmp).returncode == 0
        print(f"{'PASS' if through_link else 'FAIL'}  runs through a symlink")
        passed = passed and through_link
        passed = subprocess.run([str(python), str(CHECK_SCRIPT)], cwd=tmp).returncode == 0 and passed
        if tests != "none":
            tests_dir = tree / "lib" / python.name / "test"
            command = test_suite_command(
                str(python),
                tests,
                lambda name: bool(list(tests_dir.glob(f"{name}.py")) + list(tests_dir.glob(f"{name}/"))),
                runner="native",
                libc=target.libc,
                os_name=target.os,
            )
            say(f"running CPython tests ({tests})")
            passed = subprocess.run(command, cwd=tmp).returncode == 0 and passed
    return passed
