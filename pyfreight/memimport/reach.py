"""The modules an application can reach: what `pyfreight embed --main` packs by default.

Run this with the *target* interpreter (its sys.builtin_module_names are the extension
modules the archive can link in), with -I -S::

    python3 -I -S reach.py --path APP … --path STDLIB --root MODULE … --start FILE --out reach.json

It follows every import statement (those inside functions too) of the roots with the
stdlib's modulefinder, and writes JSON: "modules", every module found on --path, and
"builtins", the built-in ones reached. Imports made from strings (importlib.import_module,
__import__ of a computed name) cannot be seen: the executable names a module left out
when it is imported, and `--include-module` adds it. Only the stdlib is used, so any
CPython 3.11-3.15 can run this file.
"""

import argparse
import ast
import importlib.machinery
import json
import modulefinder
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

# What every executable imports, whatever its code: the modules the interpreter loads to
# start (with site, which PYFREIGHT_INTERPRETER=1 imports) and to print an uncaught
# exception, as this interpreter shows them. They are taken as they are, not followed:
# following site's functions alone would reach pydoc and half the stdlib.
PROBE = """\
import io, sys, traceback
try:
    raise ValueError("probe")
except ValueError as error:
    traceback.print_exception(error, file=io.StringIO())
print(*sorted(sys.modules))
"""
# Codecs are imported by name (b"...".decode("latin-1"), the locale's, which is known only
# where the program runs): every codec that needs nothing but the codec machinery comes
# (single-byte tables, the UTFs), and the others (CJK tables, idna, base64...) where some
# reached code names them in a string.
CODEC_IMPORTS = frozenset({"codecs", "sys", "builtins", "_codecs", "encodings"})
# Modules whose strings name codecs as data, not to use them: the alias tables of the
# codecs (encodings.aliases) and of the locales (locale.locale_encoding_alias).
CODEC_TABLES = ("encodings", "locale")
CODEC_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{1,30}")
# Never followed: the test suite (multiprocessing.util imports test.support for its own
# tests; pack.py never packs it), and the import system's own Python files, which the
# interpreter runs frozen (their lazy imports serve importlib.metadata, which a program
# that uses it imports itself).
NOT_FOLLOWED = ("test", "importlib._bootstrap", "importlib._bootstrap_external")
# Imports inside functions that no started program runs, by module: runpy's run_path
# imports pkgutil (and through it zipfile, email, urllib...), while the start code of an
# application (`--main pkg`) calls only _run_module_as_main.
UNUSED_LAZY_IMPORTS = {"runpy": frozenset({"pkgutil"})}
# modulefinder's kind of a module read from a .py file.
SOURCE: int = getattr(modulefinder, "_PY_SOURCE")  # noqa: B009  (private: typeshed omits it)
# Our own kind, for a namespace package (a folder without __init__.py), which modulefinder
# does not know: it fails on the loader-less spec the path finder gives for one.
NAMESPACE = -1


def _main_guard(node: ast.stmt) -> bool:
    """`if __name__ == "__main__":`, whose body never runs in an imported module."""
    test = node.test if isinstance(node, ast.If) else None
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and len(test.comparators) == 1
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value == "__main__"
    )


def _as_imported(tree: ast.Module) -> ast.Module:
    """`tree` without its main guards, nor the top-level functions only they called (the
    stdlib's `def _test(): import doctest` beside `if __name__ == "__main__": _test()`)."""
    guards = [node for node in tree.body if _main_guard(node)]
    body = [node for node in tree.body if not _main_guard(node)]
    called = {n.id for guard in guards for n in ast.walk(guard) if isinstance(n, ast.Name)}
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    used: set[str] = set()
    for node in body:
        if isinstance(node, functions) and node.name in called:
            continue  # its own body does not count as a use of its name
        used.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name))
    tree.body = [n for n in body if not (isinstance(n, functions) and n.name in called - used)]
    return tree


class _DropImports(ast.NodeTransformer):
    """Drops the imports of `names` made inside functions."""

    def __init__(self, names: "frozenset[str]") -> None:
        self.names = names
        self.depth = 0

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1
        return node

    def visit_ImportFrom(self, node: ast.ImportFrom) -> ast.AST:
        return ast.Pass() if self.depth and node.module in self.names else node

    def visit_Import(self, node: ast.Import) -> ast.AST:
        return ast.Pass() if self.depth and {a.name for a in node.names} <= self.names else node


