"""Reading PYTHON.json: the typed view of a full distribution archive that a packer links
its own interpreter from (and `pyfreight embed` does).

    with tempfile.TemporaryDirectory() as scratch:
        dist = python_json.open_archive(Path("cpython-…-full.tar.zst"), Path(scratch))
        chosen = dist.extensions_named(["_json", "_sqlite3"], with_required=True)
        inputs = dist.link_inputs(chosen)     # objects, static and system libraries, inittab

Every document is checked against schema/PYTHON.json.schema.json before it is returned,
and every path it names resolves inside the archive's python/ folder or is refused. An
archive is opened by the safe-extraction rules (formats/safe_archive.py): it comes from
the internet. The raw document stays available as `Distribution.document`."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path
from typing import Any

from pyfreight.cpython.spec import BuildSpec
from pyfreight.datafiles import validator
from pyfreight.errors import PyfreightError
from pyfreight.formats.safe_archive import DEFAULT_LIMITS, Limits, extract
from pyfreight.paths import SCHEMA_DIR

SCHEMA_FILE = SCHEMA_DIR / "PYTHON.json.schema.json"
# What linking needs of a full archive; the install tree besides is only for those who
# also run or pack the interpreter's own files (the in-memory importer packs its stdlib).
LINK_MEMBERS = ("python/PYTHON.json", "python/build/", "python/install/include/", "python/licenses/")


@cache
def schema() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(SCHEMA_FILE.read_text())
    return document


def schema_errors(document: dict) -> list[str]:
    """Every schema violation, each with the JSON path of the offending value."""
    # The validator datafiles keeps: its jsonschema import defers the grammars of the
    # "iri" format (seconds of every validate that built its own).
    found = []
    errors = validator(SCHEMA_FILE.name).iter_errors(document)
    for error in sorted(errors, key=lambda e: list(map(str, e.absolute_path))):
        where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        found.append(f"PYTHON.json {where}: {error.message}")
    return found


@dataclass(frozen=True)
class Link:
    """A library an object needs: one the archive ships (`path_static`, relative to
    python/), one of the target's C library (`system`, linked as -lNAME), or a macOS
    framework of the system (`framework`, linked as -framework NAME)."""

    name: str
    path_static: str | None
    system: bool
    framework: bool = False


@dataclass(frozen=True)
class Extension:
    """One variant of a module of the interpreter's inittab."""

    name: str
    variant: str
    init_fn: str | None  # None: the core creates the module itself (builtins, sys)
    in_core: bool  # its code is in the core objects, nothing to add
    required: bool  # the interpreter cannot start (or run its core) without it
    objs: tuple[str, ...]  # relative to python/
    links: tuple[Link, ...]
    licenses: tuple[str, ...]  # SPDX expressions of the libraries it links
    license_paths: tuple[str, ...]


@dataclass(frozen=True)
class LinkInputs:
    """What a link of the core plus some extensions takes, in link order and each once.
    `objects` leaves out the archive's own inittab object: the packer compiles its own
    table from `inittab`."""

    objects: tuple[Path, ...]
    static_libraries: tuple[Path, ...]
    system_libraries: tuple[str, ...]  # as in -lNAME
    inittab: tuple[tuple[str, str | None], ...]  # (module, init function or None)
    licenses: tuple[str, ...]  # of the shipped libraries these extensions link
    frameworks: tuple[str, ...] = ()  # macOS: as in -framework NAME


def _link(entry: dict) -> Link:
    return Link(
        name=entry["name"],
        path_static=entry.get("path_static"),
        system=bool(entry.get("system")),
        framework=bool(entry.get("framework")),
    )


def _extension(name: str, entry: dict) -> Extension:
    return Extension(
        name=name,
        variant=entry.get("variant", "default"),
        init_fn=None if entry["init_fn"] == "NULL" else entry["init_fn"],
        in_core=bool(entry["in_core"]),
        required=bool(entry.get("required")),
        objs=tuple(entry.get("objs", ())),
        links=tuple(_link(link) for link in entry.get("links", ())),
        licenses=tuple(entry.get("licenses") or ()),
        license_paths=tuple(entry.get("license_paths") or ()),
    )


