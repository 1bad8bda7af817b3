"""Running a Windows target's programs here: under Wine, in the target's runtime image
(targets/*.yaml `run: wine`), with no network, as the image's unprivileged user that owns
the Wine prefix made when the image was built, and Wine's own Visual C++ runtime turned
off. Every Windows program this machine runs goes through here: check-install's checks
and CPython's tests, test-dist's run_tests entry, the tree's self-description, embed's
archive python and pip, bench, and a pgo build's training."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from pyfreight.container.images import ensure_wine_runtime, wine_runtime_tag
from pyfreight.container.run import Mount, Output, RunResult, RunSpec, run
from pyfreight.errors import PyfreightError
from pyfreight.leftovers import owned
from pyfreight.logs import say
from pyfreight.paths import IN_CONTAINER_DIR, Workspace
from pyfreight.platforms import WINDOWS_LAYOUT
from pyfreight.runners.base import BenchSupport, BytecodeCompiler, Invocation, Runner
from pyfreight.runners.cpython_tests import test_suite_command
from pyfreight.sources.fetch import fetch_source
from pyfreight.targets import Target

WINE = "wine64"  # on PATH in the runtime image (dockerfiles/wine-runtime.Dockerfile)
RUNNER = "1000:1000"  # the image's `runner`, owner of the Wine prefix
FOLDER = "/work"  # where the folder holding the program is mounted (Wine's Z:\work)
# Wine has built-in copies of Microsoft's Visual C++ runtime, which a clean Windows does
# not: with them every MSVC-built wheel would load here and fail on a user's machine.
# Native only ("n"): a program finds these beside itself (the tree ships them,
# targets/*.yaml pe.redistributed) or fails as it would on Windows.
CLEAN_WINDOWS_DLLS = "vcruntime140=n;vcruntime140_1=n;msvcp140=n"
# Wine's C: drive in the runtime image (its WINEPREFIX, dockerfiles/wine-runtime.Dockerfile):
# a folder mounted below it is C:\NAME to the program.
C_DRIVE = "/home/runner/.wine/drive_c"


def wine_path(mounted_at: str, relative: str) -> str:
    """The Windows name of `relative` below a folder mounted at `mounted_at`: Wine shows
    the container's files on drive Z: (and what is below C_DRIVE on C:)."""
    unix = f"{mounted_at}/{relative}"
    if unix.startswith(C_DRIVE + "/"):
        return "C:" + unix[len(C_DRIVE) :].replace("/", "\\")
    return "Z:" + unix.replace("/", "\\")


def run_windows_program(
    target: Target,
    ws: Workspace,
    folder: Path,
    program: str,
    arguments: Sequence[str] = (),
    what: str = "",
    check: bool = True,
    output: Output = "capture",
    mount_at: str = FOLDER,
    mounts: Sequence[Mount] = (),
    env: Mapping[str, str] | None = None,
    writable: bool = False,
) -> RunResult:
    """Runs `folder`/`program` (a path relative to `folder`, which is mounted read-only,
    or with `writable` writable, at `mount_at`, with `mounts` beside it) with `arguments`
    and `env` under Wine, in `folder`; returns what it printed (`output` "capture"), or
    shows it as it comes ("terminal") or appends it to a log."""
    image = ensure_wine_runtime(ws, target)
    spec = RunSpec(
        image=image,
        command=[WINE, f"{mount_at}/{program}", *arguments],
        what=what or f"{program} under Wine",
        output=output,
        mounts=[Mount(folder, mount_at, read_only=not writable), *mounts],
        # Wine names Unix files in the locale's encoding: in the default C locale, a
        # Windows name with a letter beyond ASCII (as CPython's tests make) cannot exist.
        env={"LC_ALL": "C.UTF-8", **(env or {}), "WINEDLLOVERRIDES": CLEAN_WINDOWS_DLLS},
        user=RUNNER,
        workdir=mount_at,
        name_hint="wine",
    )
    return run(spec, check=check)


