"""The GitHub workflows cannot run here, so what can be checked is: actionlint (with
shellcheck) passes them and fails a broken one, `pyfreight matrix` (the release's build
list) comes from the targets' data, and every command it hands the workflow is one make
accepts as a user would type it."""

from __future__ import annotations

import json
import re
import shlex
import subprocess

import pytest
import yaml

from pyfreight.cli import build_parser
from pyfreight.cpython.versions import cpython_source
from pyfreight.targets import all_targets
from tests.conftest import PYFREIGHT, REPO
from tests.make_dry_run import build_of_make

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
    assert "3.14 aarch64-unknown-linux-gnu pgo+lto" in names  # its profile runtime is Debian's arm64 one
    # targets that cannot have PGO (builds.unavailable_options: musl, Windows, macOS): never in a release
    refusing = {t.triple for t in all_targets().values() if "pgo" in t.builds.unavailable_options}
    assert "x86_64-unknown-linux-musl" in refusing
    assert not [row for row in rows if row["target"] in refusing and "pgo" in row["options"]]
    assert len(names) == len(rows)


@pytest.mark.parametrize("row", _matrix(), ids=lambda row: row["name"])
def test_every_matrix_command_is_one_make_accepts_and_builds_that_option(row):
    built = build_of_make(*row["make"].split())
    assert str(built.options) == row["options"]
    assert built.minor == row["cpython"]
    assert built.target.triple == row["target"]


def test_make_leaves_the_default_version_to_the_driver():
    """make names a CPython version only when the user did: cpython/versions.yaml's default
    is the one default, not a second one written in the Makefile."""
    plain = subprocess.run(["make", "-n", "linux-x86_64-noopt"], cwd=REPO, capture_output=True, text=True)
    assert " CPYTHON= " in plain.stdout and "--python" not in plain.stdout, plain.stdout
    assert build_of_make("linux-x86_64-noopt").version == cpython_source(None).version
    assert build_of_make("linux-x86_64-noopt", "CPYTHON=3.13").minor == "3.13"
    # PYTHON= on make's command line is read as CPYTHON; one exported by the shell is not
    assert build_of_make("linux-x86_64-noopt", "PYTHON=3.13").minor == "3.13"


def _pyfreight_commands() -> list[tuple[str, list[str]]]:
    """Every pyfreight command line in the run steps of every workflow (continuation
    lines joined, shell variables as a plain word), as (workflow, arguments)."""
    found = []
    for path in sorted(WORKFLOWS.glob("*.yml")):
        for job in yaml.safe_load(path.read_text())["jobs"].values():
            for step in job["steps"]:
                script = step.get("run", "").replace("\\\n", " ")
                for line in script.splitlines():
                    # the arguments, up to the end of a $( ... ) or of the line
                    command = re.search(r"bin/pyfreight ((?:[^)\"\n]|\"[^\"]*\")*)", line)
                    if command is not None:
                        words = shlex.split(re.sub(r"\$\{?\w+\}?", "VALUE", command[1]))
                        found.append((path.name, words))
    return found


def test_the_workflows_run_pyfreight_commands():
    """The search below finds what it must: the macOS jobs' validate and test-dist."""
    commands = {(name, words[0]) for name, words in _pyfreight_commands()}
    assert {("macos.yml", "validate"), ("macos.yml", "test-dist"), ("release.yml", "release")} <= commands


@pytest.mark.parametrize(("workflow", "words"), _pyfreight_commands(), ids=lambda x: str(x))
def test_every_pyfreight_command_of_a_workflow_is_one_the_cli_accepts(workflow, words):
    parser = build_parser()
    try:
        parser.parse_args(words)
    except SystemExit as exc:  # argparse's refusal: the workflow would fail there
        raise AssertionError(f"{workflow}: pyfreight {' '.join(words)} is refused") from exc


def test_the_cli_refuses_what_a_workflow_must_not_say():
    """The check above can fail: a misspelt option is refused."""
    with pytest.raises(SystemExit):
        build_parser().parse_args(["test-dist", "VALUE", "--no-such-option"])


