"""Single-file applications (`pyfreight embed --memory-importer --main …`): what the
executable runs when started, and the application's third-party packages.

pip of the archive's own interpreter installs the packages (so wheel tags match that
interpreter) into a scratch folder. Pure-Python distributions are packed into the
executable with their .dist-info (importlib.metadata finds them there). Distributions
with compiled extension modules, and modules named with --filesystem, go to a folder
beside the executable, `<executable>-packages/`, which the executable puts on sys.path
after its packed modules: there they are ordinary files, so extension modules load and
code that opens files next to its `__file__` finds them."""

from __future__ import annotations

import keyword
import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pyfreight.errors import PyfreightError
from pyfreight.logs import say, tail

PACKAGES_SUFFIX = "-packages"
# Written into a packages folder we made, so that a later embed may replace it; a folder
# of that name without it is the user's, and is never touched.
MARKER = ".pyfreight-packages"
DOTTED = r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*"
MAIN = re.compile(rf"(?P<module>{DOTTED})(?::(?P<function>{DOTTED}))?", re.ASCII)
EXTENSION_SUFFIXES = (".so", ".pyd")


@dataclass(frozen=True)
class MainSpec:
    module: str
    function: str | None  # None: run the module as `python -m` does

    def start_code(self) -> str:
        """The code main.c runs (as `-c`, with sys.argv untouched) to start the application."""
        if self.function is None:
            # What `python -m MODULE` calls, but leaving sys.argv[0] the executable's name.
            return f"import runpy\nrunpy._run_module_as_main({self.module!r}, False)\n"
        return (
            "import sys\nfrom importlib import import_module\n"
            f"sys.exit(import_module({self.module!r}).{self.function}())\n"
        )


def parse_main(text: str) -> MainSpec:
    match = MAIN.fullmatch(text)
    if match is None or any(keyword.iskeyword(part) for part in re.split(r"[.:]", text)):
        raise PyfreightError(
            f"--main {text!r}: expected MODULE or MODULE:FUNCTION with dotted Python names, "
            "e.g. mycli or mycli.cli:main"
        )
    return MainSpec(match["module"], match["function"])


def check_package_inputs(wheels: Sequence[Path], requirements: Path | None) -> None:
    for wheel in wheels:
        if not (wheel.is_file() and wheel.name.endswith(".whl")):
            raise PyfreightError(f"--wheel {wheel}: not a wheel file (.whl)")
    if requirements is not None and not requirements.is_file():
        raise PyfreightError(f"--requirements {requirements}: no such file")


def install_third_party(
    python: Path, wheels: Sequence[Path], requirements: Path | None, site: Path, log: Path
) -> None:
    """pip install --target `site` of the wheels and the requirements file, binary only.
    Wheels alone install offline (--no-index: their dependencies must be given too); a
    requirements file resolves through pip's own configuration (PIP_INDEX_URL, pip.conf)."""
    check_package_inputs(wheels, requirements)
    command = [str(python), "-I", "-m", "pip", "install", "--target", str(site), "--only-binary", ":all:"]
    command += ["--no-compile", "--disable-pip-version-check", "--no-warn-script-location", "--no-input"]
    command += ["--no-index"] if requirements is None else ["-r", str(requirements.resolve())]
    command += [str(w.resolve()) for w in wheels]
    say(f"embed: installing the application's packages with the archive's pip (log {log})")
    run_pip(command, "install the application's packages", log)


def run_pip(command: Sequence[str], what: str, log: Path) -> None:
    """Runs a pip command, its output appended to `log`; stops with the log's tail."""
    with log.open("a") as out:
        result = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        raise PyfreightError(f"embed: pip could not {what}; log {log}:\n{tail(log)}")


