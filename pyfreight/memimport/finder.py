"""PEP 451 finder and loader for modules packed into the executable (see docs/memory-importer.md).

pack.py compiles this file into the blob under the reserved name ``_pyfreight_finder``; the C module
``_pyfreight_memory`` executes it from install() during the core initialization phase and calls
install() below.  At that point only built-in and frozen modules exist, so this file imports nothing
else at module level: no ``from __future__`` either, because that statement performs a real import of
the (unfrozen) ``__future__`` module.  io, importlib.resources.abc and the source decoder are imported
lazily, inside the functions that need them.  For the same reason, annotations that name a type only
the type checker knows are strings, and the imports they need sit under TYPE_CHECKING.
"""

import _imp
import sys
from _frozen_importlib import BuiltinImporter, FrozenImporter, ModuleSpec

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence
    from importlib.resources import abc as resources_abc
    from types import CodeType, ModuleType
    from typing import IO, Any, Protocol

    from _typeshed import StrPath

    # find(): (flags, code, source); code is None exactly for a namespace package.
    Entry = tuple[int, memoryview | None, memoryview | None]
    ReaderClasses = tuple[
        Callable[[str], resources_abc.TraversableResources],
        Callable[[str, str, frozenset[str]], resources_abc.Traversable],
    ]

    class MemoryModule(Protocol):
        """The C module _pyfreight_memory (memimport.c)."""

        def find(self, name: str, /) -> Entry | None: ...
        def code(self, name: str, /) -> CodeType | None: ...
        def source(self, name: str, /) -> bytes | None: ...
        def resource(self, package: str, path: str, /) -> memoryview | None: ...
        def resources(self, package: str, /) -> list[str]: ...
        def modules(self) -> tuple[tuple[str, int], ...]: ...
        def exec_module(self, module: ModuleType, /) -> None: ...


# Module flags, as in blobformat.py.
PACKAGE = 0x01
NAMESPACE = 0x02
HAS_SOURCE = 0x04
BOOTSTRAP = 0x08

# The resource package holding packed .dist-info files, as blobformat.DISTRIBUTIONS.
DISTRIBUTIONS = "_pyfreight_distributions"
# The finder's own resource naming the modules left out of an application, as
# blobformat.BOOTSTRAP_NAME and blobformat.LEFT_OUT.
BOOTSTRAP_NAME = "_pyfreight_finder"
LEFT_OUT = "left-out"

# Used as the virtual root only when an embedder leaves sys.executable empty.
FALLBACK_ROOT = "/__pyfreight_memory__"

if TYPE_CHECKING:
    # install() sets both before the finder is on sys.meta_path: never None where they are used.
    _mem: MemoryModule
    _find: Callable[[str], Entry | None]
else:
    _mem = None  # the _pyfreight_memory module, set by install()
    _find = None  # _mem.find, bound once: it is called for every import
_root: "str | None" = None  # sys.executable once known; every virtual path starts with it
# parent package name -> [(last name component, is_package)], built on demand
_children: "dict[str, list[tuple[str, bool]]] | None" = None
_reader_classes: "ReaderClasses | None" = None
_distribution_class: "Callable[[str], Any] | None" = None


def _get_root() -> str:
    global _root
    if _root is not None:
        return _root
    exe = getattr(sys, "executable", "")
    if not exe:
        # Core phase (or an embedder without an executable): do not cache, try again later.
        return FALLBACK_ROOT
    _root = exe
    # The path hook is added now rather than in install(): the main init phase puts zipimporter at
    # sys.path_hooks[0], and zipimporter would open the executable to look for a zip directory.
    # sys.executable becomes known right before that phase's first import of a packed module.
    sys.path_hooks.insert(0, _path_hook)
    # Last, after the path finder the main phase has just added: a module of the same name in the
    # application's packages folder still wins over the message.
    left_out = _mem.resource(BOOTSTRAP_NAME, LEFT_OUT)
    if left_out is not None:
        sys.meta_path.append(LeftOutFinder(frozenset(bytes(left_out).decode().split())))
    return exe


class LeftOutFinder:
    """Names, as the import fails, a module pyfreight embed left out of an application (the
    stdlib modules its code does not reach, the extension modules not linked in) and the
    option that puts it back."""

    def __init__(self, names: "frozenset[str]") -> None:
        self.names = names

    def __repr__(self) -> str:
        return f"<pyfreight LeftOutFinder of {len(self.names)} modules>"

    def find_spec(self, fullname: str, path: "object" = None, target: "object" = None) -> None:
        if fullname in self.names:
            raise ModuleNotFoundError(
                f"No module named {fullname!r}: pyfreight embed left it out of this program, whose "
                f"code does not import it by name; make the program with --include-module {fullname}",
                name=fullname,
            )

    def invalidate_caches(self) -> None:
        pass


