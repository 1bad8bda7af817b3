"""The test tiers as people run them: make's targets select what tests/tiers.py says, the
CI workflow runs every part, no part is empty, and a tier that cannot run part of itself
stops and says what is missing instead of skipping."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
import yaml

from tests import tiers
from tests.conftest import REPO

PYTEST = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"]


def _collected(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PYTEST, "--collect-only", "-q", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def _ids(proc: subprocess.CompletedProcess[str]) -> set[str]:
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return {line for line in proc.stdout.splitlines() if "::" in line}


def test_the_parts_come_from_the_data():
    parts = tiers.parts()
    assert "cpython-3.13" in parts and "cpython-3.15" in parts and "cpython-3.14" not in parts
    assert "aarch64-unknown-linux-gnu" in parts and "x86_64-unknown-linux-gnu" not in parts
    assert parts[-4:] == [tiers.FROM_SCRATCH, tiers.CLIENTS, tiers.BENCHMARKS, tiers.STATIC_CODE]
    assert len(set(parts)) == len(parts)


def test_every_part_has_tests_and_the_ci_tier_none_of_them():
    # three collections at once: each is a pytest start of a few seconds
    with ThreadPoolExecutor(3) as pool:
        everything, ci, one_part = pool.map(
            lambda args: _collected(*args),
            [("--tier", "all", "--show-parts"), ("--tier", "ci"), ("--part", "cpython-3.13")],
        )
    proc = everything
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    by_part: dict[str, set[str]] = {}
    for line in proc.stdout.splitlines():
        part, _, nodeid = line.partition(" ")
        if "::" in nodeid and not line.startswith("tests/"):
            by_part.setdefault(part, set()).add(nodeid)
    assert set(by_part) == {"-", *tiers.parts()}, "a part selects no test"
    # the tier ci selects exactly the tests of no part, --part exactly that part's
    assert _ids(ci) == by_part["-"]
    assert _ids(one_part) == by_part["cpython-3.13"]
    # make test proves the default build end to end; other versions and targets are parts
    ci_builds = [t for t in by_part["-"] if "integration" in t]
    assert any("test_distribution_integration.py::" in t for t in ci_builds)
    assert not any("3.13" in t or "3.15" in t or "aarch64" in t or "musl" in t for t in ci_builds)


def test_make_runs_each_tier_with_its_selection():
    for goal, words in (("test", "--tier ci"), ("test-all", "--tier all"), ("test-part PART=x", "--part x")):
        dry = subprocess.run(
            ["make", "-n", *goal.split()], cwd=REPO, capture_output=True, text=True, check=True
        )
        parallel = r" -n auto --dist loadgroup --no-loadscope-reorder" if goal != "test-part PART=x" else ""
        assert re.search(rf"pytest -ra( --durations=\d+)?{parallel} {words}\b", dry.stdout), dry.stdout
    refused = subprocess.run(["make", "test-part"], cwd=REPO, capture_output=True, text=True)
    assert refused.returncode != 0 and "make test-part PART=NAME" in refused.stderr, refused.stderr


def test_the_engines_tests_are_scheduled_in_two_groups_queued_around_the_rest():
    """make's workers (pytest-xdist, --dist loadgroup) get the tests that use the Docker
    engine as two groups, each run by one worker in order: those that build or share the
    build folder ("engine"), and those that only read the noopt archives ("engine-readers",
    marked archive_reader); the others go by module. The queue holds the engine's group
    first and the readers' last. The scheduler's view is what counts: with pytest 9.2 the
    groups were set on the items and never reached it, and two workers built at once."""
    # unit tests, reader tests and engine tests side by side
    modules = ("tests/test_python_json_reader.py", "tests/test_cli_integration.py")
    engine = _ids(_collected("--tier", "ci", "-m", "container and not archive_reader", *modules))
    readers = _ids(_collected("--tier", "ci", "-m", "container and archive_reader", *modules))
    assert engine and readers, "the modules have no engine test or no reader test to schedule"
    plan = subprocess.run(
        [*PYTEST, "-n", "2", "--dist", "loadgroup", "--no-loadscope-reorder", "--setup-plan", "-v",
         "--tier", "ci", *modules],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    scheduled = dict(re.findall(r"^(tests/\S+::\S+)@(\S+) *$", plan.stdout, re.M))
    assert set(scheduled) >= engine | readers and len(scheduled) > len(engine | readers), plan.stdout[-3000:]
    for nodeid, group in scheduled.items():
        module = nodeid.split("::")[0].rsplit("/", 1)[1]
        assert group == ("engine" if nodeid in engine else "engine-readers" if nodeid in readers else module)
    # the order the scheduler queues the groups in: the collection's
    listed = _collected("--tier", "ci", *modules)
    order = [line for line in listed.stdout.splitlines() if "::" in line]
    ranks = [0 if nodeid in engine else 2 if nodeid in readers else 1 for nodeid in order]
    assert ranks == sorted(ranks) and set(ranks) == {0, 1, 2}, order


def test_an_unknown_part_is_refused_with_the_list():
    proc = _collected("--part", "nosuch", "tests/test_tiers.py")
    assert proc.returncode != 0
    assert f"--part nosuch: no such part; the parts are {', '.join(tiers.parts())}" in proc.stderr


@pytest.mark.parametrize("workers", [[], ["-n", "2", "--dist", "loadgroup"]], ids=["alone", "workers"])
def test_a_tier_without_docker_stops_and_says_so(tmp_path, workers):
    """No docker on PATH: the container tests are not skipped, the run stops before any,
    in one line, also when make runs the tests on workers (pytest-xdist)."""
    env = {**os.environ, "PATH": str(tmp_path)}
    proc = subprocess.run(
        # one module of the part: the run stops before it all the same
        [*PYTEST, *workers, "--part", tiers.FROM_SCRATCH, "tests/test_deps_integration.py"],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 4, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "the selected tests need what this machine lacks, so none was run: a running Docker engine" in (
        proc.stderr
    )
    assert " passed" not in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr and "INTERNALERROR" not in proc.stdout + proc.stderr


@pytest.mark.parametrize("workers", [[], ["-n", "2", "--dist", "loadgroup"]], ids=["alone", "workers"])
def test_tests_that_need_no_container_run_without_docker(tmp_path, workers):
    """`make test-unit` (-m "not container") asks nothing of the engine: the check looks
    at what is left after pytest's own selection. The module holds both kinds."""
    env = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock"}  # no engine answers
    proc = subprocess.run(
        [*PYTEST, *workers, "-m", "not container", "tests/test_python_json_reader.py"],
        cwd=REPO, capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert re.search(r"\d+ passed", proc.stdout) and "failed" not in proc.stdout, proc.stdout[-2000:]


def test_the_ci_workflow_runs_make_test_and_every_part():
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "ci.yml").read_text())
    jobs = workflow["jobs"]
    assert "bash .ci/run" in jobs["test"]["steps"][-1]["run"]
    assert "make test\n" in (REPO / ".ci" / "run").read_text()
    assert "python -m tests.tiers" in jobs["parts"]["steps"][-1]["run"]
    assert jobs["test-part"]["strategy"]["matrix"]["part"] == "${{ fromJSON(needs.parts.outputs.parts) }}"
    assert 'make test-part PART="$PART"' in jobs["test-part"]["steps"][-1]["run"]
    printed = subprocess.run(
        [sys.executable, "-m", "tests.tiers"], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert printed.stdout.strip() == str(tiers.parts()).replace("'", '"')
