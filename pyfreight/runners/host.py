"""A target whose programs this machine runs directly, with no container: a Mac of the
target's CPU running its own macOS trees (the macOS workflow's runners). What
check-install runs in a container elsewhere runs here as it is: the interpreter
through a symlink from another folder, in_container/interpreter_checks.py, and
CPython's tests."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from pyfreight.errors import PyfreightError
from pyfreight.logs import say
from pyfreight.paths import IN_CONTAINER_DIR, Workspace
from pyfreight.platforms import installed_python_name
from pyfreight.runners.base import BenchSupport, BytecodeCompiler, Invocation, Runner, run_on_this_machine
from pyfreight.runners.cpython_tests import test_suite_command
from pyfreight.targets import Target

CHECK_SCRIPT = IN_CONTAINER_DIR / "interpreter_checks.py"
NO_CONTAINER = "(this machine)"  # the runtime "image" a record names


def runs_on_this_machine(target: Target) -> bool:
    """Whether this machine is a Mac that runs the target's programs natively."""
    return target.os == "macos" and sys.platform == "darwin" and platform.machine() == target.uname_machine


class HostRunner(Runner):
    """The target's programs run directly on this machine."""

    kind = "host"
    network = True
    bench = BenchSupport(debian=False, startup_probe=False, against=False, says="no bench image on a Mac")

    def runtime_tag(self, spec: dict) -> str:
        return NO_CONTAINER

    def runtime_image(self, ws: Workspace) -> str:
        raise PyfreightError(f"{self.target.triple}: its programs run on this machine, in no image")

    def describe(self, tree: Path, ws: Workspace, script: Path) -> dict | None:
        python = tree / "bin" / installed_python_name(tree)
        done = subprocess.run([str(python), str(script)], capture_output=True, text=True, check=True)
        facts: dict = json.loads(done.stdout)
        return facts

    def check(self, tree: Path, ws: Workspace, tests: str) -> bool:
        python = tree / "bin" / installed_python_name(tree)
        with tempfile.TemporaryDirectory(prefix="pyfreight-check ") as tmp:
            link = Path(tmp) / "pf-python"
            link.symlink_to(python)
            probe = (
                f"import os, sys; assert os.path.realpath(sys.prefix) == {str(tree.resolve())!r}, sys.prefix"
            )
            through_link = subprocess.run([str(link), "-c", probe], cwd=tmp).returncode == 0
            print(f"{'PASS' if through_link else 'FAIL'}  runs through a symlink")
            passed = through_link
            passed = subprocess.run([str(python), str(CHECK_SCRIPT)], cwd=tmp).returncode == 0 and passed
            if tests != "none":
                tests_dir = tree / "lib" / python.name / "test"
                command = test_suite_command(
                    str(python),
                    tests,
                    self,
                    lambda name: bool(list(tests_dir.glob(f"{name}.py")) + list(tests_dir.glob(f"{name}/"))),
                )
                say(f"running CPython tests ({tests})")
                passed = subprocess.run(command, cwd=tmp).returncode == 0 and passed
        return passed

    def run_tests_entry(
        self, root: Path, python_exe: str, run_tests: str, arguments: Sequence[str], ws: Workspace
    ) -> bool | None:
        command = [str(root / python_exe), str(root / run_tests), *arguments]
        return subprocess.run(command, cwd=ws.scratch).returncode == 0

    def run_archive_python(
        self, python_exe: Path, ws: Workspace, work: Path, arguments: Sequence[str | Path], log: TextIO
    ) -> tuple[int, str]:
        return run_on_this_machine(python_exe, arguments, log)

    def bytecode_compiler(
        self, ws: Workspace, tree: Path, inside: str, build_python: Path | None
    ) -> BytecodeCompiler:
        raise PyfreightError(f"{self.target.triple}: trees are built on Linux, not relocated here")

    def program_name(self, mounted_at: str, relative: str) -> str:
        return f"{mounted_at}/{relative}"

    def invocation(self, command: list[str], env: Mapping[str, str]) -> Invocation:
        return Invocation(command, dict(env))

    def tests_runner_name(self) -> str:
        return "native"  # cpython/test-suite.yaml: it runs as natively as in a container
