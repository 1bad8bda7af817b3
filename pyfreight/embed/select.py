"""Which extension modules a custom interpreter gets, decided from PYTHON.json alone.

A selection is `all`, `minimal` (the modules built into the core plus those the
interpreter imports to start), `no-copyleft` (every variant whose licenses are all
permissive), or an explicit comma list, to which `minimal` is always added so the
result can start. Each chosen extension brings its own objects and link annotations,
so a module needing another's library (say _ssl needing libcrypto, which _hashlib
also uses) gets it from its `links`, never from a hard-coded table."""

from __future__ import annotations

import re

from pyfreight.errors import PyfreightError
from pyfreight.python_json import Distribution, Extension

PRESETS = ("all", "minimal", "no-copyleft")

# SPDX identifiers (prefixes) whose terms reach the program that links them in.
COPYLEFT_PREFIXES = ("GPL", "LGPL", "AGPL", "MPL", "EPL", "EUPL", "CDDL", "OSL", "CC-BY-SA", "SSPL")


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


def select_extensions(dist: Distribution, selection: str) -> list[Extension]:
    """The default variants of `selection`, sorted by name. Raises PyfreightError for
    names the archive does not have, listing what it has. (Our archives carry one variant
    per module; python-build-standalone documents the first as the default.)"""
    everything = [dist.default(name) for name in dist.extensions]
    if selection == "all":
        return everything
    if selection == "minimal":
        return dist.required_extensions()
    if selection == "no-copyleft":
        return [e for e in everything if e.in_core or e.required or not any(map(is_copyleft, e.licenses))]
    wanted = {n.strip() for n in selection.split(",") if n.strip()}
    unknown = sorted(wanted - set(dist.extensions))
    if not wanted or unknown:
        raise PyfreightError(
            f"--extensions {selection!r}: no extension module named {', '.join(unknown) or '(empty)'} "
            "in this archive; use all, minimal, no-copyleft or names from: "
            f"{', '.join(dist.extensions)}"
        )
    return dist.extensions_named(wanted, with_required=True)


def dropped_extensions(dist: Distribution, chosen: list[Extension]) -> list[str]:
    kept = {e.name for e in chosen}
    return [n for n in dist.extensions if n not in kept]
