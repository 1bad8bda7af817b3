"""`pyfreight test-dist ARCHIVE`: runs a distribution archive (full or install_only)
the way a user meets it: unpacked, then checked by check-install in a clean container
of another Debian release at an unusual path; for a full archive, the run_tests
entry of its PYTHON.json runs too."""

from __future__ import annotations

import tempfile
from pathlib import Path

from pyfreight.archives.flavours import recognise
from pyfreight.container.images import ensure_runtime_image
from pyfreight.container.run import Mount, RunSpec, run
from pyfreight.errors import PyfreightError
from pyfreight.formats.elf import tree_target
from pyfreight.formats.safe_archive import DEFAULT_LIMITS, Limits, extract
from pyfreight.leftovers import owned
from pyfreight.logs import say
from pyfreight.paths import Workspace
from pyfreight.python_json import checked_document
from pyfreight.verify.check_install import check_install

MOUNT = "/srv/unpacked dist/python"  # a space, and not where check-install puts trees
RUN_TESTS_ARGS = ["test_json", "test_zlib"]  # quick: proves the entry point runs the suite


def check_distribution(
    archive: Path, ws: Workspace, tests: str = "subset", limits: Limits = DEFAULT_LIMITS
) -> bool:
    ws.scratch.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=ws.scratch, prefix=owned("test-dist")) as scratch:
        tmp = Path(scratch) / "unpacked"
        flavour = recognise([m.name for m in extract(archive, tmp, limits)])
        root = tmp / "python"
        tree = tmp / flavour.install_root if flavour else root
        if flavour is None or not (tree / "bin").is_dir():
            raise PyfreightError(
                f"{archive}: no python/bin or python/install/bin inside; not a distribution archive"
            )
        # PYTHON.json is checked before anything runs
        document = checked_document(root, archive) if flavour.describes_itself else None
        say(f"test-dist: {archive.name} ({flavour.name})")
        if tests != "none" and not flavour.has_test_package:
            # The flavour leaves the test package out by design: its product checks
            # still run, and asking for tests it cannot have is not a failure of it.
            say(f"test-dist: {flavour.name} has no test package; CPython's tests are skipped")
            tests = "none"
        passed = check_install(tree, ws, tests=tests)
        if document is not None:
            script = f"{MOUNT}/{document['run_tests']}"
            python = f"{MOUNT}/{document['python_exe']}"
            spec = RunSpec(
                image=ensure_runtime_image(ws, tree_target(root / document["python_exe"])),
                command=[python, script, *RUN_TESTS_ARGS],
                what="the run_tests entry",
                output="terminal",
                mounts=[Mount(root, MOUNT)],
                name_hint="run-tests",
            )
            say(f"test-dist: run_tests ({document['run_tests']} {' '.join(RUN_TESTS_ARGS)})")
            ran = run(spec, check=False).ok
            print(f"{'PASS' if ran else 'FAIL'}  run_tests entry of PYTHON.json")
            passed = passed and ran
    return passed
