"""The dependency graph between recipes: order, closure and sanity."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from graphlib import CycleError, TopologicalSorter
from types import MappingProxyType

from pyfreight.errors import PyfreightError
from pyfreight.sources.recipes import Recipe


def check_graph(recipes: Mapping[str, Recipe]) -> None:
    """Fails when a recipe depends on an unknown name or the graph has a cycle."""
    for recipe in recipes.values():
        unknown = sorted(set(recipe.every_dependency()) - set(recipes))
        if unknown:
            raise PyfreightError(
                f"recipe {recipe.name} depends on unknown recipe(s) {', '.join(unknown)}; "
                f"known: {', '.join(sorted(recipes))}"
            )
    systems = {os for r in recipes.values() for os in (*r.os_depends, *r.unavailable_on)}
    build_order(recipes, recipes)
    for os_name in sorted(systems):
        kept = for_os(recipes, os_name, None)
        build_order(kept, kept)


def for_os(recipes: Mapping[str, Recipe], os_name: str, names: Iterable[str] | None) -> dict[str, Recipe]:
    """The recipes built for targets of `os_name` (a target's uv_platform os): all but
    those whose data says they are unavailable there, each depending on what it needs
    there (`depends` and its `os_depends`). Naming one of those left out is refused with
    its reason; so is a recipe that needs one."""
    kept = {
        n: replace(r, depends=r.depends_on(os_name), os_depends=MappingProxyType({}))
        for n, r in recipes.items()
        if os_name not in r.unavailable_on
    }
    for name in names or ():
        if name in recipes and name not in kept:
            raise PyfreightError(
                f"recipe {name} is not built for {os_name}: {recipes[name].unavailable_on[os_name]}"
            )
    for recipe in kept.values():
        missing = sorted(set(recipe.depends) & (set(recipes) - set(kept)))
        if missing:
            raise PyfreightError(
                f"recipe {recipe.name} is built for {os_name} but depends on {', '.join(missing)}, "
                f"which is not; say unavailable_on: {os_name} in recipes/{recipe.name}/recipe.yaml too"
            )
    return kept


def closure(recipes: Mapping[str, Recipe], names: Iterable[str]) -> set[str]:
    """The named recipes and everything they depend on, transitively."""
    wanted: set[str] = set()
    stack = list(names)
    while stack:
        name = stack.pop()
        if name in wanted:
            continue
        if name not in recipes:
            raise PyfreightError(f"no recipe named {name!r}; known: {', '.join(sorted(recipes))}")
        wanted.add(name)
        stack.extend(recipes[name].every_dependency())
    return wanted


def build_order(recipes: Mapping[str, Recipe], names: Iterable[str]) -> list[str]:
    """The closure of `names` with dependencies first; ties broken by name so the
    order is the same on every run."""
    wanted = closure(recipes, names)
    sorter = TopologicalSorter({n: sorted(recipes[n].every_dependency()) for n in sorted(wanted)})
    try:
        sorter.prepare()
    except CycleError as exc:
        raise PyfreightError(f"dependency cycle between recipes: {' -> '.join(exc.args[1])}") from None
    order: list[str] = []
    while sorter.is_active():
        ready = sorted(sorter.get_ready())
        order.extend(ready)
        sorter.done(*ready)
    return order


def longest_chains_first(recipes: Mapping[str, Recipe], order: list[str]) -> list[str]:
    """`order` (dependencies first) re-ranked so that the recipes heading the costliest
    chains of builds come first: a scheduler that starts the first ready recipe then
    starts early what takes longest (OpenSSL) or what a chain of others waits on (the
    X11 libraries before Tk), instead of leaving it to run alone at the end. A build's
    cost is not known before it runs; the size of its sources stands for it. A recipe
    ranks above everything that depends on it, so the order stays dependencies first."""
    dependents: dict[str, list[str]] = {name: [] for name in order}
    for name in order:
        for dependency in recipes[name].every_dependency():
            if dependency in dependents:
                dependents[dependency].append(name)
    chain: dict[str, int] = {}
    for name in reversed(order):  # every dependent is ranked before its dependencies
        own = 1 + sum(source.size for source in recipes[name].sources)
        chain[name] = own + max((chain[d] for d in dependents[name]), default=0)
    return sorted(order, key=lambda name: -chain[name])
