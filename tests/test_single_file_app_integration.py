"""Single-file applications, made as a user makes them (`pyfreight embed --memory-importer
--app … --main … --requirements …`) from the real 3.14 noopt archive, with their
dependencies fetched from PyPI by the archive's own pip during the test (pip's cache
keeps them), then copied to an empty folder and run in a container (Debian, minimal) that
has no Python and no network: a CLI with a pure-Python dependency (click: packed, a single file), and
one with a compiled dependency (markupsafe: its extension module in OUT-packages/)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pyfreight.container.images import base_tag, ensure_images, load_spec
from pyfreight.formats.tarball import extract
from pyfreight.memimport import blobformat as bf
from pyfreight.paths import default_workspace
from pyfreight.targets import default_target
from tests.conftest import pyfreight_cli
from tests.in_image import bash_in_image

# Reads the noopt build's archives only: beside the engine group (conftest.py)
pytestmark = [pytest.mark.container, pytest.mark.archive_reader]

GREET = '''\
import importlib.metadata
import multiprocessing
import sys

import click

from greet.work import square


@click.command()
@click.argument("name")
@click.option("--shout", is_flag=True)
def main(name: str, shout: bool) -> None:
    """Greets NAME."""
    text = f"hello {name}; click {importlib.metadata.version('click')}; prog {sys.argv[0]}"
    click.echo(text.upper() if shout else text)
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        click.echo(f"squares {sum(pool.map(square, range(10)))}")
'''

ESCAPE = """\
import sys

import markupsafe
from markupsafe import _speedups