def _relpath(fullname: str, flags: int) -> str:
    base = fullname.replace(".", "/")
    return base + "/__init__.py" if flags & PACKAGE else base + ".py"


class MemorySpec(ModuleSpec):
    """A spec whose ``cached`` is always None: there is no bytecode file to point at, and importlib
    would otherwise derive a ``<exe>/pkg/__pycache__/...`` path from the origin."""

    @property
    def cached(self) -> "str | None":
        return None

    @cached.setter
    def cached(self, value: "str | None") -> None:
        pass


def _lookup(fullname: str) -> "Entry":
    entry = _find(fullname)
    if entry is None or entry[0] & BOOTSTRAP:
        raise ImportError(f"{fullname!r} is not packed in this executable", name=fullname)
    return entry


class MemoryImporter:
    """Meta path finder and loader for the packed modules."""

    def __repr__(self) -> str:
        return "<pyfreight MemoryImporter>"

    # -- finder --------------------------------------------------------------------------------

    def find_spec(
        self, fullname: str, path: "Sequence[str] | None" = None, target: "ModuleType | None" = None
    ) -> "MemorySpec | None":
        entry = _find(fullname)
        # Namespace packages are left to PathFinder (through _path_hook), so that a packed portion
        # and portions on sys.path combine as PEP 420 says.
        if entry is None or entry[0] & (NAMESPACE | BOOTSTRAP):
            if _root is None:
                # The path hook must be in before PathFinder looks, even when no packed module
                # was imported yet (3.15 freezes encodings: start-up imports none).
                _get_root()
            return None
        return self._spec(fullname, entry)

    def _spec(self, fullname: str, entry: "Entry") -> MemorySpec:
        root = _get_root()
        flags = entry[0]
        # arg-type: typeshed wants an importlib.abc.Loader subclass; the import system takes any object
        # with the loader methods, and importlib.abc cannot be imported when install() runs.
        if flags & PACKAGE:
            base = root + "/" + fullname.replace(".", "/")
            spec = MemorySpec(fullname, self, origin=base + "/__init__.py", is_package=True)  # type: ignore[arg-type]
            spec.submodule_search_locations = [base]
        else:
            origin = root + "/" + fullname.replace(".", "/") + ".py"
            spec = MemorySpec(fullname, self, origin=origin)  # type: ignore[arg-type]
        spec.has_location = True
        return spec

    def invalidate_caches(self) -> None:
        pass

    def iter_modules(self, prefix: str = "") -> "Iterator[tuple[str, bool]]":
        # pkgutil.iter_modules() also asks meta path finders; top-level modules only.
        for name, ispkg in _children_of(""):
            yield prefix + name, ispkg

    def find_distributions(self, context: "Any" = None) -> "Iterator[Any]":
        """importlib.metadata asks every meta path finder: the packed distributions (their
        .dist-info files are resources), all of them or the one context.name names."""
        search = getattr(context, "path", None)
        if search is not None and _get_root() not in search:
            return  # a search of other sys.path-like entries
        folders = sorted({path.partition("/")[0] for path in _mem.resources(DISTRIBUTIONS)})
        wanted = getattr(context, "name", None)
        if wanted is not None:
            # Both names compare normalized (PEP 503): older wheels keep dots in the folder's.
            import re

            def normalized(name: str) -> str:
                return re.sub(r"[-_.]+", "_", name).lower()

            key = normalized(wanted)
            folders = [f for f in folders if normalized(f.partition("-")[0]) == key]
        if folders:
            distribution = _make_distribution_class()
            for folder in folders:
                yield distribution(folder)

    # -- loader --------------------------------------------------------------------------------

    def create_module(self, spec: ModuleSpec) -> None:
        return None

    # exec_module is _pyfreight_memory.exec_module, set by install(): see the comment there.
    if TYPE_CHECKING:
        exec_module: "staticmethod[[ModuleType], None]"

    def get_code(self, fullname: str) -> "CodeType":
        flags = _lookup(fullname)[0]
        code = None if flags & NAMESPACE else _mem.code(fullname)  # decompressed if need be
        if code is None:  # exactly for a namespace package
            return compile("", self.get_filename(fullname), "exec", dont_inherit=True)
        _imp._fix_co_filename(code, self.get_filename(fullname))  # type: ignore[attr-defined]  # not in typeshed
        return code

    def get_source(self, fullname: str) -> "str | None":
        _lookup(fullname)
        source = _mem.source(fullname)  # decompressed if need be
        if source is None:
            return None
        # Same decoding as importlib.util.decode_source: PEP 263 cookie or BOM, universal newlines.
        from _frozen_importlib_external import decode_source

        return decode_source(source)

    def is_package(self, fullname: str) -> bool:
        return bool(_lookup(fullname)[0] & PACKAGE)

    def get_filename(self, fullname: str) -> str:
        entry = _lookup(fullname)
        return _get_root() + "/" + _relpath(fullname, entry[0])

    def get_resource_reader(self, fullname: str) -> "resources_abc.TraversableResources | None":
        entry = _find(fullname)
        if entry is None or entry[0] & (NAMESPACE | BOOTSTRAP):
            return None
        # Like FileReader: a plain module's resources are those of the package that contains it.
        package = fullname if entry[0] & PACKAGE else fullname.rpartition(".")[0]
        reader_class = _make_reader_classes()[0]
        return reader_class(package)


