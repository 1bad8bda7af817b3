"""`pyfreight validate ARCHIVE`: static checks of a distribution archive (full or
install_only). Every problem is reported, each with the member it concerns; nothing
is run. The archive is read once for its structure and unpacked (only after the
structure is known to be safe) for the content checks."""

from __future__ import annotations

import json
import posixpath
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyfreight.archives.describe import crt_features
from pyfreight.archives.flavours import FULL, recognise
from pyfreight.archives.sbom import sbom_errors
from pyfreight.cpython.options import BuildOptions
from pyfreight.cpython.relocate import find_build_paths
from pyfreight.cpython.setup_local import load_extension_data
from pyfreight.errors import PyfreightError
from pyfreight.formats.elf import (
    ElfFacts,
    elf_facts,
    interpreter_identity,
)
from pyfreight.formats.safe_archive import DEFAULT_LIMITS, Limits, UnsafeArchive, extract, scan
from pyfreight.formats.untrusted import MAX_BINARY_BYTES, regular_files
from pyfreight.leftovers import scratch_folder
from pyfreight.logs import say
from pyfreight.paths import Workspace
from pyfreight.platforms import (
    LINUX,
    MACOS,
    UNIX_LAYOUT,
    WINDOWS,
    WINDOWS_LAYOUT,
    Platform,
    layout_of,
    platform_of,
    target_of_interpreter,
    target_of_tree,
)
from pyfreight.platforms.windows import FORWARDER_DLLS, interpreter_dll
from pyfreight.python_json import schema_errors
from pyfreight.targets import Target, all_targets, default_target, known_names
from pyfreight.verify.elf_rules import allowed_needed, libc_problem, search_path_problems
from pyfreight.verify.exports import bundled_exports, libpython_export_problems, missing_c_api
from pyfreight.verify.macho_rules import check_macho_tree
from pyfreight.verify.objects import object_problems
from pyfreight.verify.pe_rules import check_pe_tree

FULL_TOP_LEVEL = frozenset({"PYTHON.json", "install", "build", "licenses"})
# What PYTHON.json names to be run: each must be a file (a folder would be "run").
PROGRAMS = ("python_exe", "run_tests")


@dataclass(frozen=True)
class Problem:
    member: str
    message: str

    def __str__(self) -> str:
        return f"{self.member}: {self.message}"


def _structure(archive: Path, limits: Limits) -> tuple[list[Problem], list[tarfile.TarInfo]]:
    """The members, once the archive passed the safe-opening rules (a refusal is the one
    problem reported: nothing of such an archive is unpacked)."""
    try:
        members = scan(archive, limits)
    except UnsafeArchive as exc:
        return [Problem(exc.member, exc.rule)], []
    problems: list[Problem] = []
    names = {m.name for m in members}
    for m in members:
        if m.name.split("/")[0] != "python":
            problems.append(Problem(m.name, "outside the python/ folder"))
        if m.issym():
            target = posixpath.normpath(posixpath.join(posixpath.dirname(m.name), m.linkname))
            if target not in names:
                problems.append(Problem(m.name, f"dangling symlink -> {m.linkname}"))
    return problems, members


def _full_layout(members: list[tarfile.TarInfo]) -> list[Problem]:
    problems = []
    if not members or members[0].name != "python/PYTHON.json":
        first = members[0].name if members else "(empty archive)"
        problems.append(Problem(first, "the first member must be python/PYTHON.json"))
    for top in sorted({m.name.split("/")[1] for m in members if m.name.count("/") >= 1} - FULL_TOP_LEVEL):
        problems.append(Problem(f"python/{top}", "unexpected entry at the top of python/"))
    return problems