class ImportedModuleFinder(modulefinder.ModuleFinder):
    """modulefinder, reading a module as an import runs it: without its main guard (heapq's
    alone reaches doctest, and with it unittest, pdb and pydoc)."""

    def find_module(self, name, path, parent=None):  # type: ignore[no-untyped-def]
        fullname = name if parent is None else f"{parent.__name__}.{name}"
        if fullname not in self.excludes and not (path is None and name in sys.builtin_module_names):
            spec = importlib.machinery.PathFinder.find_spec(name, self.path if path is None else path)
            if spec is not None and spec.loader is None and spec.submodule_search_locations:
                return None, list(spec.submodule_search_locations), ("", "", NAMESPACE)
        return super().find_module(name, path, parent)

    def load_module(self, fqname, fp, pathname, file_info):  # type: ignore[no-untyped-def]
        if file_info[2] == NAMESPACE:
            package: Any = self.add_module(fqname)
            package.__path__ = pathname
            return package
        if file_info[2] != SOURCE or fqname == "__main__":
            return super().load_module(fqname, fp, pathname, file_info)
        tree = _as_imported(ast.parse(fp.read(), pathname))
        if fqname in UNUSED_LAZY_IMPORTS:
            tree = ast.fix_missing_locations(_DropImports(UNUSED_LAZY_IMPORTS[fqname]).visit(tree))
        module: Any = self.add_module(fqname)  # modulefinder.Module: attributes as a module's
        module.__file__ = pathname
        module.__code__ = compile(tree, pathname, "exec", dont_inherit=True)
        self.scan_code(module.__code__, module)
        return module


# What built-in modules import as they are made, which no Python code shows (_ssl imports
# _socket for its C API capsule, _elementtree pyexpat): each is imported here in turn.
IMPORTS_PROBE = """\
import importlib, sys
before = set(sys.modules)
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except Exception:
        pass
print(*sorted(set(sys.modules) - before))
"""


# What built-in modules import later, as they are used, which neither the code nor the
# imports probe shows: ctypes' Structure and Union classes have _ctypes import
# ctypes._layout (3.14+), strptime has time and _datetime import _strptime, and
# ElementTree's find methods have _elementtree import xml.etree.ElementPath.
LAZY_C_IMPORTS = {
    "_ctypes": ("ctypes._layout",),
    "_datetime": ("_strptime",),
    "time": ("_strptime",),
    "_elementtree": ("xml.etree.ElementPath",),
}


def _probe(code: str, *arguments: str) -> list[str]:
    command = [sys.executable, "-I", "-c", code, *arguments]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout.split()


def _found(finder: modulefinder.ModuleFinder) -> "tuple[set[str], set[str]]":
    """The modules found on the path, and the built-in ones reached."""
    modules, builtins = set(), set()
    for name, module in finder.modules.items():
        # modulefinder's Module records where it was found: a file, a package's folders, or
        # neither (a built-in module).
        if getattr(module, "__file__", None) is not None or getattr(module, "__path__", None) is not None:
            modules.add(name)
        elif name in sys.builtin_module_names:
            builtins.add(name)
    return modules, builtins


def reached(finder: modulefinder.ModuleFinder, whole: "list[str]") -> "tuple[set[str], set[str]]":
    """What the finder reached, what the interpreter loads to start, and what the reached
    built-in modules import as they are made (followed in turn)."""
    loaded = set(_probe(PROBE))
    probed: set[str] = set()
    while True:
        modules, builtins = _found(finder)
        builtins |= loaded & set(sys.builtin_module_names)
        fresh = sorted(builtins - probed)
        if not fresh:
            return modules | (loaded - builtins) - {"__main__"}, builtins
        probed.update(fresh)
        imported = _probe(IMPORTS_PROBE, *fresh)
        loaded.update(imported)
        _follow(finder, [name for name in imported if name not in sys.builtin_module_names], whole)
        _follow(finder, [lazy for name in fresh for lazy in LAZY_C_IMPORTS.get(name, ())], whole)


