"""The command line: clean errors, no tracebacks."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path


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


def test_check_install_needs_a_tree_or_debian():
    proc = run("check-install")
    assert proc.returncode == 1 and "check-install needs TREE" in proc.stderr
    both = run("check-install", "--debian", "some/tree")
    assert both.returncode == 1 and "leave TREE out" in both.stderr
    assert "Traceback" not in proc.stderr + both.stderr


def test_bench_and_build_options_are_checked_before_any_work():
    proc = run("bench", "--options", ",")
    assert proc.returncode == 1 and "--options names no build" in proc.stderr
    modifier = run("build", "--options", "pgo+lto+turbo")
    assert modifier.returncode == 1 and "unknown modifier 'turbo'" in modifier.stderr
    tree = run("bench", "--against", "/nonexistent/tree")
    assert tree.returncode == 1 and "--against /nonexistent/tree" in tree.stderr


def test_check_install_debian_needs_tests_to_run():
    proc = run("check-install", "--debian", "--tests", "none")
    assert proc.returncode == 1 and "give --tests subset or full" in proc.stderr


def _namespace_uses(source: str) -> list[int]:
    """Lines of `source` naming argparse's Namespace (as argparse.Namespace or imported)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr == "Namespace":
            found.append(node.lineno)
        if isinstance(node, ast.ImportFrom) and node.module == "argparse":
            found += [node.lineno for alias in node.names if alias.name == "Namespace"]
    return sorted(found)


def test_the_checker_finds_a_namespace_handed_down():
    code = "import argparse\ndef f(args: argparse.Namespace): pass\nfrom argparse import Namespace\n"
    assert _namespace_uses(code) == [2, 3]


def test_only_the_command_line_reads_parsed_arguments():
    """The commands turn their arguments into typed values (a BuildSpec, a Target, Limits,
    paths) at the edge, pyfreight/cli/: no module below it takes an argparse.Namespace."""
    package = Path(__file__).resolve().parent.parent / "pyfreight"
    found = [
        f"{path.relative_to(package)}:{line}"
        for path in sorted(package.rglob("*.py"))
        if not path.relative_to(package).as_posix().startswith("cli/")
        for line in _namespace_uses(path.read_text())
    ]
    assert not found, "pass typed values, not the parsed arguments:\n" + "\n".join(found)
