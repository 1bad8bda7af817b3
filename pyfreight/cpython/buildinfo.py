"""Reads the build folder a CPython build exported (cpython/export-build.sh) and says
which object files form the core, which belong to each built-in module, and what
each links: the facts behind PYTHON.json's build_info.

Sources of truth, all written by CPython's own build: the Setup files makesetup
read (Setup.local first: the first rule for a module wins, as in makesetup),
Modules/config.c (the inittab: every built-in module and its init function) and
make's values of LIBRARY_OBJS, MODOBJS, LIBS and MODULE_<NAME>_LDFLAGS. What we
derive is cross-checked against make's lists, so a CPython that builds modules
differently stops here instead of yielding a PYTHON.json that does not link."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from pyfreight.errors import PyfreightError

# The order in which CPython's Makefile hands the Setup files to makesetup.
SETUP_FILES = ("Modules/Setup.local", "Modules/Setup.stdlib", "Modules/Setup.bootstrap")
# The account a build writes of itself when it has no Setup files and Makefile to read
# (the Windows build: cpython/windows_projects.py).
BUILD_INFO_FILE = "build-info.json"
SOURCE_SUFFIXES = (".c", ".cc", ".c++", ".C", ".cxx", ".cpp", ".m")
_INITTAB_ENTRY = re.compile(r'^\s*\{"([A-Za-z0-9_.]+)",\s*([A-Za-z0-9_]+)\},', re.MULTILINE)
_SECTION = re.compile(r"^\*([a-z]+)\*$")


@dataclass(frozen=True)
class Module:
    name: str
    init_fn: str  # "NULL" for builtins and sys, which have no init function
    in_core: bool  # lives in the core's objects (config.c.in's fixed entries)
    objs: tuple[str, ...]  # relative to the build folder
    link_flags: tuple[str, ...]  # -lNAME words and paths of static archives


@dataclass(frozen=True)
class BuildInfo:
    core_objs: tuple[str, ...]
    core_link_flags: tuple[str, ...]
    modules: dict[str, Module]
    inittab_source: str = "Modules/config.c"  # relative to the build folder
    inittab_object: str = "Modules/config.o"
    # the definitions the build compiled config.c with, when it says (Windows); else the
    # archive derives them from the build options
    inittab_cflags: tuple[str, ...] | None = None


def read_make_vars(path: Path) -> dict[str, str]:
    found = {}
    for line in path.read_text().splitlines():
        name, sep, value = line.partition("=")
        if sep:
            found[name] = value
    return found


def _object_of(source: str) -> str:
    """makesetup's rule: a source foo/bar.c of a module is compiled to Modules/foo/bar.o."""
    path = PurePosixPath(source)
    return str(PurePosixPath("Modules") / path.parent / (path.stem + ".o")).replace("/./", "/")


