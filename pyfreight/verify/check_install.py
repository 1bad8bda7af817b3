"""`pyfreight check-install`: judges an install tree the way a user meets it, in a
clean container of an older Debian than the builder's, holding nothing but the tree,
mounted read-only at a path with a space in it."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path

from pyfreight.container.images import (
    ensure_debian_python_image,
    ensure_runtime_image,
    load_spec,
    runtime_tag,
)
from pyfreight.container.run import Mount, RunSpec, run
from pyfreight.cpython.build import CPythonBuild
from pyfreight.errors import PyfreightError
from pyfreight.formats.elf import interpreter_identity, tree_target
from pyfreight.formats.macho import is_macho
from pyfreight.formats.untrusted import judge_tree
from pyfreight.hashing import file_sha256, json_sha256
from pyfreight.logs import say
from pyfreight.paths import IN_CONTAINER_DIR, Workspace
from pyfreight.platforms import installed_python_name
from pyfreight.records import driver_code_digest, exclusive, record_matches, write_record
from pyfreight.targets import Target
from pyfreight.verify.check_macos import check_macos_install
from pyfreight.verify.check_windows import check_windows_install, windows_tree_target
from pyfreight.verify.cpython_tests import TEST_SUITE_FILE, test_suite_command
from pyfreight.verify.elf_rules import check_tree
from pyfreight.verify.macho_rules import macho_target

CHECK_SCRIPT = IN_CONTAINER_DIR / "interpreter_checks.py"
MOUNT = "/opt/py freight/python"  # unusual on purpose: a space, and not /install
WRITABLE_COPY = "/tmp/py-copy"  # where --tests full copies the tree


def _has_test(tree: Path, python: str) -> Callable[[str], bool]:
    tests_dir = tree / "lib" / python / "test"
    return lambda name: bool(list(tests_dir.glob(f"{name}.py")) + list(tests_dir.glob(f"{name}/")))


def check_debian_test_suite(ws: Workspace, minor: str, tests: str) -> bool:
    """CPython's test suite of Debian's own python`minor` (with its testsuite package),
    in its image, with no network, the same ignore list and the same -j2 as our trees
    get: the comparison for our failures. Debian's stdlib is writable there (root)."""
    debian = ensure_debian_python_image(ws, minor)
    if debian is None:
        raise PyfreightError(
            f"dockerfiles/images.yaml names no Debian suite serving CPython {minor} (debian_python)"
        )
    image, version = debian
    command = test_suite_command(f"/usr/bin/python{minor}", tests)
    say(f"check-install --debian: CPython's tests ({tests}) on Debian's python{minor} {version}")
    spec = RunSpec(
        image=image,
        command=["sh", "-c", f"cd /tmp && {shlex.join(command)}"],
        what=f"the test suite of Debian's python{minor}",
        output="terminal",
        name_hint="check-debian",
    )
    return run(spec, check=False).ok


def check_install(tree: Path, ws: Workspace, tests: str = "subset", target: Target | None = None) -> bool:
    """Runs every check; prints a line per check; True when all passed. The target is the
    build's when it is known, else the one the tree's interpreter was linked for."""
    tree = tree.resolve()
    judge_tree(tree)  # before any reader opens a file of it
    windows = _pe_target(tree, target)
    if windows is not None:
        return check_windows_install(tree, ws, tests, windows)
    python = installed_python_name(tree)
    if is_macho(tree / "bin" / python):
        return check_macos_install(tree, tests, target or macho_target(tree / "bin" / python))
    if tests != "none" and not (tree / "lib" / python / "test").is_dir():
        raise PyfreightError(
            f"{tree} has no test package (install_only_stripped archives leave it out): use --tests none"
        )
    target = target or tree_target(tree / "bin" / python)
    static = interpreter_identity(tree / "bin" / python)[1] is None
    facts, problems = check_tree(tree, target)
    newest = max((f.glibc for f in facts if f.glibc), default=None)
    say(f"ELF files: {len(facts)}; newest GLIBC needed: {'.'.join(map(str, newest or ()))}")
    for problem in problems:
        print(f"FAIL  {problem}")
    image = ensure_runtime_image(ws, target)
    script = (
        f'set -eu; ln -s "{MOUNT}/bin/{python}" /usr/local/bin/pf-python; '
        # through a symlink from another directory, from another working directory
        'cd /tmp && pf-python -c "import sys, os; assert os.path.realpath(sys.prefix) == '
        f"'{MOUNT}', sys.prefix\" && echo 'PASS  runs through a symlink' && "
        f'"{MOUNT}/bin/{python}" /check/interpreter_checks.py'
    )
    if tests == "full":
        # Some tests write beside the stdlib (compiled files, test data); the mounted
        # tree is read-only, so the whole suite runs on a writable copy of it.
        command = shlex.join(
            test_suite_command(
                f"{WRITABLE_COPY}/bin/{python}",
                tests,
                runner=target.runner,
                libc=target.libc,
                os_name=target.os,
                static=static,
            )
        )
        script += (
            f' && cp -a "{MOUNT}" {WRITABLE_COPY} && echo "running CPython tests (full, on a writable copy)"'
            f" && cd /tmp && {command}"
        )
    elif tests != "none":
        command = shlex.join(
            test_suite_command(
                f"{MOUNT}/bin/{python}",
                tests,
                _has_test(tree, python),
                runner=target.runner,
                libc=target.libc,
                os_name=target.os,
                static=static,
            )
        )
        script += f" && echo 'running CPython tests ({tests})' && cd /tmp && {command}"
    spec = RunSpec(
        image=image,
        command=["sh", "-c", script],
        what="check-install",
        output="terminal",
        mounts=[Mount(tree, MOUNT), Mount(CHECK_SCRIPT.parent, "/check")],
        name_hint="check-install",
    )
    return run(spec, check=False).ok and not problems


def _pe_target(tree: Path, target: Target | None) -> Target | None:
    """The target of a tree of PE files (python.exe at its top): the build's, or the one
    of the executable's machine; None for any other tree."""
    if target is not None:
        return target if target.pe_machine else None
    return windows_tree_target(tree)


def check_build(build: CPythonBuild, ws: Workspace, tests: str = "subset") -> bool:
    """check-install of a build's tree, skipped when it passed before with the same
    inputs: the build, the checks (the driver's code and the test-suite list) and the
    image they run in. Only a pass is recorded, so a failure is always run again."""
    build.spec.target.require("check_install")
    if not build.spec.target.runs_here:  # macOS: its Mach-O rules (and on a Mac, its runs)
        return check_macos_install(build.tree, tests, build.spec.target)
    key = json_sha256(
        {
            "build": build.key,
            "tests": tests,
            "runtime_image": runtime_tag(load_spec(), build.spec.target),
            "driver": driver_code_digest(),
            "test_suite": file_sha256(TEST_SUITE_FILE),
        }
    )
    record = ws.build / f"{build.tree.name}.check-{tests}.json"
    with exclusive(record, "check-install"):
        if record_matches(record, key):
            say(f"check-install: passed before with the same inputs ({record.name})")
            return True
        record.unlink(missing_ok=True)
        passed = check_install(build.tree, ws, tests=tests, target=build.spec.target)
        if passed:
            write_record(record, {"key": key, "passed": True, "tests": tests})
        return passed
