"""The pieces of single-file applications that need no archive: --main's grammar and the
code it starts, the split of installed distributions between the blob and the packages
folder (by their RECORD), and the packages folder's guard. (The whole path, from PyPI to
an empty container, is tests/test_single_file_app_integration.py.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pyfreight.embed.application import (
    MARKER,
    parse_main,
    split_site,
    write_packages_folder,
)
from pyfreight.errors import PyfreightError


@pytest.mark.parametrize(
    ("text", "module", "function"),
    [("tool", "tool", None), ("tool.cli:main", "tool.cli", "main"), ("a.b:App.run", "a.b", "App.run")],
)
def test_main_names(text, module, function):
    spec = parse_main(text)
    assert (spec.module, spec.function) == (module, function)


@pytest.mark.parametrize(
    "text", ["", "a b", "a:", ":f", "a:f()", "a;import os", "1abc", "a:b:c", "a..b", "mod:class", "import"]
)
def test_main_refuses_what_is_not_a_dotted_name(text):
    with pytest.raises(PyfreightError, match="expected MODULE or MODULE:FUNCTION"):
        parse_main(text)


def test_start_code_calls_the_function_and_exits_with_its_result(tmp_path):
    (tmp_path / "tool.py").write_text("import sys\ndef main():\n    print(sys.argv)\n    return 3\n")
    code = parse_main("tool:main").start_code()
    run = subprocess.run(
        [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(tmp_path)!r}); exec({code!r})", "x"],
        capture_output=True,
        text=True,
    )
    assert (run.returncode, run.stdout.strip()) == (3, "['-c', 'x']"), run.stderr


def test_start_code_runs_a_module_as_main_keeping_argv0(tmp_path):
    (tmp_path / "tool").mkdir()
    (tmp_path / "tool" / "__init__.py").write_text("")
    (tmp_path / "tool" / "__main__.py").write_text("import sys\nprint(__name__, sys.argv)\n")
    code = parse_main("tool").start_code()
    run = subprocess.run(
        [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(tmp_path)!r}); exec({code!r})", "y"],
        capture_output=True,
        text=True,
    )
    assert run.stdout.strip() == "__main__ ['-c', 'y']", run.stderr


def _distribution(site: Path, name: str, files: dict[str, str]) -> None:
    info = site / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Name: {name}\nVersion: 1.0\n")
    for path, text in files.items():
        (site / path).parent.mkdir(parents=True, exist_ok=True)
        (site / path).write_text(text)
    record = [f"{p},sha256=x,1" for p in files] + [f"{info.name}/METADATA,,", f"{info.name}/RECORD,,"]
    (info / "RECORD").write_text("\n".join(record) + "\n")


def test_distributions_with_compiled_modules_go_beside_and_the_rest_is_packed(tmp_path):
    site = tmp_path / "site"
    _distribution(site, "purelib", {"purelib/__init__.py": "", "purelib/data.txt": "x"})
    _distribution(site, "single", {"single.py": ""})
    _distribution(site, "fast", {"fast/__init__.py": "", "fast/_speed.cpython-314-x86_64-linux-gnu.so": ""})
    _distribution(site, "vendored", {"vendored/__init__.py": "", "vendored.libs/libz-1a2b.so.1.3": ""})
    (site / "bin").mkdir()
    (site / "bin" / "tool").write_text("#!/bin/sh\n")
    packed, beside = tmp_path / "packed", tmp_path / "beside"
    on_disk = split_site(site, packed, beside)
    assert on_disk == ["fast", "vendored"]
    assert sorted(p.name for p in packed.iterdir()) == [
        "purelib",
        "purelib-1.0.dist-info",
        "single-1.0.dist-info",
        "single.py",
    ]
    assert sorted(p.name for p in beside.iterdir()) == [
        "fast",
        "fast-1.0.dist-info",
        "vendored",
        "vendored-1.0.dist-info",
        "vendored.libs",
    ]
    assert [p.name for p in site.iterdir()] == ["bin"]  # console scripts are left out


def test_the_packages_folder_is_replaced_only_when_ours(tmp_path):
    executable = tmp_path / "tool"
    staged = tmp_path / "staged"
    (staged / "pkg").mkdir(parents=True)
    folder = write_packages_folder(executable, staged)
    assert folder == tmp_path / "tool-packages" and (folder / "pkg").is_dir() and (folder / MARKER).is_file()
    assert write_packages_folder(executable, tmp_path / "nothing") is None and not folder.exists()

    folder.mkdir()
    (folder / "mine.txt").write_text("keep")
    with pytest.raises(PyfreightError, match="was not written by pyfreight embed"):
        write_packages_folder(executable, staged)
    assert (folder / "mine.txt").read_text() == "keep"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["staged", "tool-packages"]


def test_a_folder_shared_with_a_compiled_distribution_goes_beside_whole(tmp_path):
    """Two distributions installing into one namespace folder (google/ of protobuf and
    googleapis-common-protos): one compiled file among them keeps the folder on disk."""
    site = tmp_path / "site"
    _distribution(site, "protos", {"google/api/http.py": ""})
    _distribution(site, "protobuf", {"google/protobuf/__init__.py": "", "google/_upb/_message.abi3.so": ""})
    (site / "loose").mkdir()
    (site / "loose" / "_c.cpython-314-x86_64-linux-gnu.so").write_text("")  # named by no RECORD
    packed, beside = tmp_path / "packed", tmp_path / "beside"
    assert split_site(site, packed, beside) == ["google", "loose"]
    assert (beside / "google" / "_upb" / "_message.abi3.so").is_file()
    assert (beside / "google" / "api" / "http.py").is_file()
    assert sorted(p.name for p in packed.iterdir()) == ["protos-1.0.dist-info"]


def test_filesystem_names_are_module_names_only(tmp_path):
    from pyfreight.embed.application import find_top_level

    (tmp_path / "app" / "pkg").mkdir(parents=True)
    (tmp_path / "secret").mkdir()
    assert find_top_level("pkg", [tmp_path / "app"]) == tmp_path / "app" / "pkg"
    for name in ("../secret", "/etc", "pkg/..", "pkg.py", ""):
        assert find_top_level(name, [tmp_path / "app"]) is None
