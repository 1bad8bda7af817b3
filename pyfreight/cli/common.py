"""What the commands share: options declared once (argparse parents), and the values
they name turned into typed ones at the command line's edge."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from pyfreight import toolchain
from pyfreight.cpython.options import BASE_OPTIONS
from pyfreight.errors import PyfreightError
from pyfreight.formats.safe_archive import DEFAULT_LIMITS, MAX_RATIO, Limits
from pyfreight.targets import default_target, target

if TYPE_CHECKING:
    from pyfreight.cpython.spec import BuildSpec
    from pyfreight.targets import Target

Subparsers = Any  # argparse's _SubParsersAction, which it does not export


def named_target(name: str | None) -> Target:
    """The target --target names (the default one without it), looked up when a command
    needs it: reading targets/*.yaml checks them against their schema, which costs most
    of a second that a command refusing a bad archive should not pay."""
    return target(name) if name else default_target()


def named_spec(args: argparse.Namespace) -> BuildSpec:
    """The build --python, --options and --target name together: resolved once per
    command, then carried whole. The Makefile names it by its goal and variables instead
    (--make), which cpython/naming parses as it makes them."""
    from pyfreight.cpython.spec import BuildSpec

    make = getattr(args, "make", None)
    if make is not None:
        from pyfreight.cpython.naming import spec_of_make_arguments

        if args.python or args.target:
            raise PyfreightError(
                "--make names the build whole: give CPYTHON= after the goal, not --python or --target"
            )
        return spec_of_make_arguments(make)
    return BuildSpec.resolve(args.python, args.options, named_target(args.target))


def limits_of(max_bytes: int, max_members: int) -> Limits:
    """The limits an archive from outside is read within (--max-bytes, --max-members)."""
    if max_bytes <= 0 or max_members <= 0:
        raise PyfreightError("--max-bytes and --max-members must be positive")
    return Limits(max_members=max_members, max_bytes=max_bytes)


class SharedOptions:
    """Options several subcommands take, declared once (argparse parents)."""

    def __init__(self) -> None:
        self.by_name = _shared_options()

    def parents(self, *names: str) -> list[argparse.ArgumentParser]:
        return [self.by_name[name] for name in names]


def _shared_options() -> dict[str, argparse.ArgumentParser]:
    """Options several subcommands take, declared once (argparse parents)."""
    python = argparse.ArgumentParser(add_help=False)
    python.add_argument(
        "--python",
        default=None,
        help="a pinned CPython minor version, e.g. 3.13 (default: cpython/versions.yaml's default)",
    )
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument(
        "--options",
        default="pgo+lto",
        help=f"{', '.join(BASE_OPTIONS)}, optionally freethreaded+… and +modifiers "
        "(docs/performance.md; default: %(default)s)",
    )
    target_option = argparse.ArgumentParser(add_help=False)
    target_option.add_argument(
        "--target",
        default=None,
        metavar="TRIPLE",
        help="a target of targets/*.yaml, by triple or make name (linux-…); default: the one marked default",
    )
    jobs = argparse.ArgumentParser(add_help=False)
    jobs.add_argument(
        "--jobs",
        type=int,
        default=toolchain.default_jobs(),
        help="make jobs inside each build (default: cores, %(default)s)",
    )
    tests = argparse.ArgumentParser(add_help=False)
    tests.add_argument(
        "--tests",
        choices=["subset", "full", "none"],
        default="subset",
        help="CPython's test suite: the subset in cpython/test-suite.yaml, all of it, or none",
    )
    limits = argparse.ArgumentParser(add_help=False)
    limits.add_argument(
        "--max-bytes",
        type=int,
        default=DEFAULT_LIMITS.max_bytes,
        metavar="N",
        help="refuse an archive that expands to more than N bytes (default: %(default)s, and at most "
        f"{MAX_RATIO} times the archive's own size)",
    )
    limits.add_argument(
        "--max-members",
        type=int,
        default=DEFAULT_LIMITS.max_members,
        metavar="N",
        help="refuse an archive of more than N members (default: %(default)s)",
    )
    return {
        "python": python,
        "options": options,
        "target": target_option,
        "jobs": jobs,
        "tests": tests,
        "limits": limits,
    }