def _children_of(package: str) -> "Sequence[tuple[str, bool]]":
    global _children
    if _children is None:
        children: dict[str, list[tuple[str, bool]]] = {}
        for name, flags in _mem.modules():
            # As pkgutil does for directories: a namespace package is not listed.
            if flags & NAMESPACE:
                continue
            parent, _, tail = name.rpartition(".")
            children.setdefault(parent, []).append((tail, bool(flags & PACKAGE)))
        _children = children
    return _children.get(package, ())


class _PathEntryFinder:
    """Path entry finder for the virtual root (on sys.path) and virtual package directories (in
    __path__).  PathFinder reaches it for namespace packages and pkgutil for iter_modules()."""

    def __init__(self, importer: MemoryImporter, package: str, path: str) -> None:
        self._importer = importer
        self._package = package
        self._path = path

    def __repr__(self) -> str:
        return f"<pyfreight path entry {self._path!r}>"

    def find_spec(self, fullname: str, target: "ModuleType | None" = None) -> "ModuleSpec | None":
        if fullname.rpartition(".")[0] != self._package:
            return None
        entry = _find(fullname)
        if entry is None or entry[0] & BOOTSTRAP:
            return None
        if entry[0] & NAMESPACE:
            # A namespace portion, reported the way FileFinder reports one.
            spec = ModuleSpec(fullname, None)
            spec.submodule_search_locations = [self._path + "/" + fullname.rpartition(".")[2]]
            return spec
        return self._importer._spec(fullname, entry)

    def invalidate_caches(self) -> None:
        pass

    def iter_modules(self, prefix: str = "") -> "Iterator[tuple[str, bool]]":
        for name, ispkg in _children_of(self._package):
            yield prefix + name, ispkg


def _path_hook(path: str) -> _PathEntryFinder:
    root = _get_root()
    if isinstance(path, str):
        if path == root:
            return _PathEntryFinder(_importer(), "", path)
        if path.startswith(root) and path[len(root) : len(root) + 1] == "/":
            package = path[len(root) + 1 :].replace("/", ".")
            entry = _find(package)
            if entry is not None and entry[0] & PACKAGE and not entry[0] & BOOTSTRAP:
                return _PathEntryFinder(_importer(), package, path)
    raise ImportError("not a pyfreight memory path", path=path)


def _importer() -> MemoryImporter:
    for finder in sys.meta_path:
        if isinstance(finder, MemoryImporter):
            return finder
    return MemoryImporter()


