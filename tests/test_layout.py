"""The driver's layout follows the flow: no module imports another that (directly or
through others) imports it back, and no package does either. Every import counts,
including those inside functions and under TYPE_CHECKING."""

from __future__ import annotations

import ast
import subprocess
import sys
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "pyfreight"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(name: str, path: Path) -> set[str]:
    """The pyfreight modules `name` imports (a `from pkg import mod` names the module)."""
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("pyfreight")}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against the importing package
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            if not base.startswith("pyfreight"):
                continue
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.add(full if full in MODULES else base)
    return {m for m in found if m in MODULES and m != name}


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _package(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2])  # pyfreight.<package or top-level module>


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as exc:
        return list(exc.args[1])
    return None


def test_no_module_imports_itself_back():
    assert _cycle(GRAPH) is None, f"import cycle: {' -> '.join(_cycle(GRAPH) or [])}"


def test_no_package_imports_itself_back():
    packages: dict[str, set[str]] = {}
    for module, imported in GRAPH.items():
        here = _package(module)
        packages.setdefault(here, set()).update(_package(m) for m in imported if _package(m) != here)
    cycle = _cycle(packages)
    assert cycle is None, f"packages import each other: {' -> '.join(cycle or [])}"


def test_the_check_finds_a_cycle():
    """The checker itself: a graph with a cycle is reported."""
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) is not None


@pytest.mark.parametrize(
    "package",
    ["sources", "container", "deps", "cpython", "archives", "verify", "publish", "embed", "bench", "formats"],
)
def test_flow_packages_exist(package):
    assert (PACKAGE / package / "__init__.py").is_file()


def test_ruff_checks_every_module_of_the_package_and_the_tests():
    """ruff leaves out folders by name (`dist`, `build`, …) without a word: make lint once
    said "All checks passed!" while it never read a whole package. Ask ruff what it reads,
    as make lint runs it, and compare with the files on disk."""
    ruff = Path(sys.executable).with_name("ruff")
    listed = subprocess.run(
        [str(ruff), "check", "--show-files", "pyfreight", "tests"],
        cwd=PACKAGE.parent,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    seen = {Path(line).resolve() for line in listed if line.endswith(".py")}
    on_disk = {p.resolve() for folder in (PACKAGE, PACKAGE.parent / "tests") for p in folder.rglob("*.py")}
    assert on_disk - seen == set()


def test_make_lint_shellchecks_every_shell_script():
    """The lint recipe names its shell scripts by glob; a script in a new folder
    (windows/build.sh was one) is otherwise never checked. Ask make what it would run
    and expand its globs as the shell will."""
    planned = subprocess.run(
        ["make", "-n", "lint"], cwd=PACKAGE.parent, capture_output=True, text=True, check=True
    ).stdout
    checked: set[Path] = set()
    for line in planned.splitlines():
        if line.startswith("shellcheck "):
            for word in line.split()[1:]:
                if not word.startswith("-"):
                    checked |= {p.resolve() for p in PACKAGE.parent.glob(word)}
    tracked = subprocess.run(
        ["git", "ls-files", "*.sh", ".ci/run"], cwd=PACKAGE.parent, capture_output=True, text=True, check=True
    ).stdout.split()
    assert tracked, "git lists no shell scripts"
    assert {(PACKAGE.parent / p).resolve() for p in tracked} - checked == set()
