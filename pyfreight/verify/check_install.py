"""`pyfreight check-install`: judges an install tree the way a user meets it. First the
rules of its binaries' format, here (verify/elf_rules.py, pe_rules.py, macho_rules.py);
a tree that breaks them may be anything, and none of it is run. Then the target's
runner (runners/) runs the checks and CPython's tests where its programs run: a clean
container of an older Debian than the builder's holding nothing but the tree, Wine, or
a Mac; where nothing runs them, the rules are all."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path

from pyfreight.container.images import ensure_debian_python_image, load_spec
from pyfreight.container.run import RunSpec, run
from pyfreight.cpython.build import CPythonBuild
from pyfreight.errors import PyfreightError
from pyfreight.formats.untrusted import UntrustedTree, judge_tree
from pyfreight.hashing import file_sha256, json_sha256
from pyfreight.logs import say
from pyfreight.paths import Workspace
from pyfreight.platforms import layout_of, platform_of, target_of_tree
from pyfreight.records import driver_code_digest, exclusive, record_matches, write_record
from pyfreight.runners import runner_for
from pyfreight.runners.cpython_tests import TEST_SUITE_FILE, test_suite_command
from pyfreight.targets import Target
from pyfreight.verify.elf_rules import check_tree
from pyfreight.verify.macho_rules import check_macho_tree
from pyfreight.verify.pe_rules import check_pe_tree

# The rules of each binary format (platforms' binary_format): every binary of the tree
# read, the problems found, one line each.
RULES: dict[str, tuple[str, Callable[[Path, Target], tuple[list, list[str]]]]] = {
    "elf": ("ELF", check_tree),
    "pe": ("PE", check_pe_tree),
    "macho": ("Mach-O", check_macho_tree),
}


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
    """Every check; prints a line per check; True when all passed. The target is the
    build's when it is known, else the one the tree's interpreter was built for."""
    tree = tree.resolve()
    judge_tree(tree)  # before any reader opens a file of it
    target = target or target_of_tree(tree)
    layout = platform_of(target).layout
    if layout_of(tree) is not layout:
        raise PyfreightError(f"{tree}: not a {target.triple} install tree (no {layout.marker} at its top)")
    if tests != "none" and not (tree / layout.stdlib(tree) / "test").is_dir():
        raise PyfreightError(
            f"{tree} has no test package (install_only_stripped archives leave it out): use --tests none"
        )
    label, rules = RULES[platform_of(target).binary_format]
    facts, problems = rules(tree, target)
    say(f"{label} files: {len(facts)}, {len(problems)} problem(s) for {target.triple}")
    for problem in problems:
        print(f"FAIL  {problem}")
    if problems:
        # A tree whose binaries break the rules may be anything: none of it is run.
        raise UntrustedTree(tree, len(problems), label)
    return runner_for(target).check(tree, ws, tests)


def check_build(build: CPythonBuild, ws: Workspace, tests: str = "subset") -> bool:
    """check-install of a build's tree, skipped when it passed before with the same
    inputs: the build, the checks (the driver's code and the test-suite list) and the
    image they run in. Only a pass is recorded, so a failure is always run again."""
    build.spec.target.require("check_install")
    key = json_sha256(
        {
            "build": build.key,
            "tests": tests,
            "runtime_image": runner_for(build.spec.target).runtime_tag(load_spec()),
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