def _dict(value: Any) -> dict[str, Any]:
    """A JSON object, or an empty one for anything else: PYTHON.json may be malformed,
    and the schema errors already say how."""
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _python_json(root: Path) -> tuple[dict[str, Any] | None, list[Problem]]:
    path = root / "PYTHON.json"
    try:
        document = json.loads(path.read_text())
    except FileNotFoundError:
        return None, [Problem("python/PYTHON.json", "missing")]
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        return None, [Problem("python/PYTHON.json", f"not valid JSON: {exc}")]
    problems = [
        Problem("python/PYTHON.json", e.removeprefix("PYTHON.json ")) for e in schema_errors(document)
    ]
    if not isinstance(document, dict):
        return None, problems
    for where, rel in _referenced_paths(document):
        parts = rel.split("/")
        if rel.startswith("/") or ".." in parts:
            continue  # the schema's pattern already reports it; never look outside the archive
        if not (root / rel).exists() and not (root / rel).is_symlink():
            problems.append(Problem(f"python/{rel}", f"named by PYTHON.json {where} but not in the archive"))
        elif where in PROGRAMS and not (root / rel).is_file():
            problems.append(Problem(f"python/{rel}", f"named by PYTHON.json {where} but not a file"))
    for name, variants in _dict(_dict(document.get("build_info")).get("extensions")).items():
        for variant in map(_dict, _list(variants)):
            shipped = [
                link
                for link in map(_dict, _list(variant.get("links")))
                if str(link.get("path_static", "")).startswith("build/lib/")
            ]
            if shipped and not variant.get("license_paths"):
                problems.append(
                    Problem(
                        "python/PYTHON.json",
                        f"extension {name} links {shipped[0].get('name')} without licenses",
                    )
                )
    return document, problems


def _referenced_paths(document: dict[str, Any]) -> list[tuple[str, str]]:
    found: list[tuple[str, Any]] = []
    for key in (
        "python_exe",
        "python_stdlib_platform_config",
        "run_tests",
        "license_path",
        "tcl_library_path",
    ):
        found.append((key, document.get(key)))
    for key, value in _dict(document.get("python_paths")).items():
        found.append((f"python_paths.{key}", value))
    info = _dict(document.get("build_info"))
    core = _dict(info.get("core"))
    found += [("build_info.core.objs", o) for o in _list(core.get("objs"))]
    found += [(f"build_info.core.{k}", core.get(k)) for k in ("static_lib", "shared_lib")]
    found += [(f"build_info.{k}", info.get(k)) for k in ("inittab_object", "inittab_source")]
    for name, variants in _dict(info.get("extensions")).items():
        for variant in map(_dict, _list(variants)):
            found += [(f"extension {name} objs", o) for o in _list(variant.get("objs"))]
            found += [(f"extension {name} license_paths", p) for p in _list(variant.get("license_paths"))]
            found += [(f"extension {name} links", _dict(link).get("path_static"))
                      for link in _list(variant.get("links"))]  # fmt: skip
    return [(w, p) for w, p in found if isinstance(p, str)]


def _licenses(root: Path) -> list[Problem]:
    sbom_path = root / "licenses" / "sbom.cdx.json"
    if not sbom_path.is_file():
        return [Problem("python/licenses/sbom.cdx.json", "missing")]
    try:
        sbom = json.loads(sbom_path.read_bytes())
    except (ValueError, UnicodeDecodeError) as exc:
        return [Problem("python/licenses/sbom.cdx.json", f"not valid JSON: {exc}")]
    problems = [Problem("python/licenses/sbom.cdx.json", e.split(" ", 1)[1]) for e in sbom_errors(sbom)]
    for component in map(_dict, _list(_dict(sbom).get("components"))):
        name = component.get("name")
        if not isinstance(name, str) or "/" in name or name in ("", ".", ".."):
            problems.append(Problem("python/licenses/sbom.cdx.json", f"a component named {name!r}"))
            continue
        folder = root / "licenses" / name
        if not folder.is_dir() or not any(p.is_file() for p in folder.rglob("*")):
            problems.append(
                Problem(
                    f"python/licenses/{component.get('name')}/", "no license text for a bundled component"
                )
            )
    return problems


