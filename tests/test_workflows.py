"""The GitHub workflows cannot run here, so what can be checked is: actionlint (with
shellcheck) passes them and fails a broken one, `pyfreight matrix` (the release's build
list) comes from the targets' data, and every command it hands the workflow is one make
accepts as a user would type it."""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml

from pyfreight.targets import target
from tests.conftest import PYFREIGHT, REPO

ACTIONLINT = PYFREIGHT.with_name("actionlint")  # built by scripts/setup.sh
WORKFLOWS = REPO / ".github" / "workflows"


def _matrix() -> list[dict]:
    result = subprocess.run([str(PYFREIGHT), "matrix", "--json"], capture_output=True, text=True, check=True)
    rows: list[dict] = json.loads(result.stdout)["include"]
    return rows


def test_actionlint_passes_the_workflows():
    result = subprocess.run([str(ACTIONLINT), "-no-color"], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_fails_a_broken_workflow(tmp_path):
    """The lint can fail: an undefined matrix key and a shell error are both reported."""
    broken = tmp_path / "broken.yml"
    broken.write_text(
        "on: push\njobs:\n  x:\n    runs-on: ubuntu-24.04\n    steps:\n"
        "      - run: echo ${{ matrix.nosuch }}\n      - run: cd $UNQUOTED && [ -f x\n"
    )
    result = subprocess.run([str(ACTIONLINT), "-no-color", str(broken)], capture_output=True, text=True)
    assert result.returncode == 1
    assert "matrix" in result.stdout and "shellcheck" in result.stdout


def test_the_release_workflow_builds_the_matrix_with_make():
    workflow = yaml.safe_load((WORKFLOWS / "release.yml").read_text())
    plan = "\n".join(step.get("run", "") for step in workflow["jobs"]["plan"]["steps"])
    assert "pyfreight matrix --json" in plan
    build = workflow["jobs"]["build"]
    assert build["strategy"]["matrix"] == "${{ fromJSON(needs.plan.outputs.matrix) }}"
    assert build["env"]["MAKE_ARGUMENTS"] == "${{ matrix.make }}"
    assert any('make "${arguments[@]}"' in step.get("run", "") for step in build["steps"])
    publish = "\n".join(step.get("run", "") for step in workflow["jobs"]["publish"]["steps"])
    assert "pyfreight release" in publish


def test_the_matrix_follows_the_targets_data():
    rows = _matrix()
    names = {row["name"] for row in rows}
    assert "3.14 x86_64-unknown-linux-gnu pgo+lto" in names
    assert "3.14 x86_64-unknown-linux-musl lto+static" in names
    # aarch64 and musl say they cannot have PGO (unavailable_options): never in a release
    assert not [
        row for row in rows if row["target"] != "x86_64-unknown-linux-gnu" and "pgo" in row["options"]
    ]
    assert len(names) == len(rows)


@pytest.mark.parametrize("row", _matrix(), ids=lambda row: row["name"])
def test_every_matrix_command_is_one_make_accepts_and_builds_that_option(row):
    result = subprocess.run(
        ["make", "-n", *row["make"].split()], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    build = [line for line in result.stdout.splitlines() if " build " in line]
    assert build, result.stdout
    words = build[-1].split()
    assert words[words.index("--options") + 1] == row["options"]
    assert words[words.index("--python") + 1] == row["cpython"]
    assert target(words[words.index("--target") + 1]).triple == row["target"]


def test_make_leaves_the_default_version_to_the_driver():
    """make names a CPython version only when the user did: cpython/versions.yaml's default
    is the one default, not a second one written in the Makefile."""
    plain = subprocess.run(["make", "-n", "linux-x86_64-noopt"], cwd=REPO, capture_output=True, text=True)
    build = [line for line in plain.stdout.splitlines() if " build " in line]
    assert build and "--python" not in build[-1], plain.stdout
    chosen = subprocess.run(
        ["make", "-n", "linux-x86_64-noopt", "CPYTHON=3.13"], cwd=REPO, capture_output=True, text=True
    )
    assert "--python 3.13 " in chosen.stdout, chosen.stdout
