"""The in-memory importer binary linked from real noopt archives: alone in an empty folder
it imports every stdlib module the archive has; under strace, with a real stdlib beside it,
it touches none of the stdlib's files; application code packed with --app imports and reads
its data; PEP 451 details hold. Every proof runs for both forms of packed code on 3.14, and
for static code objects on every other pinned CPython (3.13, 3.15), whose layouts differ."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from pyfreight.bench.imports import LIST_MODULES
from pyfreight.cpython.versions import load_versions
from pyfreight.embed.command import embed
from pyfreight.embed.memory import PackOptions
from pyfreight.formats.tarball import extract
from tests.conftest import pyfreight_cli
from tests.tiers import STATIC_CODE, version_part

# Reads the noopt build's archives only: beside the engine group (conftest.py)
pytestmark = [pytest.mark.container, pytest.mark.archive_reader]

ENV = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"}

# Imports every name given on the command line; prints the ones that failed, then how
# many came from the memory finder.
IMPORT_ALL = r"""
import importlib, sys
failed = []
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except Exception as exc:
        failed.append(f"{name}: {type(exc).__name__}: {exc}")
memory = [
    n for n in sys.argv[1:]
    if type(getattr(sys.modules[n], "__loader__", None)).__module__ == "_pyfreight_finder"
]
print("FAILED", failed)
print("MEMORY", len(memory))
import _pyfreight_memory
print("STATIC", _pyfreight_memory.info()["static_code_loads"])
"""


def _builds() -> list:
    """The marshalled form on the default version (make test); static code on the default
    version in its own part of test-all, and on every other pinned version in that
    version's part."""
    default, versions = load_versions()
    other = [
        pytest.param((v, "static-code"), marks=pytest.mark.part(version_part(v)))
        for v in versions
        if v != default
    ]
    static = pytest.param((default, "static-code"), marks=pytest.mark.part(STATIC_CODE))
    return [(default, "marshal"), static, *other]


@pytest.fixture(scope="module", params=_builds(), ids=lambda p: "-".join(p))
def build(request) -> tuple[str, str]:
    """(CPython version, form of packed code): marshalled in the blob, or laid out as
    static objects in the executable's data (--static-code)."""
    return request.param


@pytest.fixture(scope="module")
def code_form(build) -> str:
    return build[1]


@pytest.fixture(scope="module")
def archive(build, noopt_dists) -> Path:
    return noopt_dists(build[0]).full


