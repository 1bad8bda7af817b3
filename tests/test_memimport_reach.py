"""reach.py, which finds the modules an application reaches, run as embed runs it (a
script, -I -S) by the driver's own interpreter over its own stdlib and a small app."""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
from pathlib import Path

from pyfreight import memimport

STDLIB = Path(sysconfig.get_paths()["stdlib"])

CLI = """\
import argparse
from . import helpers


def main():
    import json  # inside a function: reached all the same
    return json.dumps(helpers.ANSWER)
"""


def _reach(tmp_path: Path, *arguments: str) -> dict[str, list[str]]:
    app = tmp_path / "app"
    (app / "tool").mkdir(parents=True)
    (app / "tool" / "__init__.py").write_text("")
    (app / "tool" / "cli.py").write_text(CLI)
    (app / "tool" / "helpers.py").write_text("import time\nANSWER = 42\n")
    (app / "tool" / "unused.py").write_text("import csv\n")
    start = tmp_path / "start.py"
    start.write_text(
        "import sys\nfrom importlib import import_module\nsys.exit(import_module('tool.cli').main())\n"
    )
    out = tmp_path / "reach.json"
    command = [sys.executable, "-I", "-S", str(memimport.REACH), "--path", str(app), "--path", str(STDLIB)]
    command += ["--start", str(start), "--root", "tool.cli", "--out", str(out), *arguments]
    proc = subprocess.run(command, capture_output=True, text=True, check=True)
    assert proc.stdout.startswith("reach.py: ") and "modules" in proc.stdout, proc.stdout
    return json.loads(out.read_text())


def test_the_imports_of_the_main_module_and_the_start_code_are_reached(tmp_path: Path) -> None:
    found = _reach(tmp_path)
    modules = set(found["modules"])
    assert {"tool", "tool.cli", "tool.helpers", "argparse", "json", "json.decoder", "importlib"} <= modules
    # What the interpreter needs whatever the code: its codecs, site and traceback.
    assert {"encodings.utf_8", "encodings.cp1252", "site", "traceback", "linecache"} <= modules
    assert "time" in found["builtins"] and "sys" in found["builtins"]
    # Nothing the application does not import: its unused module, and what only that imports.
    assert "tool.unused" not in modules and "csv" not in modules
    assert "email" not in modules and "tkinter" not in modules


def test_an_app_folder_makes_every_module_in_it_reached_and_whole_adds_a_package(tmp_path: Path) -> None:
    found = _reach(tmp_path, "--app", str(tmp_path / "app"), "--whole", "email.mime")
    modules = set(found["modules"])
    assert {"tool.unused", "csv"} <= modules
    assert {"email.mime.text", "email.mime.multipart"} <= modules


def test_a_namespace_package_run_as_m_is_followed_without_what_runpy_needs_only_for_paths(
    tmp_path: Path,
) -> None:
    # A folder without __init__.py (as `python -m app` runs app/__main__.py): modulefinder
    # alone fails on it with an AttributeError. The start code is embed's for `--main hw`.
    app = tmp_path / "nsapp"
    (app / "hw").mkdir(parents=True)
    (app / "hw" / "__main__.py").write_text("import csv\nfrom hw import part\n")
    (app / "hw" / "part.py").write_text("import shlex\n")
    out = tmp_path / "reach.json"
    command = [sys.executable, "-I", "-S", str(memimport.REACH), "--path", str(app), "--path", str(STDLIB)]
    start = tmp_path / "start.py"
    start.write_text("import runpy\nrunpy._run_module_as_main('hw', False)\n")
    command += ["--root", "hw.__main__", "--app", str(app), "--start", str(start), "--out", str(out)]
    proc = subprocess.run(command, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    modules = set(json.loads(out.read_text())["modules"])
    assert {"hw", "hw.__main__", "hw.part", "csv", "shlex", "runpy", "importlib.util"} <= modules
    # runpy.run_path's pkgutil (and with it zipfile and email) serves a path, not -m.
    assert not {"pkgutil", "zipfile", "email"} & modules, {"pkgutil", "zipfile", "email"} & modules
