"""The one way a container runs: a `RunSpec` says what (image, command, mounts,
environment, user, where the output goes) and `run` runs it.

Every run has no network, a fixed host name, `--rm`, an init process (so the shell
inside is not PID 1, which would ignore SIGTERM), a name of its own and a label naming
the process that started it. Whatever stops `run` (a failure, Ctrl-C or SIGTERM, an
exception) removes the container before it returns; a signal stops every container
this process started, from whichever thread; the containers of a process that was
killed outright are removed by its watchdog (container/watchdog) once it has ended, and
by the next run's sweep should the watchdog have been killed too."""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pyfreight import interrupts
from pyfreight.container import docker, watchdog
from pyfreight.container.watchdog import OWNER_LABEL
from pyfreight.errors import PyfreightError
from pyfreight.leftovers import alive
from pyfreight.logs import say, tail

HOSTNAME = "pyfreight"  # fixed, so no host name can reach an output
# Where the output of a run goes: appended to a log file, captured and returned, or
# shown on the terminal as it comes (check results a person reads).
Output = Path | Literal["capture", "terminal"]


@dataclass(frozen=True)
class Mount:
    host: Path
    inside: str
    read_only: bool = True

    def __post_init__(self) -> None:
        # docker's -v splits on ':' (and a newline would end the argument in logs):
        # a folder named so would mount something else than asked.
        if any(c in str(self.host) for c in ":\n"):
            raise PyfreightError(
                f"{self.host}: docker cannot mount a path with ':' or a newline; rename or move it"
            )

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
    # With a log: called with each line the run writes; what it returns is shown as the
    # run's progress (a phase change at once, the same phase at most every 30 s).
    progress: Callable[[str], str | None] | None = None

    def docker_args(self, name: str) -> list[str]:
        args = ["docker", "run", "--rm", "--init", "--name", name, "--label", f"{OWNER_LABEL}={os.getpid()}"]
        args += ["--network", "none", "--hostname", HOSTNAME]
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


_live: set[str] = set()  # containers this process has started and not yet seen end
_live_lock = threading.RLock()  # re-entrant: the signal handler may run inside `run`
_swept = threading.Event()


def stop_all() -> None:
    """Removes every container this process started (called on SIGINT/SIGTERM)."""
    with _live_lock:
        names = sorted(_live)
    for name in names:
        docker.remove_container(name)


interrupts.on_interrupt(stop_all)


def sweep_orphans() -> list[str]:
    """Removes containers whose starting process is gone (it was killed outright)."""
    proc = subprocess.run(
        ["docker", "ps", "-a", "--filter", f"label={OWNER_LABEL}", "--format",
         f'{{{{.Names}}}} {{{{.Label "{OWNER_LABEL}"}}}}'],
        capture_output=True, text=True, env=docker.DOCKER_ENV,
    )  # fmt: skip
    removed = []
    for line in proc.stdout.splitlines():
        name, _, pid = line.partition(" ")
        if pid.isdigit() and not alive(int(pid)):
            docker.remove_container(name)
            removed.append(name)
    return removed


def run(spec: RunSpec, check: bool = True) -> RunResult:
    """Runs `spec`; with `check`, a non-zero exit raises a PyfreightError naming the run
    and showing the log's tail (or the captured error output)."""
    if not _swept.is_set():
        _swept.set()
        sweep_orphans()
        watchdog.start(os.getpid())  # ends our containers should we be killed outright
    name = f"pyfreight-{spec.name_hint}-{secrets.token_hex(4)}"
    args = spec.docker_args(name)
    with _live_lock:
        interrupts.check()  # nothing new starts once a signal came
        _live.add(name)
    try:
        if isinstance(spec.output, Path):
            spec.output.parent.mkdir(parents=True, exist_ok=True)
            with spec.output.open("ab") as log, _watching(spec.output, spec.progress):
                log.write(f"$ {' '.join(args)}\n".encode())
                log.flush()
                proc = subprocess.run(args, stdout=log, stderr=subprocess.STDOUT, env=docker.DOCKER_ENV)
            result = RunResult(proc.returncode, "")
        elif spec.output == "capture":
            captured = subprocess.run(
                args, capture_output=True, text=True, errors="replace", env=docker.DOCKER_ENV
            )
            result = RunResult(captured.returncode, captured.stdout, captured.stderr)
        else:
            proc = subprocess.run(args, env=docker.DOCKER_ENV)
            result = RunResult(proc.returncode, "")
        interrupts.check()  # a container stopped by a signal did not fail: it was stopped
    except BaseException:
        docker.remove_container(name)
        raise
    finally:
        with _live_lock:
            _live.discard(name)
    if check and not result.ok:
        raise PyfreightError(_failure(spec, result))
    return result


@contextlib.contextmanager
def _watching(log: Path, progress: Callable[[str], str | None] | None) -> Iterator[None]:
    """Follows `log` in a thread while the run writes it, showing what `progress` says."""
    if progress is None:
        yield
        return
    done = threading.Event()
    started = time.monotonic()
    offset = log.stat().st_size if log.exists() else 0  # what the run writes comes after this

    def follow() -> None:
        shown, shown_at, kind = "", 0.0, ""
        with log.open("r", errors="replace") as fh:
            fh.seek(offset)
            while True:
                line = fh.readline()
                if not line:
                    if done.wait(1.0):
                        return
                    continue
                label = progress(line)
                if label is None or label == shown:
                    continue
                now = time.monotonic()
                new_kind = label.split(",")[0]
                if new_kind != kind or now - shown_at >= 30:
                    minutes, seconds = divmod(int(now - started), 60)
                    say(f"  {minutes:2d}:{seconds:02d}  {label}")
                    shown, shown_at, kind = label, now, new_kind

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(timeout=5)


def _failure(spec: RunSpec, result: RunResult) -> str:
    message = f"{spec.what} failed (exit {result.returncode})"
    if isinstance(spec.output, Path):
        return f"{message}; last lines of {spec.output}:\n{tail(spec.output, 50)}"
    if result.stderr.strip():
        return f"{message}:\n{result.stderr.strip()[-2000:]}"
    return message