def _elf_problems(
    path: Path, member: str, spec: Target, facts: ElfFacts | None, allowed: frozenset[str]
) -> list[Problem]:
    """The ELF rules for one file (nothing for a file that is not ELF), whose facts were
    read relative to the install tree's top; `allowed`: the libraries it may need."""
    if facts is None:
        with path.open("rb") as fh:
            return [Problem(member, "unreadable ELF")] if fh.read(4) == b"\x7fELF" else []
    problems = []
    extra = sorted(set(facts.needed) - allowed)
    if extra:
        problems.append(Problem(member, f"needs libraries outside the allow-list: {', '.join(extra)}"))
    if (libc := libc_problem(facts, spec)) is not None:
        problems.append(Problem(member, libc))
    if facts.machine != spec.elf.machine:
        problems.append(Problem(member, f"machine {facts.machine}, not {spec.elf.machine} ({spec.triple})"))
    problems += [Problem(member, p) for p in search_path_problems(facts)]
    if facts.kind not in ("ET_EXEC", "ET_DYN"):
        return problems  # an object file (e.g. the config folder's python.o): nothing runs it as is
    problems += _hardening(facts, member)
    bundled = bundled_exports(facts.exported)
    if bundled:
        problems.append(Problem(member, f"exports symbols of bundled libraries: {', '.join(bundled[:5])}"))
    problems += [Problem(member, p) for p in libpython_export_problems(facts)]
    # A program with no loader (fully static) cannot load extension modules at all, so it
    # has no C API to export for them.
    if facts.loader is not None and Path(member).name.startswith("python3") and "/bin/" in member:
        missing = missing_c_api(facts.exported)
        if missing:
            problems.append(
                Problem(member, f"does not export the C API extension modules need: {', '.join(missing)}")
            )
    return problems


def _hardening(facts: ElfFacts, member: str) -> list[Problem]:
    problems = []
    if facts.executable_stack:
        problems.append(Problem(member, "executable stack (no non-executable PT_GNU_STACK)"))
    if not facts.relro:
        problems.append(Problem(member, "no RELRO segment"))
    if facts.text_relocations:
        problems.append(Problem(member, "text relocations (DT_TEXTREL)"))
    if not facts.bind_now:
        problems.append(Problem(member, "no BIND_NOW (full RELRO needs -z now)"))
    return problems


def _interpreter_problems(
    install: Path, prefix: str, build_options: str | None, spec: Target | None = None
) -> list[Problem]:
    """Hardening of the interpreter executable that the flags promise: a stack
    protector and _FORTIFY_SOURCE leave imports of glibc's checking functions, and the
    executable is a PIE exactly when its build options say so (docs/performance.md).
    musl has no checking functions to call; a static interpreter imports nothing, so
    neither can be seen in it."""
    exe = (install / "bin" / "python3").resolve()
    if not exe.is_file() or not exe.is_relative_to(install.resolve()):
        return []  # reported by the symlink rules
    member = f"{prefix}/bin/{exe.name}"
    facts = elf_facts(exe, exe.parent)
    if facts is None:
        return []  # reported by the ELF rules
    dynamic = facts.loader is not None
    problems = []
    if dynamic and "__stack_chk_fail" not in facts.imported:
        problems.append(Problem(member, "no stack protector (__stack_chk_fail is never called)"))
    fortified = any(
        name.startswith("__") and name.endswith("_chk") and name != "__stack_chk_fail"
        for name in facts.imported
    )
    if dynamic and (spec is None or spec.libc.glibc) and not fortified:
        problems.append(Problem(member, "no _FORTIFY_SOURCE (no glibc __*_chk function is called)"))
    if build_options is not None:
        try:
            pie = BuildOptions.parse(build_options).codegen.pie
        except PyfreightError:
            return problems  # the schema check names a bad build_options
        expected = "ET_DYN" if pie else "ET_EXEC"
        if facts.kind != expected:
            what = "a PIE" if pie else "position-dependent (not a PIE)"
            problems.append(
                Problem(member, f"is {facts.kind}, but build options {build_options} make it {what}")
            )
    return problems


