"""The one way a container runs: a `RunSpec` says what (image, command, mounts,
environment, user, where the output goes) and `run` runs it.

Every run has no network, a fixed host name, `--rm`, and a name of its own, so that
an interrupted run can be stopped by name: whatever stops `run` (a failure, Ctrl-C, an
exception in the caller's thread) removes the container before it returns."""

from __future__ import annotations

import secrets
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pyfreight.container import docker
from pyfreight.errors import PyfreightError
from pyfreight.logs import tail

HOSTNAME = "pyfreight"  # fixed, so no host name can reach an output
# Where the output of a run goes: appended to a log file, captured and returned, or
# shown on the terminal as it comes (check results a person reads).
Output = Path | Literal["capture", "terminal"]


@dataclass(frozen=True)
class Mount:
    host: Path
    inside: str
    read_only: bool = True

    def argument(self) -> str:
        return f"{self.host}:{self.inside}" + (":ro" if self.read_only else "")


@dataclass(frozen=True)
class RunSpec:
    image: str  # an image id (exactly the image a cache key names) or a tag
    command: Sequence[str]
    what: str  # for messages: "zlib 1.3.1 build.sh", "check-install"
    output: Output = "capture"
    mounts: Sequence[Mount] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    user: str | None = None  # "uid:gid"; None: the image's default
    workdir: str | None = None
    name_hint: str = "run"  # the container is named pyfreight-<hint>-<random>

    def docker_args(self, name: str) -> list[str]:
        args = ["docker", "run", "--rm", "--name", name, "--network", "none", "--hostname", HOSTNAME]
        if self.user:
            args += ["--user", self.user]
        if self.workdir:
            args += ["-w", self.workdir]
        for mount in self.mounts:
            args += ["-v", mount.argument()]
        for key, value in sorted(self.env.items()):
            args += ["-e", f"{key}={value}"]
        return [*args, self.image, *self.command]


@dataclass(frozen=True)
class RunResult:
    returncode: int
    stdout: str  # captured output ("capture" only)
    stderr: str = ""

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def run(spec: RunSpec, check: bool = True) -> RunResult:
    """Runs `spec`; with `check`, a non-zero exit raises a PyfreightError naming the run
    and showing the log's tail (or the captured error output)."""
    name = f"pyfreight-{spec.name_hint}-{secrets.token_hex(4)}"
    args = spec.docker_args(name)
    try:
        if isinstance(spec.output, Path):
            spec.output.parent.mkdir(parents=True, exist_ok=True)
            with spec.output.open("ab") as log:
                log.write(f"$ {' '.join(args)}\n".encode())
                log.flush()
                proc = subprocess.run(args, stdout=log, stderr=subprocess.STDOUT, env=docker.DOCKER_ENV)
            result = RunResult(proc.returncode, "")
        elif spec.output == "capture":
            captured = subprocess.run(args, capture_output=True, text=True, env=docker.DOCKER_ENV)
            result = RunResult(captured.returncode, captured.stdout, captured.stderr)
        else:
            proc = subprocess.run(args, env=docker.DOCKER_ENV)
            result = RunResult(proc.returncode, "")
    except BaseException:
        docker.remove_container(name)
        raise
    if check and not result.ok:
        docker.remove_container(name)
        raise PyfreightError(_failure(spec, result))
    return result


def _failure(spec: RunSpec, result: RunResult) -> str:
    message = f"{spec.what} failed (exit {result.returncode})"
    if isinstance(spec.output, Path):
        return f"{message}; last lines of {spec.output}:\n{tail(spec.output, 50)}"
    if result.stderr.strip():
        return f"{message}:\n{result.stderr.strip()[-2000:]}"
    return message
