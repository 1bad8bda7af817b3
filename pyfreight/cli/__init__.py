"""The pyfreight command line: one module per group of commands, each adding its own
parsers (`register`) and turning its arguments into typed values at its edge."""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence

from pyfreight import interrupts
from pyfreight.cli import bench, build, embed, publish, verify
from pyfreight.cli.common import SharedOptions
from pyfreight.errors import PyfreightError
from pyfreight.leftovers import sweep
from pyfreight.logs import say
from pyfreight.paths import default_workspace

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pyfreight",
        description="Build standalone, relocatable CPython distributions.",
    )
    parser.add_argument(
        "--debug", action="store_true", help="show Python tracebacks of errors (also PYFREIGHT_DEBUG=1)"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    shared = SharedOptions()
    for commands in (build, verify, embed, publish, bench):
        commands.register(sub, shared)
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
