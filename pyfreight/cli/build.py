"""The commands that build: images, recipes, fetch, deps, build and dist."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import TYPE_CHECKING

from pyfreight import toolchain
from pyfreight.cli.common import SharedOptions, Subparsers, named_spec, named_target
from pyfreight.errors import PyfreightError
from pyfreight.logs import say
from pyfreight.paths import default_workspace

if TYPE_CHECKING:
    from pyfreight.archives.write import WrittenArchives
    from pyfreight.cpython.build import CPythonBuild


def cmd_images(args: argparse.Namespace) -> None:
    from pyfreight.container.images import ensure_images

    image = ensure_images(default_workspace(), named_target(args.target))
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
        target=named_target(args.target),
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
    spec = named_spec(args)
    options = {"force": args.force, "profiles": profiles, "check": args.check}
    if not args.dist:
        _print_build(build_checked(spec, ws, args.jobs, **options), started)
        return
    build, written = distribute(spec, ws, args.jobs, release=args.release, **options)
    _print_build(build, started)
    _print_sizes(written)


def cmd_dist(args: argparse.Namespace) -> None:
    from pyfreight.pipeline.distribute import distribute

    written = distribute(named_spec(args), default_workspace(), args.jobs, release=args.release, check=False)
    _print_sizes(written[1])


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


def register(sub: Subparsers, shared: SharedOptions) -> None:
    """Adds this module's commands to the command line."""
    p = sub.add_parser(
        "images",
        help="build the pinned images a target needs that are missing; show its build image",
        parents=shared.parents("target"),
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
        parents=shared.parents("target", "jobs"),
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
        parents=shared.parents("python", "options", "target", "jobs"),
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
        parents=shared.parents("python", "options", "target", "jobs"),
        help="write the distribution archives of a build to dist/ (building it if needed)",
    )
    p.add_argument("--release", help="the {release} of the archive names (default: source date, YYYYMMDD)")
    p.set_defaults(func=cmd_dist)