def _install_tree(
    install: Path, prefix: str, target: Target, elf_files: bool
) -> tuple[list[Problem], list[ElfFacts]]:
    """The rules for a Unix install tree, and the facts of its ELF files (read once,
    when it has them, `elf_files`); a macOS tree's Mach-O files are judged by _macho_tree."""
    problems: list[Problem] = []
    facts: list[ElfFacts] = []
    # Extension modules allowed as shared libraries, in lib-dynload: only the test-only
    # ones (cpython/extensions.yaml); every module of the product is built in.
    test_only = load_extension_data().test_only
    files = [path for path in sorted(install.rglob("*")) if path.is_file() and not path.is_symlink()]
    read = {path: elf_facts(path, install) for path in files} if elf_files else {}
    facts += [f for f in read.values() if f is not None]
    allowed = allowed_needed(target, facts)
    for path in files:
        rel = f"{prefix}/{path.relative_to(install)}"
        if elf_files:
            problems += _elf_problems(path, rel, target, read[path], allowed)
        # Modules live in the stdlib's folder; libpython (lib/libpython3.X.so…) is a
        # library of the tree.
        parts = path.relative_to(install).parts
        in_stdlib = len(parts) > 2 and parts[0] == "lib" and parts[1].startswith("python3")
        extension = path.name.endswith(".so") and in_stdlib and "site-packages" not in parts
        test_module = path.name.split(".")[0] in test_only and path.parent.name == "lib-dynload"
        if extension and not test_module:
            problems.append(
                Problem(
                    rel,
                    "an extension module as a shared library (all but the test-only ones are built in)",
                )
            )
    problems += _build_path_problems(install, prefix)
    bin_dir = install / "bin"
    links = [bin_dir / "python", bin_dir / "python3"]
    if not all(p.is_symlink() for p in links):
        problems.append(Problem(f"{prefix}/bin/python", "bin/python and bin/python3 must be symlinks"))
    elif links[0].resolve() != links[1].resolve() or not links[0].resolve().is_file():
        problems.append(
            Problem(f"{prefix}/bin/python", "bin/python and bin/python3 point to different interpreters")
        )
    return problems, facts


def _build_path_problems(install: Path, prefix: str) -> list[Problem]:
    """Text files naming the build's paths. relocate's search reads each file whole: a
    file larger than any of ours (a sparse one of gigabytes, from outside) is a problem
    of its own, and the search is not run on such a tree."""
    oversized = [path for path in regular_files(install) if path.stat().st_size > MAX_BINARY_BYTES]
    if oversized:
        return [
            Problem(
                f"{prefix}/{path.relative_to(install)}",
                f"{path.stat().st_size} bytes, larger than any file of ours ({MAX_BINARY_BYTES >> 20} MiB)",
            )
            for path in oversized
        ]
    problems = []
    for leak in find_build_paths(install):
        member, _, detail = leak.partition(": ")
        problems.append(Problem(f"{prefix}/{member}", f"build-time path: {detail}"))
    return problems


def _pe_tree(install: Path, prefix: str, target: Target) -> list[Problem]:
    """The rules for a Windows tree: the PE rules on every image (verify/pe_rules.py),
    the programs and DLLs it must have, every extension module built in (no .pyd files
    but the test-only ones), and no build path in its text files."""
    problems = []
    for line in check_pe_tree(install, target)[1]:
        member, _, message = line.partition(": ")
        problems.append(Problem(f"{prefix}/{member}", message))
    for name in ("python.exe", "pythonw.exe", *sorted(target.pe.redistributed)):
        if not (install / name).is_file():
            problems.append(Problem(f"{prefix}/{name}", "missing"))
    if not any((install / name).is_file() for name in FORWARDER_DLLS):
        problems.append(
            Problem(
                f"{prefix}/python3.dll", "missing: the stable ABI's forwarder (python3t.dll free-threaded)"
            )
        )
    if interpreter_dll(install) is None:
        problems.append(
            Problem(
                f"{prefix}/python3XX.dll",
                "not exactly one interpreter DLL (python3XXt.dll free-threaded)",
            )
        )
    test_only = load_extension_data().test_only
    for path in sorted(install.rglob("*.pyd")):
        if "site-packages" not in path.parts and path.name.split(".")[0] not in test_only:
            problems.append(
                Problem(
                    f"{prefix}/{path.relative_to(install)}",
                    "an extension module as a .pyd (all but the test-only ones are built into the DLL)",
                )
            )
    problems += _build_path_problems(install, prefix)
    return problems