@pytest.fixture(scope="module")
def tree(archive, tmp_path_factory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("archive")
    extract(archive, root)
    yield root / "python"
    shutil.rmtree(root)  # each build's tree is large; only one is kept at a time


@pytest.fixture(scope="module")
def stdlib_names(tree) -> list[str]:
    """What the archive's own python3 imports from its stdlib on the filesystem."""
    out = subprocess.run(
        [str(tree / "install" / "bin" / "python3"), "-I", "-c", LIST_MODULES],
        capture_output=True,
        text=True,
        env=ENV,
        check=True,
    )
    names = out.stdout.split()
    assert len(names) > 400
    return names


@pytest.fixture(scope="module")
def app(tmp_path_factory) -> Path:
    """Application code packed beside the stdlib: a module, a package with a data file,
    a namespace package."""
    app = tmp_path_factory.mktemp("app")
    (app / "appmod.py").write_text("def greet():\n    return 'hello from appmod'\n")
    (app / "apppkg").mkdir()
    (app / "apppkg" / "__init__.py").write_text("from .inner import VALUE\n")
    (app / "apppkg" / "inner.py").write_text("VALUE = 42\n")
    (app / "apppkg" / "data.txt").write_text("packed data file\n")
    (app / "nspkg").mkdir()  # a namespace package: no __init__.py
    (app / "nspkg" / "part.py").write_text("from . import other\nNAME = 'part'\n")
    (app / "nspkg" / "other.py").write_text("NAME = 'other'\n")
    # An installed distribution's metadata, its folder named as older wheels name it.
    (app / "Some.Dist-1.5.dist-info").mkdir()
    (app / "Some.Dist-1.5.dist-info" / "METADATA").write_text("Name: Some.Dist\nVersion: 1.5\n")
    return app


@pytest.fixture(scope="module")
def binary(archive, app, code_form, tmp_path_factory) -> Iterator[Path]:
    out = tmp_path_factory.mktemp("memory") / "python-memory"
    static = ["--static-code"] if code_form == "static-code" else []
    proc = pyfreight_cli(
        "embed", archive, "--memory-importer", *static, "-o", out, "--cc", "gcc", "--app", app
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    yield out
    shutil.rmtree(out.parent)


def _run(binary: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(binary), *args], capture_output=True, text=True, env=ENV, cwd=cwd, timeout=600)


def test_binary_alone_imports_every_stdlib_module(binary, code_form, stdlib_names, tmp_path):
    alone = tmp_path / "empty" / binary.name
    alone.parent.mkdir()
    shutil.copy2(binary, alone)
    result = _run(alone, "-I", "-c", IMPORT_ALL, *stdlib_names, cwd=alone.parent)
    assert result.returncode == 0, result.stderr
    assert "FAILED []" in result.stdout, result.stdout
    count = int(re.search(r"MEMORY (\d+)", result.stdout).group(1))
    # Frozen modules (os, site, codecs, …) keep their own importer; the rest is ours.
    assert count > len(stdlib_names) - 40, result.stdout
    static = int(re.search(r"STATIC (\d+)", result.stdout).group(1))
    assert static >= count if code_form == "static-code" else static == 0, result.stdout


def test_the_finder_itself_is_static_code_in_a_static_code_build(binary, code_form):
    """Made at every start: from static code (immortal, so its reference count is the
    immortal one) when the build has it, unmarshalled (an ordinary count) otherwise."""
    show = "import sys; print(sys.getrefcount(sys.modules['_pyfreight_finder'].install.__code__))"
    result = _run(binary, "-I", "-c", show)
    assert result.returncode == 0, result.stderr
    immortal = int(result.stdout) >= 2**29  # 3.13-3.15 keep immortal counts at 2**30 and above
    assert immortal == (code_form == "static-code"), result.stdout


def test_no_stdlib_file_is_touched(binary, tree, stdlib_names, tmp_path):
    """With the real stdlib right beside it (the binary in the install tree's bin/),
    strace sees no file system call on any stdlib module, package or bytecode file.
    What remains under lib/python3.X is by design and listed in docs/memory-importer.md:
    site.py looking at site-packages (the third-party folder, not the stdlib), and
    sysconfig resolving the config-3.X-… folder with realpath (lstat of each component)."""
    beside = tree / "install" / "bin" / "python-memory"
    shutil.copy2(binary, beside)
    trace = tmp_path / "strace.txt"
    command = [
        "strace",
        "-f",
        "-e",
        "trace=%file,%desc",
        "-o",
        str(trace),
        str(beside),
        "-I",
        "-c",
        IMPORT_ALL,
    ]
    result = subprocess.run([*command, *stdlib_names], capture_output=True, text=True, env=ENV, timeout=600)
    assert result.returncode == 0 and "FAILED []" in result.stdout, result.stderr[-2000:]
    (stdlib,) = (tree / "install" / "lib").glob("python3.*")
    calls = [line for line in trace.read_text().splitlines() if str(stdlib) in line]
    allowed = {str(stdlib), str(stdlib / "site-packages"), *map(str, stdlib.glob("config-3.*-*"))}
    touched = sorted(
        {p for line in calls for p in re.findall(r'"([^"]*)"', line) if p.startswith(str(stdlib))}
    )
    assert [p for p in touched if p not in allowed] == [], touched[:20]
    assert any("site-packages" in line for line in calls), calls[:5]  # strace saw the tree
    stdlib_lstat = [line for line in calls if f'"{stdlib}"' in line]
    assert all(" lstat(" in line or "newfstatat(" in line for line in stdlib_lstat), stdlib_lstat
    assert any("python-memory" in line for line in trace.read_text().splitlines())  # the trace recorded calls


def test_application_code_data_and_pep451_semantics(binary):
    script = r"""
import importlib.resources, inspect, json, pkgutil, sys, traceback
import appmod, apppkg
from apppkg import inner
assert appmod.greet() == "hello from appmod"
import importlib.metadata
assert importlib.metadata.version("some-dist") == importlib.metadata.version("Some.Dist") == "1.5"
assert "Some.Dist" in {d.metadata["Name"] for d in importlib.metadata.distributions()}
assert not list(importlib.metadata.distributions(name="some-dist", path=["/elsewhere"]))
import nspkg.part
assert nspkg.part.NAME == "part" and nspkg.part.other.NAME == "other"
assert nspkg.__spec__.origin is None and "Namespace" in type(nspkg.__loader__).__name__
assert apppkg.VALUE == inner.VALUE == 42
assert importlib.resources.files("apppkg").joinpath("data.txt").read_text() == "packed data file\n"
assert apppkg.__spec__.submodule_search_locations == apppkg.__path__
assert apppkg.__package__ == "apppkg" and inner.__package__ == "apppkg"
assert json.__spec__.loader is json.__loader__ and json.__spec__.name == "json"
assert "def dumps(" in inspect.getsource(json)
top = {m.name for m in pkgutil.iter_modules()}
assert {"json", "email", "appmod", "apppkg"} <= top, sorted(top)[:20]
assert "decoder" in {m.name for m in pkgutil.iter_modules(json.__path__)}
try:
    json.loads("{")
except ValueError:
    text = traceback.format_exc()
    assert "raise JSONDecodeError" in text or "raise self" in text or "obj, end" in text, text
print("ok")
"""
    result = _run(binary, "-I", "-c", script)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
    isolated = _run(binary, "-I", "-c", "import sys; print(sys.flags.isolated, sys.flags.safe_path)")
    assert isolated.stdout.split() == ["1", "True"]
    module = _run(binary, "-m", "json.tool", "--help")
    assert module.returncode == 0 and "usage" in module.stdout


def test_pythonpath_is_honoured_unless_isolated(binary):
    """The search path is set by main.c (the virtual root), which makes getpath drop
    PYTHONPATH; main.c applies it again, except under -E or -I."""
    env = dict(ENV, PYTHONPATH="/nonexistent-for-test")
    probe = "import sys; print('/nonexistent-for-test' in sys.path)"
    plain = subprocess.run([str(binary), "-c", probe], capture_output=True, text=True, env=env)
    isolated = subprocess.run([str(binary), "-I", "-c", probe], capture_output=True, text=True, env=env)
    assert (plain.stdout.strip(), isolated.stdout.strip()) == ("True", "False"), (
        plain.stderr + isolated.stderr
    )


def test_memory_binary_is_reproducible(binary, code_form, archive, tmp_path):
    """The same archive and options give the same executable, blob (and static code) included."""
    app = binary.parent.parent / "app0"
    again = tmp_path / "python-memory"
    embed(
        archive,
        again,
        selection="all",
        cc="gcc",
        memory=PackOptions(apps=[app] if app.is_dir() else [], static_code=code_form == "static-code"),
    )
    assert again.read_bytes() == binary.read_bytes()


def test_no_debug_ranges_drops_column_tables_in_either_form(binary):
    """-X no_debug_ranges gets code without column tables, as unmarshalled code has under
    it: the static form steps aside and unmarshals."""
    ranges = _run(
        binary,
        "-I",
        "-X",
        "no_debug_ranges",
        "-c",
        "import colorsys, _pyfreight_memory as m\n"
        "columns = {p[2:] for p in colorsys.rgb_to_yiq.__code__.co_positions()}\n"
        "print(m.info()['static_code_loads'], columns)\n",
    )
    assert ranges.returncode == 0, ranges.stderr
    assert ranges.stdout.strip().split(maxsplit=1) == ["0", "{(None, None)}"], ranges.stdout
    columns = (
        "import colorsys; print(all(p[2] is not None for p in colorsys.rgb_to_yiq.__code__.co_positions()))"
    )
    with_ranges = _run(binary, "-I", "-c", columns)
    assert with_ranges.stdout.strip() == "True", with_ranges.stderr  # without it, columns are kept