compiled = "compiled" if _speedups.__file__.endswith(".so") else ""
print(markupsafe.escape(" ".join(sys.argv[1:])), compiled, "site" if "site" in sys.modules else "no site")
"""


def _app(root: Path, package: str, files: dict[str, str]) -> Path:
    (root / package).mkdir(parents=True)
    for name, text in files.items():
        (root / package / name).write_text(text)
    return root


def _alone(files: list[Path], tmp_path: Path) -> Path:
    """A folder holding nothing but `files` (executables, packages folders)."""
    folder = tmp_path / "alone"
    folder.mkdir()
    for path in files:
        if path.is_dir():
            shutil.copytree(path, folder / path.name, symlinks=True)
        else:
            shutil.copy2(path, folder / path.name)
    return folder


@pytest.fixture(scope="module")
def runtime_image() -> str:
    """Our base image: Debian's minimal system of the builder's suite, no Python. embed
    links with this machine's compiler, so its output needs this machine's glibc."""
    ensure_images(default_workspace(), default_target())
    return base_tag(load_spec())


def _embed_app(noopt_dist, tmp_path: Path, package: str, files: dict[str, str], requirement: str, main: str):
    """`pyfreight embed` of an application folder with one requirement, as a user types it."""
    app = _app(tmp_path / "src", package, files)
    (tmp_path / "requirements.txt").write_text(requirement + "\n")
    out = tmp_path / "out" / package
    out.parent.mkdir()
    made = pyfreight_cli(
        "embed", noopt_dist.full, "--memory-importer", "--app", app, "--main", main,
        "--requirements", tmp_path / "requirements.txt", "-o", out, "--cc", "gcc",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr[-3000:]
    return out, made


def test_cli_with_a_pure_python_dependency_is_one_file(noopt_dist, runtime_image, tmp_path):
    files = {"__init__.py": "", "cli.py": GREET, "work.py": "def square(x):\n    return x * x\n"}
    out, _ = _embed_app(noopt_dist, tmp_path, "greet", files, "click==8.2.1", "greet.cli:main")
    assert sorted(p.name for p in out.parent.iterdir()) == ["greet"], "a pure-Python app is one file"

    folder = _alone([out], tmp_path)
    run = bash_in_image(
        runtime_image,
        folder,
        "! command -v python3; timeout 120 ./greet --shout world; ./greet --help; "
        "(./greet || true) 2>&1; "
        # A multiprocessing-like command line from outside a running application is the
        # application's own arguments, never code to run.
        "(./greet -c 'from multiprocessing.spawn import x; print(\"ran\")' || true) 2>&1; "
        "PYFREIGHT_INTERPRETER=1 ./greet -c "
        "'import sys, click; print(\"interpreter\", sys.argv, click.__file__)'",
    )
    lines = run.stdout.splitlines()
    assert "HELLO WORLD; CLICK 8.2.1; PROG ./GREET" in lines, run.stdout
    assert "squares 285" in lines, run.stdout  # multiprocessing's children run as the interpreter
    assert any(line.startswith("Usage: greet [OPTIONS] NAME") for line in lines), run.stdout
    assert "Error: Missing argument 'NAME'." in lines, run.stdout
    assert "interpreter ['-c'] /p/greet/click/__init__.py" in lines, run.stdout
    assert "ran" not in lines and "Error: No such option: -c" in lines, run.stdout


def test_cli_with_a_compiled_dependency_keeps_it_beside(noopt_dist, runtime_image, tmp_path):
    files = {"__init__.py": "", "__main__.py": ESCAPE}
    out, made = _embed_app(noopt_dist, tmp_path, "escape", files, "markupsafe==3.0.3", "escape")
    packages = out.with_name("escape-packages")
    assert f"packages:   {packages}" in made.stdout
    assert list(packages.glob("markupsafe/_speedups*.so")), sorted(p.name for p in packages.rglob("*"))

    folder = _alone([out, packages], tmp_path)
    run = bash_in_image(runtime_image, folder, "./escape '<b>bold</b>' '&'")
    # No site: nothing installed at the executable's prefix joins the application's sys.path.
    assert run.stdout.strip() == "&lt;b&gt;bold&lt;/b&gt; &amp; compiled no site", run.stdout + run.stderr

    # Without its packages folder, the application says what is missing.
    (folder / "escape-packages").rename(folder / "moved")
    missing = bash_in_image(runtime_image, folder, "./escape x", check=False)
    assert missing.returncode == 1 and "No module named 'markupsafe'" in missing.stderr, missing.stderr


@pytest.fixture(scope="module")
def tree(noopt_dist, tmp_path_factory) -> Path:
    """The full archive extracted once (embed takes the folder as it takes the archive):
    the option checks below need not unpack the archive eight times."""
    root = tmp_path_factory.mktemp("archive")
    extract(noopt_dist.full, root)
    return root / "python"


def test_bad_application_options_get_one_line(tree, tmp_path):
    cases = {
        ("--main", "not a module"): "--main 'not a module': expected MODULE or MODULE:FUNCTION",
        ("--main", "nowhere:main"): "--main nowhere: no module nowhere",
        ("--wheel", str(tmp_path / "missing.whl")): "not a wheel file",
        ("--filesystem", "no_such_module"): "--filesystem no_such_module: no such top-level module",
    }
    for args, expected in cases.items():
        out = tmp_path / "x"
        result = pyfreight_cli("embed", tree, "--memory-importer", *args, "-o", out, "--cc", "gcc")
        assert result.returncode != 0 and expected in result.stderr, (args, result.stderr[-2000:])
        assert "Traceback" not in result.stderr and not out.exists()
    without = pyfreight_cli("embed", tree, "--main", "json", "-o", tmp_path / "y")
    assert without.returncode != 0 and "--main is for the in-memory importer" in without.stderr
    app = _app(tmp_path / "src", "tool", {"__init__.py": "", "__main__.py": "print(1)\n"})
    for args, expected in {
        ("--include-module", "csv"): "--include-module chooses what an application packs: add --main",
        ("--whole-stdlib",): "--whole-stdlib chooses what an application packs: add --main",
        ("--main", "tool", "--include-module", "no_such.mod"): "--include-module no_such.mod: no such module",
    }.items():
        result = pyfreight_cli(
            "embed", tree, "--memory-importer", "--app", app, *args,
            "-o", tmp_path / "z", "--cc", "gcc",
        )  # fmt: skip
        assert result.returncode != 0 and expected in result.stderr, (args, result.stderr[-2000:])
        assert "Traceback" not in result.stderr and not (tmp_path / "z").exists()


def test_a_folder_pyfreight_did_not_write_is_never_replaced(noopt_dist, tmp_path):
    mine = tmp_path / "tool-packages"
    mine.mkdir()
    (mine / "keep.txt").write_text("the user's\n")
    result = pyfreight_cli(
        "embed", noopt_dist.full, "--memory-importer", "--filesystem", "idlelib",
        "-o", tmp_path / "tool", "--cc", "gcc",
    )  # fmt: skip
    assert result.returncode != 0 and "was not written by pyfreight embed" in result.stderr, result.stderr
    assert (mine / "keep.txt").read_text() == "the user's\n"
    assert not (tmp_path / "tool").exists()


BY_NAME = """\
import importlib
import sys