def setup_rules(texts: list[str]) -> dict[str, tuple[tuple[str, ...], tuple[str, ...] | None]]:
    """Modules built into the interpreter, from Setup texts in makesetup's order: name ->
    (objects, explicit link words or None when the line names none, so makesetup uses
    MODULE_<NAME>_LDFLAGS). Modules in a *disabled* or *shared* section are left out;
    the first rule for a module wins."""
    rules: dict[str, tuple[tuple[str, ...], tuple[str, ...] | None]] = {}
    seen: set[str] = set()
    for text in texts:
        section = "static"
        for raw in text.splitlines():
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            if match := _SECTION.match(line):
                section = match.group(1)
                continue
            if re.match(r"^[A-Za-z_][A-Za-z0-9_]*\s*=", line):
                continue  # a make variable definition
            words = _join_frameworks(shlex.split(line))
            names = [w for w in words if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", w)]
            if not names or names[0] in seen:
                continue
            seen.update(names)
            if section in ("disabled", "shared"):
                continue  # not part of the interpreter (shared ones are the test-only modules)
            if section != "static":
                raise PyfreightError(
                    f"module {names[0]} is in a *{section}* section; expected static or shared"
                )
            sources = [w for w in words if w.endswith(SOURCE_SUFFIXES)]
            links = tuple(w for w in words if w.startswith(("-l", "$(", FRAMEWORK)) or w.endswith(".a"))
            # makesetup falls back to MODULE_<NAME>_CFLAGS/_LDFLAGS only for a line
            # with no compiler or linker words of its own.
            flags = [w for w in words if w.startswith(("-", "$(")) or w.endswith(".a")]
            objs = tuple(_object_of(s) for s in sources)
            for name in names:  # a line may name several modules sharing its sources
                rules[name] = (objs, links if flags else None)
    return rules


def inittab(config_c: str) -> dict[str, str]:
    """Module name -> init function of every entry in config.c's _PyImport_Inittab."""
    table = config_c.split("_PyImport_Inittab[]", 1)
    if len(table) != 2:
        raise PyfreightError("Modules/config.c has no _PyImport_Inittab table")
    return dict(_INITTAB_ENTRY.findall(table[1]))


# A macOS framework in a link line, `-framework NAME`, is kept as one word "-framework NAME".
FRAMEWORK = "-framework "


def _join_frameworks(words: list[str]) -> list[str]:
    """`-framework NAME` as one word, so NAME is never taken for a module or a flag."""
    joined: list[str] = []
    for word in words:
        if joined and joined[-1] == "-framework":
            joined[-1] = FRAMEWORK + word
        else:
            joined.append(word)
    return joined


def _link_words(value: str) -> tuple[str, ...]:
    """The -l words, frameworks and static archives of a linker flag string (-L and the
    like are the build's own search paths, not something a packer links)."""
    words = _join_frameworks(shlex.split(value))
    return tuple(w for w in words if w.startswith(("-l", FRAMEWORK)) or w.endswith(".a"))


def _expand(words: tuple[str, ...], make_vars: dict[str, str]) -> tuple[str, ...]:
    """Link words with $(VAR) references replaced by make's values."""
    out: list[str] = []
    for word in words:
        if word.startswith("$(") and word.endswith(")"):
            out += _link_words(make_vars.get(word[2:-1], ""))
        elif not word.endswith("_CFLAGS)"):
            out.append(word)
    return tuple(dict.fromkeys(out))


def read_build_info(build_dir: Path) -> BuildInfo:
    """The build folder's account of the interpreter: the Windows build's own
    (BUILD_INFO_FILE, written from the projects it built from), else derived from
    configure and make's files and cross-checked against them."""
    if (build_dir / BUILD_INFO_FILE).is_file():
        return _read_written(build_dir)
    make_vars = read_make_vars(build_dir / "make-vars.txt")
    rules = setup_rules([(build_dir / f).read_text() for f in SETUP_FILES])
    table = inittab((build_dir / "Modules/config.c").read_text())
    modules = {}
    for name, init_fn in sorted(table.items()):
        if name in rules:
            objs, links = rules[name]
            if links is None:
                links = (f"$(MODULE_{name.upper()}_LDFLAGS)",)
            links = _expand(links, make_vars)
            modules[name] = Module(name, init_fn, False, objs, links)
        else:  # config.c.in's own entries: their code is part of the core
            modules[name] = Module(name, init_fn, True, (), ())
    not_in_inittab = sorted(set(rules) - set(table))
    if not_in_inittab:
        raise PyfreightError(f"Setup files build {', '.join(not_in_inittab)} but config.c does not list them")

    module_objs = {o for m in modules.values() for o in m.objs}
    made = set(make_vars.get("MODOBJS", "").split())
    if module_objs != made:
        raise PyfreightError(
            "the objects derived from the Setup files differ from make's MODOBJS: "
            f"only derived {sorted(module_objs - made)[:5]}, only in MODOBJS {sorted(made - module_objs)[:5]}"
        )
    missing = sorted(o for o in module_objs if not (build_dir / o).is_file())
    if missing:
        raise PyfreightError(f"{build_dir}: module objects missing: {', '.join(missing[:5])}")
    core = tuple(o for o in make_vars["LIBRARY_OBJS"].split() if o not in module_objs)
    core_links = _link_words(make_vars.get("LIBS", "") + " " + make_vars.get("SYSLIBS", ""))
    return BuildInfo(core, tuple(dict.fromkeys(core_links)), modules)


def _read_written(build_dir: Path) -> BuildInfo:
    """A BUILD_INFO_FILE, with every object it names present in the folder."""
    data = json.loads((build_dir / BUILD_INFO_FILE).read_text())
    modules = {
        name: Module(name, m["init_fn"], m["in_core"], tuple(m["objs"]), tuple(m["link_flags"]))
        for name, m in sorted(data["modules"].items())
    }
    named = [*data["core_objs"], *(o for m in modules.values() for o in m.objs)]
    missing = [o for o in named if not (build_dir / o).is_file()]
    if missing:
        raise PyfreightError(
            f"{build_dir}: objects {BUILD_INFO_FILE} names are missing: {', '.join(missing[:5])}"
        )
    return BuildInfo(
        core_objs=tuple(data["core_objs"]),
        core_link_flags=tuple(data["core_link_flags"]),
        modules=modules,
        inittab_source="config.c",
        inittab_object=data["inittab_object"],
        inittab_cflags=tuple(data["inittab_cflags"]),
    )