CHECK_SCRIPT = IN_CONTAINER_DIR / "windows_checks.py"
SHARED_CHECKS_MODULE = IN_CONTAINER_DIR / "shared_checks.py"  # the script imports it
BYTECODE_MODULE = IN_CONTAINER_DIR / "bytecode.py"  # and these
SIGNAL_STRESS_MODULE = IN_CONTAINER_DIR / "signal_stress.py"
CHECK_WHEEL_MODULE = IN_CONTAINER_DIR / "check_wheel.py"
TLS_MATERIAL = IN_CONTAINER_DIR / "tls"
REGRTEST_SCRIPT = IN_CONTAINER_DIR / "regrtest_wine.py"  # CPython's tests under Wine
# What is copied beside the tree: the checks, what they import, the test runner.
IN_CONTAINER_SCRIPTS = (
    CHECK_SCRIPT, SHARED_CHECKS_MODULE, BYTECODE_MODULE, SIGNAL_STRESS_MODULE, CHECK_WHEEL_MODULE,
    REGRTEST_SCRIPT,
)  # fmt: skip
# The folder of a run_tests run's PYTHONPATH holding its sitecustomize.py, which adapts
# every Python process of the run to Wine (regrtest_wine.py), children included.
WINE_SITE = "pyfreight-wine-site"
# The interpreter's DLL of a Windows tree, GIL or free-threaded: its name is the ABI.
INTERPRETER_DLL = re.compile(r"python3\d+t?\.dll")
TREE_FOLDER = "py freight/python"  # unusual on purpose: a space, as check-install's on Linux


def run_windows_checks(tree: Path, ws: Workspace, tests: str, runner: WineRunner) -> bool:
    """in_container/windows_checks.py by the tree's python.exe, then CPython's tests
    (`tests`), under Wine; a line per check; True when all passed (Wine's known limits
    aside)."""
    target = runner.target
    ws.scratch.mkdir(parents=True, exist_ok=True)
    # Wine's user reads a copy laid out as the checks want it; the tree is not touched.
    with tempfile.TemporaryDirectory(dir=ws.scratch, prefix=owned("check-windows")) as tmp:
        folder = Path(tmp)
        shutil.copytree(tree, folder / TREE_FOLDER, symlinks=True)
        for script in IN_CONTAINER_SCRIPTS:
            shutil.copy2(script, folder / script.name)
        shutil.copytree(TLS_MATERIAL, folder / TLS_MATERIAL.name)
        msvc_wheel = _msvc_wheel(tree, target, ws, folder)
        for path in (folder, *folder.rglob("*")):
            if not path.is_symlink():
                path.chmod(
                    0o755 if path.is_dir() else 0o644 if path.suffix not in (".exe", ".dll") else 0o755
                )
        result = run_windows_program(
            target,
            ws,
            folder,
            f"{TREE_FOLDER}/python.exe",
            [
                CHECK_SCRIPT.name,
                json.dumps(_target_facts(target) | {"msvc_wheel": msvc_wheel}, sort_keys=True),
            ],
            what="check-install under Wine",
            check=False,
        )
        for line in result.stdout.splitlines():
            if line[:4] in ("PASS", "FAIL", "WINE") or line.endswith(" failed"):
                print(line)
        tests_passed = tests == "none" or _run_test_suite(folder, tree, ws, tests, runner)
    return result.ok and tests_passed


def _msvc_wheel(tree: Path, target: Target, ws: Workspace, folder: Path) -> str | None:
    """The pinned MSVC-built wheel for the tree's interpreter ABI (targets/*.yaml
    pe.msvc_wheels, by its python3XX[t].dll), fetched and copied into `folder`; None for a
    target that pins none."""
    if not target.pe.msvc_wheels:
        return None
    dlls = sorted(p.name for p in tree.iterdir() if INTERPRETER_DLL.fullmatch(p.name.lower()))
    if len(dlls) != 1:
        raise PyfreightError(
            f"{tree}: {len(dlls)} interpreter DLLs (python3XX.dll or python3XXt.dll), not one"
        )
    abi = "cp" + dlls[0].lower().removeprefix("python").removesuffix(".dll")
    wheel = target.pe.msvc_wheels.get(abi)
    if wheel is None:
        raise PyfreightError(
            f"targets/{target.triple}.yaml pe.msvc_wheels has no wheel for {abi} ({dlls[0]}): pin one for it"
        )
    shutil.copy(fetch_source(wheel, ws.downloads, log=say), folder / wheel.file)
    return wheel.file


