"""Extensions the core cannot link without, found from the objects' symbols.

PYTHON.json marks what the interpreter imports to start (`required`), but some
extension objects are also called by the core directly: in 3.14 the interpreter's
start-up calls _PyDateTime_InitTypes and _PyAtExit_Init. Rather than keep a list per
CPython version, the symbol tables decide: any extension whose objects define a symbol
the chosen objects leave undefined joins the selection."""

from __future__ import annotations

import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pyfreight.errors import PyfreightError


@dataclass(frozen=True)
class Symbols:
    defined: frozenset[str]
    undefined: frozenset[str]


def read_symbols(nm: str, objects: Iterable[Path]) -> dict[Path, Symbols]:
    """Symbols of each object, from one `nm -A -P` run (POSIX format: "file: name type …").
    llvm-nm reads ELF and LLVM bitcode alike."""
    paths = sorted(set(objects))
    if not paths:
        return {}
    # An archive's object may name its symbols in any bytes: kept as they are, never a
    # decoding error (a name that is not UTF-8 matches no name of ours anyway).
    result = subprocess.run(
        [nm, "-A", "-P", *map(str, paths)], capture_output=True, text=True, errors="surrogateescape"
    )
    if result.returncode != 0:
        said = " ".join(result.stderr.split())[:500]  # one line, whatever nm printed
        raise PyfreightError(f"{nm} could not read the archive's objects: {said}")
    defined: dict[Path, set[str]] = {p: set() for p in paths}
    undefined: dict[Path, set[str]] = {p: set() for p in paths}
    for line in result.stdout.splitlines():
        file, sep, rest = line.partition(": ")
        fields = rest.split()
        if not sep or len(fields) < 2:
            continue
        name, kind = fields[0], fields[1]
        if kind == "U":
            undefined.setdefault(Path(file), set()).add(name)
        elif kind.isupper():  # global definitions only: lower-case kinds are file-local
            defined.setdefault(Path(file), set()).add(name)
    return {p: Symbols(frozenset(defined[p]), frozenset(undefined[p])) for p in paths}


def needed_by_link(
    chosen: Iterable[str], candidates: dict[str, list[Path]], base: list[Path], symbols: dict[Path, Symbols]
) -> dict[str, list[str]]:
    """Names from `candidates` (extension -> its objects) that must join `chosen` because
    `base` objects or chosen extensions reference what they define; each with the symbols
    that pulled it in. Repeats until nothing new is needed."""
    selected = set(chosen)
    added: dict[str, list[str]] = {}
    while True:
        objects = list(base) + [o for name in selected for o in candidates.get(name, ())]
        have = set().union(*(symbols[o].defined for o in objects)) if objects else set()
        want = set().union(*(symbols[o].undefined for o in objects)) - have if objects else set()
        new = {}
        for name, objs in sorted(candidates.items()):
            if name in selected:
                continue
            provides = {s for o in objs for s in symbols[o].defined if s in want}
            if provides:
                new[name] = sorted(provides)
        if not new:
            return added
        selected.update(new)
        added.update(new)
