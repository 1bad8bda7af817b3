"""The commands that publish: release and matrix."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from pyfreight.cli.common import SharedOptions, Subparsers
from pyfreight.errors import PyfreightError
from pyfreight.paths import default_workspace

if TYPE_CHECKING:
    pass


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


def register(sub: Subparsers, shared: SharedOptions) -> None:
    """Adds this module's commands to the command line."""
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
        help="the builds a release carries (targets/*.yaml builds.release by pinned CPython versions), "
        "as make commands",
    )
    p.add_argument("--json", action="store_true", help='as a GitHub Actions matrix ({"include": [...]})')
    p.set_defaults(func=cmd_matrix)