def _macho_tree(install: Path, prefix: str, target: Target) -> list[Problem]:
    """The Mach-O rules on every file of a macOS tree (verify/macho_rules.py)."""
    problems = []
    for line in check_macho_tree(install, target)[1]:
        member, _, message = line.partition(": ")
        problems.append(Problem(f"{prefix}/{member}", message))
    return problems


def _said_crt(document: dict | None, spec: Target) -> list[Problem]:
    """A full archive of a target whose C runtime is always the system's dynamic one
    (Windows' UCRT, macOS's libSystem) says so in crt_features."""
    if document is None:
        return []
    said, expected = document.get("crt_features"), crt_features(spec, False, None)
    if said == expected:
        return []
    return [Problem("python/PYTHON.json", f"crt_features say {said}, but {spec.triple}'s are {expected}")]


def _crt_problems(document: dict, install: Path, spec: Target, elf: list[ElfFacts]) -> list[Problem]:
    """PYTHON.json's crt_features say what the tree needs of the C library: the same
    as its ELF files (a static interpreter, the dynamic C library, the newest glibc
    version), within the target's ceiling (the ELF rules)."""
    said = [f for f in _list(document.get("crt_features")) if isinstance(f, str)]
    try:
        static = interpreter_identity((install / "bin" / "python3").resolve())[1] is None
    except (PyfreightError, OSError):
        return []  # reported by the ELF and symlink rules
    newest = max((f.glibc for f in elf if f.glibc), default=None)
    found = crt_features(spec, static, newest)
    problems = []
    if said != found:
        problems.append(
            Problem("python/PYTHON.json", f"crt_features say {said}, but the tree's ELF files need {found}")
        )
    # A static interpreter carries the C library built from the target's libc recipe:
    # the SBOM (and so, by the license rule, the licenses folder) must name it.
    libc = spec.toolchain.sysroot.get("libc_recipe")
    if static and libc is not None and libc not in _sbom_component_names(install.parent):
        problems.append(
            Problem(
                "python/licenses/sbom.cdx.json", f"names no {libc}, which the static interpreter links in"
            )
        )
    return problems


def _sbom_component_names(root: Path) -> set[str]:
    try:
        sbom = json.loads((root / "licenses" / "sbom.cdx.json").read_bytes())
    except (OSError, ValueError, UnicodeDecodeError):
        return set()  # reported by the license rule
    return {str(c.get("name")) for c in map(_dict, _list(_dict(sbom).get("components")))}


def _target_of(
    install: Path, prefix: str, said: str | None, document: dict
) -> tuple[Target | None, list[Problem]]:
    """The target the archive is checked for: the one PYTHON.json names, else the one
    the tree's interpreter was built for (platforms.target_of_tree); with a problem when PYTHON.json's
    platform tag is not that target's."""
    if said is not None:
        spec = all_targets().get(said)
        if spec is None:
            return None, [Problem("python/PYTHON.json", f"unknown target {said}; known: {known_names()}")]
    elif layout_of(install) is WINDOWS_LAYOUT:
        try:
            spec = target_of_tree(install)
        except PyfreightError as exc:
            return None, [Problem(f"{prefix}/python.exe", f"cannot tell the target: {exc}")]
    else:
        try:
            spec = target_of_interpreter(install / "bin" / "python3", install, UNIX_LAYOUT)
        except (PyfreightError, OSError) as exc:
            # reported; the other checks still run, for the default target
            return default_target(), [Problem(f"{prefix}/bin/python3", f"cannot tell the target: {exc}")]
    tag = document.get("python_platform_tag")
    if tag is not None and tag != spec.python_platform_tag:
        return spec, [
            Problem(
                "python/PYTHON.json",
                f"python_platform_tag {tag}, not {spec.python_platform_tag} ({spec.triple})",
            )
        ]
    return spec, []