def _distribution_entries(site: Path) -> list[tuple[set[str], bool]]:
    """Per installed distribution: its top-level entries in `site` (from RECORD; only
    names `site` really holds) and whether any of its files is a compiled extension
    module or shared library."""
    present = {p.name for p in site.iterdir()}
    distributions = []
    for info in sorted(site.glob("*.dist-info")):
        record = info / "RECORD"
        names = {info.name}
        compiled = False
        if record.is_file():
            for line in record.read_text(errors="replace").splitlines():
                path = line.rsplit(",", 2)[0] if line.count(",") >= 2 else line
                top = path.split("/", 1)[0]
                if top in present:
                    names.add(top)
                compiled |= _is_compiled(path)
        distributions.append((names, compiled))
    return distributions


def _is_compiled(path: str) -> bool:
    return path.endswith(EXTENSION_SUFFIXES) or ".so." in Path(path).name


def split_site(site: Path, packed: Path, on_disk: Path) -> list[str]:
    """Moves what pip installed into `site` to `packed` (pure Python) or `on_disk`:
    a top-level entry goes to disk when any distribution installing into it has a
    compiled file (distributions may share a folder, e.g. a namespace package), a
    .dist-info with its distribution. Returns the top-level module names on disk.
    Console scripts (bin/) are left out: --main is the executable's entry point."""
    packed.mkdir(parents=True, exist_ok=True)
    on_disk.mkdir(parents=True, exist_ok=True)
    distributions = _distribution_entries(site)
    compiled_names = {name for names, compiled in distributions if compiled for name in names}
    disk_modules = []
    for entry in sorted(site.iterdir(), key=lambda p: p.name):
        if entry.name in ("bin", "__pycache__"):
            continue
        if entry.is_dir():
            unlisted_compiled = any(_is_compiled(p.name) for p in entry.rglob("*") if p.is_file())
        else:
            unlisted_compiled = _is_compiled(entry.name)
        beside = entry.name in compiled_names or unlisted_compiled
        shutil.move(entry, (on_disk if beside else packed) / entry.name)
        if beside and not entry.name.endswith((".dist-info", ".libs")):
            disk_modules.append(entry.name.split(".", 1)[0])
    return sorted(set(disk_modules))


def find_top_level(name: str, folders: Sequence[Path]) -> Path | None:
    """The module or package `name` (top level) in the first of `folders` holding it."""
    if not name.isidentifier():
        return None
    for folder in folders:
        for candidate in (folder / name, folder / f"{name}.py"):
            if candidate.exists():
                return candidate
    return None


def packages_folder(executable: Path) -> Path:
    """`<executable>-packages/`, checked to be free or written by an earlier embed: a
    folder of that name that pyfreight did not write is never replaced."""
    folder = executable.with_name(executable.name + PACKAGES_SUFFIX)
    if folder.is_symlink() or (folder.exists() and not (folder / MARKER).is_file()):
        raise PyfreightError(
            f"{folder} exists and was not written by pyfreight embed: move it away or choose another -o"
        )
    return folder


def write_packages_folder(executable: Path, staged: Path) -> Path | None:
    """Replaces `<executable>-packages/` with `staged` (renamed into place once complete);
    with nothing staged, removes a packages folder an earlier embed wrote."""
    folder = packages_folder(executable)
    has_content = staged.is_dir() and any(staged.iterdir())
    if not has_content:
        if folder.exists():
            shutil.rmtree(folder)
        return None
    (staged / MARKER).write_text("written by pyfreight embed; replaced by the next embed of this name\n")
    # Leftovers of an interrupted embed of this name (any process), then this one's.
    for leftover in folder.parent.glob(f".{folder.name}.*.tmp"):
        shutil.rmtree(leftover, ignore_errors=True)
    for leftover in folder.parent.glob(f".{folder.name}.*.old"):
        shutil.rmtree(leftover, ignore_errors=True)
    temporary = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
    previous = folder.with_name(f".{folder.name}.{os.getpid()}.old")
    shutil.copytree(staged, temporary, symlinks=True)
    if folder.exists():
        folder.rename(previous)
    temporary.rename(folder)
    shutil.rmtree(previous, ignore_errors=True)
    return folder
