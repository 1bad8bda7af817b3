"""Which extension modules a custom interpreter gets, decided from PYTHON.json alone.

A selection is `all`, `minimal` (the modules built into the core plus those the
interpreter imports to start), `no-copyleft` (every variant whose licenses are all
permissive), or an explicit comma list, to which `minimal` is always added so the
result can start. Each chosen extension brings its own objects and link annotations,
so a module needing another's library (say _ssl needing libcrypto, which _hashlib
also uses) gets it from its `links`, never from a hard-coded table."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pyfreight.errors import PyfreightError

PRESETS = ("all", "minimal", "no-copyleft")

# SPDX identifiers (prefixes) whose terms reach the program that links them in.
COPYLEFT_PREFIXES = ("GPL", "LGPL", "AGPL", "MPL", "EPL", "EUPL", "CDDL", "OSL", "CC-BY-SA", "SSPL")


@dataclass(frozen=True)
class Extension:
    """One chosen variant of an extension module, as PYTHON.json describes it."""

    name: str
    init_fn: str  # "NULL" for entries whose module the core creates itself (builtins, sys)
    in_core: bool
    objs: tuple[str, ...]
    links: tuple[dict, ...]
    licenses: tuple[str, ...]


def _variant(name: str, variants: list[dict]) -> Extension:
    # Our archives carry one variant per module; a multi-variant archive (possible in the
    # format) gets its first, which python-build-standalone documents as the default.
    v = variants[0]
    return Extension(
        name=name,
        init_fn=v["init_fn"],
        in_core=bool(v["in_core"]),
        objs=tuple(v.get("objs", ())),
        links=tuple(v.get("links", ())),
        licenses=tuple(v.get("licenses") or ()),
    )


def is_copyleft(expression: str) -> bool:
    """Whether an SPDX license expression obliges the linking program: an OR offers a
    choice (copyleft only if every alternative is), an AND needs all of its terms."""
    text = expression.strip()
    while text.startswith("(") and text.endswith(")") and _balanced(text[1:-1]):
        text = text[1:-1].strip()
    for operator, combine in ((" OR ", all), (" AND ", any)):
        parts = _split_top_level(text, operator)
        if len(parts) > 1:
            return combine(is_copyleft(p) for p in parts)
    identifier = re.split(r"\s+WITH\s+", text)[0].strip()
    return identifier.upper().startswith(tuple(p.upper() for p in COPYLEFT_PREFIXES))


def _balanced(text: str) -> bool:
    depth = 0
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth < 0:
            return False
    return depth == 0


def _split_top_level(text: str, operator: str) -> list[str]:
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0 and text.startswith(operator, i):
            parts.append(text[start:i])
            i += len(operator)
            start = i
            continue
        i += 1
    parts.append(text[start:])
    return parts


def _minimal_names(extensions: dict[str, list[dict]]) -> set[str]:
    return {n for n, v in extensions.items() if v[0]["in_core"] or v[0].get("required")}


def select_extensions(build_info: dict, selection: str) -> list[Extension]:
    """The extensions of `selection`, sorted by name. Raises PyfreightError for names the
    archive does not have, listing what it has."""
    extensions: dict[str, list[dict]] = build_info["extensions"]
    minimal = _minimal_names(extensions)
    if selection == "all":
        names = set(extensions)
    elif selection == "minimal":
        names = minimal
    elif selection == "no-copyleft":
        names = {
            n
            for n, v in extensions.items()
            if n in minimal or not any(is_copyleft(lic) for lic in v[0].get("licenses") or ())
        }
    else:
        wanted = {n.strip() for n in selection.split(",") if n.strip()}
        unknown = sorted(wanted - set(extensions))
        if not wanted or unknown:
            raise PyfreightError(
                f"--extensions {selection!r}: no extension module named {', '.join(unknown) or '(empty)'} "
                "in this archive; use all, minimal, no-copyleft or names from: "
                f"{', '.join(sorted(extensions))}"
            )
        names = wanted | minimal
    return [_variant(n, extensions[n]) for n in sorted(names)]


def dropped_extensions(build_info: dict, chosen: list[Extension]) -> list[str]:
    kept = {e.name for e in chosen}
    return sorted(n for n in build_info["extensions"] if n not in kept)
