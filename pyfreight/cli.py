"""The pyfreight command line."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pyfreight import interrupts, toolchain
from pyfreight.cpython.options import BASE_OPTIONS
from pyfreight.errors import PyfreightError
from pyfreight.formats.safe_archive import DEFAULT_LIMITS, MAX_RATIO, Limits
from pyfreight.leftovers import sweep
from pyfreight.logs import say
from pyfreight.paths import default_workspace
from pyfreight.targets import default_target, target

if TYPE_CHECKING:
    from pyfreight.archives.write import WrittenArchives
    from pyfreight.cpython.build import CPythonBuild
    from pyfreight.cpython.spec import BuildSpec
    from pyfreight.targets import Target


def _target(args: argparse.Namespace) -> Target:
    """The target --target names (the default one without it), looked up when a command
    needs it: reading targets/*.yaml checks them against their schema, which costs most
    of a second that a command refusing a bad archive should not pay."""
    return target(args.target) if args.target else default_target()


def _spec(args: argparse.Namespace) -> BuildSpec:
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
    return BuildSpec.resolve(args.python, args.options, _target(args))


def cmd_images(args: argparse.Namespace) -> None:
    from pyfreight.container.images import ensure_images

    image = ensure_images(default_workspace(), _target(args))
    packages = image.manifest.read_text().splitlines()
    print(f"tag:      {image.tag}")
    print(f"image id: {image.image_id}")
    print(f"manifest: {image.manifest} ({len(packages)} packages)")
    for line in packages:
        print(f"  {line}")


def cmd_recipes(args: argparse.Namespace) -> None:
    from pyfreight.deps.graph import build_order, check_graph
    from pyfreight.sources.recipes import load_all

    recipes = load_all()
    check_graph(recipes)
    print(f"{'recipe':18} {'version':16} {'license':40} depends")
    for name in build_order(recipes, recipes):
        r = recipes[name]
        own = [f"{d} ({os})" for os, ds in sorted(r.os_depends.items()) for d in ds]
        print(f"{name:18} {r.version:16} {r.license:40} {', '.join([*r.depends, *own]) or '-'}")


def cmd_fetch(args: argparse.Namespace) -> None:
    from pyfreight.deps.graph import check_graph
    from pyfreight.deps.scheduler import fetch_all
    from pyfreight.sources.recipes import load_all

    recipes = load_all()
    check_graph(recipes)
    if not args.all and not args.names:
        raise PyfreightError("say which recipes to fetch (pyfreight fetch NAME …) or --all")
    names = sorted(recipes) if args.all else args.names
    unknown = [n for n in names if n not in recipes]
    if unknown:
        raise PyfreightError(f"no recipe named {', '.join(unknown)}; known: {', '.join(recipes)}")
    ws = default_workspace()
    fetch_all((recipes[n] for n in names), ws, offline=args.offline)
    count = sum(len(recipes[n].sources) for n in names)
    print(f"{count} source file(s) verified in {ws.downloads}")


def cmd_deps(args: argparse.Namespace) -> None:
    from pyfreight.deps.scheduler import build_deps

    started = time.monotonic()
    result = build_deps(
        names=args.names or None,
        target=_target(args),
        ws=default_workspace(),
        parallel=args.parallel,
        jobs=args.jobs,
        force=args.force,
        offline=args.offline,
    )
    say(
        f"deps: {len(result.built)} built, {len(result.reused)} up to date, "
        f"in {time.monotonic() - started:.1f} s"
    )
    for name, artifact in sorted(result.artifacts.items()):
        print(f"{name:18} {artifact.path}")


def cmd_build(args: argparse.Namespace) -> None:
    from pyfreight.cpython.profiles import SavedProfiles
    from pyfreight.pipeline.distribute import build_checked, distribute

    started = time.monotonic()
    ws = default_workspace()
    profiles = None
    if args.pgo_profile:
        bolt = Path(args.bolt_profile).resolve() if args.bolt_profile else None
        profiles = SavedProfiles(Path(args.pgo_profile).resolve(), bolt)
    elif args.bolt_profile:
        raise PyfreightError("--bolt-profile fits only the build its --pgo-profile makes: give both")
    spec = _spec(args)
    options = {"force": args.force, "profiles": profiles, "check": args.check}
    if not args.dist:
        _print_build(build_checked(spec, ws, args.jobs, **options), started)
        return
    build, written = distribute(spec, ws, args.jobs, release=args.release, **options)
    _print_build(build, started)
    _print_sizes(written)


def _print_build(build: CPythonBuild, started: float) -> None:
    say(f"build: {time.monotonic() - started:.1f} s")
    print(f"install tree: {build.tree}")
    print(f"artifact:     {build.artifact}")
    if build.profile:
        print(f"PGO profile:  {build.profile}")
    if build.bolt_profile:
        print(f"BOLT profile: {build.bolt_profile}")


def _print_sizes(dist: WrittenArchives) -> None:
    for path in dist.archives:
        print(f"{path.stat().st_size / 1e6:8.1f} MB  {path}")


def cmd_dist(args: argparse.Namespace) -> None:
    from pyfreight.pipeline.distribute import distribute

    written = distribute(_spec(args), default_workspace(), args.jobs, release=args.release, check=False)
    _print_sizes(written[1])


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


def cmd_bench(args: argparse.Namespace) -> None:
    from pyfreight.bench.throughput import run_bench
    from pyfreight.cpython.spec import BuildSpec

    only = [n for n in (args.only or "").split(",") if n]
    options = [o for o in args.options.split(",") if o]
    if not options:
        raise PyfreightError("--options names no build; give e.g. --options pgo+lto,noopt")
    path = run_bench(
        default_workspace(),
        [BuildSpec.resolve(args.python, text, _target(args)) for text in options],
        args.jobs,
        against_trees=args.against,
        suite_name=args.suite,
        only=only,
        fast=not args.rigorous,
    )
    print(f"saved: {path} (and {path.with_suffix('.txt').name})")


def cmd_validate(args: argparse.Namespace) -> None:
    from pyfreight.verify.validate import validate

    failed = 0
    for archive in args.archives:
        problems = validate(Path(archive), limits=_limits(args))
        for problem in problems:
            print(f"FAIL  {problem}")
        print(f"{archive}: {'passed' if not problems else f'{len(problems)} problem(s)'}")
        failed += bool(problems)
    if failed:
        raise PyfreightError(f"{failed} archive(s) failed validation")


def cmd_test_dist(args: argparse.Namespace) -> None:
    from pyfreight.verify.archive_trial import check_distribution

    for archive in args.archives:
        if not check_distribution(Path(archive), default_workspace(), tests=args.tests, limits=_limits(args)):
            raise PyfreightError(f"{archive}: the distribution failed its checks (see above)")


def cmd_release(args: argparse.Namespace) -> None:
    from pyfreight.cpython.naming import parse_full_name
    from pyfreight.publish.release import make_release

    ws = default_workspace()
    fulls = [Path(a) for a in args.archives] or sorted(ws.dist.glob("*-full.tar.zst"))
    for full in fulls:
        if not full.is_file():
            raise PyfreightError(f"{full}: no such archive")
    releases = sorted({named[1] for f in fulls if (named := parse_full_name(f.name))})
    tag = args.tag or (releases[0] if len(releases) == 1 else None)
    if tag is None:
        raise PyfreightError("the archives are of several releases (or none): name the release with --tag")
    out = Path(args.output) if args.output else ws.dist / f"release-{tag}"
    made = make_release(fulls, out.resolve(), tag, args.base_url)
    print(f"release:    {made}")
    for name in ("SHA256SUMS", "downloads.json", "release.json", "RELEASE_NOTES.md"):
        print(f"            {made / name}")


def cmd_matrix(args: argparse.Namespace) -> None:
    from pyfreight.cpython.naming import make_arguments
    from pyfreight.publish.matrix import release_matrix

    entries = release_matrix()
    if args.json:
        print(json.dumps({"include": [e.as_json() for e in entries]}, sort_keys=True))
        return
    for e in entries:
        print(f"make {' '.join(make_arguments(e.spec)):<55} # {e.name}")


def cmd_embed(args: argparse.Namespace) -> None:
    from pyfreight.embed.command import embed

    memory = None
    if args.memory_importer:
        from pyfreight.embed.application import parse_main
        from pyfreight.embed.memory import PackOptions

        memory = PackOptions(
            optimize=args.optimize,
            sources=args.sources,
            apps=[Path(a) for a in args.app],
            main=parse_main(args.main) if args.main else None,
            wheels=[Path(w) for w in args.wheel],
            requirements=Path(args.requirements) if args.requirements else None,
            filesystem=args.filesystem,
            static_code=args.static_code,
            include=args.include_module,
            whole_stdlib=args.whole_stdlib,
            compress=args.compress,
        )
    else:
        memory_only = {
            "--static-code": args.static_code,
            "--app": args.app,
            "--main": args.main,
            "--wheel": args.wheel,
            "--requirements": args.requirements,
            "--filesystem": args.filesystem,
            "--include-module": args.include_module,
            "--whole-stdlib": args.whole_stdlib,
            "--keep-symbols": args.keep_symbols,
            "--no-compress": not args.compress,
        }
        given = [flag for flag, value in memory_only.items() if value]
        if given:
            raise PyfreightError(
                f"{given[0]} is for the in-memory importer's executables: add --memory-importer"
            )
    started = time.monotonic()
    result = embed(
        Path(args.archive),
        Path(args.output),
        selection=args.extensions,
        cc=args.cc,
        emit_lib=args.emit_lib,
        keep_work=Path(args.work_dir).resolve() if args.work_dir else None,
        memory=memory,
        pie=args.pie,
        # An application is stripped unless asked to keep its symbols; an interpreter when asked.
        strip=args.strip or bool(args.main and not args.keep_symbols),
        limits=_limits(args),
    )
    say(f"embed: {time.monotonic() - started:.1f} s")
    print(f"output:     {result.output}")
    print(f"toolchain:  {result.toolchain}")
    print(f"built in:   {len(result.extensions)} extension modules")
    print(f"left out:   {', '.join(result.dropped) or '(none)'}")
    if result.packages is not None:
        print(f"packages:   {result.packages} (ship it beside the executable)")
    if args.emit_lib:
        print(f"link with:  {result.link_line}")


def cmd_bench_import(args: argparse.Namespace) -> None:
    from pyfreight.bench.imports import ensure_archive, ensure_memory_binary, run_bench_import

    if args.runs < 10:
        raise PyfreightError(f"--runs {args.runs}: a median needs at least 10 runs of each command")
    ws = default_workspace()
    archive = Path(args.archive).resolve() if args.archive else ensure_archive(ws, _spec(args), args.jobs)
    limits = _limits(args)
    binary = ensure_memory_binary(ws, archive, args.cc, limits=limits)
    run_bench_import(ws, archive, binary, args.runs, pie_both=args.pie_both, cc=args.cc, limits=limits)


def cmd_bench_app(args: argparse.Namespace) -> None:
    from pyfreight.bench.apps import run_bench_app
    from pyfreight.bench.imports import ensure_archive

    if args.runs < 10:
        raise PyfreightError(f"--runs {args.runs}: a median needs at least 10 runs of each command")
    ws = default_workspace()
    archive = Path(args.archive).resolve() if args.archive else ensure_archive(ws, _spec(args), args.jobs)
    run_bench_app(ws, archive, args.runs, args.host_python, limits=_limits(args))


def cmd_reproduce(args: argparse.Namespace) -> None:
    from pyfreight.pipeline.reproduce import reproduce

    result = reproduce(Path(args.archive), default_workspace(), jobs=args.jobs, limits=_limits(args))
    if not result.identical:
        raise PyfreightError(f"{args.archive}: not reproduced; first difference: {result.first_difference}")
    print(f"{args.archive}: reproduced, byte for byte identical")


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


def _limits(args: argparse.Namespace) -> Limits:
    if args.max_bytes <= 0 or args.max_members <= 0:
        raise PyfreightError("--max-bytes and --max-members must be positive")
    return Limits(max_members=args.max_members, max_bytes=args.max_bytes)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pyfreight",
        description="Build standalone, relocatable CPython distributions.",
    )
    parser.add_argument(
        "--debug", action="store_true", help="show Python tracebacks of errors (also PYFREIGHT_DEBUG=1)"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    shared = _shared_options()

    def parents(*names: str) -> list[argparse.ArgumentParser]:
        return [shared[name] for name in names]

    p = sub.add_parser(
        "images",
        help="build the pinned images a target needs that are missing; show its build image",
        parents=parents("target"),
    )
    p.set_defaults(func=cmd_images)

    p = sub.add_parser("recipes", help="list the recipes in build order, with versions and licenses")
    p.set_defaults(func=cmd_recipes)

    p = sub.add_parser("fetch", help="download and verify recipe sources into build/downloads")
    p.add_argument("names", nargs="*", metavar="NAME", help="recipes to fetch")
    p.add_argument("--all", action="store_true", help="every recipe")
    p.add_argument("--offline", action="store_true", help="use only the cache and mirrors")
    p.set_defaults(func=cmd_fetch)

    p = sub.add_parser(
        "deps",
        parents=parents("target", "jobs"),
        help="build dependency recipes (default: all) as static libraries",
    )
    p.add_argument("names", nargs="*", metavar="NAME", help="recipes to build (and their deps)")
    p.add_argument(
        "-j",
        "--parallel",
        type=int,
        default=min(2, toolchain.default_jobs()),
        help="recipes built at once (default: %(default)s)",
    )
    p.add_argument("--force", action="store_true", help="rebuild even when up to date")
    p.add_argument("--offline", action="store_true", help="fetch only from the cache and mirrors")
    p.set_defaults(func=cmd_deps)

    p = sub.add_parser(
        "build",
        parents=parents("python", "options", "target", "jobs"),
        help="build CPython (dependencies first) into a relocatable tree",
    )
    p.add_argument(
        "--make",
        nargs="+",
        metavar="WORD",
        help="the Makefile's way to name the build: its goal and variables "
        "(MAKE_NAME-pgo CPYTHON=3.13 FREETHREADED=1 MODIFIERS=pie), "
        "instead of --python, --options and --target",
    )
    p.add_argument("--force", action="store_true", help="rebuild even when up to date")
    p.add_argument("--no-check", dest="check", action="store_false", help="skip check-install afterwards")
    p.add_argument("--no-dist", dest="dist", action="store_false", help="skip writing the archives to dist/")
    p.add_argument("--release", help="the {release} of the archive names (default: source date, YYYYMMDD)")
    p.add_argument(
        "--pgo-profile",
        metavar="FILE",
        help="pgo builds: rebuild from this merged profile (kept by an earlier build) without training",
    )
    p.add_argument(
        "--bolt-profile",
        metavar="FILE",
        help="builds llvm-bolt lays out (x86_64 Linux pgo), with --pgo-profile: lay the interpreter out "
        "from this merged BOLT profile "
        "(kept by an earlier build) without BOLT's training",
    )
    p.set_defaults(func=cmd_build)

    p = sub.add_parser(
        "dist",
        parents=parents("python", "options", "target", "jobs"),
        help="write the distribution archives of a build to dist/ (building it if needed)",
    )
    p.add_argument("--release", help="the {release} of the archive names (default: source date, YYYYMMDD)")
    p.set_defaults(func=cmd_dist)

    p = sub.add_parser(
        "check-install",
        parents=parents("tests", "python"),
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
        parents=parents("limits"),
        help="static checks of distribution archives (layout, PYTHON.json, ELF)",
    )
    p.add_argument("archives", nargs="+", metavar="ARCHIVE")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser(
        "test-dist",
        parents=parents("tests", "limits"),
        help="unpack distribution archives and run the product checks on them",
    )
    p.add_argument("archives", nargs="+", metavar="ARCHIVE")
    p.set_defaults(func=cmd_test_dist)

    p = sub.add_parser(
        "reproduce",
        parents=parents("jobs", "limits"),
        help="rebuild a full archive from scratch and compare it byte for byte",
    )
    p.add_argument("archive", metavar="ARCHIVE")
    p.set_defaults(func=cmd_reproduce)

    p = sub.add_parser(
        "embed",
        parents=parents("limits"),
        help="link a custom interpreter (or static libpython) from a full archive alone",
    )
    p.add_argument("archive", metavar="ARCHIVE", help="a -full.tar.zst archive (or its extracted folder)")
    p.add_argument(
        "-o", "--output", required=True, metavar="OUT", help="the executable (or library) to write"
    )
    p.add_argument(
        "--extensions",
        metavar="all|minimal|no-copyleft|NAME,…",
        help="extension modules to build in (minimal ones are always added; default: those an "
        "application reaches, else all)",
    )
    p.add_argument("--cc", help="C compiler driver, e.g. gcc or clang-22 (default: $CC or cc)")
    p.add_argument("--emit-lib", action="store_true", help="stop at a self-contained static libpython")
    p.add_argument("--work-dir", help="keep the intermediate files (config.c, objects, log) here")
    symbols = p.add_mutually_exclusive_group()
    symbols.add_argument(
        "--strip",
        action="store_true",
        help="leave the objects' debug information out of the output (an application's default)",
    )
    symbols.add_argument(
        "--keep-symbols", action="store_true", help="keep an application's debug information"
    )
    pie = p.add_mutually_exclusive_group()
    pie.add_argument(
        "--pie",
        dest="pie",
        action="store_const",
        const=True,
        help="a position-independent executable (ASLR for it; default: as the archive's python3)",
    )
    pie.add_argument(
        "--no-pie",
        dest="pie",
        action="store_const",
        const=False,
        help="a position-dependent executable: faster start, no ASLR for it (default: as python3)",
    )
    p.add_argument(
        "--memory-importer",
        action="store_true",
        help="pack the stdlib into the executable, import it from memory",
    )
    p.add_argument("--optimize", type=int, choices=(0, 1, 2), default=0, help="packed bytecode's -O level")
    p.add_argument(
        "--static-code",
        action="store_true",
        help="lay the packed code objects out in the executable's data, so none is unmarshalled "
        "(CPython 3.13, 3.14 and 3.15 default builds; position-dependent unless --pie)",
    )
    sources = p.add_mutually_exclusive_group()
    sources.add_argument(
        "--sources",
        choices=("all", "app", "none"),
        help="whose .py sources to pack (getsource, source lines in tracebacks): all, the --app "
        "folders', none (default: an application's own, an interpreter's all)",
    )
    sources.add_argument(
        "--no-sources", dest="sources", action="store_const", const="none", help="as --sources none"
    )
    p.add_argument(
        "--app", action="append", default=[], metavar="DIR", help="also pack this sys.path-like folder"
    )
    p.add_argument(
        "--main",
        metavar="MODULE[:FUNC]",
        help="make an application: started, it runs MODULE (as -m) or calls FUNC, with sys.argv as given "
        "(PYFREIGHT_INTERPRETER=1 reaches the interpreter)",
    )
    p.add_argument(
        "--wheel",
        action="append",
        default=[],
        metavar="PATH",
        help="install this wheel for the application (offline unless --requirements; repeatable)",
    )
    p.add_argument(
        "--requirements",
        metavar="FILE",
        help="install these requirements (pip, binary wheels only): pure Python is packed, "
        "compiled packages go to OUT-packages/ beside the executable",
    )
    p.add_argument(
        "--filesystem",
        action="append",
        default=[],
        metavar="NAME",
        help="keep this top-level module or package as files in OUT-packages/ (code that opens "
        "files beside its __file__, e.g. idlelib); repeatable",
    )
    p.add_argument(
        "--include-module",
        action="append",
        default=[],
        metavar="NAME",
        help="an application packs the stdlib modules its code imports: add this module (a package "
        "with its submodules) that it imports by a computed name; repeatable",
    )
    p.add_argument(
        "--no-compress",
        dest="compress",
        action="store_false",
        help="pack modules uncompressed (default: each compressed with zstd, decompressed in memory "
        "at its first import, where the archive has zstd: CPython 3.14 and newer)",
    )
    p.add_argument(
        "--whole-stdlib",
        action="store_true",
        help="pack the whole stdlib and link every extension module into an application",
    )
    p.set_defaults(func=cmd_embed)

    p = sub.add_parser(
        "release",
        help="a release folder from full archives (and their install_only ones): SHA256SUMS, "
        "uv's downloads index, release.json, notes",
    )
    p.add_argument(
        "archives", nargs="*", metavar="FULL_ARCHIVE", help="-full.tar.zst archives (default: all in dist/)"
    )
    p.add_argument(
        "--base-url",
        required=True,
        metavar="URL",
        help="where the archives will be downloaded from, e.g. "
        "https://github.com/OWNER/REPO/releases/download/TAG or file:///srv/python",
    )
    p.add_argument("--tag", help="the release's name (default: the archives' release, e.g. 20260805)")
    p.add_argument("-o", "--output", metavar="DIR", help="the release folder (default: dist/release-TAG)")
    p.set_defaults(func=cmd_release)

    p = sub.add_parser(
        "matrix",
        help="the builds a release carries (targets/*.yaml release_options by pinned CPython versions), "
        "as make commands",
    )
    p.add_argument("--json", action="store_true", help='as a GitHub Actions matrix ({"include": [...]})')
    p.set_defaults(func=cmd_matrix)

    p = sub.add_parser(
        "bench-import",
        parents=parents("python", "options", "target", "jobs", "limits"),
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
        parents=parents("python", "options", "target", "jobs", "limits"),
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
        parents=parents("python", "target", "jobs"),
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
        choices=["subset", "full"],
        default="subset",
        help="cpython/bench.yaml's subset, or pyperformance's default suite less what needs PyPI packages",
    )
    p.add_argument("--only", metavar="NAME,…", help="run only these benchmarks of the suite")
    p.add_argument("--rigorous", action="store_true", help="pyperf's default run counts instead of --fast")
    p.set_defaults(func=cmd_bench)
    return parser


def _sweep_leftovers() -> None:
    """Temporary files and staging folders of earlier runs that were killed outright."""
    ws = default_workspace()
    for folder in (ws.scratch, ws.downloads, ws.build, ws.dist):
        for name in sweep(folder):
            say(f"removed {folder / name}, left by a run that was killed")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    debug = args.debug or os.environ.get("PYFREIGHT_DEBUG") == "1"
    interrupts.install()
    try:
        _sweep_leftovers()
        args.func(args)
    except PyfreightError as exc:
        if debug:
            traceback.print_exc()
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # output piped into head and the like
        sys.stderr.close()
        return 0
    except (KeyboardInterrupt, interrupts.Interrupted) as exc:
        code = exc.exit_code if isinstance(exc, interrupts.Interrupted) else 130
        print("interrupted; nothing half-built was kept", file=sys.stderr)
        return code
    except Exception as exc:  # a bug of ours, not bad input: say so in one line
        if debug:
            traceback.print_exc()
        print(
            f"error: internal error ({type(exc).__name__}: {exc}); "
            "run again with --debug (or PYFREIGHT_DEBUG=1) and report the traceback",
            file=sys.stderr,
        )
        return 2
    return 0