def main():
    for name in sys.argv[1:]:
        print(name, "imported", importlib.import_module(name).__name__)
"""


def test_an_application_packs_what_it_reaches_and_names_what_it_left_out(noopt_dist, runtime_image, tmp_path):
    """By default an application packs the stdlib it reaches (json here, imported by its
    code; not csv, which it imports only by a computed name) and links the extension
    modules that reaches; a module left out fails in one line naming --include-module."""
    app = _app(tmp_path / "src", "byname", {"__init__.py": "", "cli.py": "import json\n" + BY_NAME})
    made = {}
    for kind, extra in {
        "default": [],
        # _ssl alone: the _socket it imports as it is made comes too, though no code shows it
        "included": ["--include-module", "csv", "--include-module", "_ssl"],
    }.items():
        out = tmp_path / kind / "byname"
        out.parent.mkdir()
        result = pyfreight_cli(
            "embed", noopt_dist.full, "--memory-importer", "--app", app, "--main", "byname.cli:main",
            *extra, "-o", out, "--cc", "gcc",
        )  # fmt: skip
        assert result.returncode == 0, result.stderr[-3000:]
        made[kind] = (out, result)
    default, included = made["default"][1], made["included"][1]
    assert (
        "_ssl" in default.stdout.split("left out:")[1] and "_sqlite3" in default.stdout.split("left out:")[1]
    )
    assert "_ssl" not in included.stdout.split("left out:")[1], included.stdout
    assert "left out, " in default.stderr and "modules reached" in default.stderr, default.stderr[-3000:]

    folder = _alone([made["default"][0]], tmp_path)
    run = bash_in_image(runtime_image, folder, "./byname json; ./byname csv || echo exit $?", check=False)
    assert "json imported json" in run.stdout, run.stdout + run.stderr
    assert run.stderr.splitlines()[-1] == (
        "ModuleNotFoundError: No module named 'csv': pyfreight embed left it out of this program, "
        "whose code does not import it by name; make the program with --include-module csv"
    ), run.stderr
    assert "exit 1" in run.stdout
    ssl = bash_in_image(runtime_image, folder, "./byname _ssl", check=False)
    assert ssl.returncode == 1 and "--include-module _ssl" in ssl.stderr.splitlines()[-1], ssl.stderr

    (tmp_path / "alone").rename(tmp_path / "alone-default")
    folder = _alone([made["included"][0]], tmp_path)
    run = bash_in_image(runtime_image, folder, "./byname csv _ssl _socket")
    assert run.stdout.splitlines() == [
        "csv imported csv",
        "_ssl imported _ssl",
        "_socket imported _socket",
    ], run.stdout
    # Stripped by default: no symbol table, no debug sections.
    sections = subprocess.run(
        ["readelf", "-S", "-W", made["default"][0]], capture_output=True, text=True
    ).stdout
    assert ".symtab" not in sections and ".debug_info" not in sections, sections


def _blob_of(program: bytes, path: Path) -> int:
    """Where the module blob starts in an ELF program: its own section, the last the
    loader maps (readelf's columns: name, type, address, offset, size)."""
    sections = subprocess.run(
        ["readelf", "-S", "-W", path], capture_output=True, text=True, check=True
    ).stdout
    found = re.search(r"\.pyfreight_blob\s+PROGBITS\s+\S+\s+([0-9a-f]+)\s+([0-9a-f]+)", sections)
    assert found, sections
    offset = int(found[1], 16)
    assert offset + int(found[2], 16) > len(program) * 0.8, "the blob ends the loaded image"
    return offset


def _frame_of(blob: bytes, name: str) -> tuple[int, int, int]:
    """A packed module's flags and where its code lies in the blob (blobformat's layout)."""
    header = bf.HEADER.unpack_from(blob)
    count, index, strings = header[7], header[9], header[11]
    for i in range(count):
        name_off, name_len, flags, _, code_off, code_len, _, _ = bf.MODULE_ENTRY.unpack_from(
            blob, index + i * bf.MODULE_ENTRY.size
        )
        if blob[strings + name_off : strings + name_off + name_len] == name.encode():
            return flags, code_off, code_len
    raise AssertionError(f"{name} is not in the blob")


def test_a_program_file_cut_short_or_damaged_fails_in_one_line(noopt_dist, runtime_image, tmp_path):
    """A namespace package run as -m (app/__main__.py, no __init__.py) makes a program that
    runs alone; cut short within its blob (an interrupted download), its compressed main
    module changed or its blob's header changed, it fails in one line saying so."""
    app = _app(tmp_path / "src", "hw", {"__main__.py": 'print("hello world")\n'})
    out = tmp_path / "out" / "hw"
    out.parent.mkdir()
    made = pyfreight_cli(
        "embed", noopt_dist.full, "--memory-importer", "--app", app, "--main", "hw", "-o", out, "--cc", "gcc"
    )  # fmt: skip
    assert made.returncode == 0, made.stderr[-3000:]
    program = out.read_bytes()
    start = _blob_of(program, out)
    total = bf.HEADER.unpack_from(program, start)[-1]
    flags, code_off, code_len = _frame_of(program[start : start + total], "hw.__main__")
    assert flags & bf.FLAG_COMPRESSED, flags

    damaged = {
        "whole": program,
        "cut": program[: start + total // 2],
        "frame": _flipped(program, start + code_off + code_len // 2),
        "header": _flipped(program, start),
    }
    folder = tmp_path / "alone"
    folder.mkdir()
    for name, data in damaged.items():
        (folder / name).write_bytes(data)
        (folder / name).chmod(0o755)
    script = "for p in whole cut frame header; do rc=0; ./$p 2>$p.err || rc=$?; echo $p $rc; done"
    run = bash_in_image(runtime_image, folder, script, check=False)
    assert run.stdout.splitlines() == ["hello world", "whole 0", "cut 1", "frame 1", "header 1"], run.stdout
    errors = {name: (folder / f"{name}.err").read_text().splitlines() for name in damaged}
    assert errors["whole"] == []
    assert errors["cut"] == [
        f"/p/cut: this program file is cut short "
        f"({start + total // 2} of {len(program)} bytes); copy or download it again"
    ], errors["cut"]
    assert (
        len(errors["frame"]) == 1
        and "module hw.__main__ is damaged in this program file" in errors["frame"][0]
    )
    assert len(errors["header"]) == 1 and "this program file is damaged (" in errors["header"][0], errors
    assert "no PYFRMEM header" in errors["header"][0]


def _flipped(data: bytes, at: int) -> bytes:
    changed = bytearray(data)
    changed[at] ^= 0xFF
    return bytes(changed)
