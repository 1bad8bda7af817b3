"""A build's names are made from its BuildSpec, and parsed back into one, by
cpython/naming.py alone."""

from __future__ import annotations

import ast
from pathlib import Path

from pyfreight.archives.flavours import FLAVOURS
from pyfreight.cpython.naming import bench_names, folder_stem, parse_full_name, uv_key
from pyfreight.cpython.spec import BuildSpec
from pyfreight.targets import all_targets

PACKAGE = Path(__file__).resolve().parent.parent / "pyfreight"
NAMING = "cpython/naming.py"
# The scripts an installed interpreter runs name its own files (the SOABI, cpython-314-…).
NOT_BUILD_NAMES = ("in_container/",)


def _names_made(tree: ast.AST) -> list[int]:
    """Lines that format a build's name (an f-string starting "cpython-") or hold a
    pattern that parses one."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr) and node.values:
            first = node.values[0]
            if isinstance(first, ast.Constant) and str(first.value).startswith("cpython-"):
                found.append(node.lineno)
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and (node.value.startswith("cpython-(") or "-full\\.tar" in node.value)
        ):
            found.append(node.lineno)
    return found


def test_the_checker_finds_a_name_made_or_parsed():
    code = 'a = f"cpython-{v}-{o}"\nb = re.compile(r"cpython-(?P<v>.+)-full\\.tar\\.zst")\nc = f"x{v}"'
    assert _names_made(ast.parse(code)) == [1, 2]


def test_no_module_but_naming_makes_or_parses_a_build_name():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel == NAMING or rel.startswith(NOT_BUILD_NAMES):
            continue
        found += [f"{rel}:{line}" for line in _names_made(ast.parse(path.read_text()))]
    assert not found, f"make or parse build names in {NAMING}:\n" + "\n".join(found)


def test_every_build_name_comes_back_as_the_same_build():
    for target in all_targets().values():
        for options in ("noopt", "pgo+lto", "freethreaded+lto", "debug+static"):
            spec = BuildSpec.named("3.14.7", options, target.triple)
            full = FLAVOURS[0].file_name(spec, "20990101")
            assert parse_full_name(full) == (spec, "20990101"), full
            assert folder_stem(spec).startswith("cpython-3.14.7-") and "+" not in folder_stem(spec)
            assert uv_key(spec, "").endswith("-".join(target.uv_platform))
            folder, stem = bench_names(spec.minor, target)
            assert folder == f"cpython-{stem}" and (stem == "3.14") == target.is_default
