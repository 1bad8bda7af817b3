"""Installs the pip that CPython's source bundles (Lib/ensurepip/_bundled) into a Windows
tree, as `python.exe -m ensurepip --default-pip` would on Windows: the package and its
dist-info in Lib/site-packages, and Scripts/pip.exe, pip3.exe and pip3.X.exe, which
pip's own distlib makes from its launcher for the target's machine.

The tree's interpreter is a Windows program, so the build container's python3 runs
this. distlib decides by os.name that it runs on Windows; here it is told so. Its
console scripts name the interpreter relative to the launcher (the target file's
pe.launchers.interpreter), so the tree runs from any folder; SOURCE_DATE_EPOCH fixes
the time in each script's zip, so the files reproduce.

Usage: install-pip.py TREE PYTHON_X_Y LAUNCHER INTERPRETER
"""

from __future__ import annotations

import base64
import configparser
import hashlib
import sys
import zipfile
from pathlib import Path

# Where pip puts console scripts, relative to the site-packages its RECORD is read from.
SCRIPTS_FROM_SITE = "../../Scripts"


def record_line(path: str, data: bytes) -> str:
    """A RECORD row (the wheel spec's): urlsafe base64 sha256 without padding, size."""
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def unpack(wheel: Path, site: Path) -> tuple[str, list[str]]:
    """The wheel's files into `site`; its dist-info folder and its members' names."""
    with zipfile.ZipFile(wheel) as archive:
        names = [name for name in archive.namelist() if not name.endswith("/")]
        for name in names:
            if name.startswith("/") or ".." in name.split("/"):
                raise SystemExit(f"{wheel.name}: member {name!r} leaves the folder")
        archive.extractall(site, names)
    dist_infos = {name.split("/")[0] for name in names if name.split("/")[0].endswith(".dist-info")}
    if len(dist_infos) != 1:
        raise SystemExit(f"{wheel.name}: {len(dist_infos)} dist-info folders, not one")
    return dist_infos.pop(), names


def console_scripts(dist_info: Path, minor: str) -> list[str]:
    """distlib's specifications of pip's console scripts: pip and pip3 as its wheel says,
    and pip3.X for the interpreter it is installed into, as pip adds it."""
    entry_points = configparser.ConfigParser(delimiters=("=",))
    entry_points.optionxform = str  # type: ignore[assignment,method-assign]  # names keep their case
    entry_points.read(dist_info / "entry_points.txt", encoding="utf-8")
    target = entry_points["console_scripts"]["pip"].strip()
    return [f"{name} = {target}" for name in ("pip", "pip3", f"pip{minor}")]


def make_scripts(
    site: Path, scripts: Path, specifications: list[str], launcher: str, interpreter: str
) -> list[Path]:
    """Console scripts as distlib makes them on Windows: the launcher, a shebang naming
    `interpreter`, and a zip holding the script."""
    sys.path.insert(0, str(site))
    from pip._vendor.distlib.scripts import ScriptMaker  # the installed pip's own

    launcher_bytes = (site / "pip/_vendor/distlib" / launcher).read_bytes()

    class WindowsScriptMaker(ScriptMaker):  # type: ignore[misc]
        def _get_launcher(self, kind: str) -> bytes:
            if kind != "t":  # pip has console scripts only
                raise SystemExit(f"pip asks for a {kind!r} launcher; only the console one is pinned")
            return launcher_bytes

    maker = WindowsScriptMaker(None, str(scripts), add_launchers=True)
    maker._is_nt = True  # distlib reads os.name; the scripts are for Windows
    maker.executable = interpreter
    maker.variants = {""}  # the specifications name every variant
    maker.clobber = True
    return sorted(Path(made) for made in maker.make_multiple(specifications))


def write_record(site: Path, dist_info: str, names: list[str], scripts: list[Path]) -> None:
    """The installed RECORD: the wheel's files, the scripts, INSTALLER and REQUESTED."""
    info = site / dist_info
    (info / "INSTALLER").write_bytes(b"pip\n")
    (info / "REQUESTED").write_bytes(b"")
    record = f"{dist_info}/RECORD"
    paths = sorted({*names, f"{dist_info}/INSTALLER", f"{dist_info}/REQUESTED"} - {record})
    lines = [record_line(path, (site / path).read_bytes()) for path in paths]
    lines += [record_line(f"{SCRIPTS_FROM_SITE}/{script.name}", script.read_bytes()) for script in scripts]
    (site / record).write_text("\n".join(sorted([*lines, f"{record},,"])) + "\n", encoding="utf-8")


def main(tree: Path, minor: str, launcher: str, interpreter: str) -> None:
    wheels = sorted((tree / "Lib/ensurepip/_bundled").glob("pip-*.whl"))
    if len(wheels) != 1:
        raise SystemExit(f"Lib/ensurepip/_bundled holds {len(wheels)} pip wheels, not one")
    site, scripts = tree / "Lib/site-packages", tree / "Scripts"
    dist_info, names = unpack(wheels[0], site)
    specifications = console_scripts(site / dist_info, minor)
    made = make_scripts(site, scripts, specifications, launcher, interpreter)
    write_record(site, dist_info, names, made)
    print(f"pip: {dist_info} into Lib/site-packages, {', '.join(s.name for s in made)} into Scripts")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4])