@dataclass(frozen=True)
class Distribution:
    """A checked PYTHON.json and the folder (python/) every path in it is relative to."""

    root: Path
    document: dict[str, Any]

    @property
    def target_triple(self) -> str:
        return str(self.document["target_triple"])

    @property
    def python_version(self) -> str:
        return str(self.document["python_version"])

    @property
    def python_major_minor_version(self) -> str:
        return str(self.document["python_major_minor_version"])

    @property
    def build_options(self) -> str:
        return str(self.document["build_options"])

    @cached_property
    def build(self) -> BuildSpec:
        """The build the archive is (version, options, target), read once into the one
        type every step carries; a target or option this pyfreight does not know is
        refused by name."""
        return BuildSpec.named(self.python_version, self.build_options, self.target_triple)

    @property
    def python_exe(self) -> Path:
        return self.path(self.document["python_exe"])

    @property
    def include_dir(self) -> Path:
        return self.path(self.document["python_paths"]["include"])

    @property
    def stdlib_dir(self) -> Path:
        return self.path(self.document["python_paths"]["stdlib"])

    @property
    def object_file_format(self) -> str:
        """`elf`, or `llvm-bitcode:VERSION` for LTO archives (link with that LLVM)."""
        return str(self.document["build_info"]["object_file_format"])

    @property
    def inittab_cflags(self) -> tuple[str, ...]:
        return tuple(self.document["build_info"]["inittab_cflags"])

    @property
    def licenses(self) -> tuple[str, ...]:
        """CPython's own licenses (each extension names those of its libraries)."""
        return tuple(self.document["licenses"])

    @property
    def core_objects(self) -> tuple[str, ...]:
        """libpython's objects without the archive's own inittab, relative to python/."""
        inittab = self.document["build_info"].get("inittab_object")
        return tuple(o for o in self.document["build_info"]["core"]["objs"] if o != inittab)

    @property
    def core_links(self) -> tuple[Link, ...]:
        return tuple(_link(entry) for entry in self.document["build_info"]["core"].get("links", ()))

    @cached_property
    def extensions(self) -> dict[str, tuple[Extension, ...]]:
        """Every module of the inittab, by name, with its variants (the first is the default)."""
        return {
            name: tuple(_extension(name, entry) for entry in variants)
            for name, variants in sorted(self.document["build_info"]["extensions"].items())
        }

    def default(self, name: str) -> Extension:
        """The default variant of extension `name`; unknown names are refused with the known ones."""
        if name not in self.extensions:
            raise PyfreightError(
                f"no extension module named {name} in this archive; it has {', '.join(self.extensions)}"
            )
        return self.extensions[name][0]

    def required_extensions(self) -> list[Extension]:
        """What every interpreter linked from the archive must keep: modules in the core
        and those it imports or calls to start."""
        return [e for e in map(self.default, self.extensions) if e.in_core or e.required]

    def extensions_named(self, names: Iterable[str], with_required: bool = True) -> list[Extension]:
        """The default variants of `names` (plus, with `with_required`, what the
        interpreter cannot start without), sorted by name, each once."""
        chosen = {name: self.default(name) for name in names}
        if with_required:
            chosen.update((e.name, e) for e in self.required_extensions())
        return [chosen[name] for name in sorted(chosen)]

    def link_inputs(self, extensions: Iterable[Extension]) -> LinkInputs:
        """The core's objects and links, then each extension's, each once and in order."""
        chosen = list(extensions)
        objects = dict.fromkeys([*self.core_objects, *(o for e in chosen for o in e.objs)])
        links = [*self.core_links, *(link for e in chosen for link in e.links)]
        unknown = [link.name for link in links if not (link.system or link.path_static or link.framework)]
        if unknown:
            raise PyfreightError(f"PYTHON.json links neither system nor static: {', '.join(unknown)}")
        static = dict.fromkeys(link.path_static for link in links if link.path_static)
        return LinkInputs(
            objects=tuple(self.path(o) for o in objects),
            static_libraries=tuple(self.path(p) for p in static),
            system_libraries=tuple(dict.fromkeys(link.name for link in links if link.system)),
            inittab=tuple((e.name, e.init_fn) for e in chosen),
            licenses=tuple(sorted({lic for e in chosen for lic in e.licenses})),
            frameworks=tuple(dict.fromkeys(link.name for link in links if link.framework)),
        )

    def path(self, relative: str) -> Path:
        """A path PYTHON.json names, which must stay inside python/ even through symlinks
        (an extracted folder a user gives is held to the same rule)."""
        path = (self.root / relative).resolve()
        if not path.is_relative_to(self.root):
            raise PyfreightError(f"PYTHON.json names {relative}, which leads outside the archive to {path}")
        return path


def checked_document(root: Path, source: Path) -> dict[str, Any]:
    """The PYTHON.json in `root` (an archive's python/ folder), checked before anything
    uses it: valid JSON and the published schema, whose path patterns keep every path it
    names relative, inside python/ and free of `..`. `source` names it in errors."""
    path = root / "PYTHON.json"
    try:
        document = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise PyfreightError(
            f"{source}: no python/PYTHON.json; give a full archive (cpython-…-full.tar.zst)"
        ) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise PyfreightError(f"{source}: python/PYTHON.json is not valid JSON ({exc})") from None
    except OSError as exc:  # a folder or a fifo by that name, say
        raise PyfreightError(f"{source}: python/PYTHON.json cannot be read ({exc.strerror})") from None
    if not isinstance(document, dict):
        raise PyfreightError(f"{source}: python/PYTHON.json is not a JSON object")
    errors = schema_errors(document)
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise PyfreightError(
            f"{source}: python/PYTHON.json does not match schema/PYTHON.json.schema.json: "
            f"{errors[0].removeprefix('PYTHON.json ')}{more}; `pyfreight validate` lists every problem"
        )
    return document


def load(folder: Path) -> Distribution:
    """The distribution in an extracted full archive: `folder` is its python/ folder or
    the one holding python/."""
    root = folder / "python" if (folder / "python" / "PYTHON.json").is_file() else folder
    return Distribution(root=root.resolve(), document=checked_document(root, folder))


def open_archive(
    archive: Path, into: Path, whole_tree: bool = False, limits: Limits = DEFAULT_LIMITS
) -> Distribution:
    """Extracts what linking needs of a -full.tar.zst (with `whole_tree`, all of it) below
    `into`, which the caller owns and removes, and loads its PYTHON.json. A folder is
    loaded in place."""
    if archive.is_dir():
        return load(archive)
    if not archive.is_file():
        raise PyfreightError(f"{archive}: no such archive")

    def wanted(name: str) -> bool:
        if whole_tree:
            return name == "python" or name.startswith("python/")
        return any(name == m.rstrip("/") or name.startswith(m) for m in LINK_MEMBERS)

    extract(archive, into / "unpacked", limits, wanted)
    root = into / "unpacked" / "python"
    return Distribution(root=root.resolve(), document=checked_document(root, archive))