def validate(archive: Path, target: str | None = None, limits: Limits = DEFAULT_LIMITS) -> list[Problem]:
    """Every problem of `archive` (an empty list: it passed)."""
    problems, members = _structure(archive, limits)
    if not members:
        return problems
    flavour = recognise([m.name for m in members])
    if flavour is None:
        return [
            *problems,
            Problem(archive.name, "neither python/PYTHON.json nor python/bin/: not a distribution"),
        ]
    full = flavour.describes_itself
    if full:
        problems += _full_layout(members)
    if any(p.message.startswith("outside") for p in problems):
        return problems  # not laid out as a distribution: report what was found
    with scratch_folder("pyfreight-validate-") as tmp:
        extract(archive, Path(tmp) / "x", limits)
        root = Path(tmp) / "x" / "python"
        if full:
            document, found = _python_json(root)
            problems += found
            said = (document or {}).get("target_triple")
            target = target or (said if isinstance(said, str) else None)
            problems += _licenses(root)
        install, prefix = Path(tmp) / "x" / flavour.install_root, flavour.install_root
        spec, found = _target_of(install, prefix, target, (document or {}) if full else {})
        problems += found
        if spec is None:
            return problems
        tree = ArchiveTree(root, install, prefix, spec, (document or {}) if full else None)
        problems += TREE_RULES[platform_of(spec)](tree)
        if full:  # the objects packers link, of whatever format
            problems += [
                Problem(m, rule) for m, rule in object_problems(root / "build", "python/build", spec)
            ]
    return problems


@dataclass(frozen=True)
class ArchiveTree:
    """An unpacked archive, as the rules of its platform's tree read it."""

    root: Path  # the archive's python/ folder
    install: Path  # its install tree
    prefix: str  # the install tree's path in the archive
    target: Target
    document: dict | None  # PYTHON.json: a full archive's


def _linux_tree(tree: ArchiveTree) -> list[Problem]:
    problems, elf = _install_tree(tree.install, tree.prefix, tree.target, elf_files=True)
    if tree.document is not None:
        problems += _crt_problems(tree.document, tree.install, tree.target, elf)
    said_options = (tree.document or {}).get("build_options")
    problems += _interpreter_problems(
        tree.install, tree.prefix, said_options if isinstance(said_options, str) else None, tree.target
    )
    return problems


def _windows_tree(tree: ArchiveTree) -> list[Problem]:
    return _pe_tree(tree.install, tree.prefix, tree.target) + _said_crt(tree.document, tree.target)


def _macos_tree(tree: ArchiveTree) -> list[Problem]:
    problems, _ = _install_tree(tree.install, tree.prefix, tree.target, elf_files=False)
    problems += _macho_tree(tree.install, tree.prefix, tree.target)
    return problems + _said_crt(tree.document, tree.target)


# Each platform's tree rules, after the rules every archive passes.
TREE_RULES: dict[Platform, Callable[[ArchiveTree], list[Problem]]] = {
    LINUX: _linux_tree,
    WINDOWS: _windows_tree,
    MACOS: _macos_tree,
}


def install_tree_problems(install: Path, target: Target, document: dict[str, Any]) -> list[Problem]:
    """The rules validate applies to a full archive's install tree (python/install/…),
    applied to that tree on disk, before it is packed."""
    tree = ArchiveTree(install.parent, install, FULL.install_root, target, document)
    return TREE_RULES[platform_of(target)](tree)


class RefuseInvalid:
    """The check every archive passes before it is published under its name (handed to
    archives/write as its ArchiveCheck): `pyfreight validate` of the written file, its
    problems kept in build/logs/validate-NAME.log, and the first named in one line. The
    tree is judged by the same rules before any archive of it is packed: a broken build
    fails in seconds, not after minutes of compression."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws

    def tree(self, install: Path, document: dict[str, Any], name: str, target: Target) -> None:
        say(f"dist: validating the install tree of {name}")
        self._judge(install_tree_problems(install, target, document), name)

    def archive(self, written: Path, name: str, target: Target) -> None:
        say(f"dist: validating {name}")
        self._judge(validate(written, target=target.triple), name)

    def _judge(self, problems: list[Problem], name: str) -> None:
        log = self.ws.logs / f"validate-{name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("".join(f"FAIL  {p}\n" for p in problems) or "passed\n")
        if problems:
            more = f" and {len(problems) - 1} more" if len(problems) > 1 else ""
            raise PyfreightError(
                f"{name} fails validate, so it was not written: {problems[0]}{more} (log: {log})"
            )
