"""`pyfreight bench-app`: single-file applications made by `pyfreight embed` with its
default flags, beside PyInstaller's `--onefile` of the same applications.

Three applications: hello world; one that makes a TLS context, an in-memory SQLite query
and JSON; and one that prints a table with `rich` from PyPI (pure Python, with its
dependencies). Each is made both ways, copied alone into an empty folder and started
there with an empty environment; so is the archive's own python3 with the same code
(`python -c`). Runs are interleaved, and the table shows the files' sizes and the
medians of wall time per start. A benchmark command, not a test: it prints a table and
saves JSON; targets are reported, never asserted."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from pyfreight.bench.imports import Measurement, measure
from pyfreight.embed.application import install_third_party, parse_main
from pyfreight.errors import PyfreightError
from pyfreight.formats.safe_archive import DEFAULT_LIMITS, Limits, extract
from pyfreight.logs import say, tail
from pyfreight.paths import Workspace
from pyfreight.python_json import checked_document

# The PyInstaller compared with, and the third-party package app (c) prints with: pinned,
# installed from the package index pip is configured with (PIP_INDEX_URL, pip.conf).
PYINSTALLER = "pyinstaller==6.22.3"
RICH = "rich==15.0.0"
PIP_QUIET = ("--disable-pip-version-check", "--no-input")
# Size targets, bytes of the file per application (docs/embedding.md); start-up must beat
# PyInstaller's and be no slower than python -c.
SIZE_GOALS = {"hello": 8_000_000, "tls-sqlite-json": 15_000_000}


@dataclass(frozen=True)
class App:
    name: str
    code: str  # the package's main.py; its main() is the entry point
    requirements: tuple[str, ...] = ()

    @property
    def package(self) -> str:
        return self.name.replace("-", "_")


APPS = (
    App("hello", 'def main():\n    print("hello world")\n'),
    App(
        "tls-sqlite-json",
        "import json\nimport sqlite3\nimport ssl\n\n\ndef main():\n"
        "    context = ssl.create_default_context()\n"
        '    rows = sqlite3.connect(":memory:").execute("select 6 * 7").fetchall()\n'
        '    print(json.dumps({"verify": context.verify_mode == ssl.CERT_REQUIRED, "rows": rows}))\n',
    ),
    App(
        "rich-table",
        "from rich.console import Console\nfrom rich.table import Table\n\n\ndef main():\n"
        '    table = Table("tool", "files")\n'
        '    table.add_row("pyfreight", "1")\n'
        "    Console(width=60).print(table)\n",
        (RICH,),
    ),
)


def _write_app(app: App, folder: Path) -> Path:
    """The application's source folder (for --app) and its requirements file."""
    src = folder / "src"
    shutil.rmtree(folder, ignore_errors=True)
    (src / app.package).mkdir(parents=True)
    (src / app.package / "__init__.py").write_text("")
    (src / app.package / "main.py").write_text(app.code)
    (folder / "requirements.txt").write_text("".join(f"{r}\n" for r in app.requirements))
    (folder / "entry.py").write_text(f"from {app.package}.main import main\n\nmain()\n")
    return src


def _shared_python(python: str) -> Path:
    """The host Python PyInstaller runs with: it bundles that Python's shared libpython."""
    found = shutil.which(python)
    if found is None:
        raise PyfreightError(f"--host-python {python}: not found; install Debian's python3 or name one")
    shared = subprocess.run(
        [found, "-c", "import sysconfig; print(sysconfig.get_config_var('Py_ENABLE_SHARED'))"],
        capture_output=True,
        text=True,
    )
    if shared.stdout.strip() != "1":
        raise PyfreightError(
            f"--host-python {found}: PyInstaller needs a Python with a shared libpython "
            "(Debian's python3 has one: apt-get install python3 python3-venv libpython3-dev)"
        )
    return Path(found)


def pyinstaller_venv(ws: Workspace, python: str) -> Path:
    """A venv of the host Python with the pinned PyInstaller and rich (made once)."""
    venv = ws.build / "bench-app" / "pyinstaller-venv"
    stamp = venv / "pyfreight-pins"
    wanted = f"{PYINSTALLER} {RICH} {python}"
    if stamp.is_file() and stamp.read_text() == wanted:
        return venv
    shutil.rmtree(venv, ignore_errors=True)
    log = ws.logs / "bench-app-pyinstaller.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    say(f"bench-app: installing {PYINSTALLER} and {RICH} into {venv} (log {log})")
    with log.open("w") as out:
        steps = [
            [str(_shared_python(python)), "-m", "venv", str(venv)],
            [str(venv / "bin" / "python"), "-m", "pip", "install", *PIP_QUIET, PYINSTALLER, RICH],
        ]
        for step in steps:
            if subprocess.run(step, stdout=out, stderr=subprocess.STDOUT).returncode != 0:
                raise PyfreightError(f"bench-app: {step[2]} {step[3]} failed; log {log}:\n{tail(log)}")
    stamp.write_text(wanted)
    return venv


def make_with_pyfreight(archive: Path, app: App, folder: Path, limits: Limits) -> Path:
    from pyfreight.embed.command import embed
    from pyfreight.embed.memory import PackOptions

    src = _write_app(app, folder)
    out = folder / "pyfreight" / app.name
    out.parent.mkdir(parents=True)
    requirements = folder / "requirements.txt" if app.requirements else None
    options = PackOptions(apps=[src], main=parse_main(f"{app.package}.main:main"), requirements=requirements)
    say(f"bench-app: {app.name} with pyfreight embed")
    embed(archive, out, memory=options, strip=True, limits=limits)
    return out


