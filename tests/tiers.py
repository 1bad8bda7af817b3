"""The test tiers. `make test` (CI's command) runs every test that carries no `part`
marker: lint's companions, the tests that need no container, and one real x86_64 CPython
noopt build of the default version proved end to end. `make test-all` runs every test;
its parts (`@pytest.mark.part(NAME)`: another pinned CPython version, another target,
builds from an empty folder) are also run one at a time (`make test-part PART=NAME`),
each as its own GitHub job (.github/workflows/ci.yml).

The parts come from the data, as the builds do: a CPython version of
cpython/versions.yaml that is not the default, a target of targets/*.yaml that is not
the default, and four of their own: "from-scratch", "clients", "benchmarks" and
"static-code". `python -m
tests.tiers` prints them as JSON for the workflow.

A tier never skips what it claims: when the selected tests need a Docker engine or an
emulator this machine lacks, the run stops before the first test and says which."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from pyfreight.cpython.versions import load_versions
from pyfreight.targets import RunsEmulated, all_targets

# Builds everything again in an empty build folder (reproduce, dependencies from scratch).
FROM_SCRATCH = "from-scratch"
# Third-party clients built from their sources to run our archives (pyapp, with cargo):
# a compile of minutes, a proof of test-all rather than of every push.
CLIENTS = "clients"
# pyfreight bench and bench-import run for real (the bench container, Debian's python).
BENCHMARKS = "benchmarks"
# The in-memory importer's --static-code form on the default version: its compile of every
# stdlib module's code as C data is minutes of a 2-core machine, and the marshalled form,
# embed's default, is make test's. The other versions' parts build static code too.
STATIC_CODE = "static-code"
BINFMT = Path("/proc/sys/fs/binfmt_misc")


def version_part(minor: str) -> str:
    return f"cpython-{minor}"


def parts() -> list[str]:
    """Every part of test-all, in the order the workflow lists its jobs."""
    default_version, versions = load_versions()
    found = [version_part(v) for v in versions if v != default_version]
    found += sorted(t.triple for t in all_targets().values() if not t.is_default)
    return [*found, FROM_SCRATCH, CLIENTS, BENCHMARKS, STATIC_CODE]


def missing_for(container: bool, part_names: set[str]) -> list[str]:
    """What this machine lacks to run tests that need containers (`container`) and the
    given parts, each as one line saying how to get it."""
    missing = []
    if container:
        try:
            engine = subprocess.run(["docker", "info"], capture_output=True, timeout=60).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            engine = False
        if not engine:
            missing.append("a running Docker engine (make setup installs and starts one)")
    for target in all_targets().values():
        if (
            target.triple in part_names
            and isinstance(target.run, RunsEmulated)
            and not _registered(target.run.emulator)
        ):
            missing.append(
                f"the {target.run.emulator} emulator registered with binfmt_misc, for {target.triple} "
                "(make setup registers it, as root)"
            )
    return missing


def _registered(emulator: str) -> bool:
    try:
        return (BINFMT / emulator).read_text().startswith("enabled")
    except OSError:
        return False


if __name__ == "__main__":
    print(json.dumps(parts()))
