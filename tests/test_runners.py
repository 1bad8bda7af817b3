"""How this machine runs a target's programs lives in pyfreight/runners/, one module per
way behind one interface, chosen once from the target's data: nothing else in the flow
asks whether a target runs under Wine, at all, or is a Mach-O one."""

from __future__ import annotations

import ast
import io
from pathlib import Path

import pytest

from pyfreight.errors import PyfreightError
from pyfreight.paths import default_workspace
from pyfreight.runners import runner_for
from pyfreight.runners.container import EmulatedContainer, NativeContainer
from pyfreight.runners.unavailable import Unavailable
from pyfreight.runners.wine import WineRunner
from pyfreight.targets import all_targets

PACKAGE = Path(__file__).resolve().parent.parent / "pyfreight"
# What a step would branch on to run a program its own way.
ASKED = {"under_wine", "runs_here", "is_macho", "runs_on_this_machine"}
ALLOWED = ("runners/", "platforms/", "targets.py", "in_container/")


def _asked(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        name = (
            node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None
        )
        if name in ASKED:
            found.append((node.lineno, name))
        if isinstance(node, ast.ImportFrom):
            found += [(node.lineno, alias.name) for alias in node.names if alias.name in ASKED]
    return found


def test_the_checker_finds_a_branch_on_how_a_target_runs():
    code = "if spec.target.under_wine: pass\nfrom x import is_macho\nif not t.runs_here: pass\nt.native"
    assert sorted(name for _, name in _asked(ast.parse(code))) == ["is_macho", "runs_here", "under_wine"]


def test_no_module_outside_the_runners_branches_on_how_a_target_runs():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith(ALLOWED):
            continue
        found += [f"{rel}:{line}: {name}" for line, name in _asked(ast.parse(path.read_text()))]
    assert not found, "ask the target's runner (pyfreight.runners.runner_for) instead:\n" + "\n".join(found)


def _one(runner_data: str):
    return next(t for t in all_targets().values() if t.run.kind == runner_data)


@pytest.mark.parametrize(
    ("runner_data", "runner_class"),
    [
        ("native", NativeContainer),
        ("emulator", EmulatedContainer),
        ("wine", WineRunner),
        ("unavailable", Unavailable),  # this machine is no Mac
    ],
)
def test_each_target_gets_the_runner_its_data_names(runner_data, runner_class):
    targets = [t for t in all_targets().values() if t.run.kind == runner_data]
    assert targets, runner_data
    for target in targets:
        runner = runner_for(target)
        assert type(runner) is runner_class and runner.target is target


def test_a_target_whose_programs_cannot_run_here_says_why_in_one_line(tmp_path):
    macos = _one("unavailable")
    runner = runner_for(macos)
    with pytest.raises(PyfreightError) as refused:
        runner.run_archive_python(
            tmp_path / "python3.14", default_workspace(), tmp_path, ["-c", "0"], io.StringIO()
        )
    message = str(refused.value)
    assert "\n" not in message and macos.triple in message
    assert " ".join(str(macos.run.reason).split()) in message
    assert runner.describe(tmp_path, default_workspace(), tmp_path / "describe.py") is None
    assert (
        runner.run_tests_entry(tmp_path, "bin/python3", "build/run_tests.py", [], default_workspace()) is None
    )


def test_wine_runs_a_command_with_windows_names_as_the_prefix_owner_with_its_vc_runtime_off():
    runner = runner_for(_one("wine"))
    assert runner.program_name("/bench", "a/run.py") == "Z:\\bench\\a\\run.py"
    invocation = runner.invocation(["Z:\\py\\python.exe", "-V"], {"PYTHONPATH": "Z:\\bench"})
    assert invocation.command[0] == "wine64" and invocation.command[1:] == ["Z:\\py\\python.exe", "-V"]
    assert invocation.env["WINEDLLOVERRIDES"] == "vcruntime140=n;vcruntime140_1=n;msvcp140=n"
    assert invocation.env["PYTHONPATH"] == "Z:\\bench" and invocation.user == "1000:1000"
    native = runner_for(_one("native")).invocation(["/py/bin/python3", "-V"], {})
    assert native.command == ["/py/bin/python3", "-V"] and native.env == {"HOME": "/tmp"}
