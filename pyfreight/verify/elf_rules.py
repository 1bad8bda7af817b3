"""What an ELF file of ours may need, for its target: the machine, the libraries
(targets/*.yaml `libc.needed`) and the newest C library version. The facts come from
formats/elf.py, the one reader; check-install and validate judge trees by these rules."""

from __future__ import annotations

from pathlib import Path

from pyfreight.formats.elf import ElfFacts, tree_elf_facts
from pyfreight.targets import Target


def check_tree(root: Path, target: Target) -> tuple[list[ElfFacts], list[str]]:
    """All ELF files below root, and the problems found among them for `target`."""
    facts, problems = tree_elf_facts(root), []
    for f in facts:
        if f.machine != target.elf_machine:
            problems.append(f"{f.path}: is {f.machine}, not {target.elf_machine}")
        extra = sorted(set(f.needed) - target.allowed_needed)
        if extra:
            problems.append(f"{f.path}: needs {', '.join(extra)}")
        if (libc := libc_problem(f, target)) is not None:
            problems.append(f"{f.path}: {libc}")
    return facts, problems


def libc_problem(facts: ElfFacts, target: Target) -> str | None:
    """What is wrong with the C library versions an ELF file needs, for `target`."""
    if facts.glibc is None:
        return None
    newest = ".".join(map(str, facts.glibc))
    if not target.glibc:
        return f"needs GLIBC_{newest}, but {target.triple} is a {target.libc} target: it may need no glibc"
    if facts.glibc > target.ceiling:
        return f"needs GLIBC_{newest}, newer than {target.ceiling_text} allowed for {target.triple}"
    return None
