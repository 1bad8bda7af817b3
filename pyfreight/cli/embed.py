"""`pyfreight embed`: a custom interpreter, static libpython or single-file program from a full archive."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import TYPE_CHECKING

from pyfreight.cli.common import SharedOptions, Subparsers, limits_of
from pyfreight.errors import PyfreightError
from pyfreight.logs import say

if TYPE_CHECKING:
    pass


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
        limits=limits_of(args.max_bytes, args.max_members),
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


def register(sub: Subparsers, shared: SharedOptions) -> None:
    """Adds this module's commands to the command line."""
    p = sub.add_parser(
        "embed",
        parents=shared.parents("limits"),
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
