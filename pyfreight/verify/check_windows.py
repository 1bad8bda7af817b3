"""check-install for a Windows tree: the PE rules on every image (verify/pe_rules.py),
then in_container/windows_checks.py run by the tree's own python.exe under Wine, in the
target's runtime image with no network, from a folder with a space in its name. Checks
the pinned Wine cannot pass (the target's `run.wine.limits`) still run and are reported
as WINE with the reason."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path

from pyfreight.container.wine import FOLDER, run_windows_program, wine_path
from pyfreight.errors import PyfreightError
from pyfreight.formats.pe import pe_image
from pyfreight.formats.untrusted import UntrustedTree
from pyfreight.leftovers import owned
from pyfreight.logs import say
from pyfreight.paths import IN_CONTAINER_DIR, Workspace
from pyfreight.sources.fetch import fetch_source
from pyfreight.targets import Target, all_targets
from pyfreight.verify.cpython_tests import test_suite_command
from pyfreight.verify.pe_rules import check_pe_tree

CHECK_SCRIPT = IN_CONTAINER_DIR / "windows_checks.py"
SHARED_CHECKS_MODULE = IN_CONTAINER_DIR / "shared_checks.py"  # the script imports it
BYTECODE_MODULE = IN_CONTAINER_DIR / "bytecode.py"  # and these
SIGNAL_STRESS_MODULE = IN_CONTAINER_DIR / "signal_stress.py"
CHECK_WHEEL_MODULE = IN_CONTAINER_DIR / "check_wheel.py"
TLS_MATERIAL = IN_CONTAINER_DIR / "tls"
REGRTEST_SCRIPT = IN_CONTAINER_DIR / "regrtest_wine.py"  # CPython's tests under Wine
WINE_PROCESS_MODULE = IN_CONTAINER_DIR / "wine_process.py"  # adapts a process to Wine
# What is copied beside the tree: the checks, what they import, the test runner.
IN_CONTAINER_SCRIPTS = (
    CHECK_SCRIPT, SHARED_CHECKS_MODULE, BYTECODE_MODULE, SIGNAL_STRESS_MODULE, CHECK_WHEEL_MODULE,
    REGRTEST_SCRIPT, WINE_PROCESS_MODULE
)  # fmt: skip
# The folder of a Wine run's PYTHONPATH holding its sitecustomize.py, which adapts every
# Python process of the run to Wine (wine_process.py), children included.
WINE_SITE = "pyfreight-wine-site"
# The interpreter's DLL of a Windows tree, GIL or free-threaded: its name is the ABI.
INTERPRETER_DLL = re.compile(r"python3\d+t?\.dll")
TREE_FOLDER = "py freight/python"  # unusual on purpose: a space, as check-install's on Linux


def windows_tree_target(tree: Path) -> Target | None:
    """The target of a Windows tree, from its python.exe's PE machine; None for a tree
    with nothing named python.exe at its top. Anything else named so (a folder, a link,
    a file that is no PE image) raises, in one line."""
    executable = tree / "python.exe"
    if not executable.exists() and not executable.is_symlink():
        return None
    # Raises, naming it, for all but a regular file of a bounded size holding a PE image.
    facts = pe_image(executable, tree)
    found = [t for t in all_targets().values() if t.pe_machine == facts.machine]
    if not found:
        raise PyfreightError(f"{executable}: no target in targets/ builds {facts.machine} PE files")
    return found[0]


def check_windows_install(tree: Path, ws: Workspace, tests: str, target: Target) -> bool:
    """Every check; a line per check; True when all passed (Wine's known limits aside)."""
    facts, problems = check_pe_tree(tree, target)
    say(f"PE files: {len(facts)}")
    for problem in problems:
        print(f"FAIL  {problem}")
    if problems:
        # A tree whose images break the rules may be anything: none of it is run.
        raise UntrustedTree(tree, len(problems), "PE")
    ws.scratch.mkdir(parents=True, exist_ok=True)
    # Wine's user reads a copy laid out as the checks want it; the tree is not touched.
    with tempfile.TemporaryDirectory(dir=ws.scratch, prefix=owned("check-windows")) as tmp:
        folder = Path(tmp)
        shutil.copytree(tree, folder / TREE_FOLDER, symlinks=True)
        for script in IN_CONTAINER_SCRIPTS:
            shutil.copy2(script, folder / script.name)
        shutil.copytree(TLS_MATERIAL, folder / TLS_MATERIAL.name)
        msvc_wheel = _msvc_wheel(tree, target, ws, folder)
        write_wine_site(folder, WINE_PROCESS_MODULE)
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
            env={"PYTHONPATH": wine_path(FOLDER, WINE_SITE)},
        )
        for line in result.stdout.splitlines():
            if line[:4] in ("PASS", "FAIL", "WINE") or line.endswith(" failed"):
                print(line)
        tests_passed = tests == "none" or _run_test_suite(folder, tree, ws, tests, target)
    return result.ok and not problems and tests_passed


