"""The one interface of the runners: every step that runs a target's program (the
tree's self-description, check-install, test-dist's run_tests entry, embed's archive
python, the relocated bytecode's compilation, bench) asks the target's runner, and no
step asks how the runner does it. A runner module per way this machine runs programs:
container.py (natively, or through an emulator, in the target's runtime image), wine.py,
host.py (a Mac running its own trees), unavailable.py (static checks only)."""

from __future__ import annotations

import subprocess
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal, TextIO

from pyfreight.container.run import Mount
from pyfreight.paths import Workspace
from pyfreight.targets import Target

RunnerKind = Literal["native", "emulator", "wine", "host", "unavailable"]


@dataclass(frozen=True)
class BytecodeCompiler:
    """Where a tree's relocated sources are compiled: the image, the interpreter's path
    there and what is mounted beside the tree."""

    image: str
    python: str
    mounts: tuple[Mount, ...] = ()


@dataclass(frozen=True)
class Invocation:
    """A command made ready for the runner's image: its words, environment and user."""

    command: list[str]
    env: dict[str, str]
    user: str | None = None


@dataclass(frozen=True)
class BenchSupport:
    """What `pyfreight bench` can measure beside a target's builds where its runner runs
    them: Debian's python as the yardstick, start-up memory read from Linux's process
    accounting, and install trees handed in with --against (Linux ones)."""

    debian: bool = True
    startup_probe: bool = True
    against: bool = True
    says: str = ""  # what bench says of the runner when it measures less


class Runner(ABC):
    """How this machine runs the programs of one target."""

    kind: ClassVar[RunnerKind]
    # Whether a program it runs can reach a package index: pip resolves requirements
    # there itself, or this machine's pip downloads the wheels first.
    network: ClassVar[bool] = False
    bench: ClassVar[BenchSupport] = BenchSupport()

    def __init__(self, target: Target) -> None:
        self.target = target

    @abstractmethod
    def runtime_tag(self, spec: dict) -> str:
        """The tag of the image its programs run in (a build's record keys name it)."""

    @abstractmethod
    def runtime_image(self, ws: Workspace) -> str:
        """That image, built when missing."""

    @abstractmethod
    def describe(self, tree: Path, ws: Workspace, script: Path) -> dict | None:
        """What in_container/describe_python.py, run by the tree's interpreter, prints
        (a JSON object); None where the interpreter cannot run here."""

    @abstractmethod
    def check(self, tree: Path, ws: Workspace, tests: str) -> bool:
        """check-install's runs of a tree whose binaries passed their rules: the
        interpreter's checks and CPython's tests (`tests`: none, subset or full)."""

    @abstractmethod
    def run_tests_entry(
        self, root: Path, python_exe: str, run_tests: str, arguments: Sequence[str], ws: Workspace
    ) -> bool | None:
        """PYTHON.json's run_tests script (relative to the unpacked `root`) by its
        python_exe, with `arguments`; None where it cannot run here."""

    @abstractmethod
    def run_archive_python(
        self, python_exe: Path, ws: Workspace, work: Path, arguments: Sequence[str | Path], log: TextIO
    ) -> tuple[int, str]:
        """Runs an unpacked archive's interpreter with `arguments` (Paths are files or
        folders; an output must be inside `work`); its exit status and its stdout, its
        stderr into `log`."""

    @abstractmethod
    def bytecode_compiler(
        self, ws: Workspace, tree: Path, inside: str, build_python: Path | None
    ) -> BytecodeCompiler:
        """The interpreter that compiles the tree's relocated sources, the tree being
        mounted at `inside`: its own, or the build python of the same version."""

    @abstractmethod
    def program_name(self, mounted_at: str, relative: str) -> str:
        """How a program it runs names the file `relative` below a folder mounted at
        `mounted_at`."""

    @abstractmethod
    def invocation(self, command: list[str], env: Mapping[str, str]) -> Invocation:
        """`command` (a program of the target first) and `env` as its image runs them."""

    def tests_runner_name(self) -> str:
        """The runner's name in cpython/test-suite.yaml, whose skips name it."""
        return self.kind


def run_on_this_machine(program: Path, arguments: Sequence[str | Path], log: TextIO) -> tuple[int, str]:
    """`program` with `arguments` run directly here (natively, or through the emulator
    binfmt_misc runs it with): its exit status and stdout, its stderr into `log`."""
    command = [str(program), *map(str, arguments)]
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=log, text=True, errors="replace")
    return done.returncode, done.stdout
