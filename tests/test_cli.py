"""The command line: clean errors, no tracebacks."""

from __future__ import annotations

import subprocess
import sys


def run(*args):
    return subprocess.run(
        [sys.executable, "-m", "pyfreight", *args], capture_output=True, text=True, timeout=60
    )


def test_unknown_recipe_is_named():
    proc = run("fetch", "no-such-lib")
    assert proc.returncode == 1
    assert "error: no recipe named no-such-lib" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_fetch_needs_names_or_all():
    proc = run("fetch")
    assert proc.returncode == 1 and "--all" in proc.stderr


def test_help_lists_commands():
    proc = run("--help")
    assert proc.returncode == 0
    for command in ("images", "fetch", "deps"):
        assert command in proc.stdout
