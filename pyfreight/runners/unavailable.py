"""A target whose programs this machine cannot run (macOS on Linux): its trees are
judged by their binaries' rules alone, a foreign tree describes itself through the
build python, and whatever would run one of its programs says why it cannot, in the
words of the target's data (targets/*.yaml `run.unavailable`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NoReturn, TextIO

from pyfreight.container.images import ensure_unix_runtime, unix_runtime_tag
from pyfreight.container.run import Mount
from pyfreight.errors import PyfreightError
from pyfreight.logs import say
from pyfreight.paths import Workspace
from pyfreight.platforms import installed_python_name
from pyfreight.runners.base import BenchSupport, BytecodeCompiler, Invocation, Runner
from pyfreight.targets import RunsNowhereHere, build_machine_target

# Where a cross build's build python is mounted to compile (or describe) a tree whose
# programs cannot run here (macOS): bytecode depends on the CPython version only, and
# `make install` compiled the rest of the tree with that same build python.
BUILD_PYTHON_MOUNT = "/build-python"


class Unavailable(Runner):
    """The target's programs do not run here."""

    kind = "unavailable"
    bench = BenchSupport(debian=False, startup_probe=False, against=False)

    def _refuse(self, what: str) -> NoReturn:
        assert isinstance(self.target.run, RunsNowhereHere), f"{self.target.triple} runs here"
        reason = " ".join(self.target.run.reason.split())
        raise PyfreightError(f"{what}: {self.target.triple}: {reason}")

    def runtime_tag(self, spec: dict) -> str:
        # The image its bytecode is compiled in (the build machine's runtime image).
        return unix_runtime_tag(spec, build_machine_target())

    def runtime_image(self, ws: Workspace) -> str:
        self._refuse("running its programs")

    def describe(self, tree: Path, ws: Workspace, script: Path) -> dict | None:
        return None  # the build python reads the tree (archives/write.py)

    def check(self, tree: Path, ws: Workspace, tests: str) -> bool:
        say(
            f"check-install: {self.target.triple}'s programs cannot run on this machine; its binaries' "
            "rules are all it checks here (where they run, check-install runs them too)"
        )
        return True

    def run_tests_entry(
        self, root: Path, python_exe: str, run_tests: str, arguments: Sequence[str], ws: Workspace
    ) -> bool | None:
        return None

    def run_archive_python(
        self, python_exe: Path, ws: Workspace, work: Path, arguments: Sequence[str | Path], log: TextIO
    ) -> tuple[int, str]:
        self._refuse(f"running {python_exe.name} of the archive")

    def bytecode_compiler(
        self, ws: Workspace, tree: Path, inside: str, build_python: Path | None
    ) -> BytecodeCompiler:
        """The build python of the same version (a cross build's), in the build
        machine's runtime image."""
        if build_python is None:
            raise AssertionError(f"{self.target.triple}: compiling its bytecode needs the build python")
        python = f"{BUILD_PYTHON_MOUNT}/bin/{installed_python_name(build_python)}"
        image = ensure_unix_runtime(ws, build_machine_target())
        return BytecodeCompiler(image, python, (Mount(build_python, BUILD_PYTHON_MOUNT, read_only=True),))

    def program_name(self, mounted_at: str, relative: str) -> str:
        self._refuse("naming a file for its programs")

    def invocation(self, command: list[str], env: Mapping[str, str]) -> Invocation:
        self._refuse("running its programs")
