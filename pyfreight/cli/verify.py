"""The commands that judge what was built: check-install, validate, test-dist and reproduce."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from pyfreight.cli.common import SharedOptions, Subparsers, limits_of
from pyfreight.errors import PyfreightError
from pyfreight.paths import default_workspace

if TYPE_CHECKING:
    pass


def cmd_check_install(args: argparse.Namespace) -> None:
    from pyfreight.cpython.versions import cpython_source
    from pyfreight.verify.check_install import check_debian_test_suite, check_install

    if args.debian:
        if args.tree:
            raise PyfreightError("check-install --debian runs Debian's python, not a tree: leave TREE out")
        if args.tests == "none":
            raise PyfreightError("check-install --debian runs CPython's tests: give --tests subset or full")
        minor = ".".join(cpython_source(args.python).version.split(".")[:2])
        if not check_debian_test_suite(default_workspace(), minor, args.tests):
            raise PyfreightError(f"Debian's python{minor}: its test suite failed (see above)")
        return
    if not args.tree:
        raise PyfreightError(
            "check-install needs TREE (an install tree, e.g. build/cpython-3.14.7-noopt-…) or --debian"
        )
    if not check_install(Path(args.tree), default_workspace(), tests=args.tests):
        raise PyfreightError(f"{args.tree}: the install tree failed checks (see above)")


def cmd_validate(args: argparse.Namespace) -> None:
    from pyfreight.verify.validate import validate

    failed = 0
    for archive in args.archives:
        problems = validate(Path(archive), limits=limits_of(args.max_bytes, args.max_members))
        for problem in problems:
            print(f"FAIL  {problem}")
        print(f"{archive}: {'passed' if not problems else f'{len(problems)} problem(s)'}")
        failed += bool(problems)
    if failed:
        raise PyfreightError(f"{failed} archive(s) failed validation")


def cmd_test_dist(args: argparse.Namespace) -> None:
    from pyfreight.verify.archive_trial import check_distribution

    for archive in args.archives:
        if not check_distribution(
            Path(archive),
            default_workspace(),
            tests=args.tests,
            limits=limits_of(args.max_bytes, args.max_members),
        ):
            raise PyfreightError(f"{archive}: the distribution failed its checks (see above)")


def cmd_reproduce(args: argparse.Namespace) -> None:
    from pyfreight.pipeline.reproduce import reproduce

    result = reproduce(
        Path(args.archive),
        default_workspace(),
        jobs=args.jobs,
        limits=limits_of(args.max_bytes, args.max_members),
    )
    if not result.identical:
        raise PyfreightError(f"{args.archive}: not reproduced; first difference: {result.first_difference}")
    print(f"{args.archive}: reproduced, byte for byte identical")


def register(sub: Subparsers, shared: SharedOptions) -> None:
    """Adds this module's commands to the command line."""
    p = sub.add_parser(
        "check-install",
        parents=shared.parents("tests", "python"),
        help="check an install tree in a clean older Debian",
    )
    p.add_argument("tree", nargs="?", help="the install tree (e.g. build/cpython-3.14.7-noopt-…)")
    p.add_argument(
        "--debian",
        action="store_true",
        help="instead, run CPython's tests on Debian's own python of --python (the comparison)",
    )
    p.set_defaults(func=cmd_check_install)

    p = sub.add_parser(
        "validate",
        parents=shared.parents("limits"),
        help="static checks of distribution archives (layout, PYTHON.json, ELF)",
    )
    p.add_argument("archives", nargs="+", metavar="ARCHIVE")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser(
        "test-dist",
        parents=shared.parents("tests", "limits"),
        help="unpack distribution archives and run the product checks on them",
    )
    p.add_argument("archives", nargs="+", metavar="ARCHIVE")
    p.set_defaults(func=cmd_test_dist)

    p = sub.add_parser(
        "reproduce",
        parents=shared.parents("jobs", "limits"),
        help="rebuild a full archive from scratch and compare it byte for byte",
    )
    p.add_argument("archive", metavar="ARCHIVE")
    p.set_defaults(func=cmd_reproduce)
