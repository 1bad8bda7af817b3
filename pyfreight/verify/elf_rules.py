"""What an ELF file of ours may need, for its target: the machine, the libraries
(targets/*.yaml `libc.needed`, and the tree's own libpython), where it may look for
them, and the newest C library version. The facts come from formats/elf.py, the one
reader; check-install and validate judge trees by these rules."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from pathlib import Path

from pyfreight.formats.elf import ElfFacts, tree_elf_facts
from pyfreight.targets import Target

# The dynamic loader's word for the folder of the file that names the path.
ORIGIN = ("$ORIGIN", "${ORIGIN}")


def check_tree(root: Path, target: Target) -> tuple[list[ElfFacts], list[str]]:
    """All ELF files below root, and the problems found among them for `target`."""
    facts, problems = tree_elf_facts(root), []
    allowed = allowed_needed(target, facts)
    for f in facts:
        if f.machine != target.elf.machine:
            problems.append(f"{f.path}: is {f.machine}, not {target.elf.machine}")
        extra = sorted(set(f.needed) - allowed)
        if extra:
            problems.append(f"{f.path}: needs {', '.join(extra)}")
        if (libc := libc_problem(f, target)) is not None:
            problems.append(f"{f.path}: {libc}")
        problems += [f"{f.path}: {p}" for p in search_path_problems(f)]
    return facts, problems


def allowed_needed(target: Target, tree_facts: Iterable[ElfFacts]) -> frozenset[str]:
    """The libraries a file of the tree may need: the target's system libraries, and the
    shared libraries the tree itself ships in its lib/ folder, by their sonames
    (libpython3.so needs libpython3.X.so.1.0)."""
    shipped = {f.soname for f in tree_facts if f.soname and posixpath.dirname(f.path) == "lib"}
    return target.libc.needed | shipped


def search_path_problems(facts: ElfFacts) -> list[str]:
    """An rpath or runpath may only lead to a folder of the tree, from the file's own
    ($ORIGIN): any other is a folder of the build machine's or the user's, searched
    before the system's for every library the file needs. `facts.path` is relative to
    the tree's top."""
    problems = []
    depth = len(Path(facts.path).parts) - 1
    for entry in facts.search_paths:
        head, _, rest = entry.partition("/")
        inside = head in ORIGIN and _stays_below(depth, rest)
        if not inside:
            problems.append(f"searches {entry!r} for libraries, outside the tree (only $ORIGIN/… inside it)")
    return problems


def _stays_below(depth: int, rest: str) -> bool:
    """`rest`, followed from a folder `depth` levels below the top, stays in the tree."""
    for part in rest.split("/"):
        if part in ("", "."):
            continue
        depth += -1 if part == ".." else 1
        if depth < 0 or "$" in part:
            return False
    return True


def libc_problem(facts: ElfFacts, target: Target) -> str | None:
    """What is wrong with the C library versions an ELF file needs, for `target`."""
    if facts.glibc is None:
        return None
    newest = ".".join(map(str, facts.glibc))
    if not target.libc.glibc:
        libc = target.libc.name
        return f"needs GLIBC_{newest}, but {target.triple} is a {libc} target: it may need no glibc"
    if facts.glibc > target.libc.held_ceiling:
        return f"needs GLIBC_{newest}, newer than {target.libc.ceiling_text} allowed for {target.triple}"
    return None
