"""check-install's in-container checks: the checks every OS runs live once, in
shared_checks.py, and each OS's script adds only its own."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

IN_CONTAINER = Path(__file__).parent.parent / "pyfreight" / "in_container"
OS_SCRIPTS = ("interpreter_checks.py", "windows_checks.py")
REGISTERED = re.compile(r'^@(?:check|_shared)\("((?:[^"\\]|\\.)+)"\)$', re.M)


def _names(script: str) -> list[str]:
    return REGISTERED.findall((IN_CONTAINER / script).read_text())


def test_no_check_is_written_twice():
    shared = _names("shared_checks.py")
    assert "every stdlib module imports" in shared and len(shared) >= 7
    seen: dict[str, str] = {name: "shared_checks.py" for name in shared}
    for script in OS_SCRIPTS:
        own = _names(script)
        assert len(own) > 5, f"{script}: the pattern finds no checks"
        for name in own:
            assert name not in seen, f"{name!r} is in {seen[name]} and {script}"
            seen[name] = script


def test_only_the_shared_module_registers_runs_and_reports():
    for script in OS_SCRIPTS:
        text = (IN_CONTAINER / script).read_text()
        for own in ("def check(", "def run_checks(", "def main(", "results: list", "traceback"):
            assert own not in text, f"{script} has its own {own!r}: shared_checks.py has it"


def _run_with(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    """A script beside a copy of shared_checks.py (and what it imports), as check-install
    copies them, with the shared checks left out so that only `body`'s run."""
    for name in ("shared_checks.py", "bytecode.py", "signal_stress.py"):
        (tmp_path / name).write_text((IN_CONTAINER / name).read_text())
    script = tmp_path / "checks.py"
    script.write_text(
        "import sys\nimport shared_checks\nfrom shared_checks import TreeFacts, check, run_checks\n"
        "shared_checks._CHECKS.clear()\n" + body
    )
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)


def test_a_check_the_runner_cannot_pass_is_reported_with_its_reason_and_not_counted(tmp_path):
    body = (
        "@check('fails under wine')\ndef a(): raise OSError('no CopyFile2')\n"
        "@check('passes')\ndef b(): return 'fine'\n"
        "limits = {'fails under wine': 'Wine lacks it'}\n"
        "facts = TreeFacts([], {}, None, runner_limits=limits, runner='Wine')\n"
        "sys.exit(run_checks(facts))\n"
    )
    ran = _run_with(tmp_path, body)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert re.search(r"^WINE  fails under wine\s+Wine lacks it \(OSError: no CopyFile2\)$", ran.stdout, re.M)
    assert ran.stdout.splitlines()[-1] == "1 passed, 1 failed only under Wine, 0 failed"


def test_a_failed_check_fails_the_run_with_its_last_line(tmp_path):
    body = (
        "@check('broken')\ndef a(): assert 1 == 2, 'one is not two'\n"
        "sys.exit(run_checks(TreeFacts([], {}, None)))\n"
    )
    ran = _run_with(tmp_path, body)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert re.search(r"^FAIL  broken  AssertionError: one is not two$", ran.stdout, re.M), ran.stdout
    assert ran.stdout.splitlines()[-1] == "0 passed, 1 failed"


def _signal_stress(monkeypatch):
    """signal_stress.py as check-install imports it, with one cheap workload."""
    monkeypatch.syspath_prepend(str(IN_CONTAINER))
    import signal_stress

    monkeypatch.setattr(signal_stress, "workloads", lambda: {"_sha2.sha256": lambda: "ba78"})
    return signal_stress


def _child(tmp_path: Path, body: str) -> str:
    """A stand-in for the interpreter under test: a program run with the script's path."""
    child = tmp_path / "python"
    child.write_text(f"#!/bin/sh\n{body}\n")
    child.chmod(0o755)
    return str(child)


def test_the_signal_check_names_the_workload_the_interpreter_died_in(tmp_path, monkeypatch):
    stress = _signal_stress(monkeypatch).stress
    crashing = _child(tmp_path, "echo _sha2.sha256 >&2\nkill -SEGV $$")
    try:
        stress(crashing)
    except AssertionError as exc:
        assert str(exc) == "the interpreter died (signal SIGSEGV) under signals in _sha2.sha256"
    else:
        raise AssertionError("a crash under signals passed")


def test_the_signal_check_fails_on_a_result_that_differs_under_signals(tmp_path, monkeypatch):
    stress = _signal_stress(monkeypatch).stress
    wrong = _child(tmp_path, """echo '{"results": {"_sha2.sha256": ["ba78", "0000"]}, "signals": 9}'""")
    try:
        stress(wrong)
    except AssertionError as exc:
        assert str(exc) == "results differ under signals: _sha2.sha256"
    else:
        raise AssertionError("a result that changed under signals passed")
    right = _child(tmp_path, """echo '{"results": {"_sha2.sha256": ["ba78"]}, "signals": 9}'""")
    assert stress(right) == "1 workloads, 9 signals, every result as without them"