def _packages_and_modules(folder: Path) -> list[str]:
    """The top-level modules and packages of a sys.path-like folder."""
    names = []
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        stem = entry.name[:-3] if entry.name.endswith(".py") else entry.name
        if entry.name.startswith(".") or not stem.isidentifier():
            continue
        if entry.is_dir() or entry.name.endswith(".py"):
            names.append(stem)
    return names


def _codec_modules(path: list[str]) -> dict[str, list[str]]:
    """Each codec module of the first `encodings` package on `path`, by name, with the
    top-level modules it imports."""
    for folder in map(Path, path):
        package = folder / "encodings"
        if (package / "__init__.py").is_file():
            break
    else:
        return {}
    codecs = {}
    for source in sorted(package.glob("*.py")):
        if source.stem == "__init__":
            continue
        imported: set[str] = set()
        for node in ast.walk(ast.parse(source.read_bytes(), str(source))):
            if isinstance(node, ast.Import):
                imported.update(alias.name.partition(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                imported.add("encodings" if node.level else str(node.module).partition(".")[0])
        codecs[source.stem] = sorted(imported)
    return codecs


def _strings(code: Any) -> "set[str]":
    found = set()
    for constant in code.co_consts:
        if isinstance(constant, str) and CODEC_NAME.fullmatch(constant):
            found.add(constant)
        elif hasattr(constant, "co_consts"):
            found |= _strings(constant)
    return found


def _named_codecs(finder: modulefinder.ModuleFinder, codecs: "dict[str, list[str]]") -> "set[str]":
    """The codec modules whose names (or aliases) the reached code has as strings, as
    the codec registry turns a name into a module (encodings.search_function)."""
    import encodings
    import encodings.aliases

    named = set()
    for name, module in list(finder.modules.items()):
        if name.partition(".")[0] in CODEC_TABLES:
            continue
        code = getattr(module, "__code__", None)
        for text in _strings(code) if code is not None else ():
            normal = encodings.normalize_encoding(text.lower().replace(" ", "-"))
            for codec in (encodings.aliases.aliases.get(normal), normal):
                if codec in codecs:
                    named.add(f"encodings.{codec}")
    return named


def _follow(finder: modulefinder.ModuleFinder, names: "list[str]", whole: "list[str]") -> None:
    for name in names:
        # A package named in `whole` comes with all its submodules ('*'); a name that is
        # not found is recorded by modulefinder as a bad module, not raised.
        fromlist = ["*"] if name in whole else None
        try:
            finder.import_hook(name, None, fromlist)
        except (ImportError, SyntaxError, ValueError):
            continue  # a module that does not compile fails where pack.py reports it


def reach(path: list[str], roots: list[str], whole: list[str], start: str) -> modulefinder.ModuleFinder:
    finder = ImportedModuleFinder(path=path, excludes=list(NOT_FOLLOWED))
    codecs = _codec_modules(path)
    plain = [f"encodings.{name}" for name, imported in codecs.items() if CODEC_IMPORTS.issuperset(imported)]
    _follow(finder, ["encodings", *plain, *roots, *whole], whole)
    if start:
        finder.run_script(start)  # as __main__, which is left out of the answer
    tried: set[str] = set()
    while True:  # a codec named by a codec reached by name, and so on
        named = sorted(_named_codecs(finder, codecs) - set(finder.modules) - tried)
        if not named:
            return finder
        tried.update(named)
        _follow(finder, named, whole)


def main(argv: "list[str] | None" = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", action="append", default=[], help="a sys.path entry, in order")
    parser.add_argument("--root", action="append", default=[], help="a module the program imports")
    parser.add_argument(
        "--whole", action="append", default=[], help="a module or package taken with all its submodules"
    )
    parser.add_argument("--app", action="append", default=[], help="a folder whose every module is a root")
    parser.add_argument("--start", default="", help="a file of the code that starts the program")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)

    whole = list(args.whole)
    for folder in args.app:
        whole += _packages_and_modules(Path(folder))
    finder = reach(args.path, args.root, whole, args.start)
    modules, builtins = reached(finder, whole)
    found = {"modules": sorted(modules), "builtins": sorted(builtins)}
    tmp = args.out.with_name(args.out.name + ".tmp")
    tmp.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, args.out)
    print(f"reach.py: {len(found['modules'])} modules and {len(found['builtins'])} built-in modules reached")
    return 0


if __name__ == "__main__":
    sys.exit(main())