def write_wine_site(folder: Path, sitecustomize: Path, beside: tuple[Path, ...] = ()) -> Path:
    """folder/WINE_SITE: `sitecustomize` as sitecustomize.py, with the modules it imports
    (`beside`) next to it; readable by Wine's user."""
    site = folder / WINE_SITE
    site.mkdir()
    shutil.copy(sitecustomize, site / "sitecustomize.py")
    for module in beside:
        shutil.copy(module, site / module.name)
    for path in (site, *site.iterdir()):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return site


# Seconds a test file may run under Wine before it counts as hung (regrtest's own is
# 15 minutes). The slowest files that pass under Wine (test_multiprocessing_spawn's)
# take about 5 minutes on two loaded cores; a case that waits for what Wine never
# delivers (an ICMP error, a console event) then holds a worker 10, not 15 and again
# 15 when it reruns.
WINE_TEST_TIMEOUT = 600


def _run_test_suite(folder: Path, tree: Path, ws: Workspace, tests: str, runner: WineRunner) -> bool:
    """CPython's tests (`subset` or `full`) by the tree's python.exe under Wine, through
    in_container/regrtest_wine.py, skipping the cases cpython/test-suite.yaml lists."""
    tests_dir = tree / "Lib" / "test"
    if not tests_dir.is_dir():
        raise PyfreightError(f"{tree} has no test package (Lib/test): use --tests none")
    command = test_suite_command(
        f"{TREE_FOLDER}/python.exe",
        tests,
        runner,
        lambda name: (tests_dir / f"{name}.py").is_file() or (tests_dir / name).is_dir(),
        launcher=[REGRTEST_SCRIPT.name],
        # Wine's timing under load is less even than Linux's: a file failing once
        # (test_subprocess did, in one run of five) runs again, and its output shows why.
        rerun=True,
        timeout=WINE_TEST_TIMEOUT,
    )
    say(f"running CPython tests ({tests}) under Wine")
    program, *arguments = command
    result = run_windows_program(
        runner.target,
        ws,
        folder,
        program,
        arguments,
        what="CPython's tests under Wine",
        check=False,
        output="terminal",
    )
    return result.ok


def _target_facts(target: Target) -> dict[str, object]:
    """What the checks need to know of the target (windows_checks.py, argument 1)."""
    return {"platform": target.python_platform_tag, "limits": dict(target.wine.limits)}


# Where describe mounts a tree: C:\install, as the Windows build installed it.
PROBE_FOLDER = "install"
# What adapts CPython's test harness to Wine (in_container/regrtest_wine.py), on a
# run_tests run's PYTHONPATH as C:\WINE_SITE.
WINE_SITECUSTOMIZE = IN_CONTAINER_DIR / "wine_sitecustomize.py"
# Where a path given to the archive's python from outside its work folder is seen.
INPUTS = "/pyfreight-inputs"