def make_with_pyinstaller(venv: Path, app: App, folder: Path, log: Path) -> Path:
    say(f"bench-app: {app.name} with PyInstaller --onefile (log {log})")
    command = [str(venv / "bin" / "pyinstaller"), "--onefile", "--noconfirm", "--log-level", "WARN"]
    command += ["--name", app.name, "--paths", str(folder / "src"), "--distpath", str(folder / "pyinstaller")]
    command += ["--workpath", str(folder / "pyinstaller-work"), "--specpath", str(folder)]
    command.append(str(folder / "entry.py"))
    with log.open("a") as out:
        if subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, cwd=folder).returncode != 0:
            raise PyfreightError(f"bench-app: PyInstaller failed on {app.name}; log {log}:\n{tail(log)}")
    return folder / "pyinstaller" / app.name


def _alone(executable: Path, folder: Path) -> Path:
    """A copy of `executable` in an empty folder of its own."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    shutil.copy2(executable, folder / executable.name)
    return folder / executable.name


def run_bench_app(
    ws: Workspace, archive: Path, runs: int, host_python: str, limits: Limits = DEFAULT_LIMITS
) -> Path:
    root = ws.build / "bench-app"
    unpacked = root / "archives" / archive.name.removesuffix(".tar.zst")
    if not unpacked.is_dir():
        say(f"bench-app: extracting {archive.name}")
        extract(archive, unpacked, limits)
    document = checked_document(unpacked / "python", archive)
    python = unpacked / "python" / document["python_exe"]
    venv = pyinstaller_venv(ws, host_python)
    log = ws.logs / "bench-app-pyinstaller.log"
    commands: dict[str, list[str]] = {}
    sizes: dict[str, int] = {}
    outputs: dict[str, str] = {}
    for app in APPS:
        folder = root / "apps" / app.name
        made = {
            "pyfreight": make_with_pyfreight(archive, app, folder, limits),
            "PyInstaller": make_with_pyinstaller(venv, app, folder, log),
        }
        for maker, executable in made.items():
            alone = _alone(executable, root / "alone" / maker / app.name)
            sizes[f"{app.name} {maker}"] = alone.stat().st_size
            commands[f"{app.name} {maker}"] = [str(alone)]
        site = folder / "site"
        if app.requirements:
            install_third_party(python, [], folder / "requirements.txt", site, ws.logs / "bench-app-pip.log")
        paths = [str(folder / "src"), *([str(site)] if app.requirements else [])]
        code = f"import sys; sys.path[:0] = {paths!r}; from {app.package}.main import main; main()"
        commands[f"{app.name} python -c"] = [str(python), "-I", "-c", code]
    for label, command in commands.items():
        # Each runs alone, with an empty environment, and says what it says.
        result = subprocess.run(command, capture_output=True, text=True, env={}, cwd=Path(command[0]).parent)
        if result.returncode != 0:
            raise PyfreightError(
                f"bench-app: {label} failed (exit {result.returncode}):\n{result.stderr[-2000:]}"
            )
        outputs[label] = result.stdout
    results = measure(commands, runs, {}, step="bench-app")
    table = render(results, sizes, runs)
    print(table)
    out = ws.build / "bench" / f"bench-app-{document['python_major_minor_version']}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "archive": archive.name,
        "pyinstaller": PYINSTALLER,
        "host_python": str(_shared_python(host_python)),
        "runs": runs,
        "machine": {"cpus": os.cpu_count(), "uname": os.uname().release},
        "bytes": sizes,
        "seconds": {label: m.seconds for label, m in results.items()},
        "medians": {label: m.median for label, m in results.items()},
        "size_goals": SIZE_GOALS,
        "outputs": outputs,
    }
    out.write_text(json.dumps(report, indent=2) + "\n")
    out.with_suffix(".txt").write_text(table + "\n")
    say(f"bench-app: saved {out}")
    return out


def render(results: dict[str, Measurement], sizes: dict[str, int], runs: int) -> str:
    head = (
        f"{'application':18} {'pyfreight':>11} {'PyInstaller':>12} {'pyfreight':>11} "
        f"{'PyInstaller':>12} {'python -c':>10}"
    )
    lines = [f"sizes (MB) and start-up (ms, median of {runs} interleaved runs, alone, empty environment)"]
    lines += [head, "-" * len(head)]
    verdicts = []
    for app in APPS:
        ours, theirs = sizes[f"{app.name} pyfreight"], sizes[f"{app.name} PyInstaller"]
        start = {m: results[f"{app.name} {m}"].median for m in ("pyfreight", "PyInstaller", "python -c")}
        lines.append(
            f"{app.name:18} {ours / 1e6:11.1f} {theirs / 1e6:12.1f} {start['pyfreight'] * 1e3:11.1f} "
            f"{start['PyInstaller'] * 1e3:12.1f} {start['python -c'] * 1e3:10.1f}"
        )
        goal = SIZE_GOALS.get(app.name)
        if goal is not None:
            verdicts.append(
                f"target: {app.name} <= {goal / 1e6:.0f} MB: {_met(ours <= goal)} ({ours / 1e6:.1f})"
            )
        verdicts.append(f"target: {app.name} smaller than PyInstaller's: {_met(ours < theirs)}")
        faster = start["pyfreight"] < start["PyInstaller"]
        verdicts.append(f"target: {app.name} starts faster than PyInstaller's: {_met(faster)}")
        verdicts.append(
            f"target: {app.name} starts no slower than python -c: "
            f"{_met(start['pyfreight'] <= start['python -c'])}"
        )
    return "\n".join([*lines, "", *verdicts])


def _met(ok: bool) -> str:
    return "met" if ok else "NOT MET"
