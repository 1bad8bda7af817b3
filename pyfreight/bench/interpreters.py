"""The interpreters `pyfreight bench` measures, each with the mount that puts it in the
bench container: builds of ours (any option strings), Debian's own build of the same
minor version, and install trees a user hands in with --against."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from pyfreight.container.run import Mount, RunSpec, run
from pyfreight.cpython.build import build_cpython
from pyfreight.cpython.spec import BuildSpec
from pyfreight.errors import PyfreightError
from pyfreight.paths import IN_CONTAINER_DIR, Workspace
from pyfreight.platforms import installed_python_name, platform_of
from pyfreight.runners import Runner, runner_for
from pyfreight.targets import build_machine_target

PROBE_MOUNT = "/probe"


@dataclass(frozen=True)
class Interpreter:
    label: str  # column heading: "pgo+lto", "noopt", "debian 3.14.8-1", a --against label
    python: str  # the command inside the container
    mount: Mount | None  # the install tree of a build of ours or of --against
    runner: Runner  # how it runs in the bench's image (Debian's and --against's: natively)


def ours(ws: Workspace, specs: list[BuildSpec], jobs: int) -> list[Interpreter]:
    """Our builds (built first when missing)."""
    found = []
    for index, spec in enumerate(specs):
        build = build_cpython(spec, ws, jobs=jobs)
        mount = f"/opt/ours{index}"
        runner = runner_for(spec.target)
        python = runner.program_name(mount, platform_of(spec.target).layout.interpreter(build.tree))
        found.append(Interpreter(str(spec.options), python, Mount(build.tree, mount), runner))
    return found


def this_machines_runner() -> Runner:
    """How a Linux tree of this machine's own architecture runs in the bench's image:
    Debian's python, and the trees handed in with --against."""
    return runner_for(build_machine_target())


def against(spec: str, index: int) -> Interpreter:
    """An install tree given as `[LABEL=]PATH` (an extracted python-build-standalone
    python/install, a conda environment, another build of ours): its bin/python3.X runs
    in the bench container, mounted read-only."""
    label, sep, path_text = spec.partition("=")
    if not sep:
        label, path_text = "", spec
    tree = Path(path_text).expanduser().resolve()
    if not tree.is_dir():
        raise PyfreightError(
            f"--against {spec}: {tree} is not a folder; give an install tree (with bin/python3)"
        )
    if not (tree / "bin").is_dir():
        raise PyfreightError(
            f"--against {spec}: {tree} has no bin/ folder; give the tree's top (with bin/python3)"
        )
    try:
        python = installed_python_name(tree)
    except PyfreightError:
        raise PyfreightError(f"--against {spec}: no bin/python3.X in {tree}; give an install tree") from None
    label = label or (tree.parent.name if tree.name == "install" else tree.name)
    if not label or any(c.isspace() for c in label):
        raise PyfreightError(f"--against {spec}: name the column without spaces, as LABEL=PATH")
    mount = f"/opt/against{index}"
    return Interpreter(label, f"{mount}/bin/{python}", Mount(tree, mount), this_machines_runner())


def probe(image: str, interpreters: list[Interpreter], runs: int, log: Path) -> dict:
    """Facts (flags, PIE, size) and start-up resources (peak RSS, page faults) of every
    interpreter, from in_container/bench_probe.py run by the first of them."""
    mounts = [Mount(IN_CONTAINER_DIR, PROBE_MOUNT)] + [i.mount for i in interpreters if i.mount]
    command = [interpreters[0].python, f"{PROBE_MOUNT}/bench_probe.py", str(runs)]
    command += [f"{i.label}={i.python}" for i in interpreters]
    spec = RunSpec(
        image=image,
        command=command,
        what="describing the interpreters and measuring start-up memory",
        mounts=mounts,
        env={"HOME": "/tmp"},
        user=f"{os.getuid()}:{os.getgid()}",
        name_hint="bench",
    )
    result = run(spec)
    with log.open("a") as fh:
        fh.write(result.stderr)
    report: dict = json.loads(result.stdout)
    return report
