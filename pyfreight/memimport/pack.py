"""Pack a standard library (and optionally application code) into one in-memory importer blob.

Run this with the *target* interpreter, e.g.::

    install/bin/python3 -I pyfreight/memimport/pack.py --stdlib install/lib/python3.14 --out stdlib.blob

The bytecode is produced by the running interpreter's compile() and marshal.dumps(), so it carries the
target's magic number; memimport.c refuses a blob whose magic differs from the interpreter it is linked
into.  Only the stdlib is used, so any CPython 3.11-3.15 can run this file.  The layout is written by
blobformat.write_blob and documented in docs/memory-importer.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import marshal
import os
import re
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

if __package__:
    from . import blobformat as bf
else:
    # Run as a script (possibly with -I, which leaves the script directory off sys.path).
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import blobformat as bf  # type: ignore[import-not-found, no-redef]  # the same module as above

FINDER_SOURCE = Path(__file__).resolve().parent / "finder.py"

# Directories never packed from the stdlib, at its top level.
STDLIB_TOP_SKIP = frozenset({"site-packages", "test", "lib-dynload", "__pycache__"})
# Test suites are dropped wherever they sit in the stdlib (idlelib/idle_test, and the */test and
# */tests packages older releases carried inside ctypes, sqlite3, tkinter, unittest, lib2to3...).
# They are large, need their data files on disk, and nothing outside the test suite imports them.
STDLIB_ANY_SKIP = frozenset({"test", "tests", "idle_test", "__pycache__"})
CONFIG_DIR = re.compile(r"config-\d+\.\d+.*")
# zstd's strongest level short of --ultra (whose windows need more memory to decompress): packing
# is done once, and decompression runs as fast at any level.
COMPRESSION_LEVEL = 19


@dataclass
class Collected:
    # module name -> (source file or None for a namespace package, flags, virtual relative path)
    modules: dict[str, tuple[Path | None, int, str]] = field(default_factory=dict)
    resources: dict[tuple[str, str], Path] = field(default_factory=dict)
    skipped_files: int = 0


def _has_python(directory: Path, skip: frozenset[str]) -> bool:
    for entry in os.scandir(directory):
        if entry.name.startswith(".") or entry.name in skip:
            continue
        if entry.is_file() and entry.name.endswith(".py"):
            return True
        if entry.is_dir() and _has_python(Path(entry.path), skip):
            return True
    return False


def _rank(flags: int) -> int:
    if flags & bf.FLAG_NAMESPACE:
        return 0
    return 2 if flags & bf.FLAG_PACKAGE else 1


def _entries(directory: Path) -> list[os.DirEntry[str]]:
    # Hidden entries (.git, .mypy_cache...) are never part of an importable tree.
    return sorted((e for e in os.scandir(directory) if not e.name.startswith(".")), key=lambda e: e.name)


class Collector:
    def __init__(self, *, app: bool) -> None:
        self.app = app
        self.out = Collected()
        self.skip = frozenset({"__pycache__"}) if app else STDLIB_ANY_SKIP

    def _add_module(self, name: str, path: Path | None, flags: int, rel: str) -> None:
        if self.app:
            flags |= bf.FLAG_APP
        old = self.out.modules.get(name)
        if old is not None:
            # Same precedence as the filesystem importer: package, then module, then namespace.
            if _rank(old[1]) == _rank(flags):
                raise SystemExit(f"pack.py: module {name} found twice ({old[0]} and {path})")
            if _rank(old[1]) > _rank(flags):
                return
        self.out.modules[name] = (path, flags, rel)

    def top(self, root: Path) -> None:
        for entry in _entries(root):
            path = Path(entry.path)
            if entry.is_dir():
                if not self.app and (entry.name in STDLIB_TOP_SKIP or CONFIG_DIR.fullmatch(entry.name)):
                    continue
                if entry.name in self.skip:
                    continue
                if self.app and entry.name.endswith(".dist-info"):
                    # An installed distribution's metadata (third-party packages).
                    self._data_dir(path, bf.DISTRIBUTIONS, entry.name)
                    continue
                self._directory(path, entry.name, entry.name)
            elif entry.name.endswith(".py") and "." not in entry.name[:-3]:
                self._add_module(entry.name[:-3], path, 0, entry.name)
            else:
                # A file outside any package has no importlib.resources name (LICENSE.txt,
                # build-details.json, _sysconfig_vars*.json): nothing can look it up through us.
                self.out.skipped_files += 1

    def _directory(self, path: Path, name: str, rel: str) -> None:
        """A directory found in a package (or at the top): package, namespace package or nothing."""
        if "." in path.name:
            return
        if (path / "__init__.py").is_file():
            self._add_module(name, path / "__init__.py", bf.FLAG_PACKAGE, f"{rel}/__init__.py")
            self._package(path, name, rel)
        elif path.name.isidentifier() and _has_python(path, self.skip):
            self._add_module(name, None, bf.FLAG_PACKAGE | bf.FLAG_NAMESPACE, rel)
            self._package(path, name, rel)

    def _package(self, path: Path, name: str, rel: str) -> None:
        for entry in _entries(path):
            child = Path(entry.path)
            if entry.is_dir():
                if entry.name in self.skip:
                    continue
                if (child / "__init__.py").is_file() or (
                    entry.name.isidentifier() and _has_python(child, self.skip)
                ):
                    self._directory(child, f"{name}.{entry.name}", f"{rel}/{entry.name}")
                else:
                    self._data_dir(child, name, entry.name)
            elif entry.name == "__init__.py":
                continue
            elif entry.name.endswith(".py") and "." not in entry.name[:-3]:
                self._add_module(f"{name}.{entry.name[:-3]}", child, 0, f"{rel}/{entry.name}")
            elif not entry.name.endswith((".pyc", ".pyo")):
                self.out.resources[(name, entry.name)] = child

    def _data_dir(self, path: Path, package: str, rel: str) -> None:
        """A directory of package data (no Python inside): every file is a resource of `package`."""
        for entry in _entries(path):
            child = Path(entry.path)
            if entry.is_dir():
                if entry.name != "__pycache__":
                    self._data_dir(child, package, f"{rel}/{entry.name}")
            elif not entry.name.endswith((".pyc", ".pyo")):
                self.out.resources[(package, f"{rel}/{entry.name}")] = child


def _keep_reached(tree: Collected, reached: frozenset[str]) -> set[str]:
    """Drops from `tree` the modules not in `reached` (a reached module's packages stay);
    returns the names dropped."""
    keep: set[str] = set()
    for name in reached:
        parts = name.split(".")
        keep.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    dropped = set(tree.modules) - keep
    for name in dropped:
        del tree.modules[name]
    for key in [key for key in tree.resources if key[0] not in keep]:
        del tree.resources[key]
    return dropped


@dataclass
class PackResult:
    blob: bytes
    modules: int
    packages: int
    namespaces: int
    resources: int
    failed: list[tuple[str, str]]
    left_out: int = 0


def _compile(source: bytes, filename: str, optimize: int) -> bytes:
    with warnings.catch_warnings():
        # Invalid escape sequences and the like are the library's business, not the packer's.
        warnings.simplefilter("ignore")
        code = compile(source, filename, "exec", dont_inherit=True, optimize=optimize)
    return marshal.dumps(code)


def pack(
    stdlib: Path | None,
    apps: list[Path],
    *,
    optimize: int = 0,
    sources: bool = False,
    finder_source: Path = FINDER_SOURCE,
    exclude: frozenset[str] = frozenset(),
    reached: frozenset[str] | None = None,
    left_out: frozenset[str] = frozenset(),
    compress: Callable[[bytes], bytes] | None = None,
    sources_of: frozenset[Path] = frozenset(),
) -> PackResult:
    """`reached` (None: all) keeps only those stdlib modules and their packages; the other
    stdlib modules, and the names in `left_out`, are listed in the blob as left out.
    Sources are packed for every module with `sources`, else for those of the trees in
    `sources_of`."""
    trees: list[tuple[Collected, Path]] = []
    if stdlib is not None:
        collector = Collector(app=False)
        collector.top(stdlib)
        if reached is not None:
            left_out |= _keep_reached(collector.out, reached)
        trees.append((collector.out, stdlib))
    for app in apps:
        collector = Collector(app=True)
        collector.top(app)
        trees.append((collector.out, app))

    entries: dict[str, tuple[Path | None, int, str]] = {}
    resources: dict[tuple[str, str], Path] = {}
    with_source: set[str] = set()
    for tree, root in trees:
        for name, value in tree.modules.items():
            if name in entries:
                raise SystemExit(f"pack.py: module {name} found twice ({entries[name][0]} and {value[0]})")
            entries[name] = value
            if sources or root in sources_of:
                with_source.add(name)
        for key, data_file in tree.resources.items():
            if key in resources:
                raise SystemExit(f"pack.py: resource {key} found twice")
            resources[key] = data_file
    if bf.BOOTSTRAP_NAME in entries:
        raise SystemExit(f"pack.py: {bf.BOOTSTRAP_NAME} is reserved for the finder")
    # Top-level modules kept out of the blob (they live on the filesystem instead), with
    # everything inside them.
    entries = {n: v for n, v in entries.items() if n.partition(".")[0] not in exclude}

    modules: list[bf.Module] = []
    failed: list[tuple[str, str]] = []
    for name in sorted(entries):
        path, flags, rel = entries[name]
        if path is None:
            modules.append(bf.Module(name, flags, b""))
            continue
        source = path.read_bytes()
        try:
            code = _compile(source, rel, optimize)
        except (SyntaxError, ValueError, UnicodeError) as exc:
            failed.append((str(path), f"{type(exc).__name__}: {exc}"))
            continue
        modules.append(bf.Module(name, flags, code, source if name in with_source else None))

    # The finder is compiled with the target's compiler too; a <...> filename keeps linecache from
    # trying to open it.
    finder_code = _compile(finder_source.read_bytes(), f"<{bf.BOOTSTRAP_NAME}>", optimize)
    modules.append(bf.Module(bf.BOOTSTRAP_NAME, bf.FLAG_BOOTSTRAP, finder_code))

    packed = {m.name for m in modules}
    res_list = [
        bf.Resource(pkg, rel, path.read_bytes())
        for (pkg, rel), path in sorted(resources.items())
        if pkg in packed or pkg == bf.DISTRIBUTIONS
    ]
    # A module kept on the filesystem (exclude) is not left out: the path finder imports it.
    left_out = frozenset(n for n in left_out - packed if n.partition(".")[0] not in exclude)
    if left_out:
        listed = "".join(f"{name}\n" for name in sorted(left_out)).encode()
        res_list.append(bf.Resource(bf.BOOTSTRAP_NAME, bf.LEFT_OUT, listed))
    blob = bf.write_blob(
        modules,
        res_list,
        bytecode_magic=importlib.util.MAGIC_NUMBER,
        hexversion=sys.hexversion,
        optimize=optimize,
        flags=(bf.BLOB_HAS_SOURCES if with_source else 0) | (bf.BLOB_COMPRESSED if compress else 0),
        compress=compress,
    )
    regular = [m for m in modules if not m.flags & bf.FLAG_BOOTSTRAP]
    return PackResult(
        blob=blob,
        modules=len(regular),
        packages=sum(1 for m in regular if m.flags & bf.FLAG_PACKAGE),
        namespaces=sum(1 for m in regular if m.flags & bf.FLAG_NAMESPACE),
        resources=len(res_list),
        failed=failed,
        left_out=len(left_out),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stdlib", type=Path, required=True, help="the lib/python3.X directory")
    parser.add_argument("--out", type=Path, required=True, help="blob to write")
    parser.add_argument("--optimize", type=int, choices=(0, 1, 2), default=0)
    parser.add_argument(
        "--sources", action="store_true", help="also pack .py sources (getsource, tracebacks)"
    )
    parser.add_argument(
        "--app", type=Path, action="append", default=[], help="a directory laid out like a sys.path entry"
    )
    parser.add_argument(
        "--app-sources", type=Path, action="append", default=[], help="an --app whose sources are packed too"
    )
    parser.add_argument("--strict", action="store_true", help="fail if any module does not compile")
    parser.add_argument(
        "--exclude", action="append", default=[], help="a top-level module or package not to pack"
    )
    parser.add_argument("--reach", type=Path, help="reach.py's answer: pack only the stdlib modules it names")
    parser.add_argument(
        "--left-out", action="append", default=[], help="a module the executable names as left out"
    )
    parser.add_argument(
        "--compress", action="store_true", help="each module's code and source as a zstd frame (3.14+)"
    )
    args = parser.parse_args(argv)
    compress = None
    if args.compress:
        try:
            from compression import zstd  # type: ignore[import-not-found, unused-ignore]
        except ImportError:
            parser.error("--compress needs CPython 3.14 or newer (compression.zstd)")

        # Each frame carries its content's checksum (XXH64), which decompression verifies.
        parameters = {
            zstd.CompressionParameter.compression_level: COMPRESSION_LEVEL,
            zstd.CompressionParameter.checksum_flag: 1,
        }

        def compress(data: bytes) -> bytes:
            return zstd.compress(data, options=parameters)  # type: ignore[no-any-return, unused-ignore]

    for directory in [args.stdlib, *args.app, *args.app_sources]:
        if not directory.is_dir():
            parser.error(f"not a directory: {directory}")
    reached = None
    if args.reach is not None:
        reached = frozenset(json.loads(args.reach.read_text())["modules"])
    result = pack(
        args.stdlib,
        [*args.app, *args.app_sources],
        optimize=args.optimize,
        sources=args.sources,
        exclude=frozenset(args.exclude),
        reached=reached,
        left_out=frozenset(args.left_out),
        compress=compress,
        sources_of=frozenset(args.app_sources),
    )
    for path, why in result.failed:
        print(f"pack.py: not compiled: {path}: {why}", file=sys.stderr)
    if result.failed and args.strict:
        print(f"pack.py: {len(result.failed)} file(s) failed to compile (--strict)", file=sys.stderr)
        return 1

    tmp = args.out.with_name(args.out.name + ".tmp")
    tmp.write_bytes(result.blob)
    os.replace(tmp, args.out)
    print(
        f"pack.py: {result.modules} modules ({result.packages} packages, {result.namespaces} namespace), "
        f"{result.resources} resources, {len(result.failed)} not compiled, {result.left_out} left out, "
        f"{len(result.blob)} bytes "
        f"-> {args.out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