def _msvc_wheel(tree: Path, target: Target, ws: Workspace, folder: Path) -> str | None:
    """The pinned MSVC-built wheel for the tree's interpreter ABI (targets/*.yaml
    msvc_wheels, by its python3XX[t].dll), fetched and copied into `folder`; None for a
    target that pins none."""
    if not target.msvc_wheels:
        return None
    dlls = sorted(p.name for p in tree.iterdir() if INTERPRETER_DLL.fullmatch(p.name.lower()))
    if len(dlls) != 1:
        raise PyfreightError(
            f"{tree}: {len(dlls)} interpreter DLLs (python3XX.dll or python3XXt.dll), not one"
        )
    abi = "cp" + dlls[0].lower().removeprefix("python").removesuffix(".dll")
    wheel = target.msvc_wheels.get(abi)
    if wheel is None:
        raise PyfreightError(
            f"targets/{target.triple}.yaml msvc_wheels has no wheel for {abi} ({dlls[0]}): pin one for it"
        )
    shutil.copy(fetch_source(wheel, ws.downloads, log=say), folder / wheel.file)
    return wheel.file


def write_wine_site(folder: Path, sitecustomize: Path, beside: tuple[Path, ...] = ()) -> Path:
    """folder/WINE_SITE: `sitecustomize` as sitecustomize.py, with the modules it imports
    (`beside`, and wine_process.py) next to it; readable by Wine's user."""
    site = folder / WINE_SITE
    site.mkdir()
    shutil.copy(sitecustomize, site / "sitecustomize.py")
    for module in {WINE_PROCESS_MODULE, *beside}:
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


def _run_test_suite(folder: Path, tree: Path, ws: Workspace, tests: str, target: Target) -> bool:
    """CPython's tests (`subset` or `full`) by the tree's python.exe under Wine, through
    in_container/regrtest_wine.py, skipping the cases cpython/test-suite.yaml lists."""
    tests_dir = tree / "Lib" / "test"
    if not tests_dir.is_dir():
        raise PyfreightError(f"{tree} has no test package (Lib/test): use --tests none")
    command = test_suite_command(
        f"{TREE_FOLDER}/python.exe",
        tests,
        lambda name: (tests_dir / f"{name}.py").is_file() or (tests_dir / name).is_dir(),
        runner=target.runner,
        libc=target.libc,
        os_name=target.os,
        launcher=[REGRTEST_SCRIPT.name],
        # Wine's timing under load is less even than Linux's: a file failing once
        # (test_subprocess did, in one run of five) runs again, and its output shows why.
        rerun=True,
        timeout=WINE_TEST_TIMEOUT,
    )
    say(f"running CPython tests ({tests}) under Wine")
    program, *arguments = command
    result = run_windows_program(
        target,
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
    return {"platform": target.python_platform_tag, "limits": dict(target.wine_limits)}