def _make_reader_classes() -> "ReaderClasses":
    """Build the importlib.resources classes on first use: importlib.resources.abc cannot be
    imported at install time, and most programs never ask for package data."""
    global _reader_classes
    if _reader_classes is not None:
        return _reader_classes
    from importlib.resources.abc import Traversable, TraversableResources

    class MemoryTraversable(Traversable):
        """A file or directory of package data inside the blob; ``path`` is relative to the package."""

        def __init__(self, package: str, path: str, names: frozenset[str]) -> None:
            self._package = package
            self._path = path
            self._names = names  # frozenset of every resource path of the package

        def __repr__(self) -> str:
            return f"MemoryTraversable({self._package!r}, {self._path!r})"

        def __str__(self) -> str:
            base = _get_root() + "/" + self._package.replace(".", "/") if self._package else _get_root()
            return base + "/" + self._path if self._path else base

        @property
        def name(self) -> str:
            if self._path:
                return self._path.rpartition("/")[2]
            return self._package.rpartition(".")[2]

        def is_file(self) -> bool:
            return self._path in self._names

        def is_dir(self) -> bool:
            if not self._path:
                return True
            prefix = self._path + "/"
            return any(name.startswith(prefix) for name in self._names)

        def iterdir(self) -> "Iterator[MemoryTraversable]":
            if not self.is_dir():
                raise NotADirectoryError(str(self))
            prefix = self._path + "/" if self._path else ""
            seen: set[str] = set()
            for name in sorted(self._names):
                if name.startswith(prefix):
                    child = name[len(prefix) :].partition("/")[0]
                    if child not in seen:
                        seen.add(child)
                        yield MemoryTraversable(self._package, prefix + child, self._names)

        def joinpath(self, *descendants: "StrPath") -> "MemoryTraversable":
            parts = [p for p in self._path.split("/") if p]
            for descendant in descendants:
                for part in str(descendant).replace("\\", "/").split("/"):
                    if part in ("", "."):
                        continue
                    if part == "..":
                        if parts:
                            parts.pop()
                        continue
                    parts.append(part)
            return MemoryTraversable(self._package, "/".join(parts), self._names)

        def __truediv__(self, child: "StrPath") -> "MemoryTraversable":
            return self.joinpath(child)

        def _data(self) -> memoryview:
            data = _mem.resource(self._package, self._path) if self._path else None
            if data is None:
                if self.is_dir():
                    raise IsADirectoryError(str(self))
                raise FileNotFoundError(str(self))
            return data

        def read_bytes(self) -> bytes:
            return bytes(self._data())

        def read_text(self, encoding: "str | None" = None, errors: "str | None" = None) -> str:
            with self.open("r", encoding=encoding, errors=errors) as stream:
                text: str = stream.read()
                return text

        def open(self, mode: str = "r", *args: "Any", **kwargs: "Any") -> "IO[Any]":
            import io

            if mode not in ("r", "rb", "rt"):
                raise ValueError(f"packed resources are read-only: open mode {mode!r}")
            stream = io.BytesIO(self._data())
            if mode == "rb":
                return stream
            return io.TextIOWrapper(stream, *args, **kwargs)

    class MemoryReader(TraversableResources):
        def __init__(self, package: str) -> None:
            self._package = package

        def files(self) -> MemoryTraversable:
            names = frozenset(_mem.resources(self._package)) if self._package else frozenset()
            return MemoryTraversable(self._package, "", names)

    _reader_classes = (MemoryReader, MemoryTraversable)
    return _reader_classes


def _make_distribution_class() -> "Callable[[str], Any]":
    """importlib.metadata's Distribution over a packed .dist-info folder, built on first
    use (importlib.metadata is far too heavy to import at install time)."""
    global _distribution_class
    if _distribution_class is not None:
        return _distribution_class
    import pathlib
    from importlib.metadata import Distribution

    class PackedDistribution(Distribution):
        def __init__(self, folder: str) -> None:
            self._folder = folder

        def __repr__(self) -> str:
            return f"<pyfreight packed distribution {self._folder!r}>"

        def read_text(self, filename: "StrPath") -> "str | None":
            data = _mem.resource(DISTRIBUTIONS, self._folder + "/" + str(filename))
            return None if data is None else bytes(data).decode("utf-8")

        def locate_file(self, path: "StrPath") -> pathlib.Path:
            # Where the file would be on a sys.path entry: under the virtual root.
            return pathlib.Path(_get_root(), path)

    _distribution_class = PackedDistribution
    return PackedDistribution


def install(mem: "MemoryModule") -> MemoryImporter:
    """Put a MemoryImporter on sys.meta_path right after the built-in and frozen importers."""
    global _mem, _find
    for finder in sys.meta_path:
        if isinstance(finder, MemoryImporter):
            return finder
    _mem = mem
    _find = mem.find
    # The C function keeps the loader's frame out of tracebacks of errors raised while a module
    # executes (builtin functions do not bind, so staticmethod only states the intent).
    MemoryImporter.exec_module = staticmethod(mem.exec_module)
    importer = MemoryImporter()
    position = 0
    for index, finder in enumerate(sys.meta_path):
        if finder is BuiltinImporter or finder is FrozenImporter:
            position = index + 1
    sys.meta_path.insert(position, importer)
    return importer
