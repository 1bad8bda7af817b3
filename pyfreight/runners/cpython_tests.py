"""cpython/test-suite.yaml: what `pyfreight check-install` runs of CPython's own test
suite (the default subset, and the cases skipped in every run, with the reasons), and
the command that runs it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyfreight.datafiles import load_yaml
from pyfreight.errors import PyfreightError
from pyfreight.paths import REPO_ROOT
from pyfreight.targets import default_target

if TYPE_CHECKING:
    from pyfreight.runners.base import Runner

TEST_SUITE_FILE = REPO_ROOT / "cpython" / "test-suite.yaml"


def load_test_suite(path: Path = TEST_SUITE_FILE) -> dict[str, Any]:
    """{"subset": [test module, ...], "ignore": {pattern: reason}}, checked against
    schema/test-suite.schema.json."""
    suite: dict[str, Any] = load_yaml(path, "test-suite.schema.json")
    return suite


# The ignore list of cpython/test-suite.yaml for the cases that fail only because of
# how a target's programs run here (targets/*.yaml `run`).
RUNNER_IGNORES = {
    "emulator": ("ignore_emulated",),
    "wine": ("ignore_wine",),
    "emulated-wine": ("ignore_wine", "ignore_emulated_wine"),
}


def test_suite_command(
    python: str,
    which: str,
    runner: Runner | None = None,
    has_test: Callable[[str], bool] | None = None,
    static: bool = False,
    launcher: Sequence[str] = ("-m", "test"),
    workers: int = 2,
    rerun: bool = False,
    timeout: int = 900,
) -> list[str]:
    """CPython's regression tests run by `python` (as the container names it) through
    `launcher` (`-m test`, or a script running regrtest), with `workers` processes (0:
    in this one), for the subset (or the full suite), by `runner`'s target's interpreter
    as `runner` runs it (None: this machine's own Debian python, natively). With
    `rerun`, a test file that fails runs again, verbosely, and passes if it passes then
    (its first failure is still reported). A test file running longer than `timeout`
    seconds fails, with the stacks of its threads. Skipped: the cases
    cpython/test-suite.yaml lists with reasons, for every run; for an interpreter run
    through an emulator or Wine, the cases that fail only there; for the target's C
    library, the cases that library fails; for its operating system, what our build for
    it lacks (cases, and whole files that cannot be imported without it); for a fully
    static interpreter, the cases a static program fails.
    Subset tests `has_test` says this CPython does not have (test_zstd before 3.14) are
    left out."""
    target = runner.target if runner is not None else default_target()
    runner_name = runner.tests_runner_name() if runner is not None else "native"
    libc, os_name = target.libc.name, target.os
    data = load_test_suite()
    excluded = sorted(data.get("exclude_os", {}).get(os_name, {}))
    present = [t for t in sorted(data["subset"]) if (has_test is None or has_test(t)) and t not in excluded]
    args = [python, *launcher, *(["-j", str(workers)] if workers else []), "--timeout", str(timeout)]
    args += ["--rerun"] if rerun else []
    ignored = dict(data["ignore"])
    for section in RUNNER_IGNORES.get(runner_name, ()):
        ignored |= data.get(section, {})
    ignored |= data.get("ignore_libc", {}).get(libc, {})
    ignored |= data.get("ignore_os", {}).get(os_name, {})
    ignored |= data.get("ignore_static", {}) if static else {}
    for pattern in sorted(ignored):
        args += ["-i", pattern]
    if which == "subset" and not present:
        raise PyfreightError("none of the subset's tests is in this CPython")
    if which == "subset":
        return args + present
    # -x: the test files named after it are the ones not run
    return args + (["-x", *excluded] if excluded else [])
