"""The commands that measure: bench, bench-import and bench-app."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from pyfreight.cli.common import SharedOptions, Subparsers, limits_of, named_spec, named_target
from pyfreight.errors import PyfreightError
from pyfreight.paths import default_workspace

if TYPE_CHECKING:
    pass


def cmd_bench_import(args: argparse.Namespace) -> None:
    from pyfreight.bench.imports import ensure_archive, ensure_memory_binary, run_bench_import

    if args.runs < 10:
        raise PyfreightError(f"--runs {args.runs}: a median needs at least 10 runs of each command")
    ws = default_workspace()
    archive = (
        Path(args.archive).resolve() if args.archive else ensure_archive(ws, named_spec(args), args.jobs)
    )
    limits = limits_of(args.max_bytes, args.max_members)
    binary = ensure_memory_binary(ws, archive, args.cc, limits=limits)
    run_bench_import(ws, archive, binary, args.runs, pie_both=args.pie_both, cc=args.cc, limits=limits)


def cmd_bench_app(args: argparse.Namespace) -> None:
    from pyfreight.bench.apps import run_bench_app
    from pyfreight.bench.imports import ensure_archive

    if args.runs < 10:
        raise PyfreightError(f"--runs {args.runs}: a median needs at least 10 runs of each command")
    ws = default_workspace()
    archive = (
        Path(args.archive).resolve() if args.archive else ensure_archive(ws, named_spec(args), args.jobs)
    )
    run_bench_app(
        ws, archive, args.runs, args.host_python, limits=limits_of(args.max_bytes, args.max_members)
    )


def cmd_bench(args: argparse.Namespace) -> None:
    from pyfreight.bench.throughput import run_bench
    from pyfreight.cpython.spec import BuildSpec

    only = [n for n in (args.only or "").split(",") if n]
    options = [o for o in args.options.split(",") if o]
    if not options:
        raise PyfreightError("--options names no build; give e.g. --options pgo+lto,noopt")
    path = run_bench(
        default_workspace(),
        [BuildSpec.resolve(args.python, text, named_target(args.target)) for text in options],
        args.jobs,
        against_trees=args.against,
        suite_name=args.suite,
        only=only,
        fast=not args.rigorous,
    )
    print(f"saved: {path} (and {path.with_suffix('.txt').name})")


def register(sub: Subparsers, shared: SharedOptions) -> None:
    """Adds this module's commands to the command line."""
    p = sub.add_parser(
        "bench-import",
        parents=shared.parents("python", "options", "target", "jobs", "limits"),
        help="whole-stdlib import and start-up: in-memory importer vs filesystem (table + JSON)",
    )
    p.add_argument("archive", nargs="?", metavar="ARCHIVE", help="a full archive (default: build --options)")
    p.add_argument("--cc", help="C compiler driver for linking the memory binary")
    p.add_argument("--runs", type=int, default=15, help="interleaved runs of each command (at least 10)")
    p.add_argument(
        "--pie-both",
        action="store_true",
        help="also measure the memory binary linked the other way (PIE or not): start-up relocation cost",
    )
    p.set_defaults(func=cmd_bench_import)

    p = sub.add_parser(
        "bench-app",
        parents=shared.parents("python", "options", "target", "jobs", "limits"),
        help="single-file applications: pyfreight embed's defaults beside PyInstaller --onefile, "
        "size and start-up (table + JSON)",
    )
    p.add_argument("archive", nargs="?", metavar="ARCHIVE", help="a full archive (default: build --options)")
    p.add_argument("--runs", type=int, default=20, help="interleaved runs of each command (at least 10)")
    p.add_argument(
        "--host-python",
        default="python3",
        metavar="PYTHON",
        help="the Python PyInstaller runs with; it needs a shared libpython (default: python3)",
    )
    p.set_defaults(func=cmd_bench_app)

    p = sub.add_parser(
        "bench",
        parents=shared.parents("python", "target", "jobs"),
        help="pyperformance: our builds vs Debian's python and other trees (table + JSON)",
    )
    p.add_argument(
        "--options",
        default="pgo+lto,noopt",
        metavar="OPTION,…",
        help="our builds to measure, the first is the reference column (default: %(default)s)",
    )
    p.add_argument(
        "--against",
        action="append",
        default=[],
        metavar="[LABEL=]TREE",
        help="also measure the interpreter of this install tree (repeatable)",
    )
    p.add_argument(
        "--suite",
        choices=["subset", "full", "libraries"],
        default="subset",
        help="cpython/bench.yaml's subset, or pyperformance's default suite less what needs PyPI packages; "
        "each with the C-library table, which 'libraries' runs alone",
    )
    p.add_argument("--only", metavar="NAME,…", help="run only these benchmarks of the suite")
    p.add_argument("--rigorous", action="store_true", help="pyperf's default run counts instead of --fast")
    p.set_defaults(func=cmd_bench)
