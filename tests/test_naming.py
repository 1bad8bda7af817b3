"""A build's names are made from its BuildSpec, and parsed back into one, by
cpython/naming.py alone."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pyfreight.archives.flavours import FLAVOURS
from pyfreight.cpython.naming import (
    MAKE_SUFFIX,
    bench_names,
    folder_stem,
    make_arguments,
    parse_full_name,
    spec_of_make_arguments,
    uv_key,
)
from pyfreight.cpython.spec import BuildSpec
from pyfreight.errors import PyfreightError
from pyfreight.targets import all_targets
from tests.make_dry_run import build_of_make

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
            platform = target.uv_platform
            assert uv_key(spec, "").endswith(f"-{platform.os}-{platform.key_arch}-{platform.libc}")
            folder, stem = bench_names(spec.minor, target)
            assert folder == f"cpython-{stem}" and (stem == "3.14") == target.is_default


def _buildable(options: str) -> list[BuildSpec]:
    """The builds of `options` for every target that can have them."""
    specs = []
    for target in all_targets().values():
        try:
            specs.append(BuildSpec.resolve("3.14", options, target))
        except PyfreightError:
            continue  # e.g. pgo on a target without a profile runtime
    return specs


@pytest.mark.parametrize(
    "options", ["noopt", "pgo+lto", "freethreaded+lto", "debug+static", "pgo+lto+pie+nojit"]
)
def test_every_make_command_comes_back_as_the_same_build(options):
    specs = _buildable(options)
    assert specs
    for spec in specs:
        assert spec_of_make_arguments(make_arguments(spec)) == spec, make_arguments(spec)


def test_make_itself_hands_the_driver_the_build_its_goal_names():
    """Through the Makefile's pattern rules and the driver's parser, one goal per suffix."""
    for option, suffix in MAKE_SUFFIX.items():
        assert str(build_of_make(f"linux-x86_64-{suffix}", "CPYTHON=3.13").options) == option
    built = build_of_make("linux-x86_64-pgo", "FREETHREADED=1", "MODIFIERS=pie")
    assert (str(built.options), built.target.make_name) == ("freethreaded+pgo+lto+pie", "linux-x86_64")


@pytest.mark.parametrize(
    ("words", "refusal"),
    [
        (["linux-x86_64-fast"], "is not MAKE_NAME-SUFFIX"),
        (["pgo"], "is not MAKE_NAME-SUFFIX"),
        (["linux-x86_64-pgo", "PYTHON=3.13"], "is not a make variable"),
        (["linux-x86_64-pgo", "CPYTHON"], "is not a make variable"),
        (["nosuch-pgo"], "unknown target 'nosuch'"),
    ],
)
def test_a_make_command_that_names_no_build_is_refused_by_name(words, refusal):
    with pytest.raises(PyfreightError, match=refusal):
        spec_of_make_arguments(words)
