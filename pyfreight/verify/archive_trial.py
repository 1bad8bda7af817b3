"""`pyfreight test-dist ARCHIVE`: runs a distribution archive (full or install_only)
the way a user meets it: unpacked, then checked by check-install in a clean container
of another Debian release at an unusual path; for a full archive, the run_tests
entry of its PYTHON.json runs too."""

from __future__ import annotations

from pathlib import Path

from pyfreight.archives.flavours import recognise
from pyfreight.errors import PyfreightError
from pyfreight.formats.safe_archive import DEFAULT_LIMITS, Limits, extract
from pyfreight.leftovers import owned, scratch_folder
from pyfreight.logs import say
from pyfreight.paths import Workspace
from pyfreight.platforms import layout_of, target_of_tree
from pyfreight.python_json import checked_document
from pyfreight.runners import runner_for
from pyfreight.verify.check_install import check_install
from pyfreight.verify.objects import object_problems

RUN_TESTS_ARGS = ["test_json", "test_zlib"]  # quick: proves the entry point runs the suite


def check_distribution(
    archive: Path, ws: Workspace, tests: str = "subset", limits: Limits = DEFAULT_LIMITS
) -> bool:
    ws.scratch.mkdir(parents=True, exist_ok=True)
    with scratch_folder(owned("test-dist"), ws.scratch) as scratch:
        tmp = scratch / "unpacked"
        flavour = recognise([m.name for m in extract(archive, tmp, limits)])
        root = tmp / "python"
        tree = tmp / flavour.install_root if flavour else root
        if flavour is None or layout_of(tree) is None:
            raise PyfreightError(
                f"{archive}: no install tree inside (python/bin/ or python/python.exe, or the same "
                "below python/install/); not a distribution archive"
            )
        # PYTHON.json is checked before anything runs
        document = checked_document(root, archive) if flavour.describes_itself else None
        if document is not None:
            _check_programs(root, document, archive)
            _check_objects(root, archive)
        say(f"test-dist: {archive.name} ({flavour.name})")
        if tests != "none" and not flavour.has_test_package:
            # The flavour leaves the test package out by design: its product checks
            # still run, and asking for tests it cannot have is not a failure of it.
            say(f"test-dist: {flavour.name} has no test package; CPython's tests are skipped")
            tests = "none"
        try:
            passed = check_install(tree, ws, tests=tests)
        except PyfreightError as exc:
            # Named by the archive and its member, not the folder it was unpacked to,
            # which is gone when the user reads the message.
            message = str(exc)
            for unpacked in (f"{tmp.resolve()}/", f"{tmp}/"):  # the longer first
                message = message.replace(unpacked, f"{archive}: ")
            raise PyfreightError(message) from None
        if document is not None:
            say(f"test-dist: run_tests ({document['run_tests']} {' '.join(RUN_TESTS_ARGS)})")
            ran = _run_tests_entry(root, document, tree, ws)
            if ran is None:
                print("SKIP  run_tests entry of PYTHON.json: its programs cannot run on this machine")
            else:
                print(f"{'PASS' if ran else 'FAIL'}  run_tests entry of PYTHON.json")
                passed = passed and ran
    return passed


def _check_programs(root: Path, document: dict, archive: Path) -> None:
    """What PYTHON.json names to run is a regular file inside the archive, not a folder,
    a fifo or a link leading out."""
    for key in ("python_exe", "run_tests"):
        path = (root / document[key]).resolve()
        if not path.is_relative_to(root.resolve()) or not path.is_file():
            raise PyfreightError(
                f"{archive}: PYTHON.json's {key} ({document[key]}) is not a file inside the archive; "
                "the archive is not trusted"
            )


def _check_objects(root: Path, archive: Path) -> None:
    """The objects and static libraries packers link (build/) follow the object rules
    (verify/objects.py: their symbols' names, in every format), before anything runs."""
    problems = object_problems(root / "build", "python/build")
    if problems:
        member, rule = problems[0]
        more = (
            f" (and {len(problems) - 1} more problem(s): pyfreight validate lists them)"
            if problems[1:]
            else ""
        )
        raise PyfreightError(f"{archive}: {member}: {rule}{more}; the archive is not trusted")


def _run_tests_entry(root: Path, document: dict, tree: Path, ws: Workspace) -> bool | None:
    """The run_tests script of PYTHON.json, by its python_exe, where the tree's target's
    programs run (runners/); None where they do not run on this machine."""
    runner = runner_for(target_of_tree(tree))
    return runner.run_tests_entry(root, document["python_exe"], document["run_tests"], RUN_TESTS_ARGS, ws)
