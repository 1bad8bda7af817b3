"""A target whose programs run in a container of its runtime image (an older Debian
than the builder's, of the target's architecture, or an image holding only its own
libc), with no network: natively, or through the qemu-user emulator binfmt_misc
registers (the emulated runner, whose image sets the emulator's CPU). On this machine
itself they run the same way (embed's archive python): directly, or through binfmt_misc."""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import ClassVar, TextIO

from pyfreight.container.images import ensure_unix_runtime, unix_runtime_tag
from pyfreight.container.run import Mount, RunSpec, run
from pyfreight.formats.elf import interpreter_identity
from pyfreight.paths import IN_CONTAINER_DIR, Workspace
from pyfreight.platforms import installed_python_name
from pyfreight.runners.base import BytecodeCompiler, Invocation, Runner, RunnerKind, run_on_this_machine
from pyfreight.runners.cpython_tests import test_suite_command

CHECK_SCRIPT = IN_CONTAINER_DIR / "interpreter_checks.py"
CHECK_MOUNT = "/opt/py freight/python"  # unusual on purpose: a space, and not /install
WRITABLE_COPY = "/tmp/py-copy"  # where --tests full copies the tree
# Where the tree is mounted while the interpreter describes itself: the prefix
# python-build-standalone's config vars name, so packers see familiar values (a Windows
# tree is C:\install under Wine).
PROBE_PREFIX = "/install"
RUN_TESTS_MOUNT = "/srv/unpacked dist/python"  # a space, and not where check-install puts trees


def _has_test(tree: Path, python: str) -> Callable[[str], bool]:
    tests_dir = tree / "lib" / python / "test"
    return lambda name: bool(list(tests_dir.glob(f"{name}.py")) + list(tests_dir.glob(f"{name}/")))


class NativeContainer(Runner):
    """The target's programs run natively in its runtime image."""

    kind: ClassVar[RunnerKind] = "native"
    network = True  # on this machine, embed's archive python reaches pip's index

    def runtime_tag(self, spec: dict) -> str:
        return unix_runtime_tag(spec, self.target)

    def runtime_image(self, ws: Workspace) -> str:
        return ensure_unix_runtime(ws, self.target)

    def describe(self, tree: Path, ws: Workspace, script: Path) -> dict | None:
        python = installed_python_name(tree)
        spec = RunSpec(
            image=self.runtime_image(ws),
            command=[f"{PROBE_PREFIX}/bin/{python}", "/describe.py"],
            what=f"describing {tree.name}",
            mounts=[Mount(tree, PROBE_PREFIX), Mount(script, "/describe.py")],
            name_hint="describe",
        )
        facts: dict = json.loads(run(spec).stdout)
        return facts

    def check(self, tree: Path, ws: Workspace, tests: str) -> bool:
        """Through a symlink from another folder, in_container/interpreter_checks.py, and
        CPython's tests, in one clean container holding nothing but the tree, mounted
        read-only at a path with a space in it."""
        python = installed_python_name(tree)
        static = interpreter_identity(tree / "bin" / python)[1] is None
        script = (
            f'set -eu; ln -s "{CHECK_MOUNT}/bin/{python}" /usr/local/bin/pf-python; '
            # through a symlink from another directory, from another working directory
            'cd /tmp && pf-python -c "import sys, os; assert os.path.realpath(sys.prefix) == '
            f"'{CHECK_MOUNT}', sys.prefix\" && echo 'PASS  runs through a symlink' && "
            f'"{CHECK_MOUNT}/bin/{python}" /check/interpreter_checks.py'
        )
        if tests == "full":
            # Some tests write beside the stdlib (compiled files, test data); the mounted
            # tree is read-only, so the whole suite runs on a writable copy of it.
            command = shlex.join(
                test_suite_command(
                    f"{WRITABLE_COPY}/bin/{python}",
                    tests,
                    self,
                    static=static,
                )
            )
            script += (
                f' && cp -a "{CHECK_MOUNT}" {WRITABLE_COPY}'
                ' && echo "running CPython tests (full, on a writable copy)"'
                f" && cd /tmp && {command}"
            )
        elif tests != "none":
            command = shlex.join(
                test_suite_command(
                    f"{CHECK_MOUNT}/bin/{python}",
                    tests,
                    self,
                    _has_test(tree, python),
                    static=static,
                )
            )
            script += f" && echo 'running CPython tests ({tests})' && cd /tmp && {command}"
        spec = RunSpec(
            image=self.runtime_image(ws),
            command=["sh", "-c", script],
            what="check-install",
            output="terminal",
            mounts=[Mount(tree, CHECK_MOUNT), Mount(CHECK_SCRIPT.parent, "/check")],
            name_hint="check-install",
        )
        return run(spec, check=False).ok

    def run_tests_entry(
        self, root: Path, python_exe: str, run_tests: str, arguments: Sequence[str], ws: Workspace
    ) -> bool | None:
        spec = RunSpec(
            image=self.runtime_image(ws),
            command=[f"{RUN_TESTS_MOUNT}/{python_exe}", f"{RUN_TESTS_MOUNT}/{run_tests}", *arguments],
            what="the run_tests entry",
            output="terminal",
            mounts=[Mount(root, RUN_TESTS_MOUNT)],
            name_hint="run-tests",
        )
        return run(spec, check=False).ok

    def run_archive_python(
        self, python_exe: Path, ws: Workspace, work: Path, arguments: Sequence[str | Path], log: TextIO
    ) -> tuple[int, str]:
        return run_on_this_machine(python_exe, arguments, log)

    def bytecode_compiler(
        self, ws: Workspace, tree: Path, inside: str, build_python: Path | None
    ) -> BytecodeCompiler:
        return BytecodeCompiler(self.runtime_image(ws), f"{inside}/bin/{installed_python_name(tree)}")

    def program_name(self, mounted_at: str, relative: str) -> str:
        return f"{mounted_at}/{relative}"

    def invocation(self, command: list[str], env: Mapping[str, str]) -> Invocation:
        # as the caller, so what it writes stays the caller's
        return Invocation(command, {**env, "HOME": "/tmp"}, f"{os.getuid()}:{os.getgid()}")


class EmulatedContainer(NativeContainer):
    """The target's programs run through qemu-user (binfmt_misc) in its runtime image of
    their architecture, with the emulator's CPU set in the image; CPython's tests skip
    what emulation cannot do (cpython/test-suite.yaml, runner `emulator`)."""

    kind = "emulator"