def test_the_macos_workflow_builds_each_target_on_linux_and_runs_it_on_a_mac_of_its_cpu():
    workflow = yaml.safe_load((WORKFLOWS / "macos.yml").read_text())
    built = workflow["jobs"]["build"]["strategy"]["matrix"]["target"]
    ran = workflow["jobs"]["run"]["strategy"]["matrix"]["include"]
    assert workflow["jobs"]["build"]["runs-on"].startswith("ubuntu")
    macos = {t.make_name: t for t in all_targets().values() if t.binary_format == "macho"}
    assert sorted(built) == sorted(macos) == sorted(row["target"] for row in ran)
    # an Apple silicon runner for arm64, an Intel one for x86_64
    runners = {row["target"]: row["runner"] for row in ran}
    assert {macos[name].uname_machine: runner.endswith("-intel") for name, runner in runners.items()} == {
        "arm64": False,
        "x86_64": True,
    }
    for name in built:
        built = build_of_make(f"{name}-noopt")
        assert (built.target, str(built.options)) == (macos[name], "noopt")


def test_the_windows_workflow_builds_on_linux_and_runs_the_checks_on_real_windows():
    """Built by make on Linux (each make goal exists and is its target's release build),
    run on a Windows runner of the target's machine: the checks it copies beside the tree
    exist, and the facts it hands them name the target's platform tag, the one fact the
    checks take from the target file. x86_64 builds its default (pgo), Arm64 its lto
    (nothing here trains it); each Windows target the workflow builds, it also runs."""
    workflow = yaml.safe_load((WORKFLOWS / "windows.yml").read_text())
    build, run = workflow["jobs"]["build"], workflow["jobs"]["run"]
    assert build["runs-on"].startswith("ubuntu")
    steps = "\n".join(step.get("run", "") for step in build["steps"])
    assert 'make "$GOAL"' in steps and build["env"]["GOAL"] == "${{ matrix.target }}-${{ matrix.option }}"
    by_make = {t.make_name: t for t in all_targets().values() if t.binary_format == "pe"}
    built = {entry["target"]: entry["option"] for entry in build["strategy"]["matrix"]["include"]}
    assert by_make["windows-x86_64"].pe.machine == "AMD64" and built["windows-x86_64"] == "pgo"
    assert by_make["windows-aarch64"].pe.machine == "ARM64" and built["windows-aarch64"] == "lto"
    for name, option in built.items():
        made = build_of_make(f"{name}-{option}")
        assert made.target == by_make[name] and str(made.options) in made.target.builds.release, name
    runs = {entry["target"]: entry for entry in run["strategy"]["matrix"]["include"]}
    assert set(runs) == set(built)
    runners = {"AMD64": "windows-2025", "ARM64": "windows-11-arm"}
    for name, entry in runs.items():
        assert entry["runner"] == runners[by_make[name].pe.machine], name
        assert entry["platform"] == by_make[name].python_platform_tag, name
    assert run["runs-on"] == "${{ matrix.runner }}"
    script = "\n".join(step.get("run", "") for step in run["steps"])
    (copied,) = re.findall(r"cp pyfreight/in_container/\{([^}]+)\}\.py", script)
    for name in [*copied.split(","), "tls"]:
        assert (REPO / "pyfreight/in_container" / (name if name == "tls" else f"{name}.py")).exists(), name
    # every module the checks import, as check-install copies them
    from pyfreight.runners import wine

    needed = (wine.CHECK_SCRIPT, wine.SHARED_CHECKS_MODULE, wine.BYTECODE_MODULE)
    assert {m.stem for m in (*needed, wine.CHECK_WHEEL_MODULE)} <= set(copied.split(",")), copied
    assert '\\"platform\\": \\"$PLATFORM\\"' in script and run["env"]["PLATFORM"] == "${{ matrix.platform }}"
    for scripted in ("Scripts/pip.exe", "-m test", "numpy", 'uv.exe" venv'):
        assert scripted in script, scripted