class WineRunner(Runner):
    """A Windows target's programs, under Wine in its runtime image."""

    kind = "wine"
    bench = BenchSupport(
        debian=False,
        startup_probe=False,  # it reads Linux's process accounting (wait4, VmHWM)
        against=False,  # --against gives Linux trees
        says="runs under Wine in its runtime image: ours only, no start-up probe",
    )

    def runtime_tag(self, spec: dict) -> str:
        return wine_runtime_tag(spec, self.target)

    def tests_runner_name(self) -> str:
        # A Wine of the target's own architecture, through an emulator, fails cases of its own
        return "wine" if self.target.wine.emulator is None else "emulated-wine"

    def runtime_image(self, ws: Workspace) -> str:
        return ensure_wine_runtime(ws, self.target)

    def run_program(
        self,
        ws: Workspace,
        folder: Path,
        program: str,
        arguments: Sequence[str],
        *,
        what: str,
        output: Output,
        env: Mapping[str, str],
        writable: bool,
    ) -> RunResult:
        """A program of `folder` (mounted at FOLDER) under Wine, not checked: a pgo
        build's training (cpython/windows_training.py)."""
        return run_windows_program(
            self.target, ws, folder, program, arguments, what, False, output, env=env, writable=writable
        )

    def describe(self, tree: Path, ws: Workspace, script: Path) -> dict | None:
        result = run_windows_program(
            self.target,
            ws,
            tree,
            WINDOWS_LAYOUT.interpreter(tree),
            [f"C:\\{script.name}"],
            what=f"describing {tree.name} under Wine",
            mount_at=f"{C_DRIVE}/{PROBE_FOLDER}",
            mounts=[Mount(script, f"{C_DRIVE}/{script.name}")],
        )
        facts: dict = json.loads(result.stdout)
        return facts

    def check(self, tree: Path, ws: Workspace, tests: str) -> bool:
        return run_windows_checks(tree, ws, tests, self)

    def run_tests_entry(
        self, root: Path, python_exe: str, run_tests: str, arguments: Sequence[str], ws: Workspace
    ) -> bool | None:
        with tempfile.TemporaryDirectory(dir=ws.scratch, prefix=owned("wine-site")) as folder:
            site = write_wine_site(Path(folder), WINE_SITECUSTOMIZE, beside=(REGRTEST_SCRIPT,))
            return run_windows_program(
                self.target,
                ws,
                root,
                python_exe,
                [run_tests, *arguments],
                what="the run_tests entry under Wine",
                check=False,
                output="terminal",
                mounts=[Mount(site, f"{C_DRIVE}/{WINE_SITE}")],
                env={"PYTHONPATH": wine_path(C_DRIVE, WINE_SITE)},
            ).ok

    def run_archive_python(
        self, python_exe: Path, ws: Workspace, work: Path, arguments: Sequence[str | Path], log: TextIO
    ) -> tuple[int, str]:
        work = work.resolve()
        mounts: list[Mount] = []
        words: list[str] = []
        for argument in arguments:
            if not isinstance(argument, Path):
                words.append(argument)
                continue
            path = argument.resolve()
            if path.is_relative_to(work):
                words.append(path.relative_to(work).as_posix() or ".")
                continue
            inside = f"{INPUTS}/{len(mounts)}"
            if path.is_dir():
                mounts.append(Mount(path, inside))
                words.append(inside)
            else:
                mounts.append(Mount(path.parent, inside))
                words.append(f"{inside}/{path.name}")
        # Wine runs as the runtime image's user, which writes its output into the work folder.
        mode = work.stat().st_mode & 0o7777
        work.chmod(0o777)
        try:
            result = run_windows_program(
                self.target,
                ws,
                work,
                python_exe.relative_to(work).as_posix(),
                words,
                what=f"{python_exe.name} of the archive under Wine",
                check=False,
                mounts=mounts,
                writable=True,
            )
        finally:
            work.chmod(mode)
        log.write(result.stderr)
        return result.returncode, result.stdout

    def bytecode_compiler(
        self, ws: Workspace, tree: Path, inside: str, build_python: Path | None
    ) -> BytecodeCompiler:
        # A Windows tree is installed by its build where it runs (nothing is relocated).
        raise PyfreightError(f"{self.target.triple}: a Windows tree's bytecode is not compiled again")

    def program_name(self, mounted_at: str, relative: str) -> str:
        return wine_path(mounted_at, relative)

    def invocation(self, command: list[str], env: Mapping[str, str]) -> Invocation:
        # As the Wine prefix's owner, in its home; Wine's own VC runtime off.
        wine_env = {**env, "LC_ALL": "C.UTF-8", "WINEDLLOVERRIDES": CLEAN_WINDOWS_DLLS}
        return Invocation([WINE, *command], wine_env, RUNNER)
